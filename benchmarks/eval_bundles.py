"""Duplicate search for the query the product makes: a bundle, against real upstream issues.

Each fixture bundle whose hang is a mechanism real upstream issues describe is paired
with those issues in the shared pool of real vLLM and SGLang issues (read from outside
the repository, `--real DIR`; only the issue numbers are here, no text of theirs). The
pool is indexed in a temporary folder, each bundle is analysed and searched as
`report search-upstream BUNDLE --repo R` would, and R@1/5/10 and MRR are printed for:

* ours (rank.py as it is), with and without the semantic model;
* round 3's model (its coefficients, `fit_search.ROUND3`) on the same candidates;
* plain BM25 over the bundle's title, text and frame names (`eval_search.PlainBM25`).

With `--show` it also prints the top five of `search-upstream` with their reasons for
every fixture bundle (paired or not), and the scores the paired issues got, which is
what the bundle cut-off (`rank.RELATED_SCORE_BUNDLE`) is read from.

    python benchmarks/eval_bundles.py --real /work/shared/eval/dupes-dev [--show]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from eval_search import PlainBM25, load_real, recall_mrr
from fit_search import ROUND3, ROUND3_NO_SEMANTIC

from reporter.upstream import rank
from reporter.upstream.index import Index

ROOT = Path(__file__).resolve().parent.parent
BUNDLES = ROOT / "fixtures" / "bundles"

# Bundle -> (repository searched, the pool issues about the same mechanism). Paired only
# where the issue's own text describes that mechanism:
# * sglang#7158: with HiCache and DP attention the scheduler stops before the
#   `all_reduce` of the cache's write check, because a DP rank with no request never
#   reaches it: the TP ranks split between that all_reduce and the idle loop
#   (tp_desync, tp8_desync, full_incident, the launch_* captures of the same program),
#   and one DP replica waits in a world collective while the other keeps decoding
#   (dp_attention).
# * vllm#16841, vllm#36921: vLLM's workers never get the next RPC from the shared-memory
#   broadcast queue ("No available shared memory broadcast block found") while the
#   driver worker waits (vllm_like).
PAIRED: dict[str, tuple[str, frozenset[int]]] = {
    "tp_desync": ("sgl-project/sglang", frozenset({7158})),
    "tp8_desync": ("sgl-project/sglang", frozenset({7158})),
    "full_incident": ("sgl-project/sglang", frozenset({7158})),
    "launch_plain": ("sgl-project/sglang", frozenset({7158})),
    "launch_spawn": ("sgl-project/sglang", frozenset({7158})),
    "launch_torchrun": ("sgl-project/sglang", frozenset({7158})),
    "dp_attention": ("sgl-project/sglang", frozenset({7158})),
    "vllm_like": ("vllm-project/vllm", frozenset({16841, 36921})),
}
# Bundles searched in a repository other than the one their manifest names (the launch_*
# captures name pytorch/pytorch, which the pool holds few issues of).
DEFAULT_REPO = "sgl-project/sglang"


def _bundles() -> list[Path]:
    return sorted(p for p in BUNDLES.iterdir() if (p / "bundle.toml").is_file() or p.is_dir())


def _query(path: Path, repo: str):  # type: ignore[no-untyped-def]
    from reporter.app.report import Options, load_and_analyze
    from reporter.upstream.query import query_from_analysis

    bundle, analysis = load_and_analyze([path], Options())
    return query_from_analysis(bundle, analysis, repos=(repo,))


def main(argv: Sequence[str] | None = None) -> int:
    from reporter.upstream import semantic
    from reporter.upstream.search import find_duplicates
    from reporter.upstream.titles import embed_missing

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", type=Path, required=True, metavar="DIR")
    parser.add_argument("--show", action="store_true", help="top five for every bundle")
    args = parser.parse_args(argv)
    _, pool = load_real(args.real)
    model = semantic.load()
    plain = PlainBM25(pool)
    ranked: dict[str, list[tuple[list[int], frozenset[int]]]] = {}
    paired_scores: list[str] = []
    top5: list[tuple[float, bool]] = []
    with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "bundles.sqlite3") as index:
        index.import_jsonl([json.dumps(issue) for issue in pool], source=str(args.real))
        if model is not None:
            embed_missing(index, model)
        for path in _bundles():
            name = path.name
            repo, relevant = PAIRED.get(name, (None, frozenset()))
            try:
                query = _query(path, repo or DEFAULT_REPO)
            except Exception as err:  # a fixture that is not a bundle (a README, a part)
                print(f"{name}: not searched ({type(err).__name__}: {err})", file=sys.stderr)
                continue
            if not query.repos or query.repos == ("pytorch/pytorch",):
                query = _query(path, DEFAULT_REPO)
            found = {
                "ours": find_duplicates(
                    index, query, limit=10_000, include_weak=True, embedder=model
                ),
                "ours, no semantic": find_duplicates(
                    index, query, limit=10_000, include_weak=True, embedder=None
                ),
            }
            if relevant:
                for method, candidates in found.items():
                    numbers = [c.issue.record.number for c in candidates]
                    ranked.setdefault(method, []).append((numbers, relevant))
                for method, coefficients, key in (
                    ("round 3's model", ROUND3, "ours"),
                    ("round 3's model, no semantic", ROUND3_NO_SEMANTIC, "ours, no semantic"),
                ):
                    rescored = sorted(
                        found[key],
                        key=lambda c: (
                            -rank.total(c.reasons.scores, coefficients),
                            c.issue.record.number,
                        ),
                    )
                    ranked.setdefault(method, []).append(
                        ([c.issue.record.number for c in rescored], relevant)
                    )
                text = " ".join(
                    [query.title, query.text, *(k for s in query.stacks for k in s.keys)]
                )
                ranked.setdefault("BM25 (plain FTS5)", []).append(
                    ([n for _, n in plain.rank(text, query.repos, limit=10)], relevant)
                )
                top5 += [(c.score, c.issue.record.number in relevant) for c in found["ours"][:5]]
                for c in found["ours"]:
                    if c.issue.record.number in relevant:
                        place = found["ours"].index(c) + 1
                        paired_scores.append(
                            f"{name}: #{c.issue.record.number} at rank {place}, score {c.score:.4f}"
                        )
            if args.show:
                _show(name, query, found["ours"], relevant)
    print(f"\nbundle queries paired with real issues: {len(ranked.get('ours', []))}")
    print("| method | R@1 | R@5 | R@10 | MRR |\n|---|---|---|---|---|")
    for method, rows in ranked.items():
        s = recall_mrr(rows)
        print(
            f"| {method} | {s.recall[1]:.2f} | {s.recall[5]:.2f} | {s.recall[10]:.2f} | {s.mrr:.3f} |"
        )
    print("\nscores of the paired issues (ours):")
    print("\n".join(paired_scores))
    queries = len(ranked.get("ours", [])) or 1
    print("\nbundle cut-off: in the top five of each paired bundle query (ours)")
    print("| cut-off | paired issues at or above (share of queries) | other issues per query |")
    print("|---|---|---|")
    for cut in CUTOFFS_SHOWN:
        right = sum(1 for score, paired in top5 if paired and score >= cut)
        wrong = sum(1 for score, paired in top5 if not paired and score >= cut)
        print(f"| {cut:.3f} | {right / queries:.2f} | {wrong / queries:.2f} |")
    return 0


CUTOFFS_SHOWN = (0.005, 0.01, 0.015, 0.02, 0.03, 0.05)


def _show(name: str, query, candidates, relevant: frozenset[int]) -> None:  # type: ignore[no-untyped-def]
    shown = [c for c in candidates if c.level is not rank.Level.WEAK][:5]
    weak = not shown
    if weak:
        shown = candidates[: rank.WEAK_SHOWN]
    print(f"\n#### {name} (verdict `{query.verdict}`, searched in {', '.join(query.repos)})")
    print(f"query title: {query.title}")
    if relevant:
        print(f"paired with: {', '.join(f'#{n}' for n in sorted(relevant))}")
    if weak:
        print("(nothing related: the best three, shown as weak)")
    for n, c in enumerate(shown, 1):
        level = "weak" if weak else c.level.value
        mark = "  <- paired" if c.issue.record.number in relevant else ""
        print(f"{n}. {c.score:.4f} {level} #{c.issue.record.number}{mark}")
        for note in c.reasons.notes:
            print(f"   - {note}")


if __name__ == "__main__":
    sys.exit(main())
