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
    if len(history) > 1 and history[0].frames and len(set(map(id, history))) == 1:
        return RankState.STUCK  # one interned stack throughout: a stuck rank, the usual case
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
        """The main stack of the latest snapshot that has one: a dump that failed after its
        header (no frames) says nothing about where the rank is, so the rank is where it
        was last seen; the last snapshot when none has frames."""
        last = self.history[-1]
        if last.frames:
            return last  # the usual case, asked many times per rank
        for info in reversed(self.history):
            if info.frames:
                return info
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
    # Function and file, not the line: worked out once per distinct stack (stacks.py).
    return info.ident


def _left(view: UnitView, ident: tuple[object, ...]) -> tuple[int, int] | None:
    """(i, j), 1-based snapshots where `view` is inside the collective `ident` in i and
    outside it in a later j: the call at i returned in between."""
    inside: int | None = None
    for index, info in enumerate(view.history, 1):
        if not info.frames:
            continue
        if collective_identity(info) == ident:
            if inside is None:
                inside = index
        elif inside is not None:
            return inside, index
    return None


def _scope_of(view: UnitView, views: Sequence[UnitView]) -> list[UnitView] | None:
    """The ranks that must take part in the collective `view` is in, as far as the evidence
    tells: the Flight Recorder's members, every rank for the default group, else the
    layout group when it is smaller than the instance; None when not known."""
    if view.pg_ranks:
        members = set(view.pg_ranks)
        return [v for v in views if v.unit in members]
    if view.pg == "default":
        return list(views)
    layout = [v for v in views if v.group == view.group]
    if view.group and len(layout) < len(views):
        return layout
    return None


def _scope_key(view: UnitView) -> tuple[object, ...]:
    """What `_scope_of` reads of `view`: views with one key have one scope."""
    if view.pg_ranks:
        return ("ranks", frozenset(view.pg_ranks))
    if view.pg == "default":
        return ("default",)
    return ("group", view.group)


def completed_by_peer(views: Sequence[UnitView]) -> dict[int, str]:
    """Ranks that show one collective wait in every snapshot although a peer of the same
    group left the same collective call in between, with the reason in a sentence.

    A collective returns on one member only after every member has joined it, so the
    rank took part while its snapshots happened to catch it at the same point each time
    (a hot loop of short collectives); counting it as stuck would invent a second
    waiting side. Point-to-point waits are left out: their peer is one rank, not a group.
    """
    out: dict[int, str] = {}
    # Thousands of stuck ranks share a few scopes and collectives: each scope is found,
    # and each (scope, collective, group) searched for peers that left it, once.
    scopes: dict[tuple[object, ...], list[UnitView] | None] = {}
    leavers: dict[tuple[object, ...], list[tuple[UnitView, tuple[int, int]]]] = {}
    for view in views:
        ident = collective_identity(view.latest)
        if view.motion is not RankState.STUCK or ident is None or view.p2p is not None:
            continue
        key = _scope_key(view)
        if key not in scopes:
            scopes[key] = _scope_of(view, views)
        scope = scopes[key]
        if scope is None:
            continue
        search = (key, ident, view.pg)
        found = leavers.get(search)
        if found is None:
            found = leavers[search] = _leavers(scope, ident, view.pg)
        for peer, left in found:
            if peer.unit == view.unit:
                continue
            if view.pg_ranks:
                where = "its group (members from the Flight Recorder)"
            elif view.pg == "default":
                where = "the default group"
            else:
                where = f"its layout group {view.group}"
            out[view.unit] = (
                f"rank {view.unit} shows the same {ident[0]} stack in every snapshot, but "
                f"rank {peer.unit} of {where} returned from the same {ident[0]} call between "
                f"snapshots {left[0]} and {left[1]}, which cannot happen without rank "
                f"{view.unit}: counted as moving (sampled at the same point each time), "
                "not stuck"
            )
            break
    return out


def _leavers(
    scope: Sequence[UnitView], ident: tuple[object, ...], pg: str | None
) -> list[tuple[UnitView, tuple[int, int]]]:
    """The moving ranks of `scope` (in its order) that left the collective `ident` between
    two snapshots, with those snapshots; of process group `pg` where both are known."""
    found = []
    for peer in scope:
        if peer.motion is not RankState.MOVING:
            continue
        if pg is not None and peer.pg is not None and pg != peer.pg:
            continue
        left = _left(peer, ident)
        if left is not None:
            found.append((peer, left))
    return found
