"""The "Seen before" line: the earlier reports with the same or a similar signature."""

from __future__ import annotations

from reporter.core.text import plural
from reporter.render.answer.records import SeenBefore, SeenReport, SummaryLine
from reporter.render.answer.topics import SEEN


def seen_line(seen: SeenBefore) -> SummaryLine:
    matches = seen.matches
    if not matches:
        if not seen.folder:
            return SummaryLine(
                topic=SEEN,
                text="Not known: no earlier reports looked through (`--reports DIR`).",
                sources=(),
            )
        if not seen.read:
            return SummaryLine(
                topic=SEEN, text=f"No: no earlier report under `{seen.folder}`.", sources=()
            )
        if not seen.comparable:
            return SummaryLine(
                topic=SEEN,
                text=(
                    "Not known: without stacks the signature says too little to match the "
                    f"earlier reports under `{seen.folder}`."
                ),
                sources=(),
            )
        text = (
            f"No: none of the {plural(seen.read, 'report')} under `{seen.folder}` has this "
            "signature or its shape."
        )
        return SummaryLine(topic=SEEN, text=text, sources=())
    ordinal = {1: "second", 2: "third", 3: "fourth", 4: "fifth"}.get(
        len(matches), f"{len(matches) + 1}th"
    )
    first: SeenReport = matches[0]
    same = "same signature" if first.same else "a similar signature (same collectives)"
    items = "; ".join(first.action_items[:2])
    detail = f"status {first.status}" + (f"; action items: {items}" if items else "")
    return SummaryLine(
        topic=SEEN,
        text=f"Yes, {ordinal} time since {first.date} ({same}): {first.path} ({detail}).",
        sources=tuple(s.path for s in matches),
    )
