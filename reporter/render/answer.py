"""The answer first: what is wrong, who waits for whom, since when, whether it recovers, what to do.

Input: a `Bundle`, its `Analysis` and, from the application layer, the earlier reports
with the same or a similar signature (`SeenBefore`). Output: a frozen `Answer` of plain
text (Markdown inline code allowed) in which every claim carries the evidence it rests
on as `file:line` strings. The report's summary block, its title and verdict paragraph,
`report analyze`'s first screen and the `summary` / `next_steps` keys of
`analyze --json` are all laid out from it, so they never disagree.

"Who waits for whom" goes through one function, `waits_for`: it reads the analysis's
own waits-for relation when the analysis has one, and otherwise derives it from the
branch point, the laggards, the classes and the failed dumps. Example::

    WaitEdge(waiting=WaitSide(label="[0-1]", state="stuck",
                              where="writing_check (tp_desync.py:66)",
                              branch="on_idle (tp_desync.py:118)",
                              evidence="snapshots/rank0_s2.txt:3"),
             collective="all_reduce",
             waited=WaitSide(label="[2-3]", state="moving",
                             where="self_check_during_idle (tp_desync.py:127)",
                             branch="on_idle (tp_desync.py:119)", ...))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from reporter.analysis.ranks import format_ranks, main_thread
from reporter.analysis.result import Analysis, RankState, StackClass, Verdict
from reporter.model import Bundle, EventKind, Frame, Location, TimelineEvent
from reporter.render import nextsteps
from reporter.times import clock

if TYPE_CHECKING:
    from reporter.analysis.diff import Change
    from reporter.analysis.fr_result import FlightRecorderAnalysis, FrMismatch, FrSide


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitSide:
    """One side of a wait: ranks, their state, where they are (code `file:line`), the dump."""

    label: str
    name: str
    """`ranks [0-1]`, `rank 3`, `PIDs [10,12]`: the label in a sentence."""
    ranks: tuple[int, ...]
    pids: tuple[int, ...]
    state: str
    where: str
    """`function (file:line)`: the call site of the collective, or the innermost app frame."""
    branch: str
    """The shared frame at the line this side left it (`on_idle (scheduler.py:118)`), or ""."""
    evidence: str
    """The dump that shows it: `snapshots/rank0_s2.txt:3`; "" for missing ranks."""
    doing: str = ""
    """What the ranks do, after their name: `idle in on_idle (decode.py:812)`, `, gone`."""
    brief: str = ""
    """`doing` without code locations, for titles: `idle in on_idle`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitEdge:
    """`waiting` ranks sit in `collective` until the `waited` ranks join it."""

    waiting: WaitSide
    collective: str
    waited: WaitSide


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeout:
    """A collective timeout or watchdog found in a command line or the environment."""

    name: str
    value: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SeenReport:
    """An earlier report with the same (or a similar) signature."""

    path: str
    date: str
    status: str
    same: bool
    """True: the same signature; False: similar (same collectives, other lines or ranks)."""
    action_items: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryLine:
    """One line of the summary block: its topic, the text, and the evidence it cites."""

    topic: str
    text: str
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """Everything the first screen says, in one place."""

    title: str
    verdict_label: str
    """The verdict as the report headline says it (`wedged (metrics only)` when no stacks)."""
    paragraph: str
    """The verdict paragraph: the stack finding, the wedge, clients, the top change, restarts."""
    lines: tuple[SummaryLine, ...]
    steps: tuple[nextsteps.Step, ...]
    factors: tuple[str, ...]
    """Contributing factors to suggest (the reviewer accepts or deletes each)."""
    actions: tuple[str, ...]
    """Action items to suggest."""
    impact: tuple[str, ...] = ()
    """Impact to suggest: how long it was wedged, who waited."""
    edges: tuple[WaitEdge, ...]
    timeouts: tuple[Timeout, ...]


# Command-line options and environment variables that end a hung collective or kill a
# wedged server: SGLang's watchdog, torch's NCCL/gloo timeouts and heartbeat monitor.
_TIMEOUT_FLAG = re.compile(r"^--?[\w.-]*(timeout|watchdog)[\w.-]*$", re.IGNORECASE)
_TIMEOUT_IN_TEXT = re.compile(
    r"(?<![\w-])(--[\w.-]*(?:timeout|watchdog)[\w.-]*)(?:=|\s+)([^\s-][^\s]*)", re.IGNORECASE
)
_TIMEOUT_ENV = re.compile(
    r"^(TORCH_NCCL_\w*(TIMEOUT|HEARTBEAT|WATCHDOG)\w*|NCCL_TIMEOUT|TORCH_GLOO\w*TIMEOUT\w*"
    r"|GLOO_\w*TIMEOUT\w*|TORCH_DIST\w*TIMEOUT\w*|\w*WATCHDOG\w*|SGLANG_\w*DIST\w*TIMEOUT\w*"
    r"|VLLM_\w*(RPC_TIMEOUT|ENGINE_ITERATION_TIMEOUT)\w*)$"
)
# py-spy's words for a process that is not there any more.
_GONE = re.compile(
    r"no such (file|process)|process is running|not running|has exited|process .* exited",
    re.IGNORECASE,
)
# Log and manual lines that mark a restart or a deploy on the timeline.
_RESTART = re.compile(r"\b(restart\w*|deploy\w*|roll(ed)?[ -]?out|upgrad\w*|started)\b", re.I)
_TORCH_FILE = re.compile(r"(^|/)torch/")
_KIND_WORDS = {"env": "env var", "flag": "server option", "package": "package"}


def _rel(ranks: Sequence[int], unit: str) -> str:
    text = format_ranks(ranks)
    if unit != "rank":
        return f"PIDs {text}"
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {text}"


def _at(frame: Frame | None) -> str:
    if frame is None:
        return ""
    name = frame.short_function
    place = (
        f"{frame.short_file.rpartition('/')[2]}:{frame.line}" if frame.line else frame.short_file
    )
    return f"{name} ({place})"


def _evidence(analysis: Analysis, stack_class: StackClass) -> str:
    """The dump behind a class: its smallest rank's latest main thread, as `file:line`."""
    by_pid = {p.identity.pid: p for p in analysis.processes}
    for pid in stack_class.pids:
        process = by_pid.get(pid)
        if process is None or not process.snapshots:
            continue
        latest = process.snapshots[-1]
        thread = main_thread(latest)
        return str(thread.source if thread is not None else latest.source)
    return ""


def _app_frames(frames: Sequence[Frame]) -> list[Frame]:
    """Application frames, innermost first (`frames.toml` decides: collective wrappers such
    as `tensor_model_parallel_all_reduce` are library frames); else Python frames outside
    torch."""
    from reporter.analysis.classify import FrameKind, default_classifier

    classifier = default_classifier()
    found = [f for f in frames if classifier.classify(f).kind is FrameKind.APPLICATION]
    return found or [f for f in frames if not f.native and not _TORCH_FILE.search(f.file)]


def _side(
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
        label=stack_class.label,
        name=_rel(stack_class.ranks, analysis.rank_unit),
        ranks=stack_class.ranks,
        pids=stack_class.pids,
        state=state,
        where=place,
        branch=branch,
        evidence=_evidence(analysis, stack_class),
        doing=f"{state} at {place}" if place else state,
        brief=f"{state} in {place.partition(' (')[0]}" if place else state,
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
            _side(analysis, left_class, shared)
            if left_class is not None
            else WaitSide(
                label=format_ranks(left.ranks),
                name=_rel(left.ranks, unit),
                ranks=tuple(left.ranks),
                pids=tuple(left.pids),
                state="stuck",
                where="",
                branch="",
                evidence="",
            )
        )
        at = str(right.at or "")
        state = str(right.state)
        doing = (at if at.startswith(state) else f"{state} {at}") if at else f", {state}"
        located = re.findall(r"\S+ \([^()]*:\d+\)", at)
        edges.append(
            WaitEdge(
                waiting=WaitSide(
                    label=left_side.label,
                    name=left_side.name,
                    ranks=tuple(left.ranks),
                    pids=tuple(left.pids),
                    state=left_side.state,
                    where=str(left.at or left_side.where),
                    branch=left_side.branch,
                    evidence=left_side.evidence,
                    doing=left_side.doing,
                    brief=left_side.brief,
                ),
                collective=str(left.collective),
                waited=WaitSide(
                    label=format_ranks(right.ranks),
                    name=_rel(right.ranks, unit),
                    ranks=tuple(right.ranks),
                    pids=tuple(right.pids),
                    state=state,
                    where=located[-1] if located else "",
                    branch=_side(analysis, right_class, shared).branch if right_class else "",
                    evidence=(
                        _evidence(analysis, right_class)
                        if right_class is not None
                        else (gone_sources[0] if gone_sources else "")
                    ),
                    doing=doing,
                    brief=_LOCATION.sub("", doing),
                ),
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
        label=format_ranks(ranks) if ranks else first.label,
        name=_rel(ranks, unit) if ranks else first.name,
        ranks=ranks,
        pids=pids,
    )


def collapse(edges: Sequence[WaitEdge], unit: str) -> tuple[WaitEdge, ...]:
    """One edge per pair of distinct places: ranks at the same place (state and code line)
    are one side, and a "wait" between two sides at the same place is no wait at all.

    Unresolved native frames make every rank its own stack class, so the derived relation
    would otherwise pair rank 0 with rank 1 although both sit at `forward_batch (x.py:104)`.
    """
    groups: dict[tuple[tuple[str, str], str, tuple[str, str]], list[WaitEdge]] = {}
    for edge in edges:
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
                        waiting=_side(analysis, left, shared),
                        collective=left.collective or "",
                        waited=_side(analysis, right, shared, waiting=bool(right.collective)),
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
                        waiting=_side(analysis, left, None),
                        collective=left.collective or "",
                        waited=WaitSide(
                            label=format_ranks(absent),
                            name=_rel(absent, unit),
                            ranks=tuple(absent),
                            pids=(),
                            state=state,
                            where="",
                            branch="",
                            evidence=sources[0] if sources else "",
                            doing=f", {state}",
                            brief=f", {state}",
                        ),
                    )
                )
    return tuple(edges)


# --- The Flight Recorder's first mismatch, when it has one, decides the summary.


def fr_mismatch(analysis: Analysis) -> FrMismatch | None:
    """The Flight Recorder's first mismatch, or None (no dump, or every group agrees)."""
    fr = analysis.flight_recorder
    return fr.first_mismatch if fr is not None else None


def _fr_files(fr: FlightRecorderAnalysis, ranks: Sequence[int]) -> tuple[str, ...]:
    by_rank = dict(zip(fr.ranks, fr.files, strict=False))
    return tuple(by_rank[r] for r in ranks if r in by_rank)


def _rank_places(analysis: Analysis) -> dict[int, tuple[str, str]]:
    """Per rank: where its stack sits (`stuck in work-wait at forward_batch (frjob.py:104)`)
    and the dump that shows it (its own latest main thread, `file:line`)."""
    sources: dict[int, str] = {}
    for process in analysis.processes:
        rank = process.identity.rank
        if rank is None or not process.snapshots:
            continue
        latest = process.snapshots[-1]
        thread = main_thread(latest)
        sources[rank] = str(thread.source if thread is not None else latest.source)
    out: dict[int, tuple[str, str]] = {}
    for stack_class in analysis.classes:
        side = _side(analysis, stack_class, None, waiting=bool(stack_class.collective))
        for rank in stack_class.ranks:
            out[rank] = (side.doing, sources.get(rank, side.evidence))
    return out


def _places_text(
    ranks: Sequence[int], places: dict[int, tuple[str, str]], *, one_side: bool
) -> tuple[str, tuple[str, ...]]:
    """Where `ranks` sit in the stacks, equal places said once, with the dumps cited."""
    by_place: dict[str, list[int]] = {}
    sources: dict[str, None] = {}
    for rank in ranks:
        if rank in places:
            doing, source = places[rank]
            if doing not in by_place and source:
                sources.setdefault(source, None)
            by_place.setdefault(doing, []).append(rank)
    if not by_place:
        return ("no stack in the bundle", ())
    if len(by_place) == 1 and one_side and len(next(iter(by_place.values()))) == len(ranks):
        return (next(iter(by_place)), tuple(sources))
    text = "; ".join(f"{_rel(r, 'rank')} {doing}" for doing, r in by_place.items())
    return (text, tuple(sources))


def _fr_where(mismatch: FrMismatch) -> str:
    from reporter.analysis.flight_recorder import group_name

    return f"#{mismatch.seq_id} on {group_name(mismatch.group, mismatch.group_desc)}"


def _fr_op(mismatch: FrMismatch, side: FrSide) -> str:
    sized = mismatch.kind in ("sizes", "dtypes") and side.sizes
    return f"{side.op} {side.sizes}" if sized else side.op


def _fr_title(analysis: Analysis, mismatch: FrMismatch) -> str:
    """`TP ranks [0-1] in all_reduce, ranks [2-3] in broadcast at #5 on group 1`."""
    prefix = _role_prefix(analysis)
    parts = [f"{_rel(side.ranks, 'rank')} in {_fr_op(mismatch, side)}" for side in mismatch.sides]
    if parts and prefix.startswith("TP"):
        parts[0] = "TP " + parts[0]
    where = _fr_where(mismatch)
    if mismatch.missing:
        waiting = ", ".join(parts)
        return (
            f"{waiting[0].upper()}{waiting[1:]} {where} that "
            f"{_rel(mismatch.missing, 'rank')} never issued"
        )
    text = ", ".join(parts) + f" at {where}"
    return text[0].upper() + text[1:]


def _fr_lines(
    analysis: Analysis, fr: FlightRecorderAnalysis, mismatch: FrMismatch
) -> list[SummaryLine]:
    """What (the first mismatch) and who waits for whom (one line per side of the split)."""
    places = _rank_places(analysis)
    where = _fr_where(mismatch)
    by_op = "; ".join(
        f"{_fr_op(mismatch, side)} by {_rel(side.ranks, 'rank')}" for side in mismatch.sides
    )
    if mismatch.missing:
        by_op += f"; {_rel(mismatch.missing, 'rank')} never issued it"
    n = len(fr.ranks)
    lines = [
        SummaryLine(
            topic="What",
            text=(
                f"Collective desync: the Flight Recorder ({fr.trace_set}/, {n} ranks) shows "
                f"the first mismatch ({mismatch.kind}) at {where}: {by_op}."
            ),
            sources=fr.files,
        )
    ]
    for side in mismatch.sides:
        at, sources = _places_text(side.ranks, places, one_side=True)
        name = _rel(side.ranks, "rank")
        waits = (
            f" and {'waits' if len(side.ranks) == 1 else 'wait'} for {_rel(mismatch.missing, 'rank')}"
            if mismatch.missing
            else ""
        )
        lines.append(
            SummaryLine(
                topic="Who waits for whom",
                text=(
                    f"{name[0].upper()}{name[1:]} issued {_fr_op(mismatch, side)} {where}{waits}; "
                    f"stacks: {at}."
                ),
                sources=(*_fr_files(fr, side.ranks[:1]), *sources),
            )
        )
    previous = {rank: (op, seq) for rank, op, seq in mismatch.previous}
    missing_places: dict[str, list[int]] = {}
    for rank in mismatch.missing:
        op, seq = previous.get(rank, ("", None))
        last = f"last issued {op} #{seq}" if seq is not None else "issued nothing there"
        missing_places.setdefault(last, []).append(rank)
    for last, ranks in missing_places.items():
        at, sources = _places_text(ranks, places, one_side=True)
        name = _rel(ranks, "rank")
        lines.append(
            SummaryLine(
                topic="Who waits for whom",
                text=f"{name[0].upper()}{name[1:]} never issued #{mismatch.seq_id} ({last}); stacks: {at}.",
                sources=(*_fr_files(fr, ranks[:1]), *sources),
            )
        )
    return lines


def _fr_idle_line(analysis: Analysis, fr: FlightRecorderAnalysis) -> SummaryLine:
    from reporter.analysis.flight_recorder import group_name

    lasts = ", ".join(
        f"{group_name(g.group, g.desc)} #{g.last_seq}" for g in fr.groups if g.last_seq is not None
    )
    places = _rank_places(analysis)
    at, sources = _places_text(sorted(places), places, one_side=False)
    at = at.replace("stuck in ", "blocked in ")
    return SummaryLine(
        topic="What",
        text=(
            f"No hang in the collectives: the Flight Recorder ({fr.trace_set}/, {len(fr.ranks)} "
            f"ranks) shows every rank completed every collective it issued (up to {lasts}); "
            f"the stacks wait outside any collective: {at}."
        ),
        sources=(*fr.files, *sources),
    )


def find_timeouts(bundle: Bundle) -> tuple[Timeout, ...]:
    """Collective timeouts and watchdogs in the command lines and environment, each once."""
    found: dict[tuple[str, str], str] = {}
    for cmdline in bundle.environment.cmdlines:
        for flag in cmdline.flags:
            if _TIMEOUT_FLAG.match(flag.name) and flag.value is not None:
                found.setdefault((flag.name, flag.value), str(cmdline.source))
    for dump in bundle.dumps:
        for text in (dump.cmdline, dump.parent_cmdline):
            for match in _TIMEOUT_IN_TEXT.finditer(text or ""):
                found.setdefault((match.group(1), match.group(2)), str(dump.source))
    for var in bundle.environment.variables:
        if _TIMEOUT_ENV.match(var.name) and "DUMP" not in var.name:
            found.setdefault((var.name, var.value), str(var.source))
    return tuple(
        Timeout(name=name, value=value, source=source)
        for (name, value), source in sorted(found.items())
    )


def _restart_before(events: Sequence[TimelineEvent], onset: datetime) -> TimelineEvent | None:
    """The last service start, restart or deploy on the timeline before `onset`."""
    chosen: TimelineEvent | None = None
    for event in events:
        if event.at > onset:
            break
        if event.kind is EventKind.SERVICE or (
            event.kind in (EventKind.LOG, EventKind.MANUAL) and _RESTART.search(event.text)
        ):
            chosen = event
    return chosen


def _restart_words(event: TimelineEvent) -> str:
    """`` `sglang.service` started at 14:43:09 UTC`` or the quoted log line and its time."""
    if event.kind is EventKind.SERVICE:
        unit = event.text.partition(":")[0].strip()
        return f"`{unit}` started at {clock(event.at)[:8]} UTC"
    what = " ".join(event.text.split())
    what = what if len(what) <= 70 else what[:69] + "…"
    return f"`{what}` at {clock(event.at)[:8]} UTC"


def _gap(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _top_change(analysis: Analysis) -> Change | None:
    if analysis.diff is None:
        return None
    return next((c for c in analysis.diff.changes if c.score > 0), None)


def _change_sources(bundle: Bundle, change: Change) -> tuple[str, ...]:
    """Where the top change's values sit: the variable or command line in each run."""
    out: list[str] = []
    for side in (bundle, bundle.baseline):
        if side is None:
            continue
        env = side.environment
        prefix = "" if side is bundle else _baseline_prefix(bundle)
        hit: Location | None = next((v.source for v in env.variables if v.name == change.key), None)
        if hit is None:
            hit = next(
                (c.source for c in env.cmdlines if any(f.name == change.key for f in c.flags)),
                None,
            )
        if hit is None:
            hit = next((p.source for p in env.packages if p.name == change.key), None)
        if hit is not None:
            out.append(f"{prefix}{hit}")
    return tuple(out)


def _baseline_prefix(bundle: Bundle) -> str:
    """How the baseline's files are named: the manifest's folder, else the baseline's path."""
    base = bundle.manifest.baseline.strip("/")
    if not base and bundle.baseline is not None and bundle.baseline.root:
        base = bundle.baseline.root.rstrip("/")
    return f"{base}/" if base else "baseline: "


def _short_value(value: str | None) -> str:
    if value is None:
        return "(absent)"
    return f"`{value}`" if len(value) <= 40 else f"`{value[:39]}…`"


def _queue_growing(analysis: Analysis) -> bool:
    from reporter.analysis.wedge import StepKind

    wedge = analysis.wedge
    return wedge is not None and any(s.kind is StepKind.LINEAR_GROWTH for s in wedge.steps)


def _waiting_now(analysis: Analysis) -> tuple[str, tuple[str, ...]]:
    """`77 requests queued, 5 running at the last sample`, with the samples' lines."""
    from reporter.analysis.wedge import Role

    wedge = analysis.wedge
    if wedge is None:
        return "", ()
    parts: list[str] = []
    sources: list[str] = []
    for signal in wedge.signals:
        if signal.role is not Role.WAITING or not signal.points or signal.last <= 0:
            continue
        short = signal.name.rpartition(":")[2]
        parts.append(f"{signal.last:g} in `{short}`")
        sources.append(str(signal.points[-1].source))
    if not parts:
        return "", ()
    return f"{', '.join(parts)} at the last sample ({clock(wedge.last_sample)} UTC)", tuple(sources)


def _stack_sources(analysis: Analysis) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e for c in analysis.classes for e in [_evidence(analysis, c)] if e))


def _role_prefix(analysis: Analysis) -> str:
    dims = [dict(p.identity.dims) for p in analysis.processes]
    if dims and all("TP" in d for d in dims):
        return "TP ranks"
    return "Ranks" if analysis.rank_unit == "rank" else "Processes"


def _side_text(side: WaitSide) -> str:
    joiner = "" if side.doing.startswith(",") else " "
    return f"{side.name}{joiner}{side.doing}"


def _title(analysis: Analysis, edges: Sequence[WaitEdge]) -> str:
    """A title that says what happened: who waits for whom, or what the metrics show."""
    n = len(analysis.processes)
    wedge = analysis.wedge
    if edges:
        edge = edges[0]
        call = edge.waiting.where.partition(" (")[0]
        call_text = f" ({call})" if call and call != edge.collective else ""
        waited = edge.waited
        single = len(edge.waiting.ranks) == 1
        prefix = _role_prefix(analysis)
        who = (
            f"{prefix.removesuffix('s')} {edge.waiting.ranks[0]} waits"
            if single
            else (f"{prefix} {edge.waiting.label} wait")
        )
        target = waited.name if len(waited.ranks) == 1 else waited.label
        joiner = "" if waited.brief.startswith(",") else " "
        return f"{who} in {edge.collective}{call_text} for {target}{joiner}{waited.brief}"
    if not analysis.classes:
        if wedge is not None and wedge.episode is not None:
            growing = ", queue growing" if _queue_growing(analysis) else ", requests waiting"
            return f"Output stalled since {clock(wedge.episode.onset)[:8]} UTC{growing}; no stacks"
        possible = wedge.possible if wedge is not None else None
        if wedge is not None and possible is not None:
            return (
                f"Output possibly wedged since {clock(possible.onset)[:8]} UTC "
                f"(window shorter than {wedge.window:g} s); no stacks"
            )
        if wedge is not None:
            return "No wedge in the metrics; no stacks"
        return "No stacks in the evidence"
    if analysis.verdict is Verdict.PROGRESSING:
        unit = "ranks" if analysis.rank_unit == "rank" else "processes"
        return f"No hang: {n} {unit} progressing"
    if analysis.verdict is Verdict.ALL_STUCK:
        collectives = sorted({c.collective for c in analysis.classes if c.collective})
        what = f" in {', '.join(collectives)}" if collectives else ""
        return f"All {n} ranks stuck{what}"
    collectives = sorted({c.collective for c in analysis.classes if c.collective})
    what = f" in {', '.join(collectives)}" if collectives else ""
    return f"Inconclusive: {n} ranks{what}, {analysis.snapshots} snapshot(s)"


def _what_line(bundle: Bundle, analysis: Analysis, edges: Sequence[WaitEdge]) -> SummaryLine:
    verdict = analysis.verdict
    wedge = analysis.wedge
    n = len(analysis.processes)
    sources = _stack_sources(analysis)
    if not analysis.classes:
        if wedge is not None and wedge.episode is not None:
            ongoing = "still wedged at the last sample" if wedge.still_wedged else "it ended"
            growing = ", the queue growing" if _queue_growing(analysis) else ""
            return SummaryLine(
                topic="What",
                text=(
                    f"Generation output stopped while requests wait{growing}; {ongoing}. "
                    "No stack dumps, so where the ranks are is not known."
                ),
                sources=(str(wedge.episode.source),),
            )
        possible = wedge.possible if wedge is not None else None
        if wedge is not None and possible is not None:
            return SummaryLine(
                topic="What",
                text=(
                    f"Possibly wedged (window shorter than {wedge.window:g} s): output at zero "
                    f"with work waiting for {possible.duration:g} s by the last sample. No stacks."
                ),
                sources=(str(possible.source),),
            )
        what = "no wedge in the metrics" if wedge is not None else "no metric history"
        return SummaryLine(
            topic="What",
            text=f"No stack dumps and {what}: nothing here shows a hang.",
            sources=tuple(f.path for f in bundle.files),
        )
    unit = "ranks" if analysis.rank_unit == "rank" else "processes"
    basis = f"{analysis.snapshots} snapshot{'s' if analysis.snapshots != 1 else ''}"
    if verdict is Verdict.COLLECTIVE_DESYNC:
        text = f"Collective desync among {n} {unit} ({basis})"
        if edges:
            text += (
                f": {edges[0].waiting.name} in {edges[0].collective}, {edges[0].waited.name} not"
            )
        return SummaryLine(topic="What", text=text + ".", sources=sources)
    if verdict is Verdict.ALL_STUCK:
        gone, _ = gone_ranks(analysis)
        absent = sorted(set(analysis.missing_ranks) | set(gone))
        extra = f"; {_rel(absent, analysis.rank_unit)} not in the stacks" if absent else ""
        return SummaryLine(
            topic="What",
            text=f"All {n} {unit} stuck, unchanged across {basis}{extra}.",
            sources=sources,
        )
    if verdict is Verdict.PROGRESSING:
        return SummaryLine(
            topic="What",
            text=f"No hang: all {n} {unit} progressing; their stacks change across {basis}.",
            sources=sources,
        )
    return SummaryLine(
        topic="What",
        text=f"Inconclusive: {n} {unit} in {basis}; {analysis.confidence_notes[0] if analysis.confidence_notes else 'no decisive pattern'}.",
        sources=sources,
    )


def _instance_lines(analysis: Analysis) -> list[SummaryLine]:
    """One line per instance (server, job) when the bundle holds several (`Analysis.instances`)."""
    instances: Sequence[Any] = getattr(analysis, "instances", ())
    if len(instances) < 2:
        return []
    by_pid = {p.identity.pid: p for p in analysis.processes}
    out = []
    for instance in instances:
        sources = tuple(
            str(by_pid[pid].snapshots[-1].source)
            for pid in list(instance.pids)[:2]
            if pid in by_pid and by_pid[pid].snapshots
        )
        first = str(instance.summary).split(". ")[0].rstrip(".")
        out.append(
            SummaryLine(
                topic=f"In {instance.label}",
                text=f"{instance.verdict.value}: {first}.",
                sources=sources,
            )
        )
    return out


def _wait_line(edge: WaitEdge) -> SummaryLine:
    waiting, waited = edge.waiting, edge.waited
    verb = "waits" if len(waiting.ranks) == 1 else "wait"
    left = f"{waiting.name[0].upper()}{waiting.name[1:]} {verb} in {edge.collective}"
    if waiting.where:
        left += f" called at {waiting.where}"
    if waiting.branch and waiting.branch != waiting.where:
        left += f", from {waiting.branch}"
    right = _side_text(waited)
    if waited.branch and waited.branch not in (waiting.branch, waited.where):
        right += f", from {waited.branch}"
    sources = tuple(s for s in (waiting.evidence, waited.evidence) if s)
    return SummaryLine(topic="Who waits for whom", text=f"{left}; for {right}.", sources=sources)


def _since_line(analysis: Analysis) -> SummaryLine | None:
    wedge = analysis.wedge
    if wedge is not None and wedge.episode is not None:
        onset = wedge.episode.onset
        text = f"Wedge onset {clock(onset)} UTC"
        if wedge.episode.end is None:
            text += f", still wedged {wedge.episode.duration:g} s later at the last sample"
        else:
            text += f", for {wedge.episode.duration:g} s"
        sources = [str(wedge.episode.source)]
        restart = _restart_before(analysis.timeline, onset)
        if restart is not None:
            gap = (onset - restart.at).total_seconds()
            text += f"; {_gap(gap)} after {_restart_words(restart)}"
            sources.append(str(restart.source))
        return SummaryLine(topic="Since", text=text + ".", sources=tuple(sources))
    dumps = [e for e in analysis.timeline if e.kind is EventKind.DUMP]
    if dumps and analysis.classes and analysis.verdict is not Verdict.PROGRESSING:
        first = dumps[0]
        return SummaryLine(
            topic="Since",
            text=f"Not known: no metric history; the first dump was taken at {clock(first.at)} UTC.",
            sources=(str(first.source),),
        )
    return None


def _recover_line(
    analysis: Analysis, timeouts: Sequence[Timeout], edges: Sequence[WaitEdge]
) -> SummaryLine | None:
    stuck = analysis.verdict in (Verdict.COLLECTIVE_DESYNC, Verdict.ALL_STUCK) or (
        analysis.wedge is not None and analysis.wedge.episode is not None
    )
    if not stuck:
        return None
    if not timeouts:
        return SummaryLine(
            topic="Recovers on its own",
            text=(
                "No timeout found: no collective timeout or watchdog in the command lines or "
                "environment, so nothing ends the wait; a restart is needed."
            ),
            sources=(),
        )
    named = ", ".join(f"`{t.name}={t.value}`" for t in timeouts[:3])
    wedge = analysis.wedge
    so_far = (
        f"; wedged {wedge.episode.duration:g} s so far"
        if wedge is not None and wedge.episode is not None
        else ""
    )
    return SummaryLine(
        topic="Recovers on its own",
        text=(
            f"Only by timing out: {named} should end the wait, the process then exits or "
            f"raises{so_far}."
        ),
        sources=tuple(dict.fromkeys(t.source for t in timeouts[:3])),
    )


def _clients_line(analysis: Analysis) -> SummaryLine | None:
    parts: list[str] = []
    sources: list[str] = []
    goroutines = analysis.goroutines
    if goroutines is not None and goroutines.waiting:
        bucket = goroutines.waiting[0]
        total = sum(b.count for b in goroutines.waiting)
        since = (
            f" since at least {clock(bucket.waiting_since)[:8]} UTC"
            if bucket.waiting_since is not None
            else ""
        )
        parts.append(f"{total} client goroutines wait for {bucket.client_wait}{since}")
        sources.append(str(bucket.source))
    waiting, signal_sources = _waiting_now(analysis)
    if waiting and analysis.wedge is not None and analysis.wedge.episode is not None:
        parts.append(f"requests waiting: {waiting}")
        sources.extend(signal_sources)
    if not parts:
        return None
    text = "; ".join(parts)
    return SummaryLine(
        topic="Clients affected", text=text[0].upper() + text[1:] + ".", sources=tuple(sources)
    )


def _change_line(bundle: Bundle, analysis: Analysis) -> SummaryLine | None:
    change = _top_change(analysis)
    if change is None:
        return None
    total = len(analysis.diff.changes) if analysis.diff is not None else 0
    text = (
        f"`{change.key}` {_short_value(change.before)} → {_short_value(change.after)} "
        f"({_KIND_WORDS.get(change.kind.value, change.kind.value)}, ranked first of {total} "
        f"changes, score {change.score})."
    )
    return SummaryLine(
        topic="Top change since the last good run",
        text=text,
        sources=_change_sources(bundle, change),
    )


def _seen_line(seen: Sequence[SeenReport]) -> SummaryLine | None:
    if not seen:
        return None
    ordinal = {1: "second", 2: "third", 3: "fourth", 4: "fifth"}.get(
        len(seen), f"{len(seen) + 1}th"
    )
    first = seen[0]
    same = "same signature" if first.same else "a similar signature (same collectives)"
    items = "; ".join(first.action_items[:2])
    detail = f"status {first.status}" + (f"; action items: {items}" if items else "")
    return SummaryLine(
        topic="Seen before",
        text=f"Yes, {ordinal} time since {first.date} ({same}): {first.path} ({detail}).",
        sources=tuple(s.path for s in seen),
    )


def _services(analysis: Analysis, bundle: Bundle) -> str:
    """What must restart together: the service units seen and the ranks of the group."""
    units = sorted(
        {
            e.text.partition(":")[0]
            for e in bundle.events
            if e.kind is EventKind.SERVICE and e.text.partition(":")[0].endswith(".service")
        }
    )
    ranks = {p.identity.rank for p in analysis.processes if p.identity.rank is not None}
    ranks |= {f.rank for f in analysis.failed if f.rank is not None} | set(analysis.missing_ranks)
    n = len(ranks) or len(analysis.processes)
    roles = sorted({p.identity.role for p in analysis.processes if p.identity.role})
    kind = f" {'/'.join(roles)}" if roles else ""
    who = f"all {n}{kind} ranks" if n else "every rank"
    return f"{' and '.join(f'`{u}`' for u in units)} with {who}" if units else who


def _fr_idle(analysis: Analysis) -> bool:
    from reporter.analysis.flight_recorder import all_completed

    fr = analysis.flight_recorder
    return fr is not None and all_completed(fr) and analysis.verdict is Verdict.PROGRESSING


def build(bundle: Bundle, analysis: Analysis, *, seen: Sequence[SeenReport] = ()) -> Answer:
    """The answer for `analysis`: title, verdict paragraph, summary lines and next steps.

    When the Flight Recorder names a first mismatch, it decides the headline, the "What"
    line and who waits for whom (one line per side of the split); otherwise the stacks do.
    """
    edges = waits_for(analysis)
    timeouts = find_timeouts(bundle)
    fr = analysis.flight_recorder
    mismatch = fr_mismatch(analysis)
    lines: list[SummaryLine]
    if fr is not None and mismatch is not None:
        fr_lines = _fr_lines(analysis, fr, mismatch)
        lines = [fr_lines[0], *_instance_lines(analysis), *fr_lines[1:5]]
        title = _fr_title(analysis, mismatch)
    elif fr is not None and _fr_idle(analysis):
        lines = [_fr_idle_line(analysis, fr), *_instance_lines(analysis)]
        title = f"No hang: {len(fr.ranks)} ranks completed every collective (Flight Recorder)"
    else:
        lines = [_what_line(bundle, analysis, edges), *_instance_lines(analysis)]
        lines.extend(_wait_line(e) for e in edges[:2])
        title = _title(analysis, edges)
    for line in (
        _since_line(analysis),
        _recover_line(analysis, timeouts, edges),
        _clients_line(analysis),
        _change_line(bundle, analysis),
        _seen_line(seen),
    ):
        if line is not None:
            lines.append(line)
    facts = _facts(bundle, analysis, edges, timeouts)
    steps = nextsteps.suggest(nextsteps.default_rules(), facts)
    paragraph = _paragraph(bundle, analysis)
    factors, actions = _suggestions(bundle, analysis, edges, steps)
    no_stack_wedge = not analysis.classes and analysis.wedge is not None and analysis.wedge.found
    return Answer(
        title=title,
        verdict_label="wedged (metrics only)" if no_stack_wedge else analysis.verdict.value,
        paragraph=paragraph,
        lines=tuple(lines),
        steps=steps,
        factors=factors,
        impact=_impact(analysis, lines),
        actions=actions,
        edges=edges,
        timeouts=timeouts,
    )


def _facts(
    bundle: Bundle, analysis: Analysis, edges: Sequence[WaitEdge], timeouts: Sequence[Timeout]
) -> nextsteps.Facts:
    gone, _ = gone_ranks(analysis)
    absent = sorted(set(analysis.missing_ranks) | set(gone))
    change = _top_change(analysis)
    with_stacks = [c for c in analysis.classes if c.frames]
    collectives = {c.collective for c in with_stacks}
    wedge = analysis.wedge
    edge = edges[0] if edges else None
    waited_state = ""
    if edge is not None:
        waited_state = edge.waited.state.partition(" ")[0]
        if waited_state == RankState.UNKNOWN.value:
            waited_state = "unknown"
        by_rank = {r: c for c in analysis.classes for r in c.ranks}
        waited_class = by_rank.get(edge.waited.ranks[0]) if edge.waited.ranks else None
        if waited_state == "stuck" and waited_class is not None and not waited_class.collective:
            # Blocked outside any collective (a queue, a poll): never coming to the collective.
            waited_state = "waiting"
    values = {
        "waiting": f"{edge.waiting.name} at {edge.waiting.where}" if edge else "",
        "waited": _side_text(edge.waited) if edge else "",
        "collective": edge.collective
        if edge
        else next(iter(sorted(c for c in collectives if c)), ""),
        "gone": _rel(absent, analysis.rank_unit) if absent else "",
        "key": change.key if change else "",
        "before": _short_value(change.before) if change else "",
        "after": _short_value(change.after) if change else "",
        "kind": change.kind.value if change else "",
        "onset": f"{clock(wedge.episode.onset)} UTC" if wedge and wedge.episode else "",
        "services": _services(analysis, bundle),
        "timeouts": ", ".join(f"`{t.name}={t.value}`" for t in timeouts[:3]),
        **_fr_values(analysis),
    }
    frames = tuple(
        f.function
        for c in analysis.classes
        if edge is not None and c.label == edge.waiting.label
        for f in c.frames
    )
    return nextsteps.Facts(
        verdict=analysis.verdict.value,
        stacks=bool(analysis.classes),
        wedge=bool(wedge is not None and wedge.found),
        waited=frozenset({waited_state} if waited_state else ()),
        collectives=frozenset({edge.collective} if edge else {c for c in collectives if c}),
        waits=frozenset(c.wait for c in analysis.classes if c.wait),
        frames=frames,
        gone=bool(absent),
        diff_kinds=frozenset({change.kind.value} if change else ()),
        timeout=bool(timeouts),
        one_collective=len(collectives) == 1 and None not in collectives and bool(with_stacks),
        flight_recorder=fr_mismatch(analysis) is not None,
        values=values,
    )


def _fr_values(analysis: Analysis) -> dict[str, str]:
    """The next-steps placeholders of the Flight Recorder's first mismatch ("" without one)."""
    fr = analysis.flight_recorder
    mismatch = fr_mismatch(analysis)
    if fr is None or mismatch is None:
        return {"fr_at": "", "fr_split": "", "fr_files": ""}
    places = _rank_places(analysis)
    parts = []
    for side in mismatch.sides:
        at, _ = _places_text(side.ranks, places, one_side=True)
        parts.append(f"{_rel(side.ranks, 'rank')} issued {_fr_op(mismatch, side)} ({at})")
    if mismatch.missing:
        at, _ = _places_text(mismatch.missing, places, one_side=True)
        parts.append(f"{_rel(mismatch.missing, 'rank')} never issued it ({at})")
    files = fr.files
    shown = ", ".join(f"`{f}`" for f in files[:2]) + (", ..." if len(files) > 2 else "")
    return {"fr_at": _fr_where(mismatch), "fr_split": " versus ".join(parts), "fr_files": shown}


def _paragraph(bundle: Bundle, analysis: Analysis) -> str:
    """The verdict paragraph: the analysis summary, then the top change and a restart before the wedge."""
    text = analysis.summary
    wedge = analysis.wedge
    if not analysis.classes and wedge is not None and wedge.episode is not None:
        state = (
            "and is still wedged at the last sample"
            if wedge.episode.end is None
            else f"until {clock(wedge.episode.end)} UTC ({wedge.episode.end_reason})"
        )
        text = (
            f"From the metrics alone: generation output stopped with requests waiting from "
            f"{clock(wedge.episode.onset)} UTC {state} (the signals are under Metrics and the "
            "wedge). Without stacks the cause is open: "
            "py-spy dumps of every scheduler process while it lasts (`report collect`, "
            "three snapshots) would show whether the ranks wait in a collective and for whom."
        )
    change = _top_change(analysis)
    if change is not None:
        text += (
            f" The top-ranked change since the last good run is `{change.key}` "
            f"({_short_value(change.before)} → {_short_value(change.after)})."
        )
    if wedge is not None and wedge.episode is not None:
        restart = _restart_before(analysis.timeline, wedge.episode.onset)
        if restart is not None:
            gap = (wedge.episode.onset - restart.at).total_seconds()
            text += (
                f" The wedge began {_gap(gap)} after {_restart_words(restart)} "
                f"(`{restart.source}`): look at what that start changed."
            )
    return text


def _impact(analysis: Analysis, lines: Sequence[SummaryLine]) -> tuple[str, ...]:
    """What the evidence says about the impact: the wedge's length and the clients waiting."""
    out = []
    wedge = analysis.wedge
    if wedge is not None and wedge.episode is not None:
        episode = wedge.episode
        if episode.end is None:
            out.append(
                f"Generation stopped at {clock(episode.onset)[:8]} UTC and was still stopped "
                f"{episode.duration:g} s later, at the last metric sample "
                f"(`{episode.source}`); the real end comes from the service log or the restart."
            )
        else:
            out.append(
                f"Generation stopped from {clock(episode.onset)[:8]} to "
                f"{clock(episode.end)[:8]} UTC ({episode.duration:g} s, `{episode.source}`)."
            )
    for line in lines:
        if line.topic == "Clients affected":
            cited = ", ".join(f"`{src}`" for src in line.sources)
            out.append(f"{line.text.rstrip('.')} ({cited}).")
    return tuple(out)


def _suggestions(
    bundle: Bundle,
    analysis: Analysis,
    edges: Sequence[WaitEdge],
    steps: Sequence[nextsteps.Step],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Contributing factors and action items for the reviewer to accept or delete."""
    factors: list[str] = []
    mismatch = fr_mismatch(analysis)
    if mismatch is not None:
        split = "; ".join(
            f"{_rel(side.ranks, 'rank')} issued {_fr_op(mismatch, side)}" for side in mismatch.sides
        )
        if mismatch.missing:
            split += f"; {_rel(mismatch.missing, 'rank')} never issued it"
        factors.append(f"The ranks disagreed at {_fr_where(mismatch)} (Flight Recorder): {split}.")
        edges = ()
    for edge in edges[:2]:
        factors.append(
            f"{edge.waiting.name[0].upper()}{edge.waiting.name[1:]} entered {edge.collective} "
            f"at {edge.waiting.where or '?'} while {edge.waited.name} did not "
            f"({edge.waited.doing.lstrip(', ')})."
        )
    change = _top_change(analysis)
    if change is not None:
        factors.append(
            f"`{change.key}` changed since the last good run "
            f"({_short_value(change.before)} → {_short_value(change.after)})."
        )
    stuck = bool(edges) or mismatch is not None or bool(analysis.wedge and analysis.wedge.found)
    if not find_timeouts(bundle) and stuck:
        factors.append("No collective timeout or watchdog ended the wait.")
    actions = [step.action for step in steps[:4]]
    return tuple(factors), tuple(actions)
