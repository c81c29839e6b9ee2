"""The Flight Recorder's first mismatch, when it has one, decides the summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reporter.analysis.flight_recorder import all_completed, group_name
from reporter.analysis.ranks import main_thread
from reporter.analysis.result import Analysis, Verdict
from reporter.render.answer.records import SummaryLine
from reporter.render.answer.waits import ranks_name, side_of
from reporter.render.answer.what import role_prefix

if TYPE_CHECKING:
    from reporter.analysis.fr_result import FlightRecorderAnalysis, FrMismatch, FrSide


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
        side = side_of(analysis, stack_class, None, waiting=bool(stack_class.collective))
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
    text = "; ".join(f"{ranks_name(r, 'rank')} {doing}" for doing, r in by_place.items())
    return (text, tuple(sources))


def fr_where(mismatch: FrMismatch) -> str:
    return f"#{mismatch.seq_id} on {group_name(mismatch.group, mismatch.group_desc)}"


def fr_op(mismatch: FrMismatch, side: FrSide) -> str:
    sized = mismatch.kind in ("sizes", "dtypes") and side.sizes
    return f"{side.op} {side.sizes}" if sized else side.op


def fr_title(analysis: Analysis, mismatch: FrMismatch) -> str:
    """`TP ranks [0-1] in all_reduce, ranks [2-3] in broadcast at #5 on group 1`."""
    prefix = role_prefix(analysis)
    parts = [
        f"{ranks_name(side.ranks, 'rank')} in {fr_op(mismatch, side)}" for side in mismatch.sides
    ]
    if parts and prefix.startswith("TP"):
        parts[0] = "TP " + parts[0]
    where = fr_where(mismatch)
    if mismatch.missing:
        waiting = ", ".join(parts)
        return (
            f"{waiting[0].upper()}{waiting[1:]} {where} that "
            f"{ranks_name(mismatch.missing, 'rank')} never issued"
        )
    text = ", ".join(parts) + f" at {where}"
    return text[0].upper() + text[1:]


def fr_lines(
    analysis: Analysis, fr: FlightRecorderAnalysis, mismatch: FrMismatch
) -> list[SummaryLine]:
    """What (the first mismatch) and who waits for whom (one line per side of the split)."""
    places = _rank_places(analysis)
    where = fr_where(mismatch)
    by_op = "; ".join(
        f"{fr_op(mismatch, side)} by {ranks_name(side.ranks, 'rank')}" for side in mismatch.sides
    )
    if mismatch.missing:
        by_op += f"; {ranks_name(mismatch.missing, 'rank')} never issued it"
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
        name = ranks_name(side.ranks, "rank")
        waits = (
            f" and {'waits' if len(side.ranks) == 1 else 'wait'} for {ranks_name(mismatch.missing, 'rank')}"
            if mismatch.missing
            else ""
        )
        lines.append(
            SummaryLine(
                topic="Who waits for whom",
                text=(
                    f"{name[0].upper()}{name[1:]} issued {fr_op(mismatch, side)} {where}{waits}; "
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
        name = ranks_name(ranks, "rank")
        lines.append(
            SummaryLine(
                topic="Who waits for whom",
                text=f"{name[0].upper()}{name[1:]} never issued #{mismatch.seq_id} ({last}); stacks: {at}.",
                sources=(*_fr_files(fr, ranks[:1]), *sources),
            )
        )
    return lines


def fr_idle_line(analysis: Analysis, fr: FlightRecorderAnalysis) -> SummaryLine:
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


def fr_idle(analysis: Analysis) -> bool:
    fr = analysis.flight_recorder
    return fr is not None and all_completed(fr) and analysis.verdict is Verdict.PROGRESSING


def fr_values(analysis: Analysis) -> dict[str, str]:
    """The next-steps placeholders of the Flight Recorder's first mismatch ("" without one)."""
    fr = analysis.flight_recorder
    mismatch = fr_mismatch(analysis)
    if fr is None or mismatch is None:
        return {"fr_at": "", "fr_split": "", "fr_files": ""}
    places = _rank_places(analysis)
    parts = []
    for side in mismatch.sides:
        at, _ = _places_text(side.ranks, places, one_side=True)
        parts.append(f"{ranks_name(side.ranks, 'rank')} issued {fr_op(mismatch, side)} ({at})")
    if mismatch.missing:
        at, _ = _places_text(mismatch.missing, places, one_side=True)
        parts.append(f"{ranks_name(mismatch.missing, 'rank')} never issued it ({at})")
    files = fr.files
    shown = ", ".join(f"`{f}`" for f in files[:2]) + (", ..." if len(files) > 2 else "")
    return {"fr_at": fr_where(mismatch), "fr_split": " versus ".join(parts), "fr_files": shown}
