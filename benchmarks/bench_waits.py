"""Benchmark the wait-for graph's producers on a generated bundle: what each one costs.

Generates `--ranks` ranks (`generate_bundle.py`: py-spy text dumps, `--snapshots` each), runs
the analysis once to warm up, then, best of `--repeat`, prints for every registered producer
(the collective ones and the waits registered by `waits_proc.py` / `waits_dist.py`) the time to run it
in registration order on the same analysis, as one analysis runs them (the first producer
that needs the shared reads, the processes and the record indexes, makes them for all), the sum over the waits producers, and the time of the whole
`analyze` against which that sum is measured (goal: the waits producers under 20% of it).

    python benchmarks/bench_waits.py [--ranks 4096] [--snapshots 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_bundle import generate

from reporter.analysis import analyze, procfacts, waitgraph
from reporter.analysis.classify import default_classifier
from reporter.analysis.stacks import StackTable
from reporter.load.bundle import load

WAITS_MODULES = (
    "reporter.analysis.waits_children",
    "reporter.analysis.waits_io",
    "reporter.analysis.waits_fork",
    "reporter.analysis.waits_dist",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-waits-") as tmp:
        folder = Path(tmp) / "bundle"
        generate(folder, ranks=args.ranks, snapshots=args.snapshots)
        bundle = load([folder])
    analysis = analyze(bundle)
    whole = min(_timed(lambda: analyze(bundle)) for _ in range(args.repeat))
    classifier = default_classifier()
    ctx = waitgraph.GraphContext(
        analysis=analysis, classifier=classifier, table=StackTable(classifier)
    )
    for module in waitgraph.PRODUCER_MODULES:
        __import__(module)
    best: dict[str, float] = {}
    modules: dict[str, str] = {}
    for _ in range(args.repeat):
        # As in one analysis: the shared reads are made by the first producer that needs them.
        procfacts._MEMO.clear()
        for registered in waitgraph.PRODUCERS:
            spent = _timed(lambda r=registered: sum(1 for _ in r.run(bundle, ctx)))
            best[registered.name] = min(best.get(registered.name, spent), spent)
            modules[registered.name] = registered.run.__module__
    print(f"{args.ranks} ranks x {args.snapshots} snapshots; best of {args.repeat}")
    waits_total = 0.0
    for name, spent in best.items():
        if modules[name] in WAITS_MODULES:
            waits_total += spent
        print(f"  {name:16s} {spent * 1000:8.1f} ms  ({modules[name]})")
    print(
        f"waits producers: {waits_total * 1000:.1f} ms; whole analyze: {whole * 1000:.1f} ms; "
        f"share {waits_total / whole:.1%} (goal < 20%)"
    )


def _timed(run: object) -> float:
    start = time.perf_counter()
    run()  # type: ignore[operator]
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
