"""The summary lines: what, who waits for whom, since when, recovery, clients, changes, earlier reports.

Every topic of `TOPICS` always gets a line: its evidence, or "Not known: ..." with what a
capture would tell. Each fact is said in one line only: "What" names the kind of hang and
its size, "Who waits for whom" the rank sets and code locations, and so on; the title is
the headline and no line repeats it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from reporter.analysis.ranksets import format_pids, format_ranks
from reporter.analysis.result import Analysis, RankState, Verdict
from reporter.core.text import plural
from reporter.core.times import clock
from reporter.model import Bundle, EventKind, Location, TimelineEvent
from reporter.render.answer.hosts import host_of_units, multi_host
from reporter.render.answer.records import (
    SeenBefore,
    SeenReport,
    SummaryLine,
    Timeout,
    WaitEdge,
    WaitSide,
)
from reporter.render.answer.scope import Scope
from reporter.render.answer.series import cite, engine_words
from reporter.render.answer.timeouts import captured, find_timeouts
from reporter.render.answer.waits import dump_of, gone_ranks, members, ranks_name

if TYPE_CHECKING:
    from reporter.analysis.diff import Change
    from reporter.analysis.result import GoBucket

__all__ = ["find_timeouts"]

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

_RESTART = re.compile(r"\b(restart\w*|deploy\w*|roll(ed)?[ -]?out|upgrad\w*|started)\b", re.I)

_KIND_WORDS = {"env": "env var", "flag": "server option", "package": "package"}

# Go clients waiting this long for the server are a symptom on their own: an LLM request
# may stream for minutes, but not for this long (the bucket's longest wait, from the dump).
CLIENT_STUCK_MINUTES = 5


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


def restart_before(events: Sequence[TimelineEvent], onset: datetime) -> TimelineEvent | None:
    """The last service start, restart or deploy on the timeline before `onset`."""
    chosen: TimelineEvent | None = None
    for event in events:
        if event.at > onset:
            break
        if event.kind is EventKind.SERVICE or (
            event.kind in (EventKind.LOG, EventKind.MANUAL) and _RESTART.search(event.text)
        ):
            chosen = event
    return chosen


def restart_words(event: TimelineEvent) -> str:
    """`` `sglang.service` started at 14:43:09 UTC`` or the quoted log line and its time."""
    if event.kind is EventKind.SERVICE:
        unit = event.text.partition(":")[0].strip()
        return f"`{unit}` started at {clock(event.at)[:8]} UTC"
    what = " ".join(event.text.split())
    what = what if len(what) <= 70 else what[:69] + "…"
    return f"`{what}` at {clock(event.at)[:8]} UTC"


def gap_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def top_change(analysis: Analysis) -> Change | None:
    if analysis.diff is None:
        return None
    return next((c for c in analysis.diff.changes if c.score > 0), None)


def _change_sources(bundle: Bundle, change: Change) -> tuple[str, ...]:
    """Where the top change's values sit: the variable or command line in each run."""
    out: list[str] = []
    for side in (bundle, bundle.baseline):
        if side is None:
            continue
        env = side.environment
        prefix = "" if side is bundle else _baseline_prefix(bundle)
        hit: Location | None = next((v.source for v in env.variables if v.name == change.key), None)
        if hit is None:
            hit = next(
                (c.source for c in env.cmdlines if any(f.name == change.key for f in c.flags)),
                None,
            )
        if hit is None:
            hit = next((p.source for p in env.packages if p.name == change.key), None)
        if hit is not None:
            out.append(f"{prefix}{hit}")
    return tuple(out)


def _baseline_prefix(bundle: Bundle) -> str:
    """How the baseline's files are named: the manifest's folder, else the baseline's path."""
    base = bundle.manifest.baseline.strip("/")
    if not base and bundle.baseline is not None and bundle.baseline.root:
        base = bundle.baseline.root.rstrip("/")
    return f"{base}/" if base else "baseline: "


def short_value(value: str | None) -> str:
    if value is None:
        return "(absent)"
    return f"`{value}`" if len(value) <= 40 else f"`{value[:39]}…`"


def change_words(change: Change) -> str:
    """`` `X` `256` → `512` ``, `` `X` newly set to `512` ``, `` `X` unset (was `256`) ``."""
    if change.before is None:
        return f"`{change.key}` newly set to {short_value(change.after)}"
    if change.after is None:
        return f"`{change.key}` unset (was {short_value(change.before)})"
    return f"`{change.key}` {short_value(change.before)} → {short_value(change.after)}"


def revert_words(change: Change) -> str:
    """How to undo the change, naming the knob: `set `X` back to `256``, `unset `X``."""
    kind = change.kind.value
    if kind == "package":
        if change.before is None:
            return f"uninstall `{change.key}`"
        return f"pin `{change.key}` back to {short_value(change.before)}"
    if change.before is None:
        return f"remove `{change.key}`" if kind == "flag" else f"unset `{change.key}`"
    return f"set `{change.key}` back to {short_value(change.before)}"


def _queue_growing(analysis: Analysis) -> bool:
    from reporter.analysis.wedge import StepKind

    wedge = analysis.wedge
    return wedge is not None and any(s.kind is StepKind.LINEAR_GROWTH for s in wedge.steps)


def _waiting_now(bundle: Bundle, analysis: Analysis) -> tuple[str, tuple[str, ...]]:
    """`77 requests queued, 5 running at the last sample`, with the samples cited."""
    from reporter.analysis.wedge import Role

    wedge = analysis.wedge
    if wedge is None:
        return "", ()
    parts: list[str] = []
    sources: list[str] = []
    for signal in wedge.signals:
        if signal.role is not Role.WAITING or not signal.points or signal.last <= 0:
            continue
        short = signal.name.rpartition(":")[2]
        parts.append(f"{signal.last:g} in `{short}`")
        last = signal.points[-1]
        sources.append(cite(bundle, last.source, last.series, last.sampled_at))
    if not parts:
        return "", ()
    return f"{', '.join(parts)} at the last sample ({clock(wedge.last_sample)} UTC)", tuple(sources)


def _stack_sources(analysis: Analysis) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e for c in analysis.classes for e in [dump_of(analysis, c)] if e))


def role_prefix(analysis: Analysis) -> str:
    dims = [dict(p.identity.dims) for p in analysis.processes]
    if dims and all("TP" in d for d in dims):
        return "TP ranks"
    return "Ranks" if analysis.rank_unit == "rank" else "Processes"


def side_text(side: WaitSide) -> str:
    joiner = "" if side.doing.startswith(",") else " "
    return f"{side.name}{joiner}{side.doing}"


def _units(analysis: Analysis, count: int) -> str:
    """`4 ranks`, `1 process`, `2 PIDs`' noun for the analysis's unit, counted."""
    word = {"rank": "rank", "pid": "process"}.get(analysis.rank_unit, "process")
    return plural(count, word, "processes" if word == "process" else None)


def long_waits(analysis: Analysis) -> tuple[GoBucket, ...]:
    """Client goroutine buckets that have waited at least `CLIENT_STUCK_MINUTES`."""
    goroutines = analysis.goroutines
    if goroutines is None:
        return ()
    return tuple(
        b
        for b in goroutines.waiting
        if b.max_minutes is not None and b.max_minutes >= CLIENT_STUCK_MINUTES
    )


def client_waits(analysis: Analysis) -> tuple[GoBucket, ...]:
    """Every Go client goroutine bucket waiting on a server, however long."""
    goroutines = analysis.goroutines
    return tuple(goroutines.waiting) if goroutines is not None else ()


def client_count(buckets: Sequence[GoBucket]) -> int:
    """How many client goroutines wait: the most any one dump shows. Two dumps of one
    moment (`debug=2` and a SIGQUIT dump) show the same goroutines; they are not added."""
    per_dump: dict[str, int] = {}
    for bucket in buckets:
        per_dump[bucket.source.path] = per_dump.get(bucket.source.path, 0) + bucket.count
    return max(per_dump.values(), default=0)


def _wait_age(buckets: Sequence[GoBucket]) -> str:
    """` 2-3 minutes`, ` 3 minutes`, or "" when the dump gives no wait times."""
    low = [b.min_minutes for b in buckets if b.min_minutes is not None]
    high = [b.max_minutes for b in buckets if b.max_minutes is not None]
    if not high:
        return ""
    if low and min(low) != max(high):
        return f" {min(low)}-{max(high)} minutes"
    return f" {plural(max(high), 'minute')}"


def _client_place(bucket: GoBucket) -> str:
    top = bucket.top
    return f" in `{top.function}`" if top is not None else ""


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
                f"{_wait_age(waiting)} for {waiting[0].client_wait}{_client_place(waiting[0])}; "
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


def _absent(analysis: Analysis) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(gone, missing): ranks with evidence of leaving, and ranks merely not in the evidence."""
    gone, _ = gone_ranks(analysis)
    missing = tuple(r for r in analysis.missing_ranks if r not in set(gone))
    return gone, missing


def _absent_text(analysis: Analysis) -> str:
    gone, missing = _absent(analysis)
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
    sources = _stack_sources(analysis)
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
                f"{_client_place(bucket)}, the longest for {plural(longest, 'minute')}; no "
                "server stacks or metrics say why."
            ),
            sources=tuple(dict.fromkeys(str(b.source) for b in stuck)),
        )
    if top_change(analysis) is not None or analysis.diff is not None:
        good = _baseline_prefix(bundle).rstrip("/ :")
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
        from reporter.render.answer.scope import instance_name

        count = _units(analysis, len(instance.pids) or len(instance.ranks))
        parts.append(f"{instance_name(instance)}, {count}: {instance.verdict.value}")
        # By (instance, unit): one PID can name two processes (two hosts, two containers).
        first = next(
            (p for p in members(analysis, str(instance.id), instance.ranks) if p.snapshots), None
        )
        if first is not None:
            sources.append(str(first.snapshots[-1].source))
    return SummaryLine(topic=OTHERS, text="; ".join(parts) + ".", sources=tuple(sources))


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
    sources = _stack_sources(analysis)
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
    _gone, missing = _absent(analysis)
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


def since_line(bundle: Bundle, analysis: Analysis) -> SummaryLine:
    """When it started: the wedge onset and a restart before it, or why that is not known."""
    wedge = analysis.wedge
    dated = sorted(d.captured_at for d in bundle.dumps if d.captured_at is not None)
    if wedge is not None and wedge.episode is not None:
        episode = wedge.episode
        onset = episode.onset
        text = f"Wedge onset {clock(onset)} UTC"
        if episode.end is None:
            text += f", still wedged {episode.duration:g} s later at the last sample"
        else:
            text += f", for {episode.duration:g} s"
        sources = [cite(bundle, episode.source, episode.series, episode.sampled_at)]
        restart = restart_before(analysis.timeline, onset)
        if restart is not None:
            gap = (onset - restart.at).total_seconds()
            text += f"; {gap_text(gap)} after {restart_words(restart)}"
            sources.append(str(restart.source))
        if dated and dated[0] >= onset:
            lead = (dated[0] - onset).total_seconds()
            text += f"; the first stack dump came {gap_text(lead)} after the onset"
        return SummaryLine(topic=SINCE, text=text + ".", sources=tuple(sources))
    why = (
        "the metrics show no wedge"
        if wedge is not None
        else "no metric history (a Prometheus `query_range` of the output and queue metrics "
        "over the incident would date the onset)"
    )
    # The first dump of the processes in question (the instance in trouble, with several).
    dumps = sorted(
        (d.captured_at, str(d.source))
        for p in analysis.processes
        for d in p.snapshots
        if d.captured_at is not None
    )
    if dumps:
        at, source = dumps[0]
        return SummaryLine(
            topic=SINCE,
            text=f"Not known: {why}; the first dump was taken at {clock(at)} UTC.",
            sources=(source,),
        )
    return SummaryLine(topic=SINCE, text=f"Not known: {why}.", sources=())


def timeout_text(timeout: Timeout) -> str:
    """`` `NCCL_TIMEOUT=1800` ``, `` `init_process_group(timeout=timedelta(seconds=900))` (15 min) in the code (x.py:12) ``,
    the Flight Recorder's timeout, gloo's default, or the log line of one that fired."""
    length = f" ({gap_text(timeout.seconds)})" if timeout.seconds else ""
    if timeout.kind == "fired":
        quoted = timeout.name if timeout.name.startswith("NCCL watchdog") else f"`{timeout.name}`"
        return f"{quoted}{length}" + (f" at {timeout.at}" if timeout.at else "")
    if timeout.kind == "default":
        if timeout.seconds is None:
            return f"{timeout.name} ({timeout.value})"
        return f"{timeout.name} of {timeout.value}"
    if timeout.name == "timeout_ms" and timeout.value.isdigit():
        return f"the Flight Recorder's collective timeout (`timeout_ms={timeout.value}`{length.replace(' (', ', ').rstrip(')')})"
    call, at, where = timeout.name.partition(" at ")
    if at:
        # The place in parentheses, as every code place of the block: a step that names
        # the same timeout after the Recovers line leaves the place out.
        return f"`{call.replace('=)', '=' + timeout.value + ')')}`{length} in the code ({where})"
    return f"`{timeout.name}={timeout.value}`{length}"


def recover_line(
    bundle: Bundle,
    analysis: Analysis,
    timeouts: Sequence[Timeout],
    cite: Sequence[str] = (),
) -> SummaryLine:
    """Whether something ends the wait: the verdict rule's own answer (citing `cite`), a
    timeout that fired, one set, the library's default, none where one was looked for, or
    not known (and what would tell)."""
    stuck = analysis.verdict in (
        Verdict.COLLECTIVE_DESYNC,
        Verdict.ALL_STUCK,
        Verdict.P2P_DEADLOCK,
    ) or (analysis.wedge is not None and analysis.wedge.episode is not None)
    went_off = [t for t in timeouts if t.kind == "fired"]
    set_here = [t for t in timeouts if t.kind == "set"]
    default = [t for t in timeouts if t.kind == "default"]
    shown = (went_off or set_here or default)[:3]
    named = ", ".join(timeout_text(t) for t in shown)
    sources = tuple(dict.fromkeys(t.source for t in shown if t.source))
    if analysis.recovers:
        # The verdict's own rule knows what ends (or never ends) this kind of wait; it rests
        # on the evidence of the verdict's What line.
        return SummaryLine(topic=RECOVERS, text=analysis.recovers, sources=tuple(cite))
    if analysis.verdict is Verdict.THREAD_DEADLOCK:
        return SummaryLine(
            topic=RECOVERS,
            text=(
                "No: the threads hold the locks each other waits for, and a lock cycle has no "
                "timeout of its own; the process must be restarted."
            ),
            sources=(),
        )
    if analysis.verdict is Verdict.CRASHED:
        return SummaryLine(
            topic=RECOVERS,
            text=(
                "No: the process died; whether a supervisor restarts it is not known from the "
                "evidence (its unit's `systemctl show` or the launcher's log would tell)."
            ),
            sources=(),
        )
    if went_off:
        gone, _ = gone_ranks(analysis)
        after = (
            f"; {ranks_name(gone, analysis.rank_unit)} gone in the later dumps"
            if gone
            else "; whether the processes then exited is not in the evidence"
        )
        return SummaryLine(
            topic=RECOVERS,
            text=f"It already timed out: {named}{after}.",
            sources=sources,
        )
    if not stuck:
        if analysis.verdict is Verdict.PROGRESSING:
            what = "Nothing shown stuck to recover from"
        elif not analysis.classes:
            what = "Not known: nothing here shows whether anything is stuck"
        else:
            what = "Not known: these dumps do not settle whether anything is stuck"
        if set_here:
            return SummaryLine(
                topic=RECOVERS, text=f"{what}; configured: {named}.", sources=sources
            )
        return SummaryLine(topic=RECOVERS, text=f"{what}.", sources=())
    wedge = analysis.wedge
    so_far = (
        f"; wedged {wedge.episode.duration:g} s so far"
        if wedge is not None and wedge.episode is not None
        else ""
    )
    if set_here:
        return SummaryLine(
            topic=RECOVERS,
            text=(
                f"Only by timing out: {named} should end the wait; the ranks then raise or "
                f"exit{so_far}."
            ),
            sources=sources,
        )
    looked = captured(bundle)
    where = " or ".join(looked)
    if default:
        unset = f"none is set in the {where}" if looked else "no command line or environment"
        return SummaryLine(
            topic=RECOVERS,
            text=(
                f"Probably, by timing out: {named} ends the wait unless the code passes its own "
                f"`timeout=` ({unset}; `py-spy dump --locals` of the set-up or the code of "
                f"`init_process_group` would tell); the ranks then raise{so_far}."
            ),
            sources=sources,
        )
    if not looked:
        return SummaryLine(
            topic=RECOVERS,
            text=(
                "Not known: no command line, environment or set-up code in the evidence "
                "(`report collect` saves the first two; `py-spy dump --locals` shows "
                "`init_process_group(timeout=...)`)."
            ),
            sources=(),
        )
    unseen = "" if "environment" in looked else " (the environment was not captured)"
    return SummaryLine(
        topic=RECOVERS,
        text=(
            f"Not known: no collective timeout or watchdog in the {where}{unseen}, and the "
            "waits are not torch.distributed collectives with a default of their own; the "
            "service's own settings or its log would tell."
        ),
        sources=(),
    )


def clients_line(bundle: Bundle, analysis: Analysis) -> SummaryLine:
    parts: list[str] = []
    sources: list[str] = []
    goroutines = analysis.goroutines
    if goroutines is not None and goroutines.waiting:
        bucket = goroutines.waiting[0]
        total = client_count(goroutines.waiting)
        since = (
            f" since at least {clock(bucket.waiting_since)[:8]} UTC"
            if bucket.waiting_since is not None
            else ""
        )
        wedged = analysis.wedge is not None and analysis.wedge.episode is not None
        if not analysis.classes and not wedged:
            # The title already counts them and says what they wait for: this line says
            # who started them and what else the dump holds.
            dump = next(
                (d for d in goroutines.dumps if d.source.path == bucket.source.path),
                goroutines.dumps[0],
            )
            started = (
                f", started by `{bucket.created_by.function}`"
                if bucket.created_by is not None
                else ""
            )
            rest = dump.total - total
            parts.append(
                f"{total} of the dump's {plural(dump.total, 'goroutine')}{since}{started}; "
                f"the other {rest} do not wait on the server"
            )
        else:
            parts.append(
                f"{plural(total, 'client goroutine')} wait for {bucket.client_wait}{since}"
            )
        sources.append(str(bucket.source))
    waiting, signal_sources = _waiting_now(bundle, analysis)
    if waiting and analysis.wedge is not None and analysis.wedge.episode is not None:
        parts.append(f"requests waiting: {waiting}")
        sources.extend(signal_sources)
    if not parts:
        if goroutines is not None:
            return SummaryLine(
                topic=CLIENTS,
                text="No client goroutine in the Go dumps waits for the server.",
                sources=tuple(str(d.source) for d in goroutines.dumps[:2]),
            )
        return SummaryLine(
            topic=CLIENTS,
            text=(
                "Not known: no client dumps or request metrics in the evidence "
                "(`/debug/pprof/goroutine?debug=2` of the clients, or the server's "
                "`num_queue_reqs`, would tell)."
            ),
            sources=(),
        )
    text = "; ".join(parts)
    return SummaryLine(topic=CLIENTS, text=text[0].upper() + text[1:] + ".", sources=tuple(sources))


def change_line(bundle: Bundle, analysis: Analysis) -> SummaryLine:
    diff = analysis.diff
    if diff is None:
        return SummaryLine(
            topic=CHANGE,
            text=(
                "Not known: no last good run in the evidence (`--baseline DIR`, or `good/` and "
                "`bad/` folders side by side, would rank what changed)."
            ),
            sources=(),
        )
    change = top_change(analysis)
    found = (
        f" {bundle.baseline_note[0].upper()}{bundle.baseline_note[1:]}."
        if bundle.baseline_note
        else ""
    )
    if change is None:
        text = (
            f"None that matters: {plural(len(diff.changes), 'change')}, all per-run noise"
            if diff.changes
            else "None: the compared evidence is the same"
        )
        return SummaryLine(topic=CHANGE, text=f"{text}.{found}", sources=())
    total = len(diff.changes)
    text = (
        f"{change_words(change)} ({_KIND_WORDS.get(change.kind.value, change.kind.value)}, "
        f"ranked first of {plural(total, 'change')}, score {change.score}).{found}"
    )
    return SummaryLine(topic=CHANGE, text=text, sources=_change_sources(bundle, change))


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
