""" "Seen again": a recurrence of the same hang, added to the open report through a region.

`report watch` captures a wedge, and when an open report already has the same signature
it does not draft a second report: it adds the new occurrence to the first one, in a
region of its own::

    <!-- reporter:begin id=seen-again hash=... -->
    ## Seen again

    The same hang signature was caught again by `report watch` (2 more times):

    - 2026-12-07T13:40:01Z: bundle `/var/lib/report/20261207T134001Z-wedge`; wedged: output 0/s ...
    <!-- reporter:end id=seen-again -->

The region follows the rules of `regions`: untouched, it is rewritten with every
occurrence; edited by a reviewer, it stays byte for byte and the newer list is offered
beside it in a collapsed block. It is never entered in the record line, so a later
`report draft` (whose template has no such region) keeps it as reviewer text rather than
retiring it. Placed after the summary (else the title) the first time. Pure: text in,
text out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reporter.render import frontmatter, regions

REGION = "seen-again"
_ITEM = re.compile(r"^- (?P<at>\d{4}-\d\d-\d\dT[0-9:.]+Z): (?P<rest>.+)$", re.M)
# Closed reports take no recurrence: a new one is drafted instead.
OPEN_STATUSES = frozenset(s.value for s in frontmatter.Status)


@dataclass(frozen=True, slots=True, kw_only=True)
class Occurrence:
    """One recurrence: when (ISO, UTC) and one line on it (bundle, decision)."""

    at: str
    text: str

    def line(self) -> str:
        """The list item."""
        return f"- {self.at}: {self.text}"


def is_open(status: str) -> bool:
    """True for a report still in the review workflow (draft to filed)."""
    return status in OPEN_STATUSES


def occurrences(text: str) -> tuple[Occurrence, ...]:
    """The occurrences the report lists already (its region, or the offer beside an edited one)."""
    parsed = regions.parse(regions.split_front(text)[1])
    found: dict[str, Occurrence] = {}
    bodies = [r.body for r in parsed.regions if r.id == REGION]
    bodies += [o.raw for o in parsed.chunks if isinstance(o, regions.Offer) and o.id == REGION]
    for body in bodies:
        for match in _ITEM.finditer(body):
            found.setdefault(match["at"], Occurrence(at=match["at"], text=match["rest"].strip()))
    return tuple(sorted(found.values(), key=lambda o: o.at))


def body(items: Sequence[Occurrence]) -> str:
    """The region's generated body for `items` (oldest first)."""
    times = "once more" if len(items) == 1 else f"{len(items)} more times"
    lines = "\n".join(o.line() for o in items)
    return (
        "## Seen again\n\n"
        f"The same hang signature was caught again by `report watch` ({times}):\n\n"
        f"{lines}\n"
    )


def add(text: str, new: Occurrence) -> str:
    """The report `text` with `new` added to its seen-again region (made when missing).

    Reviewer text, an edited region included, is kept byte for byte.
    """
    items = {o.at: o for o in occurrences(text)}
    items.setdefault(new.at, new)
    generated = body(sorted(items.values(), key=lambda o: o.at))
    head, rest, start = regions.split_front(text)
    parsed = regions.parse(rest, first_line=start)
    out: list[str] = [head]
    placed = False
    anchor = _anchor(parsed)
    for chunk in parsed.chunks:
        if isinstance(chunk, regions.Offer) and chunk.id == REGION and not chunk.edited:
            continue  # an untouched older offer is replaced below its region
        if isinstance(chunk, regions.Region) and chunk.id == REGION:
            placed = True
            if chunk.edited and chunk.body != generated:
                out.append(chunk.raw)
                out.append(regions.offer_text(REGION, generated))
            else:
                out.append(regions.region_text(REGION, generated))
            continue
        if isinstance(chunk, regions.Region) and chunk.id == anchor and not _has(parsed):
            out.append(chunk.raw)
            out.append("\n" + regions.region_text(REGION, generated))
            placed = True
            continue
        if isinstance(chunk, regions.Record) and not placed:
            # The record line stays the last line.
            out.append(regions.region_text(REGION, generated) + "\n")
            placed = True
        out.append(chunk.raw)
    if not placed:
        out.append("\n" + regions.region_text(REGION, generated))
    return "".join(out)


def _has(parsed: regions.Parsed) -> bool:
    return any(r.id == REGION for r in parsed.regions)


def _anchor(parsed: regions.Parsed) -> str:
    ids = [r.id for r in parsed.regions]
    for ident in ("summary", "title"):
        if ident in ids:
            return ident
    return ""
