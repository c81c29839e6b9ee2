"""Time `analyze()` on issue 19's hang shapes at scale: stuck subsets, many stuck groups,
point-to-point pairs and a point-to-point ring.

Built in memory (no parsing), 3 snapshots per rank, one thread each:

- `stuck-subset`: DP replicas of 8 TP ranks; replica 0 waits in a world `all_gather` in every
  snapshot, every other replica moves through its own TP `all_reduce`;
- `all-groups-stuck`: every replica stuck whole in a collective of its own call site (each
  group is widened against the instance: the worst case of the stuck-subset rule);
- `p2p-pairs`: ranks 2k and 2k+1 both in `recv` from each other (`--locals` `src`);
- `p2p-ring`: rank r in `recv` from r-1, one cycle through every rank.

Prints seconds per shape (best of `--repeat`) and the time per rank, so a rank-squared step
would show as a growing per-rank time between `--ranks` values.

    python benchmarks/bench_round2.py [--ranks 16384] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from reporter.analysis import analyze
from reporter.model import (
    Bundle,
    EvidenceKind,
    Frame,
    Local,
    Location,
    Manifest,
    ProcessDump,
    RankHint,
    ThreadStack,
)

TP = 8
_BOOT = [
    Frame(function="run_scheduler_process", file="sglang/srt/managers/scheduler.py", line=2710),
    Frame(function="spawn_main", file="multiprocessing/spawn.py", line=122),
    Frame(function="<module>", file="<string>", line=1),
]
_LOOP = Frame(function="event_loop", file="sglang/srt/managers/scheduler.py", line=1300)
_WRAP = Frame(
    function="_exception_logger.<locals>.wrapper", file="torch/distributed/c10d_logger.py", line=83
)


def _f(function: str, file: str = "sglang/srt/managers/scheduler.py", line: int = 1) -> Frame:
    return Frame(function=function, file=file, line=line)


def _dump(rank: int, snap: int, frames: list[Frame], title: str | None = None) -> ProcessDump:
    source = Location(path=f"s{snap}/rank{rank}.txt", line=1)
    thread = ThreadStack(
        thread_id=str(10_000 + rank), name="MainThread", frames=tuple(frames), source=source
    )
    return ProcessDump(
        pid=10_000 + rank,
        kind=EvidenceKind.PYSPY_TEXT,
        cmdline=title,
        threads=(thread,),
        source=source,
    )


def _bundle(ranks: int, stack: Callable[[int, int], list[Frame]], titled: bool) -> Bundle:
    dumps = []
    for snap in range(3):
        for rank in range(ranks):
            title = f"sglang::scheduler_DP{rank // TP}_TP{rank}" if titled else None
            dumps.append(_dump(rank, snap, [*stack(rank, snap), _LOOP, *_BOOT], title))
    hints = (
        ()
        if titled
        else tuple((f"s{s}/rank{r}.txt", RankHint(rank=r)) for s in range(3) for r in range(ranks))
    )
    return Bundle(
        root=None, manifest=Manifest(world_size=ranks), dumps=tuple(dumps), rank_hints=hints
    )


def stuck_subset(rank: int, snap: int) -> list[Frame]:
    if rank < TP:
        return [_f("all_gather", "torch/distributed/distributed_c10d.py", 4287), _WRAP, _f("sync")]
    if (rank + snap) % 2:
        return [_f("all_reduce", "torch/distributed/distributed_c10d.py", 3252), _WRAP, _f("fwd")]
    return [_f("fwd", line=115 + snap)]


def all_groups_stuck(rank: int, snap: int) -> list[Frame]:
    site = _f(f"step_{(rank // TP) % 16}")
    return [_f("all_reduce", "torch/distributed/distributed_c10d.py", 3252), _WRAP, site]


def _recv(peer: int) -> list[Frame]:
    recv = Frame(
        function="recv",
        file="torch/distributed/distributed_c10d.py",
        line=2799,
        locals=(Local(name="src", repr=str(peer), is_arg=True),),
    )
    return [recv, _WRAP, _f("execute_model")]


SHAPES: dict[str, tuple[Callable[[int, int], list[Frame]], bool]] = {
    "stuck-subset": (stuck_subset, True),
    "all-groups-stuck": (all_groups_stuck, True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--ranks", type=int, default=16_384)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.ranks - args.ranks % (2 * TP)
    shapes = dict(SHAPES)
    shapes["p2p-pairs"] = (lambda rank, snap: _recv(rank ^ 1), False)
    shapes["p2p-ring"] = (lambda rank, snap: _recv((rank - 1) % n), False)
    for name, (stack, titled) in shapes.items():
        bundle = _bundle(n, stack, titled)
        best = float("inf")
        verdict = ""
        for _ in range(args.repeat):
            start = time.perf_counter()
            analysis = analyze(bundle)
            best = min(best, time.perf_counter() - start)
            verdict = analysis.verdict.value
        print(
            f"{name:18} {n} ranks x 3 snapshots: {best:6.2f} s "
            f"({best / n * 1e6:6.1f} us/rank), verdict {verdict}, "
            f"{len(analysis.waits_for)} edges, {len(analysis.p2p_cycles)} cycles"
        )


if __name__ == "__main__":
    main()
