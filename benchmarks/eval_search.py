"""Evaluate duplicate search on a generated, labelled corpus: ours vs BM25 vs GitHub keywords.

The corpus comes from `upstream_corpus.generate` (seeded): queries with 1-3 known
duplicates each, hidden among at least 300 distractors. For each query three rankings:

* ours: `reporter.upstream.search.find_duplicates` (BM25 + frame candidates, scored on
  text, title, BM25, stack and error similarity), weak candidates included;
* BM25 only: plain Okapi BM25 (SQLite FTS5, default tokenizer) over title and body with
  the query's words OR-ed;
* GitHub keyword search, simulated: the three rarest words of the query title (document
  frequency over the corpus), ANDed over title and body in the query's repo, as GitHub's
  search ANDs every term; matches ordered by how many title words they share, then newest;
* ours-candidates-bm25 (ablation): our FTS query over our index (identifier-aware terms),
  ordered by BM25 alone, without the re-ranking.

Metrics over queries: Recall@k = share of queries with at least one known duplicate in the
top k; MRR = mean of 1/rank of the first duplicate (0 when none in the top 10). Also the
precision of the `likely-duplicate` level (share of such candidates that are duplicates).

    python benchmarks/eval_search.py [--seed 7] [--families 60] [--distractors 600]
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from upstream_corpus import Corpus, EvalQuery, generate

from reporter.upstream import terms
from reporter.upstream.index import Index
from reporter.upstream.rank import Level
from reporter.upstream.search import Method, find_duplicates

CUTOFFS = (1, 5, 10)
Ranker = Callable[[EvalQuery], list[tuple[str, int]]]
_WORD_RE = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class Scores:
    """Recall at each cutoff and MRR for one method."""

    recall: dict[int, float]
    mrr: float


def evaluate(queries: Sequence[EvalQuery], ranker: Ranker) -> Scores:
    """Recall@1/5/10 and MRR of `ranker` over `queries`."""
    hits = dict.fromkeys(CUTOFFS, 0)
    reciprocal = 0.0
    for query in queries:
        ranked = ranker(query)[: max(CUTOFFS)]
        first = next((i for i, key in enumerate(ranked, start=1) if key in query.relevant), None)
        if first is not None:
            reciprocal += 1.0 / first
            for k in CUTOFFS:
                hits[k] += first <= k
    n = len(queries) or 1
    return Scores(recall={k: hits[k] / n for k in CUTOFFS}, mrr=reciprocal / n)


class PlainBM25:
    """Okapi BM25 as a search engine ships it: SQLite FTS5 `bm25()` with the default
    `unicode61` tokenizer over title and body, the query's words OR-ed (title, text and
    frame names, as the query would be typed or pasted), restricted to the query's repos."""

    def __init__(self, corpus: Corpus) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(repo UNINDEXED, number UNINDEXED, title, body)"
        )
        self.db.executemany(
            "INSERT INTO docs(repo, number, title, body) VALUES (?, ?, ?, ?)",
            [(i["repo"], i["number"], i["title"], i["body"]) for i in corpus.issues],
        )

    def __call__(self, query: EvalQuery) -> list[tuple[str, int]]:
        q = query.query
        text = " ".join([q.title, q.text, *(k for s in q.stacks for k in s.keys)])
        words = dict.fromkeys(
            w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in terms.STOPWORDS
        )
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        marks = ",".join("?" * len(q.repos))
        rows = self.db.execute(
            f"SELECT repo, number FROM docs WHERE docs MATCH ? AND repo IN ({marks}) "
            "ORDER BY bm25(docs), rowid LIMIT 10",
            (match, *q.repos),
        ).fetchall()
        return [(str(repo), int(number)) for repo, number in rows]


class GitHubKeywords:
    """GitHub's issue search, simulated: rare title words ANDed over title and body."""

    def __init__(self, corpus: Corpus) -> None:
        self.docs: list[tuple[str, int, set[str], set[str], str]] = []
        self.df: dict[str, int] = {}
        for issue in corpus.issues:
            title_words = set(_WORD_RE.findall(issue["title"].lower()))
            words = title_words | set(_WORD_RE.findall(issue["body"].lower()))
            self.docs.append(
                (issue["repo"], issue["number"], title_words, words, issue["updated_at"])
            )
            for word in words:
                self.df[word] = self.df.get(word, 0) + 1

    def __call__(self, query: EvalQuery) -> list[tuple[str, int]]:
        words = [
            w
            for w in dict.fromkeys(_WORD_RE.findall(query.query.title.lower()))
            if w not in terms.STOPWORDS and len(w) > 2 and self.df.get(w)
        ]
        chosen = sorted(words, key=lambda w: (self.df[w], w))[:3]
        if not chosen:
            return []
        repos = set(query.query.repos)
        found = [
            (len(title & set(words)), updated, repo, number)
            for repo, number, title, body, updated in self.docs
            if repo in repos and all(w in body for w in chosen)
        ]
        found.sort(key=lambda row: (-row[0], row[1], row[3]), reverse=False)
        found.sort(key=lambda row: (-row[0], _desc(row[1])))
        return [(repo, number) for _, _, repo, number in found]


def _desc(stamp: str) -> str:
    # Newest first within equal title overlap: invert the ISO string's digits.
    return "".join(chr(ord("9") - ord(c) + ord("0")) if c.isdigit() else c for c in stamp)


@dataclass(frozen=True)
class Run:
    """The figures of one seed."""

    seed: int
    issues: int
    queries: int
    duplicates: int
    results: dict[str, Scores]
    by_kind: dict[str, dict[str, float]]
    kinds: dict[str, int]
    likely_total: int
    likely_right: int
    seconds: float

    @property
    def gain(self) -> float:
        """Recall@5 of ours minus plain BM25's."""
        return self.results["ours"].recall[5] - self.results["bm25"].recall[5]


def run(seed: int, families: int, distractors: int) -> Run:
    """Generate the corpus for `seed`, index it, and score every method."""
    corpus = generate(seed, families=families, distractors=distractors)
    with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "eval.sqlite3") as index:
        index.import_jsonl([json.dumps(issue) for issue in corpus.issues], source="generated")
        likely: dict[str, tuple[int, int]] = {}

        def ours(query: EvalQuery) -> list[tuple[str, int]]:
            ranked = find_duplicates(index, query.query, limit=10, include_weak=True)
            keys = [(c.issue.record.repo, c.issue.record.number) for c in ranked]
            flagged = [
                k for c, k in zip(ranked, keys, strict=True) if c.level is Level.LIKELY_DUPLICATE
            ]
            likely[query.family] = (len(flagged), sum(k in query.relevant for k in flagged))
            return keys

        def candidates_bm25(query: EvalQuery) -> list[tuple[str, int]]:
            ranked = find_duplicates(index, query.query, limit=10, method=Method.BM25)
            return [(c.issue.record.repo, c.issue.record.number) for c in ranked]

        started = time.perf_counter()
        plain = PlainBM25(corpus)
        results = {
            "ours": evaluate(corpus.queries, ours),
            "bm25": evaluate(corpus.queries, plain),
            "github-keywords": evaluate(corpus.queries, GitHubKeywords(corpus)),
            "ours-candidates-bm25": evaluate(corpus.queries, candidates_bm25),
        }
        seconds = time.perf_counter() - started
        kinds = sorted({q.kind for q in corpus.queries})
        by_kind = {
            kind: {
                name: evaluate([q for q in corpus.queries if q.kind == kind], ranker).recall[5]
                for name, ranker in (("ours", ours), ("bm25", plain))
            }
            for kind in kinds
        }
    return Run(
        seed=seed,
        issues=len(corpus.issues),
        queries=len(corpus.queries),
        duplicates=sum(len(q.relevant) for q in corpus.queries),
        results=results,
        by_kind=by_kind,
        kinds={kind: sum(q.kind == kind for q in corpus.queries) for kind in kinds},
        likely_total=sum(total for total, _ in likely.values()),
        likely_right=sum(right for _, right in likely.values()),
        seconds=seconds,
    )


def _table(results: dict[str, Scores]) -> list[str]:
    lines = [f"{'method':<22} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}"]
    for name, scores in results.items():
        r = scores.recall
        lines.append(f"{name:<22} {r[1]:>6.3f} {r[5]:>6.3f} {r[10]:>6.3f} {scores.mrr:>6.3f}")
    return lines


def _mean(runs: Sequence[Run]) -> dict[str, Scores]:
    names = runs[0].results
    return {
        name: Scores(
            recall={k: sum(r.results[name].recall[k] for r in runs) / len(runs) for k in CUTOFFS},
            mrr=sum(r.results[name].mrr for r in runs) / len(runs),
        )
        for name in names
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--seeds", help="comma-separated seeds: per-seed gains and the means")
    parser.add_argument("--families", type=int, default=60)
    parser.add_argument("--distractors", type=int, default=600)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
    runs = [run(seed, args.families, args.distractors) for seed in seeds]
    results = _mean(runs)
    likely_total = sum(r.likely_total for r in runs)
    likely_right = sum(r.likely_right for r in runs)
    precision = likely_right / likely_total if likely_total else 0.0
    gain = results["ours"].recall[5] - results["bm25"].recall[5]
    if args.json:
        document: dict[str, object] = {
            name: {"recall": s.recall, "mrr": s.mrr} for name, s in results.items()
        }
        document["likely_duplicate_precision"] = precision
        document["seeds"] = seeds
        print(json.dumps(document, indent=2))
        return 0
    first = runs[0]
    print(
        f"corpus per seed: {first.issues} issues, {first.queries} queries with "
        f"{first.duplicates} known duplicates, {first.issues - first.duplicates} distractors"
    )
    if len(runs) > 1:
        for r in runs:
            print(
                f"  seed {r.seed}: R@5 ours {r.results['ours'].recall[5]:.3f}, "
                f"bm25 {r.results['bm25'].recall[5]:.3f}, gain {r.gain:+.3f}"
            )
        print(f"mean over seeds {','.join(map(str, seeds))}:")
    else:
        print(f"seed {first.seed}:")
    print("\n".join(_table(results)))
    print(f"Recall@5 gain over BM25: {gain:+.3f} (goal >= +0.10)")
    print(f"likely-duplicate precision: {precision:.3f} ({likely_right}/{likely_total} candidates)")
    if len(runs) == 1:
        for kind, recalls in first.by_kind.items():
            print(
                f"  R@5 for {kind} queries (n={first.kinds[kind]}): ours {recalls['ours']:.3f}, "
                f"bm25 {recalls['bm25']:.3f}"
            )
    print(f"({sum(r.seconds for r in runs):.1f} s for all rankings)")
    return 0 if gain >= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
