"""Benchmark `report analyze --json` at scale against a bare read-and-split of the same files.

The bundle is generated (`generate_bundle.py`: N ranks x S snapshots x T threads, one
py-spy text file per rank) or given with `--bundle`. Two commands run in turn, each in a
fresh process, A B A B ... after one warm-up of each (so both read from the page cache):

- A: `python -m reporter analyze --json BUNDLE` (stdout to /dev/null): the whole command,
  interpreter start-up, imports, load, parse, analysis, JSON and masking included;
- B: the yardstick, a bare read-and-split: a fresh interpreter walks the folder, reads every
  file as UTF-8 text and splits it into lines, nothing more (no parsing, no objects per line).

Printed as median [min - max] over `--runs` pairs (a shared machine is noisy: quote the
median, the spread shows the noise): wall seconds of A and of B, the ratio A/B taken pair by
pair (goal <= 10x), the same for CPU seconds (user + sys: what a busy machine moves
less), A's peak RSS (the child's `ru_maxrss`, started by a small
process of its own) against the input size
(goal <= 4x), the same for a process that only imports what `analyze` imports, and the load
average before and after. `--traced` adds tracemalloc's peak of Python allocations during
load + analyze (slow: run it alone).

    python benchmarks/bench_analyze.py [--ranks 4096] [--snapshots 3] [--runs 5] [--bundle DIR]

Bytecode caches are used (`PYTHONDONTWRITEBYTECODE` is dropped for the commands; the
warm-up writes them), as a `pip install` leaves them. The interpreter that runs this
script runs both commands, so the same script measures
another checkout when run by that checkout's interpreter (from a folder outside both).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The yardstick: read every file and split it into lines; nothing more.
READ_SPLIT = """
import os, sys
n = 0
for dirpath, _, names in os.walk(sys.argv[1]):
    for name in names:
        with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
            n += len(handle.read().splitlines())
print(n)
"""

# What `report analyze --json` imports before it reads a file: its fixed memory.
_IMPORT_ONLY = (
    "import reporter.cli, reporter.cli.report, reporter.app, reporter.console.documents, "
    "reporter.analysis, reporter.render.answer, reporter.secrets"
)

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

MB = 1024 * 1024


# Runs one command and prints its wall seconds and peak RSS. A small process of its own:
# a child's peak RSS counts the pages of whoever forked it, so this one stays small.
_TIMER = """
import os, resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL).returncode
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(seconds, usage.ru_maxrss * 1024, code, usage.ru_utime + usage.ru_stime)
"""


# Bytecode caches are written and read, as an installed package has them: without them
# every run compiles reporter's ~300 modules again (a quarter of a second).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(cmd: list[str]) -> tuple[float, int, float]:
    """Run `cmd` (output thrown away); its wall seconds, peak RSS in bytes and CPU seconds."""
    out = subprocess.run(
        [sys.executable, "-c", _TIMER, *cmd], capture_output=True, text=True, check=True, env=_ENV
    ).stdout.split()
    if out[2] != "0":
        raise SystemExit(f"{' '.join(cmd)}: exit {out[2]}")
    return float(out[0]), int(out[1]), float(out[3])


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """`median [min - max]` of `values`."""
    mid = statistics.median(values)
    return f"{fmt.format(mid)} [{fmt.format(min(values))} - {fmt.format(max(values))}]"


def measure(folder: Path, runs: int) -> dict[str, list[float]]:
    """A and B in turn, `runs` pairs after one warm-up of each."""
    analyze_cmd = [sys.executable, "-m", "reporter", "analyze", "--json", str(folder)]
    split_cmd = [sys.executable, "-c", READ_SPLIT, str(folder)]
    run_once(analyze_cmd)
    run_once(split_cmd)
    out: dict[str, list[float]] = {
        "a": [],
        "b": [],
        "ratio": [],
        "rss": [],
        "b_rss": [],
        "a_cpu": [],
        "b_cpu": [],
        "cpu_ratio": [],
    }
    for _ in range(runs):
        a, rss, a_cpu = run_once(analyze_cmd)
        b, b_rss, b_cpu = run_once(split_cmd)
        out["a"].append(a)
        out["b"].append(b)
        out["ratio"].append(a / b)
        out["a_cpu"].append(a_cpu)
        out["b_cpu"].append(b_cpu)
        out["cpu_ratio"].append(a_cpu / b_cpu)
        out["rss"].append(rss)
        out["b_rss"].append(b_rss)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark report analyze at scale.")
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="pairs of runs (A then B)")
    parser.add_argument("--bundle", type=Path, help="reuse this folder instead of generating")
    parser.add_argument("--traced", action="store_true", help="also tracemalloc's peak (slow)")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from generate_bundle import generate

    with tempfile.TemporaryDirectory(prefix="reporter-bench-") as tmp:
        folder = args.bundle or Path(tmp) / "bundle"
        if args.bundle is None:
            generate(folder, ranks=args.ranks, threads=args.threads, snapshots=args.snapshots)
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        files = sum(1 for p in folder.rglob("*") if p.is_file())
        verdict = _verdict(folder)
        load_before = os.getloadavg()
        got = measure(folder, args.runs)
        load_after = os.getloadavg()
        base_rss = run_once([sys.executable, "-c", _IMPORT_ONLY])[1]
        traced = None
        if args.traced:
            traced = int(
                subprocess.run(
                    [sys.executable, "-c", _TRACED, str(folder)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
            )

    rss = statistics.median(got["rss"])
    print(
        f"input: {files} files, {size / MB:.1f} MiB ("
        + (
            f"{args.bundle}"
            if args.bundle
            else f"generated: {args.ranks} ranks x {args.snapshots} snapshots x "
            f"{args.threads} threads"
        )
        + f"); verdict {verdict}"
    )
    print(f"python: {sys.executable}; {os.cpu_count()} cores")
    print(
        "load average (1, 5, 15 min): before "
        + ", ".join(f"{x:.2f}" for x in load_before)
        + "; after "
        + ", ".join(f"{x:.2f}" for x in load_after)
    )
    print(f"runs: {args.runs} pairs (A then B), median [min - max]")
    print(f"A report analyze --json:  {spread(got['a'])} s")
    print(f"B read + split lines:     {spread(got['b'])} s")
    print(f"A/B, pair by pair:        {spread(got['ratio'], '{:.1f}')}x   goal <= 10x")
    print(
        f"CPU seconds (user+sys):   A {spread(got['a_cpu'])}, B {spread(got['b_cpu'])}; "
        f"A/B {spread(got['cpu_ratio'], '{:.1f}')}x (less moved by other load than wall time)"
    )
    print(
        f"A peak RSS:               {rss / MB:.0f} MiB = {rss / size:.2f}x input   goal <= 4x "
        f"(B {statistics.median(got['b_rss']) / MB:.0f} MiB)"
    )
    print(
        f"import-only process:      {base_rss / MB:.0f} MiB; A above it "
        f"{(rss - base_rss) / MB:.0f} MiB = {(rss - base_rss) / size:.2f}x input"
    )
    if traced is not None:
        print(f"tracemalloc peak (load + analyze): {traced / MB:.0f} MiB ({traced / size:.2f}x)")


def _verdict(folder: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "reporter", "analyze", "--json", str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=_ENV,
    ).stdout
    return str(json.loads(out)["verdict"])


if __name__ == "__main__":
    main()
