"""Benchmark `report analyze` on a generated 4,096-rank bundle with 3 snapshots.

Prints, each as the best of `--repeat` runs in a fresh process:
- wall time of `report analyze --json BUNDLE` (the whole command: start-up, load, parse, analyze, JSON);
- wall time of a plain Python pass that only reads the same files and splits them into lines;
- their ratio (goal: <= 10x) and the absolute time (goal: <= 3 s on 2 cores);
- peak memory: the process's peak RSS, the same for a process that only imports the CLI,
  and tracemalloc's peak of Python allocations during load + analyze, each against the input size
  (goal: <= 5x the input).

    python benchmarks/bench_analyze.py [--ranks 4096] [--snapshots 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_SPLIT_ONLY = """
import os, sys, resource
n = 0
for dirpath, _, names in os.walk(sys.argv[1]):
    for name in names:
        with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
            n += len(handle.read().splitlines())
print(n)
"""

_IMPORT_ONLY = "import reporter.cli"

_TRACED = """
import sys, tracemalloc
from pathlib import Path
tracemalloc.start()
from reporter.load import bundle
from reporter.analysis import analyze
before = tracemalloc.get_traced_memory()[0]
tracemalloc.reset_peak()
b = bundle.load([Path(sys.argv[1])])
a = analyze(b)
print(tracemalloc.get_traced_memory()[1] - before)
"""


def _timed(cmd: list[str]) -> tuple[float, int, str]:
    """Run `cmd`; return wall seconds, the child's peak RSS in bytes, and its stdout."""
    script = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "if p.returncode: sys.stderr.write(p.stderr); sys.exit(p.returncode)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "print(dt, rss); print(p.stdout[-2000:])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *cmd], capture_output=True, text=True, check=True
    ).stdout
    head, _, rest = out.partition("\n")
    seconds, rss = head.split()
    return float(seconds), int(rss), rest


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark report analyze at scale.")
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bundle", type=Path, help="reuse this folder instead of generating")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from generate_bundle import generate

    with tempfile.TemporaryDirectory(prefix="reporter-bench-") as tmp:
        folder = args.bundle or Path(tmp) / "bundle"
        if args.bundle is None:
            generate(folder, ranks=args.ranks, threads=args.threads, snapshots=args.snapshots)
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        files = sum(1 for p in folder.rglob("*") if p.is_file())

        analyze_cmd = [sys.executable, "-m", "reporter", "analyze", "--json", str(folder)]
        runs = [_timed(analyze_cmd) for _ in range(args.repeat)]
        best = min(r[0] for r in runs)
        peak = max(r[1] for r in runs)
        verdict = _verdict(folder)

        split = min(
            _timed([sys.executable, "-c", _SPLIT_ONLY, str(folder)])[0] for _ in range(args.repeat)
        )
        base_rss = _timed([sys.executable, "-c", _IMPORT_ONLY])[1]
        traced = int(_timed([sys.executable, "-c", _TRACED, str(folder)])[2].strip())

    mb = 1024 * 1024
    print(
        f"input: {args.ranks} ranks x {args.snapshots} snapshots x {args.threads} threads, "
        f"{files} files, {size / mb:.1f} MiB; verdict {verdict}"
    )
    print(f"report analyze --json: {best:.2f} s (best of {args.repeat})   goal <= 3 s")
    print(f"read + split lines:    {split:.2f} s")
    print(f"ratio:                 {best / split:.1f}x   goal <= 10x")
    print(
        f"peak RSS:              {peak / mb:.0f} MiB ({peak / size:.1f}x input); "
        f"import-only process {base_rss / mb:.0f} MiB; "
        f"difference {(peak - base_rss) / mb:.0f} MiB ({(peak - base_rss) / size:.1f}x input)   goal <= 5x"
    )
    print(f"tracemalloc peak (load + analyze): {traced / mb:.0f} MiB ({traced / size:.1f}x input)")


def _verdict(folder: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "reporter", "analyze", "--json", str(folder)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return str(json.loads(out)["verdict"])


if __name__ == "__main__":
    main()
