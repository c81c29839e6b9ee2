"""Who waits for whom: the analysis's own waits-for relation, or one derived from the branch point,
the laggards and missing or gone ranks; ranks at one place are one side."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from reporter.analysis.classify import FrameKind, default_classifier
from reporter.analysis.ranks import format_ranks, main_thread
from reporter.analysis.ranksets import format_pids
from reporter.analysis.result import Analysis, RankProcess, StackClass, Verdict
from reporter.model import Frame
from reporter.render.answer.records import WaitEdge, WaitSide

if TYPE_CHECKING:
    pass


# py-spy's words for a process that is not there any more.
_GONE = re.compile(
    r"no such (file|process)|process is running|not running|has exited|process .* exited",
    re.IGNORECASE,
)
# Log and manual lines that mark a restart or a deploy on the timeline.

_TORCH_FILE = re.compile(r"(^|/)torch/")


def ranks_name(ranks: Sequence[int], unit: str) -> str:
    """`rank 3`, `ranks [0-3,7]`; PIDs listed (`PID 8261`, `PIDs 8261, 8262`), never ranged;
    `process 0`, `processes [0-1]` when processes are numbered by place (no rank, no PID)."""
    if unit == "process":
        return f"process {ranks[0]}" if len(ranks) == 1 else f"processes {format_ranks(ranks)}"
    if unit != "rank":
        return f"PID {ranks[0]}" if len(ranks) == 1 else f"PIDs {format_pids(ranks)}"
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {format_ranks(ranks)}"


def units_label(ranks: Sequence[int], unit: str) -> str:
    """A side's label: the compact rank set `[0-3]`, or the PIDs listed (`8261, 8262`)."""
    return format_ranks(ranks) if unit == "rank" else format_pids(ranks)


def _at(frame: Frame | None) -> str:
    if frame is None:
        return ""
    name = frame.short_function
    place = (
        f"{frame.short_file.rpartition('/')[2]}:{frame.line}" if frame.line else frame.short_file
    )
    return f"{name} ({place})"


def members(analysis: Analysis, instance: str, units: Sequence[int]) -> list[RankProcess]:
    """The rank processes of `units` in `instance`, by PID: found by (instance, unit), since
    one PID can name two processes (two hosts, two containers)."""
    return sorted(_members(analysis, instance, units), key=_by_pid)


def _members(analysis: Analysis, instance: str, units: Sequence[int]) -> Iterator[RankProcess]:
    wanted = set(units)
    return (p for p in analysis.processes if p.unit in wanted and p.identity.instance == instance)


def _by_pid(process: RankProcess) -> tuple[bool, int, int]:
    return (process.identity.pid is None, process.identity.pid or 0, process.unit or 0)


def dump_of(analysis: Analysis, stack_class: StackClass) -> str:
    """The dump behind a class: its smallest PID's latest main thread, as `file:line`."""
    # `members` in order, first with snapshots: the smallest key (the first of equals).
    process = min(
        (p for p in _members(analysis, stack_class.instance, stack_class.ranks) if p.snapshots),
        key=_by_pid,
        default=None,
    )
    if process is None:
        return ""
    latest = process.snapshots[-1]
    thread = main_thread(latest)
    return str(thread.source if thread is not None else latest.source)


def _app_frames(frames: Sequence[Frame]) -> list[Frame]:
    """Application frames, innermost first (`frames.toml` decides: collective wrappers such
    as `tensor_model_parallel_all_reduce` are library frames); else Python frames outside
    torch."""
    classifier = default_classifier()
    found = [f for f in frames if classifier.classify(f).kind is FrameKind.APPLICATION]
    return found or [f for f in frames if not f.native and not _TORCH_FILE.search(f.file)]


def side_of(
    analysis: Analysis, stack_class: StackClass, shared: Frame | None, *, waiting: bool = True
) -> WaitSide:
    """A class as one side of a wait: the waiting side where it calls the collective (its
    innermost application frame), the waited-for side where it is (its innermost Python
    frame outside torch, e.g. the queue read it polls)."""
    if waiting:
        app = _app_frames(stack_class.frames)
    else:
        app = [f for f in stack_class.frames if not f.native and not _TORCH_FILE.search(f.file)]
    where = app[0] if app else (stack_class.frames[0] if stack_class.frames else None)
    branch = ""
    if shared is not None:
        match = next(
            (f for f in stack_class.frames if f.short_function == shared.short_function), None
        )
        branch = _at(match)
    state = stack_class.state.value
    if stack_class.collective:
        state = f"{state} in {stack_class.collective}"
    elif stack_class.wait and state != "moving":
        state = f"{state} in {stack_class.wait}"
    place = _at(where)
    return WaitSide(
        label=units_label(stack_class.ranks, analysis.rank_unit),
        name=ranks_name(stack_class.ranks, analysis.rank_unit),
        ranks=stack_class.ranks,
        pids=stack_class.pids,
        state=state,
        where=place,
        branch=branch,
        evidence=dump_of(analysis, stack_class),
        doing=f"{state} at {place}" if place else state,
        brief=f"{state} in {place.partition(' (')[0]}" if place else state,
    )


def _ranks_side(
    ranks: Sequence[int],
    pids: Sequence[int],
    unit: str,
    state: str,
    *,
    where: str = "",
    branch: str = "",
    evidence: str = "",
    doing: str = "",
    brief: str = "",
) -> WaitSide:
    """A side known by its ranks alone (no stack class to read): missing, gone, or named by
    the analysis's own relation."""
    return WaitSide(
        label=units_label(ranks, unit),
        name=ranks_name(ranks, unit),
        ranks=tuple(ranks),
        pids=tuple(pids),
        state=state,
        where=where,
        branch=branch,
        evidence=evidence,
        doing=doing,
        brief=brief,
    )


def gone_ranks(analysis: Analysis) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Ranks whose dumps failed because the process is not there, with the failure lines."""
    ranks: dict[int, None] = {}
    sources: dict[str, None] = {}
    for failed in analysis.failed:
        # The analysis's own failure state (`FailedRank.state`) when it has one.
        state = getattr(failed, "state", None)
        gone = state == "gone" if state is not None else bool(_GONE.search(failed.failure.reason))
        if gone and failed.rank is not None:
            ranks.setdefault(failed.rank, None)
            sources.setdefault(str(failed.failure.source), None)
    return tuple(sorted(ranks)), tuple(sources)


_LOCATION = re.compile(r" \([^()]*\)")


def _native_edges(analysis: Analysis) -> tuple[WaitEdge, ...]:
    """The analysis's own waits-for relation (`Analysis.waits_for`), as `WaitEdge`s.

    Read through `getattr`: older analyses have no such field, and then () tells
    `waits_for` to derive the relation itself.
    """
    native: Sequence[Any] = getattr(analysis, "waits_for", ())
    if not native:
        return ()
    unit = analysis.rank_unit
    shared = analysis.branch_point.shared if analysis.branch_point else None
    by_rank = {r: c for c in analysis.classes for r in c.ranks}
    _gone, gone_sources = gone_ranks(analysis)
    edges: list[WaitEdge] = []
    for edge in native:
        left, right = edge.waiting, edge.waited
        left_class = by_rank.get(left.ranks[0]) if left.ranks else None
        right_class = by_rank.get(right.ranks[0]) if right.ranks else None
        left_side = (
            side_of(analysis, left_class, shared)
            if left_class is not None
            else _ranks_side(left.ranks, left.pids, unit, "stuck")
        )
        at = str(right.at or "")
        state = str(right.state)
        doing = (at if at.startswith(state) else f"{state} {at}") if at else f", {state}"
        located = re.findall(r"\S+ \([^()]*:\d+\)", at)
        edges.append(
            WaitEdge(
                waiting=replace(
                    left_side,
                    # The edge's own ranks: a class at one place may hold ranks of two calls.
                    label=format_ranks(left.ranks) if left.ranks else left_side.label,
                    name=ranks_name(left.ranks, unit) if left.ranks else left_side.name,
                    ranks=tuple(left.ranks),
                    pids=tuple(left.pids),
                    where=str(left.at or left_side.where),
                ),
                collective=str(left.collective),
                waited=_ranks_side(
                    right.ranks,
                    right.pids,
                    unit,
                    state,
                    where=located[-1] if located else "",
                    branch=side_of(analysis, right_class, shared).branch if right_class else "",
                    evidence=(
                        dump_of(analysis, right_class)
                        if right_class is not None
                        else (gone_sources[0] if gone_sources else "")
                    ),
                    doing=doing,
                    brief=_LOCATION.sub("", doing),
                ),
                kind=str(getattr(edge, "kind", "collective")),
                group=getattr(left, "group", None),
            )
        )
    return tuple(edges)


def _place_key(side: WaitSide) -> tuple[str, str]:
    return (side.state, side.where)


def _merge(sides: Sequence[WaitSide], unit: str) -> WaitSide:
    """Sides at one place as one side: their ranks joined, the first side's words kept."""
    first = sides[0]
    if len(sides) == 1:
        return first
    ranks = tuple(sorted({r for s in sides for r in s.ranks}))
    pids = tuple(sorted({p for s in sides for p in s.pids}))
    return replace(
        first,
        label=units_label(ranks, unit) if ranks else first.label,
        name=ranks_name(ranks, unit) if ranks else first.name,
        ranks=ranks,
        pids=pids,
    )


def collapse(edges: Sequence[WaitEdge], unit: str) -> tuple[WaitEdge, ...]:
    """One edge per pair of distinct places: ranks at the same place (state and code line)
    are one side, and a "wait" between two sides at the same place is no wait at all.

    Unresolved native frames make every rank its own stack class, so the derived relation
    would otherwise pair rank 0 with rank 1 although both sit at `forward_batch (x.py:104)`.
    """
    groups: dict[tuple[object, ...], list[WaitEdge]] = {}
    for edge in edges:
        if edge.kind == "p2p":
            # Each rank waits for its own peer: merging would pair ranks with others' peers.
            groups.setdefault(("p2p", edge.waiting.ranks, edge.waited.ranks), []).append(edge)
            continue
        if edge.waited.where and _place_key(edge.waiting) == _place_key(edge.waited):
            continue
        key = (_place_key(edge.waiting), edge.collective, _place_key(edge.waited))
        groups.setdefault(key, []).append(edge)
    out: list[WaitEdge] = []
    for members in groups.values():
        out.append(
            WaitEdge(
                waiting=_merge([e.waiting for e in members], unit),
                collective=members[0].collective,
                waited=_merge([e.waited for e in members], unit),
                kind=members[0].kind,
                group=members[0].group,
            )
        )
    return tuple(out)


def waits_for(analysis: Analysis) -> tuple[WaitEdge, ...]:
    """Who waits for whom: the waiting ranks, their collective, and the ranks they wait for.

    The analysis's own relation when it has one (`Analysis.waits_for`); otherwise derived
    from the branch point (a desync), the laggards (one side is the odd one out), and
    missing or gone ranks (an all-stuck group waiting for a rank that is not there).
    Either way, ranks at the same place are one side (`collapse`).
    """
    return collapse(_waits_for(analysis), analysis.rank_unit)


def _waits_for(analysis: Analysis) -> tuple[WaitEdge, ...]:
    native = _native_edges(analysis)
    if native:
        return native
    unit = analysis.rank_unit
    classes = analysis.classes
    edges: list[WaitEdge] = []
    if analysis.verdict is Verdict.COLLECTIVE_DESYNC and analysis.branch_point is not None:
        shared = analysis.branch_point.shared
        by_label = {c.label: c for c in classes}
        sides = [by_label[b.label] for b in analysis.branch_point.branches if b.label in by_label]
        lag = set(analysis.laggards)
        waited = [c for c in sides if c.collective is None]
        if not waited and lag:
            waited = [c for c in sides if lag.issuperset(c.ranks)]
        if not waited and len(sides) >= 2:
            waited = sides[1:]
        waiting = [c for c in sides if c not in waited and c.collective]
        for left in waiting:
            for right in waited:
                edges.append(
                    WaitEdge(
                        waiting=side_of(analysis, left, shared),
                        collective=left.collective or "",
                        waited=side_of(analysis, right, shared, waiting=bool(right.collective)),
                    )
                )
    if analysis.verdict in (Verdict.ALL_STUCK, Verdict.COLLECTIVE_DESYNC) and not edges:
        gone, sources = gone_ranks(analysis)
        absent = sorted(set(analysis.missing_ranks) | set(gone))
        if absent:
            state = "gone" if gone else "missing"
            for left in (c for c in classes if c.collective):
                edges.append(
                    WaitEdge(
                        waiting=side_of(analysis, left, None),
                        collective=left.collective or "",
                        waited=_ranks_side(
                            absent,
                            (),
                            unit,
                            state,
                            evidence=sources[0] if sources else "",
                            doing=f", {state}",
                            brief=f", {state}",
                        ),
                    )
                )
    return tuple(edges)


def stack_sources(analysis: Analysis) -> tuple[str, ...]:
    """The dumps the stack classes come from, each once, in class order."""
    return tuple(dict.fromkeys(e for c in analysis.classes for e in [dump_of(analysis, c)] if e))


def gone_or_missing(analysis: Analysis) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(gone, missing): ranks with evidence of leaving, and ranks merely not in the evidence."""
    gone, _ = gone_ranks(analysis)
    missing = tuple(r for r in analysis.missing_ranks if r not in set(gone))
    return gone, missing
