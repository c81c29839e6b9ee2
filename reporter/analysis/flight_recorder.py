"""Join the Flight Recorder finding with the stacks, and its JSON.

Input: the bundle's `FrTrace`s, aligned in `fr_align.py` (`analyze`, `analyze_set`,
re-exported here), and the stack analysis (`RankProcess`es). Output (`read`): the
`FlightRecorderAnalysis`, one sentence joining it with the stacks, and the facts the
verdict table reads (a first mismatch; every collective completed).

Stacks stopped at a GPU synchronisation point (`[[gpu_sync]]` in frames.toml) cannot tell
which collective a rank issued; the joined verdict says so, and which dump decides.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING

from reporter.analysis.classify import Classifier, FrameKind, RuleSection, parse_rules
from reporter.analysis.clues import main_thread
from reporter.analysis.fr_align import DEFAULT_GROUP_DESC, analyze, analyze_set
from reporter.analysis.fr_result import FlightRecorderAnalysis, FrGroupView, FrMismatch, FrRow
from reporter.analysis.ranksets import format_ranks
from reporter.core import rules
from reporter.model import Bundle, Frame

if TYPE_CHECKING:
    from reporter.analysis.result import Analysis, RankProcess

__all__ = [
    "DEFAULT_GROUP_DESC",
    "FlightRecorderAnalysis",
    "FrGroupView",
    "FrMismatch",
    "FrReading",
    "FrRow",
    "all_completed",
    "analyze",
    "analyze_set",
    "group_name",
    "joined_sentence",
    "read",
    "stack_place",
]


def _as_wait_tables(entries: object) -> str:
    """`[[gpu_sync]]` tables rewritten as `[[wait]]` so classify's rule compiler reads them."""
    if not isinstance(entries, list):
        return ""
    lines: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        lines.append("[[wait]]")
        entry.setdefault("name", "")
        for key, value in entry.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


@cache
def gpu_sync_classifier() -> Classifier:
    """Matches the `[[gpu_sync]]` rules of the packaged frames.toml."""
    tables = rules.load("frames.toml").get("gpu_sync", [])
    compiled = parse_rules(_as_wait_tables(tables), source="reporter/data/frames.toml [[gpu_sync]]")
    return Classifier(compiled)


@dataclass(frozen=True, slots=True, kw_only=True)
class StackPlace:
    """Where one rank's main thread sits: the GPU sync point (if any) and the first
    application function below it."""

    sync: str | None
    function: str | None
    collective: str | None


def stack_place(frames: Sequence[Frame], classifier: Classifier) -> StackPlace:
    """Scan a main-thread stack (innermost first) down to its first application frame."""
    sync_rules = gpu_sync_classifier()
    sync: str | None = None
    function: str | None = None
    collective: str | None = None
    for frame in frames:
        if sync is None:
            rule = sync_rules.match(frame)
            if rule is not None and rule.section is RuleSection.WAIT:
                sync = rule.name or frame.short_function
        found = classifier.classify(frame)
        # Only a named collective counts: `work-wait` and the like are the sync point itself.
        if found.kind is FrameKind.COLLECTIVE and found.specific:
            collective = found.name
        if found.kind is FrameKind.APPLICATION:
            function = frame.function
            break
    # A blocking collective waits on its own work inside the call: that is the collective,
    # not a synchronisation point after it.
    if collective is not None:
        sync = None
    return StackPlace(sync=sync, function=function, collective=collective)


_SHAPE = attrgetter("function", "file", "native")


def _places(processes: Sequence[RankProcess], classifier: Classifier) -> dict[int, StackPlace]:
    places: dict[int, StackPlace] = {}
    # A place reads each frame's function, file and native flag, never its line: stacks
    # that differ only in line numbers share one. A frames tuple shared by several ranks'
    # dumps is looked up by its own identity first.
    seen: dict[tuple[tuple[str, str, bool], ...], StackPlace] = {}
    by_tuple: dict[int, StackPlace] = {}
    for process in processes:
        rank = process.identity.rank
        if rank is None or not process.snapshots:
            continue
        thread = main_thread(process.snapshots[-1])
        if thread is not None:
            frames = thread.frames
            place = by_tuple.get(id(frames))
            if place is None:
                key = tuple(map(_SHAPE, frames))
                place = seen.get(key)
                if place is None:
                    place = seen[key] = stack_place(frames, classifier)
                by_tuple[id(frames)] = place
            places[rank] = place
    return places


def _where(place: StackPlace, *, one: bool) -> str:
    wait, sit = ("waits", "sits") if one else ("wait", "sit")
    inside = f" in `{place.function}`" if place.function else ""
    if place.sync:
        return f"{wait} at `{place.sync}`{inside}"
    if place.collective:
        return f"{sit} in `{place.collective}`{inside}"
    if place.function:
        return f"{sit} in `{place.function}`"
    return "shows no application frame" if one else "show no application frame"


def _describe_ranks(ranks: Sequence[int], places: dict[int, StackPlace]) -> str:
    seen = [r for r in ranks if r in places]
    if not seen:
        return "has no stack in the bundle" if len(ranks) == 1 else "have no stack in the bundle"
    kinds: dict[str, list[int]] = {}
    for rank in seen:
        kinds.setdefault(_where(places[rank], one=len(ranks) == 1), []).append(rank)
    parts = list(kinds.items())
    if len(parts) == 1:
        return parts[0][0]
    return "; ".join(f"{_ranks_label(r)} {_where(places[r[0]], one=len(r) == 1)}" for _, r in parts)


def _ranks_label(ranks: Sequence[int]) -> str:
    """`rank 3`, `ranks [0-2]`."""
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {format_ranks(ranks)}"


def group_name(group: str, desc: str) -> str:
    """`group 1`, `group 0 (default_pg)`: how the verdict names a process group."""
    label = desc if desc and desc != "undefined" else ""
    return f"group {group}" + (f" ({label})" if label else "")


def joined_sentence(
    fr: FlightRecorderAnalysis | None, processes: Sequence[RankProcess], classifier: Classifier
) -> str:
    """The Flight Recorder finding joined with the stacks of the same ranks ("" for nothing)."""
    places = _places(processes, classifier)
    synced = sorted(r for r, p in places.items() if p.sync)
    if fr is None:
        if not synced:
            return ""
        where = _describe_ranks(synced, places)
        return (
            f" Stacks alone cannot tell which collective {_ranks_label(synced)} last "
            f"issued: {'it' if len(synced) == 1 else 'they'} {where}. A Flight Recorder dump of every rank would "
            "(TORCH_FR_BUFFER_SIZE=2000 or TORCH_NCCL_TRACE_BUFFER_SIZE=2000 with "
            "TORCH_NCCL_DUMP_ON_TIMEOUT=1, or `report collect --torch-debug URL`)."
        )
    mismatch = fr.first_mismatch
    source = f"Flight Recorder ({_set_label(fr)})"
    if mismatch is None:
        tail = _tail(fr)
        return f" {source}: no mismatch; every group agrees{tail}."
    where = group_name(mismatch.group, mismatch.group_desc)
    clauses: list[str] = []

    def stacks(ranks: Sequence[int]) -> str:
        # Without any stack in the bundle, saying so once (in the summary) is enough.
        return f" and {_describe_ranks(ranks, places)}" if places else ""

    for side in mismatch.sides:
        sizes = f" {side.sizes}" if mismatch.kind in ("sizes", "dtypes") and side.sizes else ""
        clauses.append(
            f"{_ranks_label(side.ranks)} issued {side.op}{sizes} #{mismatch.seq_id} on {where}"
            + stacks(side.ranks)
        )
    for rank, op, seq in mismatch.previous:
        last = f"last issued {op} #{seq}" if seq is not None else "issued nothing"
        clauses.append(
            f"rank {rank} never issued #{mismatch.seq_id} ({last} on {where})" + stacks([rank])
        )
    text = f" {source}: first mismatch ({mismatch.kind}) at #{mismatch.seq_id} on {where}: " + (
        "; ".join(clauses) + "."
    )
    if synced and len({places[r].sync for r in synced}) == 1 and len(synced) == len(places):
        text += (
            " The stacks alone cannot decide: every rank waits at "
            f"`{places[synced[0]].sync}`; the dump decides."
        )
    return text


def _set_label(fr: FlightRecorderAnalysis) -> str:
    """`fr_timeout/, 4 ranks`, or `watchdog lines of train.log, 2 ranks`."""
    ranks = f"{len(fr.ranks)} rank" + ("" if len(fr.ranks) == 1 else "s")
    if fr.trace_set.startswith("watchdog:"):
        return f"watchdog lines of {fr.trace_set.removeprefix('watchdog:')}, {ranks}"
    return f"{fr.trace_set}/, {ranks}"


def _tail(fr: FlightRecorderAnalysis) -> str:
    lasts = [f"{group_name(g.group, g.desc)} up to #{g.last_seq}" for g in fr.groups if g.last_seq]
    return f" ({', '.join(lasts)})" if lasts else ""


def all_completed(fr: FlightRecorderAnalysis) -> bool:
    """No mismatch, and every rank completed every collective it issued in every group."""
    if fr.first_mismatch is not None or not fr.progress:
        return False
    return all(
        p.last_completed is not None and p.last_completed == p.last_issued for p in fr.progress
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class FrReading:
    """What the Flight Recorder adds, before any verdict: its analysis, the sentence joining
    it with the stacks, and the two facts the verdict table reads."""

    fr: FlightRecorderAnalysis | None
    sentence: str
    mismatch: bool
    """A first mismatch: the recorder, not the stacks, says where the ranks split."""
    idle: bool
    """Every rank completed every collective it issued and waits outside any collective."""
    no_stacks: bool
    """No rank stacks: the recorder speaks instead of the stack summary."""


def read(analysis: Analysis, bundle: Bundle, classifier: Classifier) -> FrReading:
    """The Flight Recorder analysis and its joined sentence (the verdict table in `decide.py`
    decides what they make of the verdict)."""
    fr = analyze(bundle.flight_recorder)
    sentence = joined_sentence(fr, analysis.processes, classifier)
    if fr is None:
        return FrReading(fr=None, sentence=sentence, mismatch=False, idle=False, no_stacks=False)
    # Blocked in a wait outside any collective with nothing pending in one: idle between
    # steps (the recorder shows every collective done), not a hang.
    idle = (
        all_completed(fr)
        and bool(analysis.classes)
        and all(c.collective is None and c.wait for c in analysis.classes)
        and {p.identity.rank for p in analysis.processes} <= set(fr.ranks)
    )
    return FrReading(
        fr=fr,
        sentence=sentence,
        mismatch=fr.first_mismatch is not None,
        idle=idle,
        no_stacks=not analysis.processes,
    )
