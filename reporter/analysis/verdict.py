"""Decide the verdict from per-rank stacks and states.

Input: `UnitView`s (one per rank, main stacks per snapshot) grouped by their
collective group (the TP ranks of one DP/PP slice, or a manifest group).
Output: a `Finding`: the verdict, the groups that desynchronised, laggard
ranks, and why.

Order of checks:

1. `collective-desync` when, in one group, a rank holds a collective (stuck
   in it, or seen in it in the only snapshot) while another rank of the group
   is in a different collective or in none, unless that other rank is moving
   and some snapshot shows it passing through the same collective (then the
   collective completes and the holder is merely slow).
2. `all-stuck`: several snapshots, and every rank's main stack is unchanged.
3. `progressing`: several snapshots and some rank moves.
4. `inconclusive`: no rank stacks, a single rank, or one snapshot in which
   the ranks agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis.progress import UnitView
from reporter.analysis.result import RankState, Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """The decision and what it rests on. `desync_groups` are group keys, in rank order."""

    verdict: Verdict
    desync_groups: tuple[str, ...] = ()
    groups: int = 1
    desync_units: tuple[int, ...] = ()
    laggards: tuple[int, ...] = ()
    stuck_laggards: tuple[int, ...] = ()
    reason: str = ""


def group_views(views: Sequence[UnitView]) -> list[tuple[str, list[UnitView]]]:
    """Views by group key, groups ordered by their smallest unit."""
    groups: dict[str, list[UnitView]] = {}
    for view in views:
        groups.setdefault(view.group, []).append(view)
    return sorted(groups.items(), key=lambda item: (min(v.unit for v in item[1]), item[0]))


def _holds(view: UnitView) -> bool:
    return view.latest.facts.collective is not None and view.state in (
        RankState.STUCK,
        RankState.UNKNOWN,
    )


def group_desync(views: Sequence[UnitView]) -> bool:
    """True when the group's ranks disagree about a collective someone holds."""
    held = sorted({c for v in views if _holds(v) for c in [v.latest.facts.collective] if c})
    # A dump without frames (a process caught exiting) says nothing either way.
    known = [v for v in views if v.latest.frames]
    for collective in held:
        for view in known:
            current = view.latest.facts.collective
            if current == collective:
                continue
            if view.state is RankState.MOVING and view.visited(collective):
                continue
            return True
    return False


def single_outsider(views: Sequence[UnitView]) -> int | None:
    """The one rank outside any collective while every other rank of the group is in
    the same collective: the rank the others wait for."""
    if len(views) < 2:
        return None
    views = [v for v in views if v.latest.frames]
    counts = Counter(v.latest.facts.collective for v in views)
    if counts.get(None) != 1 or len(counts) != 2:
        return None
    return next(v.unit for v in views if v.latest.facts.collective is None)


def decide(views: Sequence[UnitView], snapshots: int) -> Finding:
    """The verdict for the ranks in `views` (sorted by unit)."""
    if not views:
        return Finding(verdict=Verdict.INCONCLUSIVE, reason="no rank stacks in the evidence")
    if len(views) == 1:
        return Finding(
            verdict=Verdict.INCONCLUSIVE,
            reason="only one rank: there is no other rank to compare it with",
        )
    groups = group_views(views)
    desync_groups = [key for key, members in groups if group_desync(members)]
    if desync_groups:
        chosen = set(desync_groups)
        units = sorted(v.unit for key, members in groups if key in chosen for v in members)
        laggards = sorted(
            unit
            for key, members in groups
            if key in chosen
            for unit in [single_outsider(members)]
            if unit is not None
        )
        return Finding(
            verdict=Verdict.COLLECTIVE_DESYNC,
            desync_groups=tuple(desync_groups),
            groups=len(groups),
            desync_units=tuple(units),
            laggards=tuple(laggards),
        )
    states = {v.state for v in views}
    if snapshots < 2 or states == {RankState.UNKNOWN}:
        return Finding(
            verdict=Verdict.INCONCLUSIVE,
            reason="one snapshot, and the ranks do not disagree about a collective",
        )
    if RankState.MOVING in states:
        stuck = {v.unit for v in views if v.state is RankState.STUCK}
        outsiders = {
            u for _, members in groups for u in [single_outsider(members)] if u is not None
        }
        return Finding(
            verdict=Verdict.PROGRESSING,
            laggards=tuple(sorted(stuck | outsiders)),
            stuck_laggards=tuple(sorted(stuck)),
        )
    return Finding(verdict=Verdict.ALL_STUCK)
