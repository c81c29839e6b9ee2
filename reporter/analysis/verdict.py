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
   collective completes and the holder is merely slow). A collective is its
   operation *and* its call site: `all_reduce` from two places never meet.
2. `all-stuck`: several snapshots, and every rank's main stack is unchanged.
3. `progressing`: several snapshots and some rank moves.
4. `inconclusive`: no rank stacks, a single rank, or one snapshot in which
   the ranks agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis.classify import frame_at
from reporter.analysis.progress import UnitView, collective_identity
from reporter.analysis.result import RankState, Verdict, WaitedFor, Waiting, WaitsFor


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
    return collective_identity(view.latest) is not None and view.motion in (
        RankState.STUCK,
        RankState.UNKNOWN,
    )


def identity_of(view: UnitView) -> tuple[object, ...] | None:
    """The collective a rank is in: operation, call site and, where `--locals` shows it,
    the process group; None outside any collective."""
    ident = collective_identity(view.latest)
    if ident is None:
        return None
    return (*ident, view.pg)


def _held(views: Sequence[UnitView]) -> list[tuple[object, ...]]:
    found: dict[tuple[object, ...], None] = {}
    for view in sorted(views, key=lambda v: v.unit):
        ident = identity_of(view)
        if ident is not None and _holds(view):
            found.setdefault(ident)
    return list(found)


def _same(mine: tuple[object, ...] | None, held: tuple[object, ...]) -> bool:
    """Same operation and call site; the groups must agree when both are known."""
    if mine is None or mine[:-1] != held[:-1]:
        return False
    return mine[-1] is None or held[-1] is None or mine[-1] == held[-1]


def _absent(view: UnitView, ident: tuple[object, ...]) -> bool:
    """True when `view` is not in the collective `ident` and will not pass through it."""
    if _same(identity_of(view), ident):
        return False
    return not (view.motion is RankState.MOVING and view.visited(ident[:-1]))


def group_desync(views: Sequence[UnitView]) -> bool:
    """True when the group's ranks disagree about a collective someone holds."""
    # A dump without frames (a process caught exiting) says nothing either way.
    known = [v for v in views if v.latest.frames]
    return any(_absent(view, ident) for ident in _held(views) for view in known)


def _where(view: UnitView) -> str:
    """Where a rank outside the awaited collective is, in a few words."""
    facts = view.latest.facts
    if not view.latest.frames:
        return "without any stack frames"
    if facts.collective is not None:
        site = f" from {facts.site_text}" if facts.site is not None else ""
        group = f" on the {view.pg} group" if view.pg else ""
        return f"in {facts.collective}{site}{group}"
    if view.state is RankState.IDLE:
        frame = facts.idle_loop or facts.site
        return f"idle in {frame_at(frame)}" if frame is not None else "idle"
    if facts.wait is not None:
        site = f" in {facts.site_text}" if facts.site is not None else ""
        return f"waiting in {facts.wait}{site}"
    frame = facts.site or next(iter(view.latest.informative), None)
    return f"running {frame_at(frame)}" if frame is not None else "in native code"


def _bucket_key(view: UnitView) -> tuple[object, ...]:
    """Ranks that are in the same place for waits-for purposes (line numbers ignored)."""
    facts = view.latest.facts
    frame = facts.idle_loop if view.state is RankState.IDLE else facts.site
    where = (frame.short_function, frame.file) if frame is not None else None
    return (view.state, identity_of(view), facts.wait, where, bool(view.latest.frames))


def waits_for(
    views: Sequence[UnitView],
    *,
    absent: Sequence[tuple[int, str, str]] = (),
    instance: str = "1",
) -> tuple[WaitsFor, ...]:
    """Who waits for whom, per group: ranks holding a collective wait for every rank of
    their group that is elsewhere. `absent` lists (rank, group, state) for ranks without
    stacks (`gone` or `missing`); they are waited for by every holder of their group.

    Ranks in the same place are bucketed first, so the cost grows with the number of
    distinct places, not with ranks squared."""
    out: list[WaitsFor] = []
    for key, members in group_views(views):
        buckets: dict[tuple[object, ...], list[UnitView]] = {}
        for view in members:
            buckets.setdefault(_bucket_key(view), []).append(view)
        holders_by: dict[tuple[object, ...], list[UnitView]] = {}
        for view in members:
            ident = identity_of(view)
            if ident is not None and _holds(view):
                holders_by.setdefault(ident, []).append(view)
        for ident, holders in holders_by.items():
            first = holders[0].latest.facts
            waiting = Waiting(
                ranks=tuple(sorted(v.unit for v in holders)),
                pids=tuple(sorted(v.pid for v in holders if v.pid is not None)),
                collective=str(first.collective),
                at=first.site_text or "",
                group=holders[0].pg,
            )
            others: list[list[UnitView]] = []
            for bucket in buckets.values():
                if not bucket[0].latest.frames:
                    continue
                if bucket[0].motion is RankState.MOVING:
                    # Passing through the collective is per rank: check each one.
                    chosen = [v for v in bucket if _absent(v, ident)]
                else:
                    chosen = bucket if _absent(bucket[0], ident) else []
                if chosen:
                    others.append(chosen)
            for group in others:
                state, at = group[0].state.value, _where(group[0])
                out.append(
                    WaitsFor(
                        waiting=waiting,
                        waited=WaitedFor(
                            ranks=tuple(sorted(v.unit for v in group)),
                            pids=tuple(sorted(v.pid for v in group if v.pid is not None)),
                            state=state,
                            at=at,
                        ),
                        group=key,
                        instance=instance,
                    )
                )
            by_state: dict[str, list[int]] = {}
            for rank, group_key, state in absent:
                if group_key == key:
                    by_state.setdefault(state, []).append(rank)
            for state, ranks in sorted(by_state.items()):
                out.append(
                    WaitsFor(
                        waiting=waiting,
                        waited=WaitedFor(ranks=tuple(sorted(ranks)), pids=(), state=state, at=""),
                        group=key,
                        instance=instance,
                    )
                )
    return tuple(out)


def laggards_of(edges: Sequence[WaitsFor], views: Sequence[UnitView]) -> tuple[int, ...]:
    """The ranks others wait for that are not themselves waiting in a collective: the
    ranks that hold the group up, for any split size (present ranks only; gone and
    missing ranks are reported as such)."""
    holding = {v.unit for v in views if _holds(v)}
    present = {v.unit for v in views}
    found = {
        r
        for e in edges
        if e.waited.state not in ("gone", "missing")
        for r in e.waited.ranks
        if r in present and r not in holding
    }
    return tuple(sorted(found))


def decide(
    views: Sequence[UnitView],
    snapshots: int,
    absent: Sequence[tuple[int, str, str]] = (),
) -> Finding:
    """The verdict for the ranks in `views` (sorted by unit); `absent` as for `waits_for`."""
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
        chosen_views = [v for key, members in groups if key in chosen for v in members]
        laggards = laggards_of(waits_for(chosen_views, absent=absent), chosen_views)
        return Finding(
            verdict=Verdict.COLLECTIVE_DESYNC,
            desync_groups=tuple(desync_groups),
            groups=len(groups),
            desync_units=tuple(units),
            laggards=laggards,
        )
    states = {v.motion for v in views}
    if snapshots < 2 or states == {RankState.UNKNOWN}:
        return Finding(
            verdict=Verdict.INCONCLUSIVE,
            reason="one snapshot, and the ranks do not disagree about a collective",
        )
    if RankState.MOVING in states:
        # A rank that sits in a collective while the others compute is the fastest: it
        # waits for them. Only a rank stuck outside any collective holds the others up.
        stuck = {
            v.unit
            for v in views
            if v.motion is RankState.STUCK
            and v.state is not RankState.IDLE
            and v.latest.facts.collective is None
        }
        outsiders = {
            u for _, members in groups for u in [single_outsider(members)] if u is not None
        }
        return Finding(
            verdict=Verdict.PROGRESSING,
            laggards=tuple(sorted(stuck | outsiders)),
            stuck_laggards=tuple(sorted(stuck)),
        )
    return Finding(verdict=Verdict.ALL_STUCK)


def single_outsider(views: Sequence[UnitView]) -> int | None:
    """The one rank outside any collective while every other rank of the group is stuck in
    the same collective (operation and call site), in the latest snapshot."""
    if len(views) < 2:
        return None
    views = [v for v in views if v.latest.frames]
    counts = Counter(collective_identity(v.latest) for v in views)
    if counts.get(None) != 1 or len(counts) != 2:
        return None
    return next(v.unit for v in views if collective_identity(v.latest) is None)
