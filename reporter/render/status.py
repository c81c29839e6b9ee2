"""`report status`: one row per report (a Markdown file with reporter front matter).

Input: a file's text and its path; output: a `ReportStatus`, or None for Markdown that
is not a report. `table` lays rows out for a terminal::

    path                         status     owners   todos  signature         title
    reports/2026-07-14-desync.md in-review  ana, bo      2  3f9c0a1b2c3d4e5f  Hang: collective-desync
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated

from reporter.model.document import EMPTY_IS_NULL, Count, document, spec


@document
class ReportStatus:
    """One report.

    What `report status` shows of it; also a row of `report status --json`, where "" (not
    known) is null.
    """

    path: str
    kind: str
    status: str
    owners: tuple[str, ...]
    title: str
    signature: str
    todos: Count
    """Lines with an unfilled `TODO(reviewer)` placeholder."""
    upstream_issue: Annotated[str, EMPTY_IS_NULL]
    date: Annotated[str, EMPTY_IS_NULL] = ""
    """The report's date: from its file name (`2026-07-12-...md`), else `incident_start`."""
    same_signature: Count = 1
    """How many reports (this one included) share its signature; set by `grouped`."""
    same_hang: Count = spec(
        "incident reports (this one included) of the same hang as seen-before counts "
        "it: the same signature or the same shape",
        default=1,
    )
    """How many incident reports (this one included) are the same hang as seen-before counts
    it: the same signature or the same shape; set by `grouped`."""
    shape: Annotated[str, EMPTY_IS_NULL] = ""
    """The shape of its signature (verdict and innermost functions; see `seen.shape`)."""


def summarize(text: str, *, path: str) -> ReportStatus | None:
    """The status row for one file, or None when it has no reporter front matter."""
    # Lazy: start-up; `report analyze --json` (whose documents module holds `ReportStatus`
    # for `report status --json`) must not load markdown-it and yaml.
    from reporter.render import blocks, frontmatter, lint, preview, seen

    front = frontmatter.parse(text)
    if front is None or front.data is None or not front.is_report:
        return None
    data = front.data
    owners = data.get("owners")
    owner_names = tuple(str(o) for o in owners) if isinstance(owners, list) else ()
    upstream = data.get("upstream_issue")
    title = ""
    for tokens in blocks.token_pieces(lint.parser(), text):
        title = preview.title_of(tokens)
        if title:
            break
    title = title or str(data.get("title") or "")
    return ReportStatus(
        path=path,
        kind=front.kind,
        status=front.status or "?",
        # A report is edited by hand: what status prints of it is masked at the edge like
        # any output (the terminal's `masked`, the --json documents' `emit`).
        owners=owner_names,
        title=title,
        signature=str(data.get("signature") or ""),
        todos=len(lint.placeholders(text)),
        upstream_issue=str(upstream) if upstream else "",
        date=front.date(path),
        shape=seen.text_shape(text) if front.kind == frontmatter.INCIDENT_REPORT else "",
    )


def unreadable(*, path: str, why: str) -> ReportStatus:
    """The row of a report that could not be summarised: listed, with why, never dropped."""
    return ReportStatus(
        path=path,
        kind="",
        status="unreadable",
        owners=(),
        title=f"not read: {why[:200]}",
        signature="",
        todos=0,
        upstream_issue="",
    )


def _hangs(rows: Sequence[ReportStatus]) -> dict[int, list[int]]:
    """Indexes of the incident reports, grouped as one hang (`seen.same_hang`)."""
    # Lazy: start-up, as in `summarize`.
    from reporter.render import frontmatter, seen

    incidents = [i for i, r in enumerate(rows) if r.kind == frontmatter.INCIDENT_REPORT]
    roots = seen.same_hang([(rows[i].signature, rows[i].shape) for i in incidents])
    out: dict[int, list[int]] = {}
    for index, root in zip(incidents, roots, strict=True):
        out.setdefault(root, []).append(index)
    return out


def grouped(rows: Sequence[ReportStatus]) -> tuple[ReportStatus, ...]:
    """The rows with `same_signature` (the same signature) and `same_hang` (the same
    signature or shape, as seen-before counts) counted over the incident reports."""
    # Lazy: start-up, as in `summarize`.
    from reporter.render import frontmatter

    counts: dict[str, int] = {}
    for row in rows:
        if row.signature and row.kind == frontmatter.INCIDENT_REPORT:
            counts[row.signature] = counts.get(row.signature, 0) + 1
    hang_size = {i: len(members) for members in _hangs(rows).values() for i in members}
    return tuple(
        replace(r, same_signature=counts.get(r.signature, 1), same_hang=hang_size.get(i, 1))
        for i, r in enumerate(rows)
    )


def signature_lines(rows: Sequence[ReportStatus]) -> list[str]:
    """Incident reports grouped as one hang (the same signature or the same shape, as
    seen-before counts them), most first: the signatures, count, first and last date, paths."""
    by: list[tuple[str, list[ReportStatus]]] = []
    for indexes in _hangs(rows).values():
        group = [rows[i] for i in indexes]
        by.append((", ".join(sorted({m.signature or "-" for m in group})), group))
    out = []
    for signature, members in sorted(by, key=lambda item: (-len(item[1]), item[0])):
        dates = sorted(m.date for m in members if m.date)
        span = (
            "" if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
        )
        count = f"{len(members)} report{'s' if len(members) != 1 else ' '}"
        paths = ", ".join(sorted(m.path for m in members))
        out.append(f"{signature:<12}  {count}  {span:<24}  {paths}".rstrip())
    return out


def table(rows: Sequence[ReportStatus]) -> str:
    """A plain-text table of the rows, columns padded to fit."""
    header = ("path", "status", "owners", "todos", "signature", "title")
    body = [
        (r.path, r.status, ", ".join(r.owners) or "-", str(r.todos), r.signature or "-", r.title)
        for r in rows
    ]
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header) - 1)]
    lines = []
    for row in (header, *body):
        cells = [
            cell.rjust(width) if index == 3 else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths, strict=False))
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    groups = signature_lines(rows)
    if groups:
        lines.extend(["", "incident reports by signature:", *groups])
    return "\n".join(lines)
