"""The Flight Recorder section of the report and the FR excerpt of an upstream draft.

Input: a `FlightRecorderAnalysis`. Output: `FlightRecorderView` (for
`templates/report_flight_recorder.md.j2`) and `excerpt(...)`, the few aligned rows that show
the mismatch, as plain text for a fenced block. Rows fold equal entries into rank sets, so a
64-rank job still gives one short line per id::

    #4   all_reduce [[4]] on [0-3]
    #5 ! all_reduce [[4]] on [0-1]; broadcast [[4]] on [2-3]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reporter.analysis.flight_recorder import (
    FlightRecorderAnalysis,
    FrGroupView,
    FrMismatch,
    FrRow,
    group_name,
)
from reporter.analysis.ranks import format_ranks
from reporter.render import markdown as md


@dataclass(frozen=True, slots=True, kw_only=True)
class FrRowView:
    """One aligned id: what the ranks issued there, folded into rank sets."""

    seq: str
    issued: str
    states: str
    mismatch: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class FrGroupSection:
    """One process group's aligned rows."""

    title: str
    note: str
    rows: tuple[FrRowView, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FrProgressRow:
    """One rank's last issued / last completed id in one group."""

    rank: str
    group: str
    last_issued: str
    last_completed: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FlightRecorderView:
    """The report's Flight Recorder section, formatted."""

    finding: str
    source: str
    groups: tuple[FrGroupSection, ...]
    progress: tuple[FrProgressRow, ...]
    notes: tuple[str, ...]


def _folded(pairs: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """What -> the ranks that show it, in order of first appearance."""
    folded: dict[str, list[int]] = {}
    for what, rank in pairs:
        folded.setdefault(what, []).append(rank)
    return folded


def _on_ranks(folded: dict[str, list[int]]) -> str:
    return "; ".join(f"{what} on {format_ranks(ranks)}" for what, ranks in folded.items())


def _issued(row: FrRow) -> str:
    return _on_ranks(
        _folded(
            (f"{cell.op} {cell.sizes}".strip() if cell.op else "nothing", cell.rank)
            for cell in row.cells
        )
    )


def _states(row: FrRow) -> str:
    folded = _folded((cell.state or "?", cell.rank) for cell in row.cells if cell.op)
    if len(folded) == 1:
        return next(iter(folded))
    return _on_ranks(folded)


def finding_text(mismatch: FrMismatch | None) -> str:
    """One sentence: the first mismatch, or that there is none."""
    if mismatch is None:
        return "No mismatch: at every id the ranks of each group issued the same collective."
    where = group_name(mismatch.group, mismatch.group_desc)
    sides = "; ".join(f"{s.op} {s.sizes}".strip() + f" on {s.label}" for s in mismatch.sides)
    missing = f"; not issued on {format_ranks(mismatch.missing)}" if mismatch.missing else ""
    pending = (
        f" Not completed on {format_ranks(mismatch.not_completed)}."
        if mismatch.not_completed
        else ""
    )
    return (
        f"First mismatch ({mismatch.kind}): {where} #{mismatch.seq_id}: {sides}{missing}." + pending
    )


def _section(group: FrGroupView) -> FrGroupSection:
    members = format_ranks(group.members)
    if group.mismatch is not None:
        note = f"members {members}; the rows around the mismatch at #{group.mismatch.seq_id}"
    elif group.last_seq is not None:
        note = f"members {members}; all agree, the last rows up to #{group.last_seq}"
    else:
        note = f"members {members}; no collective recorded"
    return FrGroupSection(
        title=md.cell(group_name(group.group, group.desc)),
        note=note,
        rows=tuple(
            FrRowView(
                seq=f"#{row.seq_id}",
                issued=md.cell(_issued(row)),
                states=md.cell(_states(row)),
                mismatch=not row.agree,
            )
            for row in group.rows
        ),
    )


def flight_recorder_view(fr: FlightRecorderAnalysis | None) -> FlightRecorderView | None:
    """The section's view; None without Flight Recorder traces."""
    if fr is None:
        return None
    files = ", ".join(md.code(f) for f in fr.files[:4]) + (", ..." if len(fr.files) > 4 else "")
    backend = f" ({fr.backend})" if fr.backend else ""
    source = (
        f"{fr.origin.value}{backend}, version {fr.version or '?'}, ranks "
        f"{format_ranks(fr.ranks)}: {files}"
    )
    groups = tuple(
        _section(g) for g in fr.groups if g.mismatch is not None or fr.first_mismatch is None
    )
    notes = list(fr.notes)
    for group in fr.groups:
        notes.extend(f"{group_name(group.group, group.desc)}: {n}" for n in group.notes)
    for name, other in fr.other_sets:
        notes.append(f"trace set `{name}`: {finding_text(other)}")
    return FlightRecorderView(
        finding=finding_text(fr.first_mismatch),
        source=source,
        groups=groups,
        progress=tuple(
            FrProgressRow(
                rank=str(p.rank),
                group=md.cell(p.group),
                last_issued=(
                    f"#{p.last_issued} {p.last_issued_op}".strip()
                    if p.last_issued is not None
                    else "-"
                ),
                last_completed=f"#{p.last_completed}" if p.last_completed is not None else "-",
            )
            for p in fr.progress
        ),
        notes=tuple(md.cell(n) for n in notes),
    )


def excerpt(fr: FlightRecorderAnalysis | None) -> str:
    """The minimal FR excerpt that shows the mismatch (plain text); "" without one."""
    if fr is None or fr.first_mismatch is None:
        return ""
    mismatch = fr.first_mismatch
    group = next(g for g in fr.groups if g.group == mismatch.group)
    lines = [
        f"Flight Recorder, {group_name(group.group, group.desc)}, members "
        f"{format_ranks(group.members)} ({fr.backend or fr.origin.value} dumps, version "
        f"{fr.version or '?'}):"
    ]
    width = max(len(f"#{r.seq_id}") for r in group.rows)
    for row in group.rows:
        mark = "!" if not row.agree else " "
        lines.append(f"{f'#{row.seq_id}':<{width}} {mark} {_issued(row)}")
    return "\n".join(lines)
