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


def rank_state(history: Sequence[StackInfo]) -> RankState:
    """Stuck, moving, or unknown (fewer than two snapshots)."""
    if len(history) < 2:
        return RankState.UNKNOWN
    first = history[0].exact_id
    if all(info.exact_id == first for info in history):
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

    @property
    def latest(self) -> StackInfo:
        """The main stack of the latest snapshot."""
        return self.history[-1]

    def visited(self, collective: str) -> bool:
        """True when some snapshot shows this rank inside `collective`."""
        return any(info.facts.collective == collective for info in self.history)
