"""Generate a large synthetic evidence bundle: N ranks, T threads each, S snapshots.

The dumps follow py-spy 0.4.3's text format. Ranks 0..N/2-1 wait in an
`all_reduce` reached from `check_hicache_events`; the rest spin in the idle loop
(a collective desync), and `--healthy` makes every rank move between snapshots
instead. One file per rank holds its S snapshots, the way a collector appends
repeated dumps of one PID.

    python benchmarks/generate_bundle.py OUT --ranks 4096 --threads 4 --snapshots 3
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

_BOOT = [
    "run_scheduler_process (sglang/srt/managers/scheduler.py:2710)",
    "BaseProcess.run (multiprocessing/process.py:108)",
    "BaseProcess._bootstrap (multiprocessing/process.py:314)",
    "_main (multiprocessing/spawn.py:135)",
    "spawn_main (multiprocessing/spawn.py:122)",
    "<module> (<string>:1)",
]
_LOOP = "Scheduler.event_loop_overlap (sglang/srt/managers/scheduler.py:{line})"
_COLLECTIVE = [
    "all_reduce (torch/distributed/distributed_c10d.py:2501)",
    "wrapper (torch/distributed/c10d_logger.py:81)",
    "Scheduler.check_hicache_events (sglang/srt/managers/scheduler.py:{line})",
    "Scheduler.on_idle (sglang/srt/managers/scheduler.py:1305)",
]
_IDLE = [
    "_poll (zmq/sugar/socket.py:{line})",
    "Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)",
]
_BUSY = [
    "RMSNorm.forward (sglang/srt/layers/layernorm.py:{line})",
    "Module._call_impl (torch/nn/modules/module.py:1762)",
    "LlamaDecoderLayer.forward (sglang/srt/models/llama.py:{line})",
    "ModelRunner.forward_batch (sglang/srt/model_executor/model_runner.py:1870)",
    "Scheduler.run_batch (sglang/srt/managers/scheduler.py:1650)",
]
_THREADS = [
    ("watchdog", ["Scheduler.watchdog_thread (sglang/srt/managers/scheduler.py:{line})"]),
    (
        "Thread-2 (_feed)",
        ["Condition.wait (threading.py:327)", "_feed (multiprocessing/queues.py:231)"],
    ),
    ("TMonitor", ["Event.wait (threading.py:629)", "TMonitor.run (tqdm/_monitor.py:60)"]),
    ("Thread-5 (_worker)", ["_worker (concurrent/futures/thread.py:81)"]),
]
_THREAD_TAIL = [
    "Thread.run (threading.py:982)",
    "Thread._bootstrap_inner (threading.py:1045)",
    "Thread._bootstrap (threading.py:1002)",
]


def _dump(
    rank: int, pid: int, snapshot: int, *, threads: int, healthy: bool, half: int, seed: int
) -> str:
    lines = [
        f"Process {pid}: sglang::scheduler_TP{rank}",
        "Python v3.11.7 (/usr/local/bin/python3.11)",
        "",
    ]
    if healthy:
        body = _BUSY if (rank + snapshot) % 2 else _IDLE
    else:
        body = _COLLECTIVE if rank < half else _IDLE
    # A stuck rank shows the same lines in every snapshot; a moving one does not.
    frame_rng = random.Random(seed * 1_000_003 + rank * 1009 + (snapshot if healthy else 0))
    main = [f.format(line=frame_rng.randint(100, 2000)) for f in body]
    main.append(_LOOP.format(line=980 + (snapshot if healthy else 0)))
    main.extend(_BOOT)
    lines.append(f'Thread {pid} (idle): "MainThread"')
    lines.extend(f"    {frame}" for frame in main)
    for index in range(threads - 1):
        name, frames = _THREADS[index % len(_THREADS)]
        lines.append(f'Thread {pid + 10 + index} (idle): "{name}"')
        lines.extend(
            f"    {f.format(line=frame_rng.randint(10, 99))}" for f in [*frames, *_THREAD_TAIL]
        )
    return "\n".join(lines) + "\n"


def generate(
    out: Path,
    *,
    ranks: int,
    threads: int = 4,
    snapshots: int = 3,
    healthy: bool = False,
    seed: int = 7,
) -> int:
    """Write the bundle into `out`; returns the number of bytes written."""
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for rank in range(ranks):
        pid = 100_000 + rank * 50
        text = "\n".join(
            _dump(rank, pid, s, threads=threads, healthy=healthy, half=ranks // 2, seed=seed)
            for s in range(snapshots)
        )
        data = text.encode()
        (out / f"rank{rank:04d}.txt").write_bytes(data)
        total += len(data)
    (out / "bundle.toml").write_text(
        f'title = "Synthetic {ranks}-rank bundle"\nworld_size = {ranks}\n', encoding="utf-8"
    )
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument("--healthy", action="store_true")
    args = parser.parse_args()
    size = generate(
        args.out,
        ranks=args.ranks,
        threads=args.threads,
        snapshots=args.snapshots,
        healthy=args.healthy,
    )
    print(f"wrote {args.ranks} ranks, {size / 1e6:.1f} MB to {args.out}")


if __name__ == "__main__":
    main()
