"""The "Who waits for whom" lines: one per wait edge (two sides waiting for each other are
one line), or, with no edge known, why not and what capture would tell.
"""

from __future__ import annotations

from collections.abc import Sequence

from reporter.analysis.result import Analysis, Verdict
from reporter.render.answer.clients import client_waits
from reporter.render.answer.records import SummaryLine, WaitEdge, WaitSide
from reporter.render.answer.topics import WHO
from reporter.render.answer.waits import gone_or_missing, ranks_name, stack_sources


def side_text(side: WaitSide) -> str:
    joiner = "" if side.doing.startswith(",") else " "
    return f"{side.name}{joiner}{side.doing}"


def wait_line(edge: WaitEdge) -> SummaryLine:
    waiting, waited = edge.waiting, edge.waited
    verb = "waits" if len(waiting.ranks) <= 1 and len(waiting.pids) <= 1 else "wait"
    left = _side_at(edge, verb=verb)
    left = f"{left[0].upper()}{left[1:]}"
    right = side_text(waited)
    if waited.branch and waited.branch not in (waiting.branch, waited.where):
        right += f", from {waited.branch}"
    sources = tuple(s for s in (waiting.evidence, waited.evidence) if s)
    return SummaryLine(topic=WHO, text=f"{left}; for {right}.", sources=sources)


def _mutual(a: WaitEdge, b: WaitEdge) -> bool:
    return set(a.waiting.ranks) == set(b.waited.ranks) and set(b.waiting.ranks) == set(
        a.waited.ranks
    )


def _side_at(edge: WaitEdge, *, verb: str = "") -> str:
    """The waiting side where it waits: `rank 1 [verb] in all_reduce on the tp group called
    at f (a.py:3), from g (b.py:9)`."""
    side = edge.waiting
    text = f"{side.name}{f' {verb}' if verb else ''} in {edge.collective}"
    if edge.group and edge.kind == "collective":
        text += f" on the {edge.group} group"
    if side.where:
        text += f" called at {side.where}"
    if side.branch and side.branch != side.where:
        text += f", from {side.branch}"
    return text


def wait_lines(edges: Sequence[WaitEdge]) -> list[SummaryLine]:
    """One line per edge (the first two); two sides that wait for each other are one line."""
    if len(edges) >= 2 and _mutual(edges[0], edges[1]):
        a, b = edges[0], edges[1]
        names = f"{a.waiting.name[0].upper()}{a.waiting.name[1:]} and {b.waiting.name}"
        sources = tuple(dict.fromkeys(s for s in (a.waiting.evidence, b.waiting.evidence) if s))
        text = f"{names} wait for each other: {_side_at(a)}; {_side_at(b)}."
        return [SummaryLine(topic=WHO, text=text, sources=sources)]
    out = [wait_line(edges[0])] if edges else []
    for edge in edges[1:2]:
        first = edges[0]
        if (edge.waiting.where, edge.waited.where) == (first.waiting.where, first.waited.where):
            # The same places as the line above: said once, the ranks named.
            verb = (
                "waits" if len(edge.waiting.ranks) <= 1 and len(edge.waiting.pids) <= 1 else "wait"
            )
            name = f"{edge.waiting.name[0].upper()}{edge.waiting.name[1:]}"
            sources = tuple(s for s in (edge.waiting.evidence, edge.waited.evidence) if s)
            text = f"{name} {verb} in {edge.collective} for {edge.waited.name} at the same places."
            out.append(SummaryLine(topic=WHO, text=text, sources=sources))
        else:
            out.append(wait_line(edge))
    return out


def no_wait_line(analysis: Analysis) -> SummaryLine:
    """ "Who waits for whom" when no edge is known: why not, and what would tell."""
    if not analysis.classes:
        waiting = client_waits(analysis)
        if waiting:
            top = waiting[0].top
            where = f"`{top.function}` ({top.file.rpartition('/')[2]}:{top.line})" if top else ""
            return SummaryLine(
                topic=WHO,
                text=(
                    f"The Go clients wait for the server at {where or 'an HTTP call'}; what the "
                    "server waits for is not known: py-spy dumps of its processes would show it."
                ),
                sources=(str(waiting[0].source),),
            )
        return SummaryLine(
            topic=WHO,
            text="Not known: no stack dumps; py-spy dumps of every rank would show it.",
            sources=(),
        )
    sources = stack_sources(analysis)
    if analysis.verdict is Verdict.PROGRESSING:
        return SummaryLine(topic=WHO, text="No one found waiting for another rank.", sources=())
    if analysis.verdict is Verdict.CRASHED:
        return SummaryLine(
            topic=WHO,
            text=(
                "No one seen waiting: the evidence holds no live peer of the crashed process; "
                "py-spy dumps of its peers, if it had any, would show whether they wait for it."
            ),
            sources=(),
        )
    if analysis.verdict is Verdict.THREAD_DEADLOCK and analysis.thread_deadlocks:
        threads = analysis.thread_deadlocks[0].threads
        names = [t.name or t.tid for t in threads]
        return SummaryLine(
            topic=WHO,
            text=(
                f"Threads {', '.join(names)} wait for each other (the lock cycle above); "
                "no rank is seen waiting for another."
            ),
            sources=tuple(dict.fromkeys(t.source for t in threads)),
        )
    collectives = sorted({c.collective for c in analysis.classes if c.collective})
    if analysis.verdict is Verdict.ALL_STUCK and collectives:
        return SummaryLine(
            topic=WHO,
            text=(
                f"Not known: every rank with a stack sits in {', '.join(collectives)}, so the "
                "stacks cannot say which peer has not joined; Flight Recorder dumps "
                "(`TORCH_NCCL_DUMP_ON_TIMEOUT=1`) would."
            ),
            sources=sources,
        )
    reasons = []
    _gone, missing = gone_or_missing(analysis)
    if missing:
        reasons.append(f"{ranks_name(missing, analysis.rank_unit)} are not in the evidence")
    if analysis.snapshots < 2:
        reasons.append("one snapshot cannot tell stuck from slow")
    if not reasons:
        reasons.append("no rank sits in a collective the others skip")
    return SummaryLine(
        topic=WHO,
        text=f"Not known: {', and '.join(reasons)}; dumps of every rank a few seconds apart "
        "would tell.",
        sources=sources,
    )
