"""The answer for an analysis: title, summary lines, next steps, what the block does not say, suggestions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from reporter.analysis.classify import default_classifier
from reporter.analysis.p2p import cycle_name
from reporter.analysis.result import Analysis, RankState
from reporter.core.times import clock
from reporter.model import Bundle
from reporter.render import nextsteps
from reporter.render.answer import states
from reporter.render.answer.changes import (
    change_line,
    change_words,
    revert_words,
    short_value,
    top_change,
)
from reporter.render.answer.clients import clients_line
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
from reporter.render.answer.hosts import hosts_line, on_hosts, with_hosts
from reporter.render.answer.records import (
    Answer,
    SeenBefore,
    SeenReport,
    SummaryLine,
    Timeout,
    WaitEdge,
    WaitSide,
    seen_of,
)
from reporter.render.answer.scope import Scope, focus
from reporter.render.answer.seen import seen_line
from reporter.render.answer.series import cite
from reporter.render.answer.since import recover_line, since_line, timeout_text
from reporter.render.answer.timeouts import (
    captured,
    find_timeouts,
    library_default,
    shown_code_timeouts,
)
from reporter.render.answer.topics import CHANGE, CLIENTS, WHO, fold_unknowns
from reporter.render.answer.waits import gone_ranks, ranks_name, waits_for
from reporter.render.answer.what import others_line, services, stack_title, what_line
from reporter.render.answer.who import no_wait_line, side_text, wait_lines

# Sentences of the analysis's own summary that the summary block already says (the split,
# who waits where, the snapshots, the metrics, the clients, the change, the instances):
# the verdict paragraph keeps only the others.
_SAID_IN_BLOCK = tuple(
    re.compile(p)
    for p in (
        r"^Collective desync\b",
        r"^(TP )?(Ranks?|PIDs?|Process(es)?) [^.]{1,160}? waits? in ",
        r"^Their stacks part below ",
        r"^This rests on ",
        r"^All \d+ (ranks|processes|PIDs) show the same main stack",
        r"^The \d+ (ranks|processes|PIDs) are making progress",
        r"^Metrics: ",
        r"^The first stack dump was taken ",
        r"^Clients: ",
        r"^\d+ instances \(servers or jobs\)",
        r"^Instance \d+ \(",
        r"^Inconclusive: ",
        r"^(Ranks?|PIDs?|Process(es)?) \S+ (is|are) missing from the evidence\.$",
        r"^\d+ dumps? failed\.?$",
        # The "Hosts" line (hosts.hosts_line) gives these.
        r"^Not captured: ",
        r"^The ranks on th(at host are|ose hosts are) not in this analysis",
        r"^Flight Recorder \([^)]*\): (first mismatch|no mismatch)",
        r"^Capture py-spy dumps of every rank while it lasts",
        # The "Why it does not answer" line (states.condition_line) gives these.
        r"^(Rank \d+|PID \d+|The process)[^:]{0,80} is (stopped|uninterruptible|unresponsive): ",
    )
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`])")


def build(
    bundle: Bundle,
    analysis: Analysis,
    *,
    seen: SeenBefore | Sequence[SeenReport] = (),
) -> Answer:
    """The answer for `analysis`: title, summary lines (every topic, each fact once) and next steps.

    With several instances (servers, jobs) the lines speak of the one in trouble, by its
    name, and one more line gives the others' verdicts. When the Flight Recorder names a
    first mismatch, it decides the headline, the "What" line and who waits for whom (one
    line per side of the split); otherwise the stacks do.
    """
    scope = focus(analysis)
    inner = scope.analysis
    edges = with_hosts(inner, waits_for(inner))
    timeouts = (*find_timeouts(bundle), *shown_code_timeouts(inner))
    if not any(t.kind == "set" for t in timeouts):
        default = library_default(bundle, inner)
        timeouts = (*timeouts, default) if default is not None else timeouts
    fr = analysis.flight_recorder
    mismatch = fr_mismatch(analysis)
    lines: list[SummaryLine]
    if fr is not None and mismatch is not None:
        lines = fr_lines(inner, fr, mismatch)
        title = fr_title(inner, mismatch)
    elif fr is not None and fr_idle(analysis):
        lines = [fr_idle_line(inner, fr), no_wait_line(inner)]
        title = f"No hang: {len(fr.ranks)} ranks completed every collective (Flight Recorder)"
    else:
        lines = [what_line(bundle, inner, edges, scope)]
        lines.extend(wait_lines(edges))
        if not edges:
            lines.append(no_wait_line(inner))
        title = stack_title(inner, edges, scope)
    # Crashes, stopped ranks, thread deadlocks and failed dumps say more than stacks can.
    title = states.title(inner) or title
    lines[0] = states.what_line(inner, lines[0].sources) or lines[0]
    # The rule's own lines cite the edges that decided it, else the stacks' dumps.
    cite = inner.rule_evidence or lines[0].sources
    if inner.headline:
        # The verdict table's rule words its own verdict (one process, the GIL, a loop).
        title = inner.headline
        if inner.what:
            lines[0] = SummaryLine(topic=lines[0].topic, text=inner.what, sources=cite)
    if inner.who_waits:
        at = next((i for i, line in enumerate(lines) if line.topic == WHO), None)
        who = SummaryLine(topic=WHO, text=inner.who_waits, sources=cite)
        lines = [line for line in lines if line.topic != WHO]
        lines.insert(at if at is not None else 1, who)
    lines.extend(x for x in (states.condition_line(inner), states.blocked_line(inner)) if x)
    others = others_line(scope, analysis)
    if others is not None:
        lines.insert(1, others)
    hosts = hosts_line(inner)
    if hosts is not None:
        lines.insert(1, hosts)
    lines.extend(
        (
            since_line(bundle, inner),
            recover_line(bundle, inner, timeouts, cite=cite),
            clients_line(bundle, analysis),
            change_line(bundle, analysis),
            seen_line(seen_of(seen)),
        )
    )
    facts = _facts(bundle, inner, edges, timeouts, scope)
    steps = nextsteps.suggest(nextsteps.default_rules(), facts)
    if inner.rule_steps:
        own = tuple(
            nextsteps.Step(rule=inner.rule, action=action, why=why)
            for action, why in inner.rule_steps
        )
        steps = own + tuple(s for s in steps if s.rule not in _GENERIC_AFTER_RULE)
    factors, actions = _suggestions(bundle, inner, edges, steps, timeouts)
    no_stack_wedge = not analysis.classes and analysis.wedge is not None and analysis.wedge.found
    impact = _impact(bundle, analysis, lines)
    lines = fold_unknowns(lines)
    lines = places_once(lines)
    steps = tuple(said_once(lines, steps))
    return Answer(
        title=title,
        verdict_label="wedged (metrics only)" if no_stack_wedge else analysis.verdict.value,
        paragraph=_paragraph(analysis, said=inner.said),
        lines=tuple(lines),
        steps=steps,
        factors=factors,
        impact=impact,
        actions=actions,
        edges=edges,
        timeouts=timeouts,
    )


# General steps that a rule's own steps say better: they speak of ranks and dumps of every
# rank, where the rule knows the one process; the wait rules read the kernel stack of a
# process in State D, order the sends and receives of a Work.wait cycle (or name what would
# give its peers), and say why a process went away (a dead worker) or that it exited
# because its wait timed out (an ended hang).
_GENERIC_AFTER_RULE = frozenset(
    {
        "one-snapshot",
        "progressing",
        "progressing-but-wedged",
        "uninterruptible-rank",
        "p2p-deadlock-order",
        "p2p-peers-unknown",
        "gone-rank",
    }
)


def _facts(
    bundle: Bundle,
    analysis: Analysis,
    edges: Sequence[WaitEdge],
    timeouts: Sequence[Timeout],
    scope: Scope,
) -> nextsteps.Facts:
    gone, _ = gone_ranks(analysis)
    # A rank whose crash report says why it went away is crashed, not merely gone; a rank
    # merely absent from the evidence is missing, not gone (nothing shows it left).
    crashed = set(states.crashed_ranks(analysis))
    gone = tuple(r for r in gone if r not in crashed)
    missing = sorted(set(analysis.missing_ranks) - set(gone) - crashed)
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
        # With several instances, a step names the one it is about (ranks repeat across them).
        "waiting": f"{edge.waiting.name}{_of(scope)} at {edge.waiting.where}" if edge else "",
        "waited": side_text(edge.waited) if edge else "",
        # Names alone, for a step under the who-waits line that already says where each is.
        "waiting_who": _who(edge.waiting, analysis) + _of(scope) if edge else "",
        "waited_who": _who(edge.waited, analysis) if edge else "",
        "collective": edge.collective
        if edge
        else next(iter(sorted(c for c in collectives if c)), ""),
        "gone": ranks_name(gone, analysis.rank_unit) if gone else states.gone_unranked(analysis),
        "missing": ranks_name(missing, analysis.rank_unit) + on_hosts(analysis, missing)
        if missing
        else "",
        "key": change.key if change else "",
        "before": short_value(change.before) if change else "",
        "after": short_value(change.after) if change else "",
        "revert": revert_words(change) if change else "",
        "kind": change.kind.value if change else "",
        "onset": f"{clock(wedge.episode.onset)} UTC" if wedge and wedge.episode else "",
        "services": services(analysis, bundle, scope),
        "timeouts": ", ".join(timeout_text(t) for t in timeouts[:3]),
        **fr_values(analysis),
        **states.step_values(analysis),
    }
    frames = tuple(
        f.function
        for c in analysis.classes
        if edge is not None and set(c.ranks) == set(edge.waiting.ranks)
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
        gone=bool(gone) or bool(states.gone_unranked(analysis)),
        missing=bool(missing),
        diff_kinds=frozenset({change.kind.value} if change else ()),
        timeout=bool(timeouts),
        captured=bool(captured(bundle)),
        # "Which rank did not post it" is asked only when nothing names the waited side: a
        # rank missing, gone, stopped or crashed is named by the who-waits line already.
        one_collective=len(collectives) == 1
        and None not in collectives
        and bool(with_stacks)
        and not (edge is not None and edge.waited.ranks and waited_state != "stuck"),
        flight_recorder=fr_mismatch(analysis) is not None,
        blocked_threads=bool(analysis.blocked_threads),
        p2p=any(default_classifier().rules.p2p_direction(c) for c in collectives if c),
        peers=any(getattr(e, "kind", "") == "p2p" for e in analysis.waits_for),
        values={**values, "cycles": cycles_text(analysis)},
    )


# A code place in a sentence: ` (tp_desync.py:66)`.
_PLACE = re.compile(r" \(([\w./-]+\.\w+:\d+)\)")


def places_once(lines: Sequence[SummaryLine]) -> list[SummaryLine]:
    """The lines with each code place (`file:line`) given once, where it first comes: a
    later line names the function alone (`in copy_blocks_to_host`)."""
    seen: set[str] = set()
    out: list[SummaryLine] = []
    for line in lines:
        text = _drop_places(line.text, frozenset(seen))
        seen.update(m.group(1) for m in _PLACE.finditer(line.text))
        out.append(line if text == line.text else replace(line, text=text))
    return out


def _drop_places(text: str, seen: frozenset[str]) -> str:
    """`text` without the ` (file:line)` places in `seen`."""
    return _PLACE.sub(lambda m: "" if m.group(1) in seen else m.group(0), text)


def said_once(
    lines: Sequence[SummaryLine], steps: Sequence[nextsteps.Step]
) -> list[nextsteps.Step]:
    """The steps without the code places (`file:line`) a summary line or an earlier step
    already gives: the block says each place once; the step keeps the function's name."""
    seen = {m.group(1) for line in lines for m in _PLACE.finditer(line.text)}
    out: list[nextsteps.Step] = []
    for step in steps:
        action = _drop_places(step.action, frozenset(seen))
        seen.update(m.group(1) for m in _PLACE.finditer(step.action))
        out.append(replace(step, action=action))
    return out


def _of(scope: Scope) -> str:
    """` of launcher PID 30817 (--port=42209)` with several instances; "" with one."""
    return f" of {scope.name}" if scope.name else ""


def cycles_text(analysis: Analysis) -> str:
    """The first point-to-point cycle and the call sites to compare: `0<->2
    (update_sampled_tokens (pp.py:88) versus execute_model (pp.py:78))`, and how many more;
    "" without cycles."""
    cycles = sorted(getattr(analysis, "p2p_cycles", ()), key=lambda c: (not c.deadlock, c.ranks))
    if not cycles:
        return ""
    first = cycles[0]
    sites = " versus ".join(first.sites[:4]) + (" ..." if len(first.sites) > 4 else "")
    more = f", and {len(cycles) - 1} more like it" if len(cycles) > 1 else ""
    return f"{cycle_name(first)} ({sites}){more}" if sites else f"{cycle_name(first)}{more}"


def _paragraph(analysis: Analysis, *, said: str = "") -> str:
    """What the verdict paragraph adds to the summary block: the analysis's own sentences
    that no summary line says (the Flight Recorder's reading, a GPU sync point, ...);
    `said` is the part of the summary the verdict rule's own lines already carry."""
    text = analysis.summary.strip()
    if said and text.startswith(said):
        text = text[len(said) :].strip()
    kept = [
        sentence
        for sentence in _SENTENCE_END.split(text)
        if sentence and not any(p.search(sentence) for p in _SAID_IN_BLOCK)
    ]
    return " ".join(kept)


def _impact(bundle: Bundle, analysis: Analysis, lines: Sequence[SummaryLine]) -> tuple[str, ...]:
    """What the evidence says about the impact: the wedge's length and the clients waiting."""
    out = []
    wedge = analysis.wedge
    if wedge is not None and wedge.episode is not None:
        episode = wedge.episode
        where = cite(bundle, episode.source, episode.series, episode.sampled_at)
        if episode.end is None:
            out.append(
                f"Generation stopped at {clock(episode.onset)[:8]} UTC and was still stopped "
                f"{episode.duration:g} s later, at the last metric sample "
                f"(`{where}`); the real end comes from the service log or the restart."
            )
        else:
            out.append(
                f"Generation stopped from {clock(episode.onset)[:8]} to "
                f"{clock(episode.end)[:8]} UTC ({episode.duration:g} s, `{where}`)."
            )
    for line in lines:
        if line.topic == CLIENTS and line.sources and not line.text.startswith("No "):
            cited = ", ".join(f"`{src}`" for src in line.sources)
            out.append(f"{line.text.rstrip('.')} ({cited}).")
    return tuple(out)


def _suggestions(
    bundle: Bundle,
    analysis: Analysis,
    edges: Sequence[WaitEdge],
    steps: Sequence[nextsteps.Step],
    timeouts: Sequence[Timeout],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Contributing factors and action items for the reviewer to accept or delete;
    `timeouts` are `find_timeouts(bundle)`."""
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
        factors.append(f"{change_words(change)} changed since the last good run.")
    stuck = bool(edges) or mismatch is not None or bool(analysis.wedge and analysis.wedge.found)
    if not timeouts and captured(bundle) and stuck:
        factors.append("No collective timeout or watchdog ended the wait.")
    actions = [step.action for step in steps[:4]]
    return tuple(factors), tuple(actions)


__all__ = ["CHANGE", "build"]


def _who(side: WaitSide, analysis: Analysis) -> str:
    """`ranks [0-2]`: a side's ranks without hosts or places (its name when it has none)."""
    return ranks_name(side.ranks, analysis.rank_unit) if side.ranks else side.name
