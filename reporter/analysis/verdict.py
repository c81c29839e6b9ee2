"""Decide the verdict from per-rank stacks and states, and who waits for whom.

Input: `UnitView`s of one instance (one per rank: main stacks per snapshot, the process group
of its collective where `--locals` shows it, the peer of a point-to-point wait), grouped by
their layout group (the TP ranks of one DP/PP slice from the titles, or a manifest group).
Output: a `Finding`: the verdict, the waits-for edges, the groups that desynchronised,
laggard ranks, point-to-point cycles, and notes on what the verdict assumes.

Whom a rank holding a collective must meet (its *scope*):

* the default group (`--locals`: no `group` argument, or `group=None`): every rank;
* any other or unknown group: the ranks of its layout group;
* a stuck subset: when every rank of that layout group sits in the same collective in every
  snapshot, the group cannot complete on its own, so it must span more: the rest of the
  instance (with a note saying so). A rank stuck in a collective while others move is
  therefore never "progress".

Order of checks:

1. `p2p-deadlock`: point-to-point waits (`recv` from `src`, `send` to `dst`) close a cycle of
   stuck ranks in which no two meet (both sides in `recv`); or, with no peer known, every rank
   of the instance is stuck in `recv` (or every one in `send`) and none is missing.
2. `collective-desync`: a rank holds a collective (stuck in it, or seen in it in the only
   snapshot) while a rank of its scope is elsewhere, or a point-to-point wait's peer is
   elsewhere; unless that rank is moving and some snapshot shows it passing through the same
   collective (then the collective completes and the holder is merely the fastest). A
   collective is its operation *and* its call site: `all_reduce` from two places never meet.
3. `all-stuck`: several snapshots, and every rank's main stack is unchanged.
4. `progressing`: several snapshots and some rank moves.
5. `inconclusive`: no rank stacks, a single rank, or one snapshot in which the ranks agree.

Ranks in the same place are bucketed, so the cost grows with ranks plus distinct places times
scopes, never with ranks squared; point-to-point edges are one per waiting rank.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from reporter.analysis.classify import frame_at
from reporter.analysis.p2p import P2pWait, cycle_name, deadlock_text, find_cycles
from reporter.analysis.progress import UnitView, collective_identity
from reporter.analysis.ranksets import format_ranks
from reporter.analysis.result import (
    Condition,
    P2pCycle,
    RankState,
    Verdict,
    WaitedFor,
    Waiting,
    WaitsFor,
)

_INSTANCE = "*"
"""Scope key of waits compared against every rank of the instance."""

PEERS_UNKNOWN = (
    "the peers of the point-to-point waits are not in the evidence: capture "
    "`py-spy dump --locals` (`src` / `dst`) to name the pairs"
)
"""The confidence note of a point-to-point deadlock whose stacks do not name the peers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """The decision and what it rests on. `desync_groups` are layout group keys in rank order
    ("" for waits compared against every rank); `notes` say what the verdict assumes."""

    verdict: Verdict
    desync_groups: tuple[str, ...] = ()
    groups: int = 1
    desync_units: tuple[int, ...] = ()
    laggards: tuple[int, ...] = ()
    stuck_laggards: tuple[int, ...] = ()
    reason: str = ""
    edges: tuple[WaitsFor, ...] = ()
    cycles: tuple[P2pCycle, ...] = ()
    notes: tuple[str, ...] = ()
    deadlock: str = ""
    """`p2p deadlock: 0<->2, 1<->3: both sides wait in recv, none sends` for that verdict."""


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


def _where(view: UnitView) -> str:
    """Where a rank outside the awaited collective is, in a few words."""
    facts = view.latest.facts
    if not view.latest.frames:
        return "without any stack frames"
    if facts.collective is not None:
        site = f" from {facts.site_text}" if facts.site is not None else ""
        group = f" on the {view.pg} group" if view.pg else ""
        if view.p2p is not None:
            site = f" at {facts.site_text}" if facts.site is not None else ""
            if view.peers:
                word = "from" if view.p2p == "recv" else "to" if view.p2p == "send" else "with"
                site = f" {word} {_ranks_of(view.peers)}{site}"
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
    """Ranks that are in the same place for waits-for purposes (line numbers ignored).
    Moving ranks are bucketed by their call site alone: where the latest snapshot caught
    them inside it is chance."""
    latest = view.latest
    state = view.state
    where = latest.loop_key if state is RankState.IDLE else latest.site_key
    if state is not RankState.IDLE and view.motion is RankState.MOVING:
        return (state, where, bool(latest.frames))
    ident = latest.ident
    return (
        state,
        (*ident, view.pg) if ident is not None else None,
        latest.facts.wait,
        where,
        bool(latest.frames),
        view.peers,
    )


def _buckets(views: Sequence[UnitView]) -> list[list[UnitView]]:
    buckets: dict[tuple[object, ...], list[UnitView]] = {}
    for view in views:
        buckets.setdefault(_bucket_key(view), []).append(view)
    return list(buckets.values())


@dataclass(slots=True)
class _Scope:
    """Ranks a held collective is compared against, bucketed by place."""

    key: str
    views: list[UnitView]
    buckets: list[list[UnitView]]


def _outside(scope: _Scope, ident: tuple[object, ...]) -> list[list[UnitView]]:
    """Buckets of `scope` (ranks with frames) not in the collective `ident`."""
    found: list[list[UnitView]] = []
    for bucket in scope.buckets:
        if not bucket[0].latest.frames:
            continue
        if bucket[0].motion is RankState.MOVING:
            # Passing through the collective is per rank: check each one.
            chosen = [v for v in bucket if _absent(v, ident)]
        else:
            chosen = bucket if _absent(bucket[0], ident) else []
        if chosen:
            found.append(chosen)
    return found


def _waited(group: Sequence[UnitView]) -> WaitedFor:
    return WaitedFor(
        ranks=tuple(sorted(v.unit for v in group)),
        pids=tuple(sorted(v.pid for v in group if v.pid is not None)),
        state=group[0].state.value,
        at=_where(group[0]),
    )


def _absent_edges(
    waiting: Waiting,
    absent: Sequence[tuple[int, str, str]],
    key: str,
    instance: str,
    kind: str = "collective",
) -> list[WaitsFor]:
    by_state: dict[str, list[int]] = {}
    for rank, group_key, state in absent:
        if key == _INSTANCE or group_key == key:
            by_state.setdefault(state, []).append(rank)
    return [
        WaitsFor(
            waiting=waiting,
            waited=WaitedFor(ranks=tuple(sorted(ranks)), pids=(), state=state, at=""),
            group=key if key != _INSTANCE else "",
            instance=instance,
            kind=kind,
        )
        for state, ranks in sorted(by_state.items())
    ]


@dataclass(slots=True)
class _Collectives:
    """What the collective half of the analysis found."""

    edges: list[WaitsFor]
    desync_keys: list[str]
    notes: list[str]
    stuck_groups: list[str]
    """Layout groups stuck whole in one collective while every other rank passes through
    the same call: not progress, and nobody in the evidence is elsewhere."""


def _group_label(pg: str | None) -> str:
    if pg is None:
        return "a process group the evidence does not name"
    if pg == "non-default":
        return "a non-default process group"
    return f"the {pg} group"


def _collective_edges(
    views: Sequence[UnitView], absent: Sequence[tuple[int, str, str]], instance: str
) -> _Collectives:
    """Edges from ranks holding a collective to the ranks of their scope that are elsewhere."""
    by_group = group_views(views)
    scopes = {key: _Scope(key, members, _buckets(members)) for key, members in by_group}
    everyone: _Scope | None = None

    def instance_scope() -> _Scope:
        nonlocal everyone
        if everyone is None:
            everyone = _Scope(_INSTANCE, list(views), _buckets(views))
        return everyone

    holders: dict[tuple[str, tuple[object, ...]], list[UnitView]] = {}
    for view in sorted(views, key=lambda v: v.unit):
        ident = identity_of(view)
        if view.p2p is not None or ident is None or not _holds(view):
            continue
        if view.pg == "default":
            key = _INSTANCE
        elif view.pg_ranks:
            # Members named by the Flight Recorder's pg_config: compared with exactly those.
            key = f"ranks {format_ranks(view.pg_ranks)}"
            if key not in scopes:
                members = [v for v in views if v.unit in set(view.pg_ranks)]
                scopes[key] = _Scope(key, members, _buckets(members))
        else:
            key = view.group
        holders.setdefault((key, ident), []).append(view)

    out = _Collectives(edges=[], desync_keys=[], notes=[], stuck_groups=[])
    all_ranks = tuple(sorted({v.unit for v in views} | {r for r, _, _ in absent}))
    waited_of: dict[int, WaitedFor] = {}

    def emit(
        members: list[UnitView], scope: _Scope, outside: list[list[UnitView]], key: str
    ) -> None:
        first = members[0].latest.facts
        if scope.key == _INSTANCE:
            group_ranks = all_ranks
        elif members[0].pg_ranks:
            group_ranks = members[0].pg_ranks
        else:
            group_ranks = tuple(sorted(v.unit for v in scope.views))
        waiting = Waiting(
            ranks=tuple(sorted(v.unit for v in members)),
            pids=tuple(sorted(v.pid for v in members if v.pid is not None)),
            collective=str(first.collective),
            at=first.site_text or "",
            group=members[0].pg,
            group_ranks=group_ranks,
        )
        # A layout group that holds every rank is the whole instance.
        label = scope.key if scope.key != _INSTANCE and len(scope.views) < len(views) else ""
        for group in outside:
            # One record per bucket: every edge to it shares the rank tuples.
            waited = waited_of.get(id(group))
            if waited is None:
                waited = waited_of[id(group)] = _waited(group)
            out.edges.append(
                WaitsFor(waiting=waiting, waited=waited, group=label, instance=instance)
            )
        if outside and label not in out.desync_keys:
            out.desync_keys.append(label)
        if members[0].pg_ranks and scope.key != _INSTANCE:
            inside = set(members[0].pg_ranks)
            out.edges.extend(
                _absent_edges(waiting, [a for a in absent if a[0] in inside], _INSTANCE, instance)
            )
        else:
            out.edges.extend(_absent_edges(waiting, absent, scope.key, instance))

    # Waits compared with every rank, by collective: default-group waits, and layout groups
    # stuck whole (merged across groups: one edge per place, however many groups).
    everywhere: dict[tuple[object, ...], list[UnitView]] = {}
    widened: dict[tuple[object, ...], list[str]] = {}
    for (key, ident), members in holders.items():
        if key == _INSTANCE:
            everywhere.setdefault(ident, []).extend(members)
            continue
        scope = scopes[key]
        outside = _outside(scope, ident)
        with_frames = [v for v in scope.views if v.latest.frames]
        whole = (
            not outside
            and len(scope.views) < len(views)
            and all(v.motion is RankState.STUCK for v in members)
            and len(members) == len(with_frames)
        )
        if whole:
            # The whole group waits in one collective that does not complete: with members
            # the Flight Recorder names, something outside the evidence holds it up; with a
            # layout group (an inference), the collective's group must hold more ranks.
            if not members[0].pg_ranks and _outside(instance_scope(), ident):
                everywhere.setdefault(ident, []).extend(members)
                widened.setdefault(ident, []).append(key or "of their layout")
                continue
            if any(v.motion is RankState.MOVING for v in views):
                first = members[0].latest.facts
                out.stuck_groups.append(
                    f"{_ranks(members)} (all of group {key or 'of their layout'}) sit in "
                    f"{first.collective} at {first.site_text or 'an unknown site'} in every "
                    "snapshot while the other ranks "
                    + ("keep moving" if members[0].pg_ranks else "pass through the same call")
                )
        emit(members, scope, outside, key)
    for ident, members in everywhere.items():
        members.sort(key=lambda v: v.unit)
        scope = instance_scope()
        emit(members, scope, _outside(scope, ident), _INSTANCE)
        groups = widened.get(ident)
        if groups:
            first = members[0].latest.facts
            named = ", ".join(groups[:_NAMED_GROUPS]) + (
                f" and {len(groups) - _NAMED_GROUPS} more" if len(groups) > _NAMED_GROUPS else ""
            )
            out.notes.append(
                f"{_ranks(members)} (all of group{'s' if len(groups) > 1 else ''} {named}) "
                f"wait in {first.collective} at {first.site_text or 'an unknown site'} in "
                f"every snapshot on {_group_label(members[0].pg)}; it is compared with every "
                "other rank because it cannot complete within the group: capture `py-spy "
                "dump --locals` (its `group`) or the Flight Recorder's pg_config to confirm "
                "which ranks it spans"
            )
    # Smallest waiting rank first, whichever scope found the edge (stable within a side).
    out.edges.sort(key=lambda e: e.waiting.ranks[:1])
    return out


_NAMED_GROUPS = 4
"""Layout groups named in one note; the rest are counted."""


def _ranks(views: Sequence[UnitView]) -> str:
    return _ranks_of([v.unit for v in views])


def _ranks_of(units: Sequence[int]) -> str:
    units = sorted(units)
    return f"rank {units[0]}" if len(units) == 1 else f"ranks {format_ranks(units)}"


def _line_notes(views: Sequence[UnitView]) -> list[str]:
    """Ranks stuck in one collective (same operation and function) but called from different
    lines: two different calls, which may be on different groups."""
    by_ident: dict[tuple[object, ...], dict[int | None, list[int]]] = {}
    for view in views:
        ident = identity_of(view)
        site = view.latest.facts.site
        if ident is None or site is None or view.p2p is not None or not _holds(view):
            continue
        by_ident.setdefault(ident, {}).setdefault(site.line, []).append(view.unit)
    notes = []
    for ident, lines in by_ident.items():
        if len(lines) < 2:
            continue
        parts = [
            f"{_ranks_of(units)} from line {line}"
            for line, units in sorted(lines.items(), key=lambda item: min(item[1]))
        ]
        unknown = ident[-1] is None
        notes.append(
            f"{ident[0]} in {ident[1]} is called from different lines ({'; '.join(parts)}): "
            "two different calls"
            + (
                ", which may be on different process groups: capture `py-spy dump --locals` "
                "to see each call's `group`"
                if unknown
                else ""
            )
        )
    return notes


def _p2p(
    views: Sequence[UnitView], absent: Sequence[tuple[int, str, str]], instance: str
) -> tuple[list[WaitsFor], list[P2pWait], bool]:
    """Point-to-point edges (one per waiting rank and peer), the waits for the cycle search,
    and whether some peer is present but not in a point-to-point call (a desync)."""
    by_unit = {v.unit: v for v in views}
    absent_state = {rank: state for rank, _, state in absent}
    edges: list[WaitsFor] = []
    waits: list[P2pWait] = []
    elsewhere = False
    for view in sorted(views, key=lambda v: v.unit):
        if view.p2p is None or not view.latest.frames or not _holds(view):
            continue
        facts = view.latest.facts
        waits.append(
            P2pWait(
                rank=view.unit,
                direction=view.p2p,
                op=str(facts.collective),
                at=facts.site_text or "",
                peers=view.peers,
                stuck=view.motion is RankState.STUCK,
            )
        )
        waiting = Waiting(
            ranks=(view.unit,),
            pids=(view.pid,) if view.pid is not None else (),
            collective=str(facts.collective),
            at=facts.site_text or "",
            group=view.pg,
        )
        for peer in view.peers:
            other = by_unit.get(peer)
            if other is not None:
                waited = _waited([other])
                if other.p2p is None:
                    elsewhere = True
            else:
                state = absent_state.get(peer, "missing")
                waited = WaitedFor(ranks=(peer,), pids=(), state=state, at="")
            edges.append(
                WaitsFor(
                    waiting=waiting,
                    waited=waited,
                    group=view.group,
                    instance=instance,
                    kind="p2p",
                    peer_source=view.peer_source,
                )
            )
    return edges, waits, elsewhere


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


def _all_in_one_direction(
    views: Sequence[UnitView], absent: Sequence[tuple[int, str, str]]
) -> str | None:
    """`recv` (or `send`) when every rank of the instance is stuck in that point-to-point
    direction and none is missing: nobody is left to answer, whoever the peers are."""
    if absent or len(views) < 2:
        return None
    directions = {v.p2p for v in views}
    if len(directions) != 1 or not all(v.motion is RankState.STUCK for v in views):
        return None
    direction = next(iter(directions))
    return direction if direction in ("recv", "send") else None


def decide(
    views: Sequence[UnitView],
    snapshots: int,
    absent: Sequence[tuple[int, str, str]] = (),
    *,
    instance: str = "1",
) -> Finding:
    """The verdict for the ranks in `views` (sorted by unit). `absent` lists (rank, group,
    state) for ranks without stacks (`gone` or `missing`): every holder whose scope holds them
    waits for them."""
    if not views:
        return Finding(verdict=Verdict.INCONCLUSIVE, reason="no rank stacks in the evidence")
    if len(views) == 1:
        # Ranks without stacks (gone, stopped, crashed) may still be what this one waits for.
        lone = _collective_edges(views, absent, instance).edges
        lone += _p2p(views, absent, instance)[0]
        return Finding(
            verdict=Verdict.INCONCLUSIVE,
            reason="only one rank: there is no other rank to compare it with",
            edges=tuple(lone),
        )
    groups = group_views(views)
    coll = _collective_edges(views, absent, instance)
    p2p_edges, waits, p2p_elsewhere = _p2p(views, absent, instance)
    edges = tuple(coll.edges + p2p_edges)
    cycles = find_cycles(waits)
    notes = list(coll.notes)
    deadlocks = [c for c in cycles if c.deadlock]
    one_way = _all_in_one_direction(views, absent) if not deadlocks else None
    if deadlocks or (one_way is not None and not any(v.peers for v in views)):
        units = sorted({r for c in deadlocks for r in c.ranks} or {v.unit for v in views})
        if deadlocks:
            text = deadlock_text(deadlocks)
        else:
            text = deadlock_text(
                (),
                unnamed=f"every rank waits in {one_way}, none "
                + ("sends" if one_way == "recv" else "receives"),
            )
            notes.append(PEERS_UNKNOWN)
        return Finding(
            verdict=Verdict.P2P_DEADLOCK,
            groups=len(groups),
            desync_units=tuple(units),
            edges=edges,
            cycles=cycles,
            notes=tuple(notes),
            deadlock=text,
        )
    # Edges to ranks without stacks (gone, missing, stopped, crashed, ...) show no desync:
    # only a present rank elsewhere does.
    present = {v.unit for v in views}
    present_waits = [e for e in coll.edges if any(r in present for r in e.waited.ranks)]
    if present_waits or p2p_elsewhere:
        involved = {
            r
            for e in edges
            if any(w in present for w in e.waited.ranks)
            for r in (*e.waiting.ranks, *e.waited.ranks)
        }
        chosen = [v for v in views if v.unit in involved]
        keys = list(coll.desync_keys)
        if p2p_elsewhere:
            keys.extend(v.group for v in chosen if v.p2p is not None and v.group not in keys)
        return Finding(
            verdict=Verdict.COLLECTIVE_DESYNC,
            desync_groups=tuple(keys),
            groups=len(groups),
            desync_units=tuple(sorted(involved)),
            laggards=laggards_of(edges, chosen),
            edges=edges,
            cycles=cycles,
            notes=tuple(notes),
        )
    states = {v.motion for v in views}
    if snapshots < 2 or states == {RankState.UNKNOWN}:
        reason = "one snapshot, and the ranks do not disagree about a collective"
        if cycles:
            reason = (
                "one snapshot: point-to-point waits close a cycle ("
                + ", ".join(_cycle_names(cycles))
                + "), but one snapshot cannot tell a deadlock from ranks passing through"
            )
        return Finding(verdict=Verdict.INCONCLUSIVE, reason=reason, edges=edges, cycles=cycles)
    if coll.stuck_groups:
        return Finding(
            verdict=Verdict.INCONCLUSIVE,
            reason=(
                "; ".join(coll.stuck_groups)
                + ": the collective does not complete, yet no rank in the evidence is "
                "elsewhere (a member outside the evidence, or a hung transport); the "
                "Flight Recorder or NCCL_DEBUG=INFO would show which rank did not post it"
            ),
            edges=edges,
            cycles=cycles,
            notes=tuple(notes),
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
            cycles=cycles,
        )
    notes.extend(_line_notes(views))
    return Finding(verdict=Verdict.ALL_STUCK, edges=edges, cycles=cycles, notes=tuple(notes))


def _cycle_names(cycles: Sequence[P2pCycle]) -> list[str]:
    return [cycle_name(c) for c in cycles]


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


# Ranks that hold the others up although they are in no collective: laggards.
_HOLDING_UP = frozenset({RankState.STOPPED, RankState.UNINTERRUPTIBLE, RankState.UNRESPONSIVE})
_UNAVAILABLE = frozenset({"stopped", "uninterruptible", "unresponsive", "crashed", "gone"})


def with_unavailable(
    finding: Finding,
    views: Sequence[UnitView],
    absent: Sequence[tuple[int, str, str]],
    frozen: Sequence[tuple[UnitView, Condition]],
) -> Finding:
    """The stack reading once ranks that cannot answer are counted: they hold the others up
    (laggards), and ranks stuck in a collective waiting for them are all stuck even when
    one rank alone is left to compare. Part of the stack reading, before the verdict table."""
    holding_up = {view.unit for view, cond in frozen if cond.state in _HOLDING_UP}
    laggards = tuple(sorted(set(finding.laggards) | holding_up))
    unavailable = [a for a in absent if a[2] in _UNAVAILABLE]
    if finding.verdict is Verdict.INCONCLUSIVE and unavailable:
        live = [v for v in views if v.latest.frames]
        waiting = all(
            v.motion is RankState.STUCK and v.latest.facts.collective is not None for v in live
        )
        stalled = [cond for _, cond in frozen if cond.state is not RankState.CRASHED]
        if (live and waiting) or (not views and stalled):
            return replace(finding, verdict=Verdict.ALL_STUCK, laggards=laggards, reason="")
    return replace(finding, laggards=laggards)
