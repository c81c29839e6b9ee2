"""How long a py-spy dump pauses its target, blocking vs `--nonblocking`, measured from inside.

The target is a Python process with `--threads` idle threads (a scheduler's
watchdogs and feeders) and one ticker thread that wakes every 0.2 ms and records
every gap between two ticks longer than 0.5 ms, with the monotonic clock (the same
clock across processes on Linux). The bench dumps the target `--dumps` times in each
mode through the collector's own runner (`reporter.collect.dumps.take_dump`), notes
each dump's start and end, and afterwards asks the target for its gaps: the pause of
one dump is the longest gap that overlaps its window. Two baselines take windows as
long as a dump with no dump running: `idle` (scheduler noise on this machine) and
`busy neighbour` (another process spinning on a CPU meanwhile: the part of a
non-blocking dump's "pause" that is CPU contention, not py-spy stopping anything).

    python benchmarks/bench_collect.py [--dumps 20] [--threads 4] [--json]

Prints, per mode: median, 90th percentile and largest pause, and the median wall time
of one py-spy run. On a machine with other work, run it twice: the figures move. Needs py-spy and ptrace rights on a child process.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from reporter.collect.dumps import DumpStatus, pyspy_argv, take_dump

BUSY = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass"
TARGET = r"""
import json, sys, threading, time

gaps = []
lock = threading.Lock()

def ticker():
    last = time.monotonic()
    while True:
        time.sleep(0.0002)
        now = time.monotonic()
        if now - last > 0.0005:
            with lock:
                gaps.append((last, now))
        last = now

def idle(n):
    event = threading.Event()
    def wait_here(depth):
        if depth:
            return wait_here(depth - 1)
        while True:
            event.wait(1.0)
    wait_here(20)

for i in range(int(sys.argv[1])):
    threading.Thread(target=idle, args=(i,), name=f"idle-{i}", daemon=True).start()
threading.Thread(target=ticker, name="ticker", daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    with lock:
        out, gaps[:] = list(gaps), []
    print(json.dumps(out), flush=True)
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeFigures:
    """Pauses (ms) seen by the target during one mode's dump windows."""

    mode: str
    dumps: int
    failed: int
    pause_median_ms: float
    pause_p90_ms: float
    pause_max_ms: float
    dump_wall_median_ms: float


def _pause(windows: list[tuple[float, float]], gaps: list[tuple[float, float]]) -> list[float]:
    """The longest gap overlapping each window, in milliseconds (0 when none)."""
    out = []
    for start, end in windows:
        overlapping = [b - a for a, b in gaps if a < end and b > start]
        out.append(max(overlapping, default=0.0) * 1000)
    return out


def _figures(mode: str, pauses: list[float], walls: list[float], failed: int) -> ModeFigures:
    ordered = sorted(pauses)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return ModeFigures(
        mode=mode,
        dumps=len(pauses),
        failed=failed,
        pause_median_ms=round(statistics.median(pauses), 2),
        pause_p90_ms=round(p90, 2),
        pause_max_ms=round(max(pauses), 2),
        dump_wall_median_ms=round(statistics.median(walls) * 1000, 1) if walls else 0.0,
    )


def measure(pyspy: str, *, dumps: int, threads: int) -> list[ModeFigures]:
    """Run the target, dump it in each mode, then the baselines; return the figures."""
    proc = subprocess.Popen(
        [sys.executable, "-c", TARGET, str(threads)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit("the target did not start")
        time.sleep(0.5)

        def gaps() -> list[tuple[float, float]]:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("gaps\n")
            proc.stdin.flush()
            return [(float(a), float(b)) for a, b in json.loads(proc.stdout.readline())]

        results = []
        walls_seen: list[float] = []
        for mode in ("--nonblocking", "blocking", "idle", "busy neighbour"):
            gaps()  # forget what happened before this mode
            windows: list[tuple[float, float]] = []
            walls: list[float] = []
            failed = 0
            for k in range(dumps):
                start = time.monotonic()
                span = statistics.median(walls_seen) if walls_seen else 0.05
                if mode == "idle":
                    # As long as a dump takes, with nothing reading the target.
                    time.sleep(span)
                elif mode == "busy neighbour":
                    subprocess.run([sys.executable, "-c", BUSY, str(span)], check=True)
                else:
                    argv = pyspy_argv(
                        pyspy, proc.pid, blocking=mode == "blocking", with_locals=False
                    )
                    result = take_dump(
                        argv, pid=proc.pid, snapshot=k, timeout=30, stop=None, retry_transient=False
                    )
                    failed += result.status is not DumpStatus.OK
                    walls.append(result.seconds)
                    walls_seen.append(result.seconds)
                end = time.monotonic()
                windows.append((start, end))
                time.sleep(0.05)
            results.append(_figures(mode, _pause(windows, gaps()), walls, failed))
        return results
    finally:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dumps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=4, help="idle threads in the target")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        print("py-spy is not installed", file=sys.stderr)
        return 1
    figures = measure(pyspy, dumps=args.dumps, threads=args.threads)
    if args.json:
        print(json.dumps([asdict(f) for f in figures], indent=2))
        return 0
    print(f"target: 1 ticker + {args.threads} idle threads; {args.dumps} dumps per mode")
    print(f"{'mode':<14} {'pause median':>13} {'p90':>8} {'max':>8} {'py-spy run':>11} failed")
    for f in figures:
        print(
            f"{f.mode:<14} {f.pause_median_ms:>10.2f} ms {f.pause_p90_ms:>5.2f} ms "
            f"{f.pause_max_ms:>5.2f} ms {f.dump_wall_median_ms:>8.1f} ms {f.failed:>6}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
