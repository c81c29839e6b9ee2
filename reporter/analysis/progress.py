"""Per-rank progress across snapshots: is the main stack stuck or moving?

Input: the interned main-thread stacks of one rank's snapshots in capture
order. Output: a `RankState` and a `UnitView` that later steps read.
`stuck` means the main stack is equal, line numbers included, in every
snapshot; `moving` means it changed; one snapshot says nothing (`unknown`)::

    rank_state([s1, s1, s1]) -> STUCK     rank_state([s1, s2, s1]) -> MOVING
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis.result import RankState
from reporter.analysis.stacks import StackInfo
from reporter.model import ThreadStatus


def snapshot_idle(info: StackInfo, status: ThreadStatus) -> bool:
    """True when one main stack idles: outside any collective, and either in an idle-loop
    frame ([[idle_loop]]) or marked idle by py-spy while blocked in a poll or sleep."""
    facts = info.facts
    if facts.collective is not None or not info.frames:
        return False
    if facts.idle_loop is not None:
        return True
    return facts.idle_wait and status in (ThreadStatus.IDLE, ThreadStatus.UNKNOWN)


def rank_state(history: Sequence[StackInfo], idle: Sequence[bool] = ()) -> RankState:
    """Idle (every snapshot idles, see `snapshot_idle`), else stuck, moving, or unknown
    (fewer than two snapshots)."""
    if idle and len(idle) == len(history) and all(idle):
        return RankState.IDLE
    return raw_state(history)


def raw_state(history: Sequence[StackInfo]) -> RankState:
    """Stuck, moving, or unknown (fewer than two snapshots), whatever the stacks are.

    A snapshot without frames (py-spy printed the process header, then failed) says
    nothing about movement and is left out."""
    if any(info.frames for info in history):
        history = [info for info in history if info.frames]
    if len(history) < 2:
        return RankState.UNKNOWN
    first = history[0].exact_id
    if all(info.exact_id == first for info in history):
        return RankState.STUCK
    # A `--native` snapshot beside plain ones adds native frames to the same Python stack:
    # that is not movement.
    python = {
        tuple((f.function, f.file, f.line) for f in i.frames if not f.native) for i in history
    }
    if len(python) == 1 and any(f.native for i in history for f in i.frames):
        return RankState.STUCK
    return RankState.MOVING


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitView:
    """One rank (or PID) as the verdict sees it: main stacks per snapshot, oldest first."""

    unit: int
    group: str
    pid: int | None
    state: RankState
    history: tuple[StackInfo, ...]
    raw: RankState | None = None
    """Stuck / moving / unknown before `idle` is told apart; None: same as `state`."""
    pg: str | None = None
    """The process group of the collective it is in, where `--locals` shows it
    (`default` for `group=None` or no group argument, else the group's name, or
    `non-default` for a group object); None when unknown."""
    p2p: str | None = None
    """`recv`, `send` or `either` when the latest main stack waits in a point-to-point call."""
    peers: tuple[int, ...] = ()
    """Global ranks that point-to-point call waits for, where the evidence names them."""
    peer_source: str = ""
    """Where `peers` were read (`--locals src=2 in recv`, a Flight Recorder entry)."""
    pg_ranks: tuple[int, ...] = ()
    """The members of the group of its collective, where the Flight Recorder's `pg_config`
    names them; () when not known."""

    @property
    def motion(self) -> RankState:
        """Stuck, moving or unknown: what the snapshots show, idle or not."""
        return self.raw if self.raw is not None else self.state

    @property
    def latest(self) -> StackInfo:
        """The main stack of the latest snapshot."""
        return self.history[-1]

    def visited(self, identity: tuple[object, ...]) -> bool:
        """True when some snapshot shows this rank inside the collective `identity`
        (see `collective_identity`)."""
        return any(collective_identity(info) == identity for info in self.history)


def collective_identity(info: StackInfo) -> tuple[object, ...] | None:
    """Operation and call site of the collective a stack is in (None outside any).

    Two ranks meet in a collective only when they call the same operation from the same
    function: `all_reduce` from `writing_check (cache.py:60)` and `all_reduce` from
    `forward (model.py:12)` never match each other."""
    facts = info.facts
    if facts.collective is None:
        return None
    site = facts.site
    if site is None:
        return (facts.collective,)
    # Function and file, not the line: ranks running one code base call one site from one
    # line, and line numbers are exactly what differs between two captures of a version.
    return (facts.collective, site.short_function, site.file.rsplit("/", 1)[-1])
