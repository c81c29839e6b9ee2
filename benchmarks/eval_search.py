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

With `--real DIR [DIR ...]` it runs on real duplicate sets kept outside the repository
(e.g. 51 pairs from the vLLM and SGLang trackers, `pairs.jsonl` and `pool.jsonl`, see its
README; or pairs mined from other trackers in the same format): ours with and without the
semantic signal, plain BM25 and the keyword baseline, on the pairs that are not
re-submissions and on all, over all queries, each half of a fixed split by query (even
and odd numbers) and each tracker. The pool is searched per repository; a query never
finds itself. These figures use the coefficients in rank.py, fitted on every dev pair:
for figures on pairs the fit did not see (held-out tracker, alternating halves), run
`benchmarks/fit_search.py`.

    python benchmarks/eval_search.py --real /work/shared/eval/dupes-dev /work/notes/dupes-mined

With `--cv` (and `--real`) every model choice is scored out of sample instead: 5-fold
cross-validation over the pairs and leave-one-tracker-out (fit on vLLM, test on SGLang,
and the reverse), MRR and R@5 per fold with the mean and spread over folds, for plain
BM25 on the same folds, round 3's model (as shipped, and refitted per fold) and the
candidate designs of round 4, each with the light stemmer of round 3 and with Snowball
(`fit_search.cv_report`); then the out-of-sample calibration of the related cut-off.

    python benchmarks/eval_search.py --real /work/shared/eval/dupes-dev --cv
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    return recall_mrr([(ranker(query), query.relevant) for query in queries])


def recall_mrr(ranked: Sequence[tuple[Sequence[Any], Collection[Any]]]) -> Scores:
    """Recall@1/5/10 and MRR of (ranking best first, the relevant keys) pairs; a query
    whose first relevant key is not in its top 10 counts 0."""
    hits = dict.fromkeys(CUTOFFS, 0)
    reciprocal = 0.0
    for keys, relevant in ranked:
        top = keys[: max(CUTOFFS)]
        first = next((i for i, key in enumerate(top, start=1) if key in relevant), None)
        if first is not None:
            reciprocal += 1.0 / first
            for k in CUTOFFS:
                hits[k] += first <= k
    n = len(ranked) or 1
    return Scores(recall={k: hits[k] / n for k in CUTOFFS}, mrr=reciprocal / n)


class PlainBM25:
    """Okapi BM25 as a search engine ships it: SQLite FTS5 `bm25()` with the default
    `unicode61` tokenizer over title and body, the query's words OR-ed (title, text and
    frame names, as the query would be typed or pasted), restricted to the query's repos."""

    def __init__(self, corpus: Corpus | Sequence[dict[str, Any]]) -> None:
        issues = corpus.issues if isinstance(corpus, Corpus) else corpus
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(repo UNINDEXED, number UNINDEXED, title, body)"
        )
        self.db.executemany(
            "INSERT INTO docs(repo, number, title, body) VALUES (?, ?, ?, ?)",
            [(i["repo"], i["number"], i["title"], i["body"] or "") for i in issues],
        )

    def __call__(self, query: EvalQuery) -> list[tuple[str, int]]:
        q = query.query
        text = " ".join([q.title, q.text, *(k for s in q.stacks for k in s.keys)])
        return self.rank(text, q.repos)

    def rank(self, text: str, repos: Sequence[str], limit: int = 10) -> list[tuple[str, int]]:
        """The top `limit` issues of `repos` for `text`, its words OR-ed."""
        words = dict.fromkeys(
            w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in terms.STOPWORDS
        )
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        marks = ",".join("?" * len(repos))
        rows = self.db.execute(
            f"SELECT repo, number FROM docs WHERE docs MATCH ? AND repo IN ({marks}) "
            "ORDER BY bm25(docs), rowid LIMIT ?",
            (match, *repos, limit),
        ).fetchall()
        return [(str(repo), int(number)) for repo, number in rows]


class GitHubKeywords:
    """GitHub's issue search, simulated: rare title words ANDed over title and body."""

    def __init__(self, corpus: Corpus | Sequence[dict[str, Any]]) -> None:
        issues = corpus.issues if isinstance(corpus, Corpus) else corpus
        self.docs: list[tuple[str, int, set[str], set[str], str]] = []
        self.df: dict[str, int] = {}
        for issue in issues:
            title_words = set(_WORD_RE.findall(issue["title"].lower()))
            words = title_words | set(_WORD_RE.findall((issue["body"] or "").lower()))
            # Without dates (the real pool has none) the newest is the highest number.
            updated = issue.get("updated_at") or f"{issue['number']:012d}"
            self.docs.append((issue["repo"], issue["number"], title_words, words, updated))
            for word in words:
                self.df[word] = self.df.get(word, 0) + 1

    def __call__(self, query: EvalQuery) -> list[tuple[str, int]]:
        return self.rank(query.query.title, query.query.repos)

    def rank(self, title: str, repos_: Sequence[str]) -> list[tuple[str, int]]:
        """Issues of `repos_` holding the title's three rarest words, best first."""
        words = [
            w
            for w in dict.fromkeys(_WORD_RE.findall(title.lower()))
            if w not in terms.STOPWORDS and len(w) > 2 and self.df.get(w)
        ]
        chosen = sorted(words, key=lambda w: (self.df[w], w))[:3]
        if not chosen:
            return []
        repos = set(repos_)
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


# --- the real evaluation set (outside the repository) ---------------------------------

RESUBMISSION = ("identical re-submission", "same-title re-submission")
REAL_METHODS = ("ours", "ours-no-semantic", "bm25", "github-keywords")


@dataclass(frozen=True)
class RealPair:
    """One real query issue and the numbers of the issues it duplicates."""

    repo: str
    number: int
    title: str
    body: str
    duplicates: frozenset[int]
    resubmission: bool

    @property
    def half(self) -> str:
        """`even` or `odd`: a fixed split by query (the number's parity)."""
        return "even" if self.number % 2 == 0 else "odd"


def load_real(folder: Path) -> tuple[list[RealPair], list[dict[str, Any]]]:
    """The pairs and the pool of a real evaluation folder (see its README)."""
    pairs_path, pool_path = folder / "pairs.jsonl", folder / "pool.jsonl"
    missing = [p.name for p in (pairs_path, pool_path) if not p.is_file()]
    if missing:
        raise SystemExit(
            f"{folder}: no {' or '.join(missing)} there; the real evaluation set is kept "
            "outside the repository (e.g. /work/shared/eval/dupes-dev). "
            "Tip: pass --real with the folder that holds pairs.jsonl and pool.jsonl"
        )
    pairs: list[RealPair] = []
    for n, line in enumerate(pairs_path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            query = obj["query"]
            pairs.append(
                RealPair(
                    repo=str(obj["repo"]),
                    number=int(query["number"]),
                    title=str(query["title"]),
                    body=str(query.get("body") or ""),
                    duplicates=frozenset(int(d) for d in obj["duplicates"]),
                    resubmission=str(obj.get("evidence", "")).startswith(RESUBMISSION),
                )
            )
        except (ValueError, KeyError, TypeError) as err:
            raise SystemExit(f"{pairs_path}:{n}: not a pair ({err})") from err
    pool: list[dict[str, Any]] = []
    for n, line in enumerate(pool_path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            # Only what a tracker shows: the set's own bookkeeping (`role`) stays out.
            pool.append(
                {
                    "repo": str(obj["repo"]),
                    "number": int(obj["number"]),
                    "title": str(obj["title"]),
                    "body": str(obj.get("body") or ""),
                    "state": obj.get("state") if obj.get("state") in ("open", "closed") else "open",
                    "labels": list(obj.get("labels") or []),
                }
            )
        except (ValueError, KeyError, TypeError) as err:
            raise SystemExit(f"{pool_path}:{n}: not an issue ({err})") from err
    return pairs, pool


def _score_pairs(pairs: Sequence[RealPair], ranked: dict[int, list[int]]) -> Scores:
    return recall_mrr(
        [([n for n in ranked[id(pair)] if n != pair.number], pair.duplicates) for pair in pairs]
    )


def run_real(folder: Path) -> tuple[list[RealPair], dict[str, dict[int, list[int]]], list[str]]:
    """Rank every pair's query with each method; the rankings (numbers, best first) by
    method and pair, and notes."""
    from reporter.upstream import semantic

    pairs, pool = load_real(folder)
    notes: list[str] = []
    model = semantic.load()
    if model is None:
        notes.append(semantic.MISSING_NOTE)
    return pairs, _rank_real(folder, pairs, pool, model), notes


def _rank_real(
    folder: Path, pairs: Sequence[RealPair], pool: Sequence[dict[str, Any]], model: Any
) -> dict[str, dict[int, list[int]]]:
    from reporter.upstream.query import query_from_text
    from reporter.upstream.titles import embed_missing

    rankings: dict[str, dict[int, list[int]]] = {m: {} for m in REAL_METHODS}
    plain, keywords = PlainBM25(pool), GitHubKeywords(pool)
    with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "real.sqlite3") as index:
        index.import_jsonl([json.dumps(issue) for issue in pool], source=str(folder))
        if model is not None:
            embed_missing(index, model)
        for pair in pairs:
            query = query_from_text(
                f"{pair.title}\n{pair.body}", repos=(pair.repo,), title=pair.title
            )
            own = [(pair.repo, pair.number)]
            for name, embedder in (("ours", model), ("ours-no-semantic", None)):
                if name == "ours" and model is None:
                    continue
                found = find_duplicates(
                    index, query, limit=11, include_weak=True, embedder=embedder, exclude=own
                )
                rankings[name][id(pair)] = [c.issue.record.number for c in found]
            rankings["bm25"][id(pair)] = [
                n for _, n in plain.rank(f"{pair.title} {pair.body}", (pair.repo,), limit=11)
            ]
            rankings["github-keywords"][id(pair)] = [
                n for _, n in keywords.rank(pair.title, (pair.repo,))
            ]
    return {m: r for m, r in rankings.items() if r}


def real_report(folders: Sequence[Path], *, as_json: bool) -> int:
    """Print the real-set figures: all pairs and without re-submissions, each on all
    queries, on each half of the fixed split and on each tracker."""
    started = time.perf_counter()
    pairs: list[RealPair] = []
    rankings: dict[str, dict[int, list[int]]] = {}
    notes: list[str] = []
    for folder in folders:
        found, ranked, said = run_real(folder)
        pairs += found
        for method, by_pair in ranked.items():
            rankings.setdefault(method, {}).update(by_pair)
        notes += [n for n in said if n not in notes]
    folder = Path(", ".join(str(f) for f in folders))
    subsets = {
        "non-resubmission": [p for p in pairs if not p.resubmission],
        "all": list(pairs),
    }
    halves: dict[str, str | None] = {"all queries": None, "even half": "even", "odd half": "odd"}
    for repo in sorted({p.repo for p in pairs}):
        halves[f"tracker {repo}"] = f"repo:{repo}"
    figures: dict[str, dict[str, dict[str, Scores]]] = {}
    for subset, chosen in subsets.items():
        figures[subset] = {}
        for half_name, half in halves.items():
            group = [p for p in chosen if _in_group(p, half)]
            figures[subset][half_name] = {
                m: _score_pairs(group, ranked) for m, ranked in rankings.items()
            }
    if as_json:
        document = {
            subset: {
                half: {
                    m: {"recall": s.recall, "mrr": s.mrr, "queries": n}
                    for m, s in by_method.items()
                    for n in [sum(1 for p in subsets[subset] if _in_group(p, halves[half]))]
                }
                for half, by_method in by_half.items()
            }
            for subset, by_half in figures.items()
        }
        print(json.dumps({"real": document, "notes": notes}, indent=2))
        return 0
    for note in notes:
        print(f"note: {note}")
    print(
        f"real set {folder}: {len(pairs)} pairs "
        f"({len(subsets['non-resubmission'])} not re-submissions); coefficients of rank.py "
        "(fitted on every dev pair: in-sample; see fit_search.py for held-out figures)"
    )
    for subset, by_half in figures.items():
        for half_name, results in by_half.items():
            n = sum(1 for p in subsets[subset] if _in_group(p, halves[half_name]))
            if not n:
                continue
            print(f"\n{subset}, {half_name} (n={n}):")
            print("\n".join(_table(results)))
    main = figures["non-resubmission"]["all queries"]
    ours = main.get("ours", main["ours-no-semantic"])
    gain = ours.recall[5] - main["bm25"].recall[5]
    print(
        f"\ngoal on the {len(subsets['non-resubmission'])} non-re-submission pairs: "
        f"R@5 {ours.recall[5]:.3f} (>= 0.70), gain over BM25 {gain:+.3f} (>= +0.15), "
        f"MRR {ours.mrr:.3f} (>= 0.55)"
    )
    print(f"({time.perf_counter() - started:.1f} s)")
    return 0 if ours.recall[5] >= 0.70 and gain >= 0.15 and ours.mrr >= 0.55 else 1


def _in_group(pair: RealPair, group: str | None) -> bool:
    """Whether `pair` is in a group of `real_report`: all (None), a half, a tracker."""
    if group is None:
        return True
    if group.startswith("repo:"):
        return pair.repo == group.removeprefix("repo:")
    return pair.half == group


def cv_main(folders: Sequence[Path]) -> int:
    """Print the cross-validated tables and the related cut-off's calibration."""
    import fit_search

    started = time.perf_counter()
    for line in fit_search.cv_report(folders):
        print(line)
    data = fit_search.collect(folders)
    chosen = next(m for m in fit_search.candidate_models() if m.name == CHOSEN)
    print(f"\n### related cut-off, out of sample (k-fold), model: {chosen.name}\n")
    print("\n".join(fit_search.calibration(data, chosen, CALIBRATION_CUTOFFS)))
    print(f"\n({time.perf_counter() - started:.1f} s)")
    return 0


# The design shipped in rank.py (round 4), and the cut-offs its calibration is shown at.
CHOSEN = "bm25, semantic, reference"
CALIBRATION_CUTOFFS = (0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--seeds", help="comma-separated seeds: per-seed gains and the means")
    parser.add_argument("--families", type=int, default=60)
    parser.add_argument("--distractors", type=int, default=600)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--real",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="evaluate on real duplicate sets (pairs.jsonl, pool.jsonl) read from each DIR",
    )
    parser.add_argument(
        "--cv",
        action="store_true",
        help="with --real: cross-validated (k-fold and held-out tracker) figures per model",
    )
    args = parser.parse_args(argv)
    if args.real is not None and args.cv:
        return cv_main(args.real)
    if args.real is not None:
        return real_report(args.real, as_json=args.json)

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
