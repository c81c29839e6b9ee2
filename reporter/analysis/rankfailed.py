"""Failed dumps and the world size of an instance: what `ranks.identify` adds once its
ranks are known.

`failed_ranks` gives each failed dump to the instance whose process (or launcher) it was,
with the rank it names; `world_size` says how many ranks the instance has and from what
(the manifest, the parallel sizes, `--locals`, else the largest rank seen + 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from reporter.analysis.clues import (
    NON_RANK_ROLES,
    RADIX_DIMS,
    HintIndex,
    parse_title,
    radix_rank,
    rank_from_filename,
)
from reporter.analysis.instances import ProcessFacts
from reporter.analysis.result import FailedRank, RankIdentity
from reporter.evidence.pyspy import failure_state as read_failure_state
from reporter.model import Bundle, FailedDump, ProcessDump


class Ranked(Protocol):
    """What these need of `ranks.RankedProcess` (named so, not imported: ranks imports this)."""

    @property
    def identity(self) -> RankIdentity: ...
    @property
    def unit(self) -> int: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def snapshots(self) -> tuple[ProcessDump, ...]: ...


LARGEST_SEEN = "from the largest rank seen + 1"


def world_size(
    bundle: Bundle,
    worlds: list[int],
    ranks: Sequence[Ranked],
    sizes: dict[str, int] | None,
    unit: str,
    failed: tuple[FailedRank, ...],
) -> tuple[int | None, str]:
    if unit != "rank":
        return None, ""
    if bundle.manifest.world_size is not None:
        return bundle.manifest.world_size, "from the manifest"
    if sizes is not None:
        world = sizes["DP"] * sizes["PP"] * sizes["TP"]
        detail = "from the parallel sizes DP x PP x TP = " + " x ".join(
            str(sizes[d]) for d in RADIX_DIMS
        )
    elif worlds:
        world, detail = max(worlds), "from the --locals argument world_size"
    else:
        world, detail = max(p.unit for p in ranks) + 1, LARGEST_SEEN
    # A failed dump that names its rank proves that the rank exists.
    failed_top = max((f.rank for f in failed if f.rank is not None), default=-1)
    if failed_top >= world:
        world, detail = (
            failed_top + 1,
            f"{detail}, raised to cover the failed dump of rank {failed_top}",
        )
    return world, detail


def failed_ranks(
    bundle: Bundle,
    hints: HintIndex,
    per_file: dict[str, int],
    ranks: Sequence[Ranked],
    unit: str,
    facts: dict[tuple[str, int], ProcessFacts],
    claimed: set[int],
) -> tuple[FailedRank, ...]:
    """The bundle's failed dumps that belong to these ranks (all of them with one instance).

    A failure belongs here when its process, (host, PID), is one of these, when its parent
    is these ranks' launcher on that host, or, with no PID, when its file names a rank.
    `claimed` collects the indexes of failures already given to an instance."""
    # Built only for a bundle with failures: thousands of ranks, usually none failed.
    failures = bundle.failures if len(claimed) < len(bundle.failures) else ()
    by_pid = {
        (d.host, d.pid): p.identity.rank
        for p in (ranks if failures else ())
        for d in p.snapshots
        if d.pid is not None and unit == "rank"
    }
    pids = {(p.identity.host, p.pid) for p in (ranks if failures else ()) if p.pid is not None}
    parents = {(k[0], facts[k].ppid) for k in pids if k in facts and facts[k].ppid is not None}
    out: list[FailedRank] = []
    for index, failure in enumerate(failures):
        if index in claimed:
            continue
        key = (failure.host, failure.pid) if failure.pid is not None else None
        rank = by_pid.get(key) if key is not None else None
        belongs = key is None or key in pids
        if key is not None and not belongs:
            parent = facts[key].ppid if key in facts else None
            belongs = (parent is not None and (key[0], parent) in parents) or not parents
        if not belongs:
            continue
        if rank is None and unit == "rank" and key is not None and key in facts:
            # A process that died before any dump: the title report collect recorded
            # (`sglang::scheduler_TP3`) still names its rank.
            rank = rank_of_title(facts[key].title, ranks)
        # A file that also holds other processes cannot name the failed one.
        if rank is None and unit == "rank" and per_file.get(failure.source.path, 0) == 0:
            hint = hints.find(failure.source.path)
            rank = hint.rank if hint is not None else rank_from_filename(failure.source.path)
            if rank is not None and rank == failure.pid:
                rank = None
        claimed.add(index)
        out.append(FailedRank(failure=failure, rank=rank, state=failure_state(failure)))
    return tuple(out)


def rank_of_title(title: str | None, ranks: Sequence[Ranked]) -> int | None:
    """The rank a recorded title names, laid out like the ranks whose dumps exist: a direct
    rank (`rank=3`), or dims equal to an existing layout's (TP only, or DP x TP)."""
    info = parse_title(title)
    if info.rank is not None:
        return info.rank
    dims = dict(info.dims)
    if not dims or (info.role or "").lower() in NON_RANK_ROLES:
        return None
    sizes = {d: 1 for d in RADIX_DIMS}
    for proc in ranks:
        for dim, value in proc.identity.dims:
            if dim in sizes:
                sizes[dim] = max(sizes[dim], value + 1)
    for dim in RADIX_DIMS:
        sizes[dim] = max(sizes[dim], dims.get(dim, 0) + 1)
    return radix_rank(dims, sizes)


def failure_state(failure: FailedDump) -> str:
    """`gone`, `refused`, `timeout` or `error` for a failed dump.

    The evidence layer's one reading (`reporter.evidence.pyspy.failure_state`): the
    parser's state, or the reason and detail read again when it left the default `error`."""
    return str(read_failure_state(failure))
