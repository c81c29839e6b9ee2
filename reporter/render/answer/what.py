"""The title and the "What" line: the kind of hang and its size, and what must restart.

The title (`stack_title`) is the headline: who waits for whom in one phrase, or what the
metrics show when there are no stacks. The "What" line (`what_line`) names the kind of hang
and its size without repeating the title; `others_line` gives the other instances' verdicts
and `services` what must restart together. Each other topic has its own module (`topics`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reporter.analysis.ranksets import format_pids, format_ranks
from reporter.analysis.result import Analysis, RankState, Verdict
from reporter.analysis.wedge import StepKind
from reporter.core.text import plural
from reporter.core.times import clock
from reporter.model import Bundle, EventKind
from reporter.render.answer.changes import baseline_prefix, change_words, top_change
from reporter.render.answer.clients import (
    CLIENT_STUCK_MINUTES,
    client_count,
    client_place,
    client_waits,
    long_waits,
    wait_age,
)
from reporter.render.answer.hosts import host_of_units, multi_host
from reporter.render.answer.records import SummaryLine, WaitEdge
from reporter.render.answer.scope import Scope, instance_name
from reporter.render.answer.series import cite, engine_words
from reporter.render.answer.topics import OTHERS, WHAT
from reporter.render.answer.waits import gone_or_missing, members, ranks_name, stack_sources


def _queue_growing(analysis: Analysis) -> bool:
    wedge = analysis.wedge
    return wedge is not None and any(s.kind is StepKind.LINEAR_GROWTH for s in wedge.steps)


def role_prefix(analysis: Analysis) -> str:
    dims = [dict(p.identity.dims) for p in analysis.processes]
    if dims and all("TP" in d for d in dims):
        return "TP ranks"
    return "Ranks" if analysis.rank_unit == "rank" else "Processes"


def _units(analysis: Analysis, count: int) -> str:
    """`4 ranks`, `1 process`, `2 PIDs`' noun for the analysis's unit, counted."""
    word = {"rank": "rank", "pid": "process"}.get(analysis.rank_unit, "process")
    return plural(count, word, "processes" if word == "process" else None)


def stack_title(analysis: Analysis, edges: Sequence[WaitEdge], scope: Scope | None = None) -> str:
    """A title that says what happened: who waits for whom, or what the metrics show."""
    n = len(analysis.processes)
    wedge = analysis.wedge
    where = f"{scope.name[0].upper()}{scope.name[1:]}: " if scope is not None and scope.name else ""
    if analysis.verdict is Verdict.P2P_DEADLOCK and analysis.p2p_deadlock:
        return f"{where}P2P{analysis.p2p_deadlock[3:]}"
    if edges:
        edge = edges[0]
        call = edge.waiting.where.partition(" (")[0]
        # A native address (`0x7fa2d1487d71`) names no call a reader can look up.
        named = call and call != edge.collective and not re.fullmatch(r"0x[0-9a-fA-F]+", call)
        call_text = f" ({call})" if named else ""
        waited = edge.waited
        single = len(edge.waiting.ranks) == 1
        prefix = role_prefix(analysis)
        if analysis.rank_unit != "rank":
            who = f"{edge.waiting.name[0].upper()}{edge.waiting.name[1:]} {'waits' if single else 'wait'}"
        elif single:
            who = f"{prefix.removesuffix('s')} {edge.waiting.ranks[0]} waits"
        else:
            who = f"{prefix} {edge.waiting.label} wait"
        if where:
            who = who[0].lower() + who[1:] if not who.startswith("TP") else who
        plain = (
            len(waited.ranks) > 1
            and analysis.rank_unit == "rank"
            and not waited.brief.startswith(",")
        )
        target = waited.label if plain else waited.name
        joiner = "" if waited.brief.startswith(",") else " "
        return f"{where}{who} in {edge.collective}{call_text} for {target}{joiner}{waited.brief}"
    if not analysis.classes:
        if wedge is not None and wedge.episode is not None:
            growing = ", queue growing" if _queue_growing(analysis) else ", requests waiting"
            return f"Output stalled since {clock(wedge.episode.onset)[:8]} UTC{growing}; no stacks"
        possible = wedge.possible if wedge is not None else None
        if wedge is not None and possible is not None:
            return (
                f"Output possibly wedged since {clock(possible.onset)[:8]} UTC "
                f"(window shorter than {wedge.window:g} s); no stacks"
            )
        stuck = long_waits(analysis)
        if stuck:
            longest = max(b.max_minutes or 0 for b in stuck)
            wait = stuck[0].client_wait
            return f"Clients wait {plural(longest, 'minute')} for {wait}; no server stacks"
        waiting = client_waits(analysis)
        if waiting:
            # The only stacks are Go clients waiting: they are the answer, whatever their age.
            total = client_count(waiting)
            return (
                f"{plural(total, 'Go client goroutine')} {'waits' if total == 1 else 'wait'}"
                f"{wait_age(waiting)} for {waiting[0].client_wait}{client_place(waiting[0])}; "
                "no server stacks"
            )
        change = top_change(analysis)
        if change is not None:
            return f"{change_words(change)} since the last good run; no stacks"
        if wedge is not None:
            return "No wedge in the metrics; no stacks"
        return "No stacks in the evidence"
    if analysis.verdict is Verdict.PROGRESSING:
        return f"{where}No hang: {_units(analysis, n)} progressing"
    collectives = sorted({c.collective for c in analysis.classes if c.collective})
    what = f" in {', '.join(collectives)}" if collectives else ""
    if analysis.verdict is Verdict.ALL_STUCK:
        idle = _idle(analysis)
        if idle:
            # Never "all" of a set its own table shows partly idle.
            return f"{where}{n - idle} of {_known_units(analysis, n)} stuck{what}, {idle} idle"
        return f"{where}{_all_of(analysis, n)} stuck{what}"
    return (
        f"{where}Inconclusive: {_units(analysis, n)}{what}, "
        f"{plural(analysis.snapshots, 'snapshot')}"
    )


def _absent_ranks(analysis: Analysis) -> set[int]:
    """Ranks missing from the evidence or gone (their dump failed)."""
    return set(analysis.missing_ranks) | {f.rank for f in analysis.failed if f.rank is not None}


def _idle(analysis: Analysis) -> int:
    return sum(1 for p in analysis.processes if p.state is RankState.IDLE)


def _known_units(analysis: Analysis, n: int) -> str:
    """`4 ranks`: the `n` in the evidence plus those missing or gone."""
    return _units(analysis, n + len(_absent_ranks(analysis)))


def _all_of(analysis: Analysis, n: int) -> str:
    """`All 4 ranks`, or `2 of 4 ranks` when some ranks are missing, gone or on a host
    not captured: "all" is never said of a set that is partly not in the evidence."""
    absent = _absent_ranks(analysis)
    lost = any(r.missing for r in analysis.hosts)
    if absent:
        return f"{n} of {_known_units(analysis, n)}"
    if lost:
        return f"{_units(analysis, n)} captured, all"
    return f"All {_units(analysis, n)}"


def _absent_text(analysis: Analysis) -> str:
    gone, missing = gone_or_missing(analysis)
    parts = []
    if gone:
        parts.append(f"{ranks_name(gone, analysis.rank_unit)} gone (the dump failed: no process)")
    if missing:
        parts.append(f"{ranks_name(missing, analysis.rank_unit)} not in the evidence")
    return "; ".join(parts)


def _waited_words(edge: WaitEdge) -> str:
    """The waited-for side's state in a word or two: `idle`, `in broadcast`, `gone`; where
    it is (code, file:line) is the "Who waits for whom" line's to say."""
    words = (edge.waited.brief or edge.waited.state).lstrip(", ").split()
    if not words:
        return edge.waited.state
    if words[0] == "stuck" and len(words) > 2 and words[1] == "in":
        return f"in {words[2]}"
    if words[0] == "in" and len(words) > 1:
        return f"in {words[1]}"
    return words[0]


def what_line(
    bundle: Bundle, analysis: Analysis, edges: Sequence[WaitEdge], scope: Scope | None = None
) -> SummaryLine:
    """What is wrong, in one sentence: the kind of hang and its size, never who waits where."""
    verdict = analysis.verdict
    wedge = analysis.wedge
    n = len(analysis.processes)
    sources = stack_sources(analysis)
    if not analysis.classes:
        return _what_without_stacks(bundle, analysis)
    basis = plural(analysis.snapshots, "snapshot")
    where = f" in {scope.name}" if scope is not None and scope.name else ""
    groups = sorted({g for e in analysis.waits_for if (g := getattr(e, "group", ""))})
    # A group is worth naming only where the ranks form several (DP1 of DP0, DP1).
    layouts = {tuple(kv for kv in p.identity.dims if kv[0] != "TP") for p in analysis.processes}
    if groups and len(layouts) > 1:
        where += f" in group {', '.join(groups)}"
    size = f"{_units(analysis, n)}, {basis}"
    if verdict is Verdict.COLLECTIVE_DESYNC:
        text = f"Collective desync{where}"
        if not edges:
            text += f" ({size})"
        else:
            # Who waits for whom is the title's and the next line's to say; this line says
            # what kind of split it is and how sure the stacks are of it.
            edge = edges[0]
            k = len(edge.waiting.ranks) or len(edge.waiting.pids)
            m = len(edge.waited.ranks) or len(edge.waited.pids)
            words = _waited_words(edge)
            others = "the other" if m == 1 else f"the other {m}"
            other = (
                f"{others} never entered it"
                if words.startswith("in ") or words in ("gone", "missing")
                else f"{others}, {words}, never entered it"
            )
            still = (
                f"the waiting side did not move across {basis}"
                if analysis.snapshots > 1 and edge.waiting.state.startswith("stuck")
                else basis
            )
            text += (
                f": {k} of {_units(analysis, k + m)} {'sits' if k == 1 else 'sit'} in "
                f"{edge.collective} while {other}; {still}"
            )
        return SummaryLine(topic=WHAT, text=f"{text}.", sources=sources)
    if verdict is Verdict.P2P_DEADLOCK:
        return SummaryLine(
            topic=WHAT, text=f"P2P{analysis.p2p_deadlock[3:]} ({size}).", sources=sources
        )
    if verdict is Verdict.ALL_STUCK:
        # Ranks the others wait for are named in "Who waits for whom"; else here.
        extra = "" if edges else _absent_text(analysis)
        idle = _idle(analysis)
        # Never "all" of a set that is partly idle.
        head = (
            f"{n - idle} of {_known_units(analysis, n)}{where} stuck and {idle} idle"
            if idle
            else f"{_all_of(analysis, n)}{where} stuck"
        )
        return SummaryLine(
            topic=WHAT,
            text=f"{head}, unchanged across {basis}" + (f"; {extra}" if extra else "") + ".",
            sources=sources,
        )
    if verdict is Verdict.PROGRESSING:
        text = (
            f"No hang: all {_units(analysis, n)} progressing; their stacks change across {basis}."
        )
        if wedge is not None and wedge.episode is not None:
            text = (
                f"The stacks move ({_units(analysis, n)}, {basis}), yet the metrics show output "
                "stopped with requests waiting."
            )
        return SummaryLine(topic=WHAT, text=text, sources=sources)
    # The analysis's own reason ("only one rank: there is no other rank to compare it
    # with"); what one snapshot cannot tell is the "Who waits for whom" line's to say.
    reason = next(
        (
            s.removeprefix("Inconclusive: ").rstrip(".")
            for s in analysis.summary.split(". ")
            if s.startswith("Inconclusive: ")
        ),
        "no decisive pattern",
    )
    return SummaryLine(
        topic=WHAT,
        text=f"Inconclusive ({size}): {reason}.",
        sources=sources,
    )


def _what_without_stacks(bundle: Bundle, analysis: Analysis) -> SummaryLine:
    wedge = analysis.wedge
    if wedge is not None and wedge.episode is not None:
        # Whether it still lasts is the "Since" line's to say.
        growing = " and the queue grows" if _queue_growing(analysis) else ""
        names = [
            p.series.partition("{")[0]
            for s in wedge.signals
            if s.shows_wedge
            for p in s.points[:1]
            if p.series
        ]
        engine = engine_words(bundle, names)
        on = f" on {engine}" if engine else ""
        episode = wedge.episode
        return SummaryLine(
            topic=WHAT,
            text=f"Generation output stopped{on} while requests wait{growing}.",
            sources=(cite(bundle, episode.source, episode.series, episode.sampled_at),),
        )
    possible = wedge.possible if wedge is not None else None
    if wedge is not None and possible is not None:
        return SummaryLine(
            topic=WHAT,
            text=(
                f"Possibly wedged (window shorter than {wedge.window:g} s): output at zero "
                f"with work waiting for {possible.duration:g} s by the last sample."
            ),
            sources=(cite(bundle, possible.source, possible.series, possible.sampled_at),),
        )
    stuck = long_waits(analysis)
    waiting = client_waits(analysis)
    if waiting and not stuck:
        return SummaryLine(
            topic=WHAT,
            text=(
                "Clients waiting, and no server stacks or metrics: the only stacks are Go "
                f"clients'; a wait under {CLIENT_STUCK_MINUTES} minutes may be a slow request "
                "rather than a hang."
            ),
            sources=tuple(dict.fromkeys(str(b.source) for b in waiting)),
        )
    if stuck:
        total = client_count(stuck)
        longest = max(b.max_minutes or 0 for b in stuck)
        bucket = stuck[0]
        return SummaryLine(
            topic=WHAT,
            text=(
                f"Clients hang: {plural(total, 'Go goroutine')} wait for {bucket.client_wait}"
                f"{client_place(bucket)}, the longest for {plural(longest, 'minute')}; no "
                "server stacks or metrics say why."
            ),
            sources=tuple(dict.fromkeys(str(b.source) for b in stuck)),
        )
    if top_change(analysis) is not None or analysis.diff is not None:
        good = baseline_prefix(bundle).rstrip("/ :")
        return SummaryLine(
            topic=WHAT,
            text=(
                "No stack dumps and no metric history: the evidence is the environment of "
                f"this run and of the last good one (`{good}/`), compared below; nothing here "
                "shows whether or where it hangs."
            ),
            sources=(),
        )
    what = "no wedge in the metrics" if wedge is not None else "no metric history"
    failed = ""
    if analysis.failed:
        first = analysis.failed[0].failure
        reason = " ".join(first.reason.split())
        reason = reason if len(reason) <= 60 else reason[:59] + "…"
        failed = f" ({plural(len(analysis.failed), 'dump')} failed: `{reason}`)"
    return SummaryLine(
        topic=WHAT,
        text=f"No stack dumps{failed} and {what}: nothing here shows a hang.",
        sources=tuple(f.path for f in bundle.files[:6]),
    )


def others_line(scope: Scope, analysis: Analysis) -> SummaryLine | None:
    """The other instances' verdicts, each by its name, in one line (None with one instance)."""
    if not scope.others:
        return None
    parts: list[str] = []
    sources: list[str] = []
    for instance in scope.others:
        count = _units(analysis, len(instance.pids) or len(instance.ranks))
        parts.append(f"{instance_name(instance)}, {count}: {instance.verdict.value}")
        # By (instance, unit): one PID can name two processes (two hosts, two containers).
        first = next(
            (p for p in members(analysis, str(instance.id), instance.ranks) if p.snapshots), None
        )
        if first is not None:
            sources.append(str(first.snapshots[-1].source))
    return SummaryLine(topic=OTHERS, text="; ".join(parts) + ".", sources=tuple(sources))


def _both(n: int) -> str:
    return "both" if n == 2 else f"all {n}"


def services(analysis: Analysis, bundle: Bundle, scope: Scope | None = None) -> str:
    """What must restart together: the service units seen and the ranks of the group."""
    units = sorted(
        {
            e.text.partition(":")[0]
            for e in bundle.events
            if e.kind is EventKind.SERVICE and e.text.partition(":")[0].endswith(".service")
        }
    )
    ranks = {p.identity.rank for p in analysis.processes if p.identity.rank is not None}
    if scope is None or not scope.name:
        ranks |= {f.rank for f in analysis.failed if f.rank is not None}
        ranks |= set(analysis.missing_ranks)
    n = len(ranks) or len(analysis.processes)
    roles = sorted({p.identity.role for p in analysis.processes if p.identity.role})
    kind = f" {'/'.join(roles)}" if roles else ""
    noun = "rank" if n == 1 else "ranks"
    who = f"{_both(n) if n > 1 else 'the'}{kind} {noun}" if n else "every rank"
    if analysis.rank_unit != "rank" and n:
        pids = sorted(p.identity.pid for p in analysis.processes if p.identity.pid is not None)
        who = f"{'the process' if n == 1 else _both(n) + ' processes'} ({format_pids(pids)})"
    if multi_host(analysis) and analysis.rank_unit == "rank":
        spread = [
            f"{h}: {format_ranks(r)}"
            for h in dict.fromkeys(x.name for x in analysis.hosts)
            if (r := [u for u in sorted(ranks) if h in host_of_units(analysis, [u])])
        ]
        if spread:
            who += f" ({', '.join(spread)})"
    if scope is not None and scope.name:
        who = f"the server of {scope.name} with {who}"
    return f"{' and '.join(f'`{u}`' for u in units)} with {who}" if units else who
