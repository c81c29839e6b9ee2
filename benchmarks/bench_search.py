"""Latency of `search-upstream` over a generated index of 50,000 issues.

Prints: index build time (JSONL import: parsing, stack extraction, FTS5, frame and
line tables; then the title vectors of the semantic model), database size, and the warm
query latency of `find_duplicates` with the semantic signal on and off (p50, p95 over
`--runs` queries after one warm-up pass; goal p50 and p95 <= 150 ms on 2 cores). The
issues and queries come from `upstream_corpus` (seeded), so every run builds the same
index; queries are the bundle queries and the pasted-text queries of the corpus.

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
from pathlib import Path

from upstream_corpus import bulk, generate

from reporter.upstream import semantic
from reporter.upstream.index import Index
from reporter.upstream.query import Query
from reporter.upstream.search import find_duplicates
from reporter.upstream.titles import embed_missing


def _latency(
    index: Index, queries: list[Query], runs: int, embedder: bool
) -> tuple[list[float], list[float]]:
    """Sorted wall-clock and CPU milliseconds per query. CPU time is this process's own
    work: on a shared machine the wall clock also counts the time other work held the
    cores, so both are printed."""
    for query in queries:  # warm-up: page cache, statement cache, imports, the model
        find_duplicates(index, query, limit=10, embedder=embedder)
    wall: list[float] = []
    cpu: list[float] = []
    for n in range(runs):
        query = queries[n % len(queries)]
        t0, c0 = time.perf_counter(), time.process_time()
        find_duplicates(index, query, limit=10, embedder=embedder)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return sorted(wall), sorted(cpu)


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
        with Index(path) as index:
            plain = _latency(index, queries, args.runs, False)
            rich = _latency(index, queries, args.runs, True) if model is not None else ([], [])
    print(
        f"issues: {result.imported} ({len(result.skipped)} skipped); generated in {generated:.1f} s"
    )
    print(f"index build: {build:.1f} s ({result.imported / build:,.0f} issues/s)")
    print(f"index size: {size / 1e6:.1f} MB ({size / max(1, result.imported):,.0f} bytes/issue)")
    if model is None:
        print(f"note: {semantic.MISSING_NOTE}")
    else:
        print(
            f"title vectors: {embed:.1f} s ({result.imported / max(embed, 1e-9):,.0f} issues/s); "
            f"index size with them {size_vectors / 1e6:.1f} MB"
        )
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end (other work on the machine slows every figure)"
    )
    p50 = p95 = 0.0
    for name, (wall, cpu) in (("semantic off", plain), ("semantic on", rich)):
        if not wall:
            continue
        p50 = statistics.median(wall)
        p95 = wall[int(0.95 * (len(wall) - 1))]
        cpu50, cpu95 = statistics.median(cpu), cpu[int(0.95 * (len(cpu) - 1))]
        print(
            f"warm query, {name}, over {result.imported} issues ({args.runs} runs, "
            f"{len(queries)} queries): wall p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
            f"max {wall[-1]:.1f} ms; CPU p50 {cpu50:.1f} ms, p95 {cpu95:.1f} ms "
            f"(goal <= 150 ms)"
        )
    return 0 if p50 <= 150 and p95 <= 150 else 1


if __name__ == "__main__":
    sys.exit(main())
