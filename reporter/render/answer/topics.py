"""The topics of the summary block, in order, and how side topics with nothing to say fold into one.

Every topic of `TOPICS` always gets a line (its evidence, or "Not known: ..." with what a
capture would tell); `fold_unknowns` folds two or more "Not known" side topics of
`FOLDABLE` into one line. One module per topic writes its line: `what`, `who`, `since`,
`clients`, `changes`, `seen`.
"""

from __future__ import annotations

from collections.abc import Sequence

from reporter.render.answer.records import SummaryLine

# The topics of the summary block, in order; every one always has a line.
WHAT = "What"
WHO = "Who waits for whom"
SINCE = "Since"
RECOVERS = "Recovers on its own"
CLIENTS = "Clients affected"
CHANGE = "Top change since the last good run"
SEEN = "Seen before"
OTHERS = "Other instances"
UNKNOWN = "Not known"
TOPICS = (WHAT, WHO, SINCE, RECOVERS, CLIENTS, CHANGE, SEEN)
# Topics whose "Not known" lines fold into one (`fold_unknowns`): each with its short name
# and the capture that would tell.
FOLDABLE = {
    SINCE: ("since", "a metric history (`query_range`)"),
    CLIENTS: ("clients", "client dumps (`/debug/pprof/goroutine?debug=2`)"),
    CHANGE: ("top change", "a last good run (`--baseline DIR`)"),
    SEEN: ("seen before", "earlier reports (`--reports DIR`)"),
}


# The "Not known" of a topic whose evidence was not captured at all; any other "Not known"
# (reports looked through, but the signature says too little) says something of its own.
_NOTHING_CAPTURED = {
    SINCE: "Not known: no metric history",
    CLIENTS: "Not known: no client dumps",
    CHANGE: "Not known: no last good run",
    SEEN: "Not known: no earlier reports looked through",
}


def fold_unknowns(lines: Sequence[SummaryLine]) -> list[SummaryLine]:
    """The lines with two or more "Not known" side topics (`FOLDABLE`) folded into one, in
    the place of the first: `Not known: since, clients, seen before — a metric history
    (`query_range`), client dumps (...), earlier reports (...) would tell.` A topic whose
    line says something (a source, or not "Not known") keeps its own line."""
    unknown = [
        line
        for line in lines
        if line.topic in FOLDABLE and line.text.startswith(_NOTHING_CAPTURED[line.topic])
    ]
    if len(unknown) < 2:
        return list(lines)
    names = ", ".join(FOLDABLE[line.topic][0] for line in unknown)
    hints = ", ".join(FOLDABLE[line.topic][1] for line in unknown)
    folded = SummaryLine(topic=UNKNOWN, text=f"{names} — {hints} would tell.", sources=())
    return [*(line for line in lines if line not in unknown), folded]
