"""Time `analyze()` alone on model objects: N ranks x S snapshots x T threads x ~F frames.

No files and no parsing: the bundle is built in memory with a distinct `Frame`
object per frame line, as a parser would produce. Half the ranks wait in an
`all_reduce`, half spin in the idle loop (line numbers change between
snapshots), so the run exercises desync detection, merging and signatures.
Prints the first run (rules compiled, caches cold) and the best of `--repeat`.

    python benchmarks/bench_analysis.py [--ranks 4096] [--snapshots 3] [--threads 4] [--frames 30]
"""

from __future__ import annotations

import argparse
import time

from reporter.analysis import analyze
from reporter.model import Bundle, EvidenceKind, Frame, Location, ProcessDump, ThreadStack

_BOOT = [
    ("run_scheduler_process", "sglang/srt/managers/scheduler.py", 2710),
    ("BaseProcess.run", "multiprocessing/process.py", 108),
    ("BaseProcess._bootstrap", "multiprocessing/process.py", 314),
    ("_main", "multiprocessing/spawn.py", 135),
    ("spawn_main", "multiprocessing/spawn.py", 122),
    ("<module>", "<string>", 1),
]
_COLLECTIVE = [
    ("all_reduce", "torch/distributed/distributed_c10d.py", 2501),
    ("_exception_logger.<locals>.wrapper", "torch/distributed/c10d_logger.py", 83),
    ("Scheduler.check_hicache_events", "sglang/srt/managers/scheduler.py", 900),
]
_IDLE = [
    ("Socket.recv_pyobj", "zmq/sugar/socket.py", 1000),
    ("Scheduler.recv_requests", "sglang/srt/managers/scheduler.py", 1012),
]
_LOOP = ("Scheduler.event_loop_overlap", "sglang/srt/managers/scheduler.py", 1300)
_TAIL = [
    ("Thread.run", "threading.py", 982),
    ("Thread._bootstrap_inner", "threading.py", 1045),
    ("Thread._bootstrap", "threading.py", 1002),
]
_THREADS = [
    ("watchdog", [("Scheduler.watchdog_thread", "sglang/srt/managers/scheduler.py", 77)]),
    (
        "Thread-2 (_feed)",
        [("Condition.wait", "threading.py", 327), ("_feed", "multiprocessing/queues.py", 231)],
    ),
    ("Thread-5 (worker)", [("Queue.get", "queue.py", 171), ("work", "myapp/pool.py", 20)]),
]


def _pad(
    top: list[tuple[str, str, int]], frames: int, tail: list[tuple[str, str, int]]
) -> list[tuple[str, str, int]]:
    # Model-code frames between the top and the loop bring each stack to ~`frames`.
    filler = [
        (f"Layer{i}.forward", f"sglang/srt/models/layer{i}.py", 40 + i)
        for i in range(max(0, frames - len(top) - len(tail)))
    ]
    return [*top, *filler, *tail]


def build(ranks: int, snapshots: int, threads: int, frames: int) -> Bundle:
    """The in-memory bundle; a fresh Frame object for every frame line."""
    dumps = []
    for snap in range(snapshots):
        for rank in range(ranks):
            pid = 10_000 + rank
            if rank < ranks // 2:
                spec = _pad(_COLLECTIVE, frames, [_LOOP, *_BOOT])
            else:
                moved = [(f, file, line + snap) for f, file, line in _IDLE]
                spec = _pad(moved, frames, [_LOOP, *_BOOT])
            stacks = [
                ThreadStack(
                    thread_id=str(pid),
                    name="MainThread",
                    frames=tuple(Frame(function=f, file=file, line=line) for f, file, line in spec),
                    source=Location(path=f"rank{rank}.txt"),
                )
            ]
            for i, (name, top) in enumerate(_THREADS[: max(0, threads - 1)]):
                body = _pad(top, frames, _TAIL)
                stacks.append(
                    ThreadStack(
                        thread_id=str(pid + 100_000 * (i + 1)),
                        name=name,
                        frames=tuple(
                            Frame(function=f, file=file, line=line) for f, file, line in body
                        ),
                        source=Location(path=f"rank{rank}.txt"),
                    )
                )
            dumps.append(
                ProcessDump(
                    pid=pid,
                    kind=EvidenceKind.PYSPY_TEXT,
                    cmdline=f"sglang::scheduler_TP{rank}",
                    threads=tuple(stacks),
                    source=Location(path=f"rank{rank}.txt", line=1),
                )
            )
    return Bundle(root=None, dumps=tuple(dumps))


def main() -> None:
    parser = argparse.ArgumentParser(description="Time analyze() on in-memory model objects.")
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    bundle = build(args.ranks, args.snapshots, args.threads, args.frames)
    built = time.perf_counter() - start
    count = sum(len(t.frames) for d in bundle.dumps for t in d.threads)
    times = []
    verdict = ""
    for _ in range(args.repeat):
        start = time.perf_counter()
        analysis = analyze(bundle)
        times.append(time.perf_counter() - start)
        verdict = analysis.verdict.value
    print(
        f"input: {args.ranks} ranks x {args.snapshots} snapshots x {args.threads} threads, "
        f"{count:,} frames (built in {built:.2f} s); verdict {verdict}"
    )
    print(f"analyze(): first run {times[0]:.3f} s, best of {args.repeat} {min(times):.3f} s")


if __name__ == "__main__":
    main()
