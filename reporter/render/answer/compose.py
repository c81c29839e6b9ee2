"""The answer for an analysis: title, verdict paragraph, summary lines, next steps, suggestions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reporter.analysis.classify import default_classifier
from reporter.analysis.p2p import cycle_name
from reporter.analysis.result import Analysis, RankState
from reporter.model import Bundle
from reporter.render import nextsteps
from reporter.render.answer.flight import (
    fr_idle,
    fr_idle_line,
    fr_lines,
    fr_mismatch,
    fr_op,
    fr_title,
    fr_values,
    fr_where,
)
from reporter.render.answer.lines import (
    change_line,
    clients_line,
    find_timeouts,
    gap_text,
    instance_lines,
    recover_line,
    restart_before,
    restart_words,
    seen_line,
    services,
    short_value,
    side_text,
    since_line,
    stack_title,
    top_change,
    wait_line,
    what_line,
)
from reporter.render.answer.records import Answer, SeenReport, SummaryLine, Timeout, WaitEdge
from reporter.render.answer.waits import gone_ranks, ranks_name, waits_for
from reporter.times import clock

if TYPE_CHECKING:
    pass


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
        split = fr_lines(analysis, fr, mismatch)
        lines = [split[0], *instance_lines(analysis), *split[1:5]]
        title = fr_title(analysis, mismatch)
    elif fr is not None and fr_idle(analysis):
        lines = [fr_idle_line(analysis, fr), *instance_lines(analysis)]
        title = f"No hang: {len(fr.ranks)} ranks completed every collective (Flight Recorder)"
    else:
        lines = [what_line(bundle, analysis, edges), *instance_lines(analysis)]
        lines.extend(wait_line(e) for e in edges[:2])
        title = stack_title(analysis, edges)
    for line in (
        since_line(analysis),
        recover_line(analysis, timeouts, edges),
        clients_line(analysis),
        change_line(bundle, analysis),
        seen_line(seen),
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
    change = top_change(analysis)
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
        "waited": side_text(edge.waited) if edge else "",
        "collective": edge.collective
        if edge
        else next(iter(sorted(c for c in collectives if c)), ""),
        "gone": ranks_name(absent, analysis.rank_unit) if absent else "",
        "key": change.key if change else "",
        "before": short_value(change.before) if change else "",
        "after": short_value(change.after) if change else "",
        "kind": change.kind.value if change else "",
        "onset": f"{clock(wedge.episode.onset)} UTC" if wedge and wedge.episode else "",
        "services": services(analysis, bundle),
        "timeouts": ", ".join(f"`{t.name}={t.value}`" for t in timeouts[:3]),
        **fr_values(analysis),
    }
    frames = tuple(
        f.function
        for c in analysis.classes
        if edge is not None and c.label == edge.waiting.label
        for f in c.frames
    )
    classifier = default_classifier()
    p2p = any(classifier.rules.p2p_direction(c) for c in collectives if c)
    values["cycles"] = cycles_text(analysis)
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
        p2p=p2p,
        peers=any(getattr(e, "kind", "") == "p2p" for e in analysis.waits_for),
        values=values,
    )


def cycles_text(analysis: Analysis) -> str:
    """The first point-to-point cycle with each member's call site: `0<->2 (rank 0 in recv
    at update_sampled_tokens (pp.py:88) for rank 2; rank 2 in recv at ... for rank 0)`, and
    how many more; "" without cycles."""
    cycles = sorted(getattr(analysis, "p2p_cycles", ()), key=lambda c: (not c.deadlock, c.ranks))
    if not cycles:
        return ""
    first = cycles[0]
    by_rank = {e.waiting.ranks[0]: e for e in analysis.waits_for if getattr(e, "kind", "") == "p2p"}
    parts = []
    order = first.order or first.ranks
    for rank in order if len(order) <= 4 else (*order[:3], order[-1]):
        edge = by_rank.get(rank)
        if edge is not None:
            at = f" at {edge.waiting.at}" if edge.waiting.at else ""
            peer = ranks_name(edge.waited.ranks, analysis.rank_unit)
            parts.append(f"rank {rank} in {edge.waiting.collective}{at} for {peer}")
    more = f", and {len(cycles) - 1} more like it" if len(cycles) > 1 else ""
    return f"{cycle_name(first)} ({'; '.join(parts)}){more}"


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
    change = top_change(analysis)
    if change is not None:
        text += (
            f" The top-ranked change since the last good run is `{change.key}` "
            f"({short_value(change.before)} → {short_value(change.after)})."
        )
    if wedge is not None and wedge.episode is not None:
        restart = restart_before(analysis.timeline, wedge.episode.onset)
        if restart is not None:
            gap = (wedge.episode.onset - restart.at).total_seconds()
            text += (
                f" The wedge began {gap_text(gap)} after {restart_words(restart)} "
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
            f"{ranks_name(side.ranks, 'rank')} issued {fr_op(mismatch, side)}"
            for side in mismatch.sides
        )
        if mismatch.missing:
            split += f"; {ranks_name(mismatch.missing, 'rank')} never issued it"
        factors.append(f"The ranks disagreed at {fr_where(mismatch)} (Flight Recorder): {split}.")
        edges = ()
    for edge in edges[:2]:
        factors.append(
            f"{edge.waiting.name[0].upper()}{edge.waiting.name[1:]} entered {edge.collective} "
            f"at {edge.waiting.where or '?'} while {edge.waited.name} did not "
            f"({edge.waited.doing.lstrip(', ')})."
        )
    change = top_change(analysis)
    if change is not None:
        factors.append(
            f"`{change.key}` changed since the last good run "
            f"({short_value(change.before)} → {short_value(change.after)})."
        )
    stuck = bool(edges) or mismatch is not None or bool(analysis.wedge and analysis.wedge.found)
    if not find_timeouts(bundle) and stuck:
        factors.append("No collective timeout or watchdog ended the wait.")
    actions = [step.action for step in steps[:4]]
    return tuple(factors), tuple(actions)
