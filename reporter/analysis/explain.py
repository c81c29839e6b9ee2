"""Confidence and the plain-English summary of a verdict.

Inputs: the `Finding`, the stack classes, snapshot count and what rank
identification learnt (missing ranks, failed dumps, unknown identities).
Outputs: a `Confidence` with one note per step down, and a one-paragraph
summary. Confidence starts high and drops one level (to at most low) for
each of: a single snapshot, missing ranks, failed dumps, unknown rank
identities, and an inconclusive verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis.classify import Classifier, FrameKind
from reporter.analysis.p2p import cycle_name
from reporter.analysis.ranksets import format_pids, format_ranks
from reporter.analysis.result import (
    BranchPoint,
    Confidence,
    FailedRank,
    P2pCycle,
    RankState,
    StackClass,
    Verdict,
    WaitsFor,
)
from reporter.analysis.verdict import Finding
from reporter.core.text import plural
from reporter.model import Frame

_LEVELS = (Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW)
_LIST_LIMIT = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What the summary and confidence need besides the finding."""

    unit: str
    ranks: int
    snapshots: int
    classes: tuple[StackClass, ...]
    branch_point: BranchPoint | None
    missing: tuple[int, ...]
    world_size: int | None
    world_detail: str
    failed: tuple[FailedRank, ...]
    unidentified: tuple[str, ...]
    waits_for: tuple[WaitsFor, ...] = ()
    ambiguous: bool = False
    """Processes claiming the same rank were told apart by PID order only."""


def _short_list(items: Sequence[str], sep: str = "; ") -> str:
    shown = list(items[:_LIST_LIMIT])
    if len(items) > _LIST_LIMIT:
        shown.append(f"and {len(items) - _LIST_LIMIT} more")
    return sep.join(shown)


def _failure_texts(failed: Sequence[FailedRank]) -> list[str]:
    """One text per reason, naming every process and file it came from: the same py-spy
    message for three gone ranks is said once, not three times."""
    grouped: dict[str, tuple[list[str], list[str]]] = {}
    for item in failed:
        pid, rank = item.failure.pid, item.rank
        if pid is not None:
            who = f"PID {pid}" + (f" (rank {rank})" if rank is not None else "")
        else:
            who = f"rank {rank}" if rank is not None else "a process"
        whos, places = grouped.setdefault(item.failure.reason, ([], []))
        if who not in whos:
            whos.append(who)
        places.append(str(item.failure.source))
    out = []
    for reason, (whos, places) in grouped.items():
        where = (
            places[0] if len(places) == 1 else f"{len(places)} files ({_short_list(places, ', ')})"
        )
        out.append(f"{_short_list(whos, ', ')} in {where}: {reason}")
    return out


def confidence(finding: Finding, ctx: Context) -> tuple[Confidence, tuple[str, ...]]:
    """The confidence level and one note per reason it dropped."""
    notes: list[str] = []
    if ctx.ranks and ctx.snapshots <= 1:
        notes.append(
            "one snapshot cannot tell stuck from slow: capture two or three dumps a few seconds apart"
        )
    if ctx.missing:
        notes.append(
            f"{_ranks_text(ctx.unit, ctx.missing)} missing from the evidence (world size {ctx.world_size}, {ctx.world_detail})"
        )
    if ctx.failed:
        notes.append(
            f"{plural(len(ctx.failed), 'dump')} failed: " + _short_list(_failure_texts(ctx.failed))
        )
    if ctx.unit == "pid" and ctx.ranks:
        notes.append(
            "rank identities unknown: PIDs stand in for ranks, so collective groups and "
            "missing ranks cannot be checked"
        )
    elif ctx.unit == "process" and ctx.ranks:
        notes.append(
            "rank identities and PIDs unknown: processes are numbered by their place in "
            "the evidence, so collective groups and missing ranks cannot be checked"
        )
    elif ctx.unidentified:
        notes.append(
            f"{plural(len(ctx.unidentified), 'process')} without a rank identity left out: "
            + _short_list(ctx.unidentified)
        )
    if ctx.ambiguous:
        notes.append(
            "several processes claim the same ranks and nothing in the evidence told their "
            "servers apart: they were kept apart by PID and grouped by PID order"
        )
    notes.extend(finding.notes)
    if finding.verdict is Verdict.INCONCLUSIVE:
        notes.append(f"no decisive pattern: {finding.reason}")
    return _LEVELS[min(len(notes), len(_LEVELS) - 1)], tuple(notes)


def _where(frames: Sequence[Frame], classifier: Classifier) -> str | None:
    """The innermost application frame's short name, else the innermost informative one."""
    fallback = None
    for frame in frames:
        kind = classifier.classify(frame)
        if kind.kind is FrameKind.APPLICATION:
            return frame.short_function
        if fallback is None and kind.informative and not kind.native:
            fallback = frame.short_function
    return fallback


def describe_class(stack: StackClass, classifier: Classifier) -> str:
    """What a class is doing, in words: `in all_reduce (from check_hicache_events)`."""
    where = _where(stack.frames, classifier)
    if stack.collective:
        return f"in {stack.collective}" + (f" (from {where})" if where else "")
    if stack.wait:
        return f"waiting in {stack.wait}" + (f" (in {where})" if where else "")
    if where:
        return f"running {where}"
    return "without any stack frames" if not stack.frames else "in native code"


def _ranks_text(unit: str, ranks: Sequence[int]) -> str:
    word, words = {"rank": ("rank", "ranks"), "pid": ("PID", "PIDs")}.get(
        unit, ("process", "processes")
    )
    if len(ranks) == 1:
        return f"{word} {ranks[0]}"
    if unit == "pid":
        return f"{words} {format_pids(ranks)}"
    return f"{words} {format_ranks(ranks)}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


_FROZEN_WORDS = {
    RankState.STOPPED: "stopped",
    RankState.UNINTERRUPTIBLE: "in uninterruptible sleep (State D)",
    RankState.UNRESPONSIVE: "unresponsive to py-spy",
    RankState.CRASHED: "crashed",
}


def _class_text(unit: str, stack: StackClass, classifier: Classifier) -> str:
    verb = "is" if len(stack.ranks) == 1 else "are"
    what = describe_class(stack, classifier)
    if stack.state is RankState.STUCK:
        what = f"stuck {what}"
    elif stack.state is RankState.MOVING:
        verb = "keeps" if len(stack.ranks) == 1 else "keep"
        what = f"moving, last seen {what}"
    elif stack.state is RankState.IDLE:
        loop = next(
            (f for f in stack.frames if classifier.classify(f).kind is FrameKind.APPLICATION),
            None,
        )
        what = "idle" + (f" in {loop.short_function}" if loop is not None else "")
    elif stack.state is RankState.MIXED:
        what = f"{what} (some stuck, some moving)"
    elif stack.state in _FROZEN_WORDS:
        # Process state evidence, not the stacks: where it was when it stopped or died.
        what = f"{_FROZEN_WORDS[stack.state]}, last seen {what}"
    return f"{_ranks_text(unit, stack.ranks)} {verb} {what}"


def _classes_text(unit: str, classes: Sequence[StackClass], classifier: Classifier) -> str:
    parts = [_class_text(unit, c, classifier) for c in classes]
    if len(parts) > _LIST_LIMIT:
        parts = [*parts[:_LIST_LIMIT], f"{len(parts) - _LIST_LIMIT} more classes"]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " while " + parts[-1]


def _group_words(group: str | None) -> str:
    if group is None:
        return ""
    return f" on the {group} group"


def cycle_sentences(unit: str, cycles: Sequence[P2pCycle], edges: Sequence[WaitsFor]) -> list[str]:
    """One sentence per point-to-point cycle, naming each member's call site and peer:
    `In 0<->2, rank 0 waits in recv at update_sampled_tokens (pp.py:88) for rank 2, and rank 2
    in recv at execute_model (pp.py:78) for rank 0.`"""
    by_rank: dict[int, WaitsFor] = {}
    for edge in edges:
        if edge.kind == "p2p" and edge.waiting.ranks:
            by_rank.setdefault(edge.waiting.ranks[0], edge)
    out = []
    for cycle in cycles[:_LIST_LIMIT]:
        order = cycle.order or cycle.ranks
        # A long cycle: its first members and its last, which closes it.
        shown = order if len(order) <= 4 else (*order[:3], order[-1])
        parts = []
        for rank in shown:
            found = by_rank.get(rank)
            if found is None:
                continue
            where = f" at {found.waiting.at}" if found.waiting.at else ""
            parts.append(
                f"{_ranks_text(unit, (rank,))} in {found.waiting.collective}{where} for "
                f"{_ranks_text(unit, found.waited.ranks)}"
            )
        if parts:
            if len(shown) < len(order):
                parts[-1] = f"... {parts[-1]}"
            joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1]
            out.append(f"In {cycle_name(cycle)}, {joined}.")
    if len(cycles) > _LIST_LIMIT:
        out.append(f"{len(cycles) - _LIST_LIMIT} more cycles like these.")
    return out


def waits_sentences(unit: str, edges: Sequence[WaitsFor]) -> list[str]:
    """One sentence per waiting side: `Ranks [0-1] wait in all_reduce at writing_check
    (tp_desync.py:60) for ranks [2-3] (idle in on_idle (tp_desync.py:122)).`"""
    by_waiting: dict[tuple[tuple[int, ...], str, str], list[WaitsFor]] = {}
    for edge in edges:
        key = (edge.waiting.ranks, edge.waiting.collective, edge.waiting.at)
        by_waiting.setdefault(key, []).append(edge)
    out = []
    for (ranks, collective, at), group in list(by_waiting.items())[:_LIST_LIMIT]:
        parts = []
        for edge in group:
            who = _ranks_text(unit, edge.waited.ranks)
            if edge.waited.state in ("gone", "missing"):
                why = (
                    "gone: the process no longer exists"
                    if edge.waited.state == "gone"
                    else "missing from the evidence"
                )
                parts.append(f"{who} ({why})")
            else:
                parts.append(f"{who} ({edge.waited.at})")
        where = f" at {at}" if at else ""
        verb = "waits" if len(ranks) == 1 else "wait"
        on = _group_words(group[0].waiting.group) if group[0].kind == "collective" else ""
        out.append(
            f"{_cap(_ranks_text(unit, ranks))} {verb} in {collective}{where}{on} for "
            + "; ".join(parts)
            + "."
        )
    return out


def _snapshot_text(snapshots: int) -> str:
    if snapshots == 1:
        return "This rests on one snapshot, which cannot tell stuck from slow."
    return f"This rests on {snapshots} snapshots."


def summary(
    finding: Finding, ctx: Context, desync_classes: Sequence[StackClass], classifier: Classifier
) -> str:
    """One paragraph in plain English."""
    unit = ctx.unit
    count = plural(ctx.ranks, "rank" if unit == "rank" else "process")
    sentences: list[str] = []
    if finding.verdict is Verdict.COLLECTIVE_DESYNC:
        where = ""
        if finding.groups > 1 and len(finding.desync_groups) == 1 and finding.desync_groups[0]:
            where = f" in group {finding.desync_groups[0]}"
        elif finding.groups > 1 and finding.desync_groups == ("",):
            where = " across groups"
        sentences.append(
            f"Collective desync{where}: {_classes_text(unit, desync_classes, classifier)}."
        )
        if ctx.branch_point is not None and ctx.branch_point.shared is not None:
            sentences.append(f"Their stacks part below {ctx.branch_point.shared.short_function}.")
        if len(finding.desync_groups) > 1:
            sentences.append(
                f"{len(finding.desync_groups)} collective groups disagree "
                f"({', '.join(g or 'all ranks' for g in finding.desync_groups)})."
            )
        sentences.extend(waits_sentences(unit, ctx.waits_for))
        sentences.append(_snapshot_text(ctx.snapshots))
    elif finding.verdict is Verdict.P2P_DEADLOCK:
        # The deadlock's one-line name is the headline; the paragraph says each side.
        deadlocks = [c for c in finding.cycles if c.deadlock]
        if deadlocks:
            sentences.append("Point-to-point deadlock.")
            sentences.extend(cycle_sentences(unit, deadlocks, ctx.waits_for))
        else:
            sentences.append(
                f"Nobody sends: {_classes_text(unit, desync_classes, classifier)}, and the "
                "evidence names no peer."
            )
        sentences.append(_snapshot_text(ctx.snapshots))
    elif finding.verdict is Verdict.ALL_STUCK:
        sentences.append(
            f"All {count} show the same main stack in each of {ctx.snapshots} snapshots: "
            f"{_classes_text(unit, ctx.classes, classifier)}."
        )
        sentences.extend(waits_sentences(unit, ctx.waits_for))
        if all(c.wait and not c.collective for c in ctx.classes):
            sentences.append(
                "Every rank is blocked in a wait, not a collective: the service may simply be "
                "idle, waiting for input."
            )
    elif finding.verdict is Verdict.PROGRESSING:
        sentences.append(
            f"The {count} are making progress: main stacks change across {ctx.snapshots} snapshots."
        )
        stuck = set(finding.stuck_laggards)
        for stack in ctx.classes:
            members = [r for r in stack.ranks if r in stuck]
            if members:
                sentences.append(
                    f"{_cap(_ranks_text(unit, members))} did not move while others did "
                    f"({describe_class(stack, classifier)})."
                )
        outsiders = [r for r in finding.laggards if r not in stuck]
        if outsiders:
            sentences.append(
                f"{_cap(_ranks_text(unit, outsiders))} "
                f"{'is' if len(outsiders) == 1 else 'are'} alone outside the collective the "
                "rest of the group waits in, in the latest snapshot."
            )
    else:
        sentences.append(f"Inconclusive: {finding.reason}.")
        if ctx.classes:
            sentences.append(
                f"In the latest snapshot {_classes_text(unit, ctx.classes, classifier)}."
            )
        if ctx.ranks:
            sentences.append(_snapshot_text(ctx.snapshots))
    # Ranks already named gone in a waits-for sentence are not "missing" again.
    named_gone = {r for e in ctx.waits_for if e.waited.state == "gone" for r in e.waited.ranks}
    missing = [r for r in ctx.missing if r not in named_gone]
    if missing:
        sentences.append(
            f"{_cap(_ranks_text(unit, missing))} "
            f"{'is' if len(missing) == 1 else 'are'} missing from the evidence."
        )
    if ctx.failed:
        sentences.append(f"{plural(len(ctx.failed), 'dump')} failed.")
    return " ".join(sentences)
