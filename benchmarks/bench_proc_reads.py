"""What the per-round `/proc` reads of `report collect` cost the target, measured from inside.

The target is a Python process shaped like a service worker: one ticker thread that
sleeps 1 ms at a time and records every interval between two ticks, `--threads` idle
threads, `--fds` open pipes and sockets (TCP connections to itself and unix socket
pairs, so its socket tables have rows to find), and two children, one of them a zombie.
The bench reads it in turn:

- `no reads`: nothing reads the target (scheduler noise on this machine);
- `busy loop`: the bench spins on a CPU, reading nothing: the share of any slowdown that
  is only a reader taking a core the target could have used;
- `status copy`: what collect read before issue 30, `/proc/PID/status` and `wchan`;
- `/proc reads`: `procread.read_waits`, the four files of one round (threads, fds,
  sockets, family), back to back for the whole window: far more often than a collection
  reads (once per snapshot round, one to three rounds).

Each mode runs `--seconds` at a time, the modes in turn for `--cycles` cycles (so slow
drifts of the machine's load fall on all of them alike). Per mode it prints the ticker's
longest interval, its 99.9th and 99th percentiles, the share of intervals over 2 ms, and
how long one read took (median). The reads never stop the target (no ptrace, no signal):
what they can cost is lock contention in the kernel (the task's locks while its files
are read) and CPU taken on a shared machine.

    python benchmarks/bench_proc_reads.py [--seconds 3] [--cycles 3] [--threads 8] [--fds 64] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from reporter.collect import procfs, procread

TARGET = r"""
import json, os, socket, subprocess, sys, threading, time

threads, fds = int(sys.argv[1]), int(sys.argv[2])
intervals = []
lock = threading.Lock()

def ticker():
    last = time.monotonic()
    while True:
        time.sleep(0.001)
        now = time.monotonic()
        with lock:
            intervals.append(now - last)
        last = now

def idle():
    threading.Event().wait()

keep = []
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(fds)
for i in range(fds // 4):
    keep.append(socket.create_connection(server.getsockname()))
    keep.append(server.accept()[0])
    keep.extend(socket.socketpair())
for i in range(fds // 4):
    keep.extend(os.pipe())
live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
dead = subprocess.Popen([sys.executable, "-c", "pass"])
while not open(f"/proc/{dead.pid}/stat").read().rsplit(") ", 1)[1].startswith("Z"):
    time.sleep(0.01)
for i in range(threads):
    threading.Thread(target=idle, daemon=True).start()
threading.Thread(target=ticker, daemon=True).start()
print("ready", live.pid, flush=True)
for line in sys.stdin:
    with lock:
        out, intervals[:] = list(intervals), []
    print(json.dumps(out), flush=True)
live.kill()
"""

MODES = ("no reads", "busy loop", "status copy", "/proc reads")


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """The ticker's intervals (ms) during one mode, and the reads' own time."""

    mode: str
    ticks: int
    max_ms: float
    p999_ms: float
    p99_ms: float
    over_2ms_pct: float
    reads: int
    read_median_ms: float


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _figures(mode: str, intervals: list[float], reads: list[float]) -> Figures:
    ordered = sorted(intervals)
    return Figures(
        mode=mode,
        ticks=len(ordered),
        max_ms=round(ordered[-1] * 1000, 2),
        p999_ms=round(_quantile(ordered, 0.999) * 1000, 2),
        p99_ms=round(_quantile(ordered, 0.99) * 1000, 2),
        over_2ms_pct=round(100 * sum(1 for x in ordered if x > 0.002) / len(ordered), 2),
        reads=len(reads),
        read_median_ms=round(statistics.median(reads) * 1000, 3) if reads else 0.0,
    )


def _window(mode: str, pid: int, seconds: float) -> list[float]:
    """Read the target as `mode` says for `seconds`; the time of each read."""
    reads: list[float] = []
    end = time.monotonic() + seconds
    k = 0
    while time.monotonic() < end:
        start = time.monotonic()
        if mode == "no reads":
            time.sleep(0.01)
            continue
        if mode == "busy loop":
            # The CPU the reads take, without reading anything: on a small machine the
            # reader competes with the target for a core.
            while time.monotonic() - start < 0.02:
                pass
            reads.append(time.monotonic() - start)
            continue
        if mode == "status copy":
            procfs.status_copy(pid)
        else:
            procread.read_waits(pid, snapshot=k)
        reads.append(time.monotonic() - start)
        k += 1
    return reads


def measure(*, seconds: float, cycles: int, threads: int, fds: int) -> list[Figures]:
    """Start the target, run the modes in turn, return one row per mode."""
    proc = subprocess.Popen(
        [sys.executable, "-c", TARGET, str(threads), str(fds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if not proc.stdout.readline().startswith("ready"):
            raise SystemExit("the target did not start")
        time.sleep(0.5)

        def intervals() -> list[float]:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("next\n")
            proc.stdin.flush()
            return [float(x) for x in json.loads(proc.stdout.readline())]

        seen: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in MODES}
        for _ in range(cycles):
            for mode in MODES:
                intervals()  # forget what came before this window
                reads = _window(mode, proc.pid, seconds)
                seen[mode][0].extend(intervals())
                seen[mode][1].extend(reads)
        return [_figures(mode, *seen[mode]) for mode in MODES]
    finally:
        proc.stdin.close()
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8, help="idle threads in the target")
    parser.add_argument("--fds", type=int, default=64, help="pipes and sockets in the target")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = measure(seconds=args.seconds, cycles=args.cycles, threads=args.threads, fds=args.fds)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    print(
        f"target: 1 ticker (1 ms sleeps) + {args.threads} idle threads, ~{args.fds} pipes and "
        f"sockets, 2 children (1 zombie); {args.cycles} x {args.seconds:g} s per mode"
    )
    print(
        f"{'mode':<12} {'ticks':>6} {'max':>9} {'p99.9':>9} {'p99':>8} {'>2 ms':>7} "
        f"{'reads':>6} {'one read':>9}"
    )
    for r in rows:
        print(
            f"{r.mode:<12} {r.ticks:>6} {r.max_ms:>6.2f} ms {r.p999_ms:>6.2f} ms "
            f"{r.p99_ms:>5.2f} ms {r.over_2ms_pct:>6.2f}% {r.reads:>6} {r.read_median_ms:>6.3f} ms"
        )
    base = rows[0]
    for r in rows[1:]:
        print(
            f"{r.mode}: longest stall {r.max_ms / base.max_ms:.2f}x, p99.9 "
            f"{r.p999_ms / base.p999_ms:.2f}x the no-reads baseline"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
