"""Latency of `search-upstream` over a generated index of 50,000 issues, beside bm25s.

Prints: index build time (JSONL import: parsing, stack extraction, terms and signals,
FTS5, frame and line tables; then the title and body vectors of the semantic model),
database size, and the warm query latency of `find_duplicates` with the semantic signal
on and off (p50, p95 over `--runs` queries after one warm-up pass; goal p50 <= 80 ms and
p95 <= 150 ms on 2 cores). The issues and queries come from `upstream_corpus` (seeded),
so every run builds the same index; queries are the bundle queries and the pasted-text
queries of the corpus.

The baseline is bm25s (a sparse-matrix BM25 in NumPy, `pip install bm25s`; not a
dependency of reporter): one index per repository over title and body with its own
tokenizer and English stopwords, queried with the same text plain BM25 gets in
`eval_search.py` (title, text and frame names), top 10 of the query's repository. Its
build time and size (its saved files) are printed, and its queries run interleaved with
ours (ours, bm25s, ours, ...) so that both see the same load on a shared machine.

    python benchmarks/bench_search.py [--issues 50000] [--runs 300] [--seed 7] [--keep DB]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from upstream_corpus import bulk, generate

from reporter.upstream import semantic
from reporter.upstream.index import Index
from reporter.upstream.query import Query
from reporter.upstream.search import find_duplicates
from reporter.upstream.titles import embed_missing

Timed = tuple[list[float], list[float]]


class Bm25sBaseline:
    """bm25s over the same issues: one index per repository, its own tokenizer (English
    stopwords), saved to `folder` so its size on disk can be read."""

    def __init__(self, issues: Sequence[dict[str, Any]], folder: Path) -> None:
        import bm25s

        self._bm25s = bm25s
        by_repo: dict[str, list[dict[str, Any]]] = {}
        for issue in issues:
            by_repo.setdefault(issue["repo"], []).append(issue)
        self.indexes: dict[str, tuple[Any, list[int]]] = {}
        for repo, chosen in by_repo.items():
            texts = [f"{i['title']}\n{i['body'] or ''}" for i in chosen]
            tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
            retriever = bm25s.BM25()
            retriever.index(tokens, show_progress=False)
            retriever.save(str(folder / repo.replace("/", "__")), show_progress=False)
            self.indexes[repo] = (retriever, [i["number"] for i in chosen])

    def __call__(self, query: Query) -> list[int]:
        text = " ".join([query.title, query.text, *(k for s in query.stacks for k in s.keys)])
        tokens = self._bm25s.tokenize([text], stopwords="en", show_progress=False)
        found: list[tuple[float, int]] = []
        for repo in query.repos:
            retriever, numbers = self.indexes[repo]
            docs, scores = retriever.retrieve(tokens, k=10, show_progress=False)
            found += [(float(s), numbers[int(d)]) for d, s in zip(docs[0], scores[0], strict=True)]
        return [n for _, n in sorted(found, key=lambda x: -x[0])[:10]]


def _latency(
    runners: Sequence[Callable[[Query], object]], queries: list[Query], runs: int
) -> list[Timed]:
    """Sorted wall-clock and CPU milliseconds per query of each runner, the runners taking
    turns on each query. CPU time is this process's own work: on a shared machine the wall
    clock also counts the time other work held the cores, so both are printed."""
    for query in queries:  # warm-up: page cache, statement cache, imports, the model
        for run in runners:
            run(query)
    out: list[Timed] = [([], []) for _ in runners]
    for n in range(runs):
        query = queries[n % len(queries)]
        for run, (wall, cpu) in zip(runners, out, strict=True):
            t0, c0 = time.perf_counter(), time.process_time()
            run(query)
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    return [(sorted(wall), sorted(cpu)) for wall, cpu in out]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the index here and keep it")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    issues = bulk(args.seed, args.issues)
    lines = [json.dumps(issue) for issue in issues]
    generated = time.perf_counter() - started
    queries = [q.query for q in generate(args.seed).queries]

    if args.keep is not None and args.keep.exists():
        print(f"{args.keep}: exists; pass a new path to --keep", file=sys.stderr)
        return 2
    model = semantic.load()
    load_before = os.getloadavg()[0]
    rows: list[tuple[str, str, str, Timed]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bench.sqlite3"
        started = time.perf_counter()
        with Index(path) as index:
            result = index.import_jsonl(lines, source="generated")
        build = time.perf_counter() - started
        size = path.stat().st_size
        embed = 0.0
        if model is not None:
            started = time.perf_counter()
            with Index(path) as index:
                embed_missing(index, model)
            embed = time.perf_counter() - started
        # Closing the last connection checkpoints the WAL into the main file.
        size_vectors = path.stat().st_size
        baseline: Bm25sBaseline | None = None
        try:
            started = time.perf_counter()
            baseline = Bm25sBaseline(issues, Path(tmp) / "bm25s")
            baseline_build = time.perf_counter() - started
            baseline_size = _size(Path(tmp) / "bm25s")
        except ImportError:
            print("note: bm25s is not installed (pip install bm25s): no baseline")
        with Index(path) as index:
            runners: list[Callable[[Query], object]] = [
                lambda q: find_duplicates(index, q, limit=10, embedder=False)
            ]
            names = ["ours, semantic off"]
            if model is not None:
                runners.append(lambda q: find_duplicates(index, q, limit=10, embedder=True))
                names.append("ours, semantic on")
            if baseline is not None:
                runners.append(baseline)
                names.append("bm25s")
            timed = _latency(runners, queries, args.runs)
    for name, times in zip(names, timed, strict=True):
        if name == "bm25s":
            rows.append((name, f"{baseline_build:.1f}", f"{baseline_size / 1e6:.1f}", times))
        elif name.endswith("off"):
            rows.append((name, f"{build:.1f}", f"{size / 1e6:.1f}", times))
        else:
            rows.append(
                (name, f"{build:.1f} + {embed:.1f} vectors", f"{size_vectors / 1e6:.1f}", times)
            )
    print(
        f"issues: {result.imported} ({len(result.skipped)} skipped); generated in {generated:.1f} s"
    )
    print(f"index build: {build:.1f} s ({result.imported / build:,.0f} issues/s)")
    print(f"index size: {size / 1e6:.1f} MB ({size / max(1, result.imported):,.0f} bytes/issue)")
    if model is None:
        print(f"note: {semantic.MISSING_NOTE}")
    else:
        print(
            f"title and body vectors: {embed:.1f} s "
            f"({result.imported / max(embed, 1e-9):,.0f} issues/s); "
            f"index size with them {size_vectors / 1e6:.1f} MB"
        )
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end (other work on the machine slows every figure)"
    )
    print(f"\n{args.runs} warm queries ({len(queries)} distinct), over {result.imported} issues:\n")
    print("| method | build (s) | size (MB) | p50 (ms) | p95 (ms) | CPU p50 | CPU p95 |")
    print("|---|---|---|---|---|---|---|")
    verdict = 0
    for name, built, megabytes, (wall, cpu) in rows:
        p50, p95 = statistics.median(wall), wall[int(0.95 * (len(wall) - 1))]
        cpu50, cpu95 = statistics.median(cpu), cpu[int(0.95 * (len(cpu) - 1))]
        print(
            f"| {name} | {built} | {megabytes} | {p50:.1f} | {p95:.1f} | {cpu50:.1f} | "
            f"{cpu95:.1f} |"
        )
        if name.startswith("ours") and (p50 > 80 or p95 > 150):
            verdict = 1
    print("\ngoal for ours: p50 <= 80 ms, p95 <= 150 ms (wall clock)")
    return verdict


if __name__ == "__main__":
    sys.exit(main())
