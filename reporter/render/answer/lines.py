"""The summary lines: what, who waits for whom, since when, recovery, clients, changes, earlier reports."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from reporter.analysis.result import Analysis, Verdict
from reporter.model import Bundle, EventKind, Location, TimelineEvent
from reporter.render.answer.records import SeenReport, SummaryLine, Timeout, WaitEdge, WaitSide
from reporter.render.answer.waits import dump_of, gone_ranks, ranks_name
from reporter.text import plural
from reporter.times import clock

if TYPE_CHECKING:
    from reporter.analysis.diff import Change


# Command-line options and environment variables that end a hung collective or kill a
# wedged server: SGLang's watchdog, torch's NCCL/gloo timeouts and heartbeat monitor.
_TIMEOUT_FLAG = re.compile(r"^--?[\w.-]*(timeout|watchdog)[\w.-]*$", re.IGNORECASE)
_TIMEOUT_IN_TEXT = re.compile(
    r"(?<![\w-])(--[\w.-]*(?:timeout|watchdog)[\w.-]*)(?:=|\s+)([^\s-][^\s]*)", re.IGNORECASE
)
_TIMEOUT_ENV = re.compile(
    r"^(TORCH_NCCL_\w*(TIMEOUT|HEARTBEAT|WATCHDOG)\w*|NCCL_TIMEOUT|TORCH_GLOO\w*TIMEOUT\w*"
    r"|GLOO_\w*TIMEOUT\w*|TORCH_DIST\w*TIMEOUT\w*|\w*WATCHDOG\w*|SGLANG_\w*DIST\w*TIMEOUT\w*"
    r"|VLLM_\w*(RPC_TIMEOUT|ENGINE_ITERATION_TIMEOUT)\w*)$"
)

_RESTART = re.compile(r"\b(restart\w*|deploy\w*|roll(ed)?[ -]?out|upgrad\w*|started)\b", re.I)

_KIND_WORDS = {"env": "env var", "flag": "server option", "package": "package"}


def find_timeouts(bundle: Bundle) -> tuple[Timeout, ...]:
    """Collective timeouts and watchdogs in the command lines and environment, each once."""
    found: dict[tuple[str, str], str] = {}
    for cmdline in bundle.environment.cmdlines:
        for flag in cmdline.flags:
            if _TIMEOUT_FLAG.match(flag.name) and flag.value is not None:
                found.setdefault((flag.name, flag.value), str(cmdline.source))
    for dump in bundle.dumps:
        for text in (dump.cmdline, dump.parent_cmdline):
            for match in _TIMEOUT_IN_TEXT.finditer(text or ""):
                found.setdefault((match.group(1), match.group(2)), str(dump.source))
    for var in bundle.environment.variables:
        if _TIMEOUT_ENV.match(var.name) and "DUMP" not in var.name:
            found.setdefault((var.name, var.value), str(var.source))
    return tuple(
        Timeout(name=name, value=value, source=source)
        for (name, value), source in sorted(found.items())
    )


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


def _queue_growing(analysis: Analysis) -> bool:
    from reporter.analysis.wedge import StepKind

    wedge = analysis.wedge
    return wedge is not None and any(s.kind is StepKind.LINEAR_GROWTH for s in wedge.steps)


def _waiting_now(analysis: Analysis) -> tuple[str, tuple[str, ...]]:
    """`77 requests queued, 5 running at the last sample`, with the samples' lines."""
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
        sources.append(str(signal.points[-1].source))
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


def stack_title(analysis: Analysis, edges: Sequence[WaitEdge]) -> str:
    """A title that says what happened: who waits for whom, or what the metrics show."""
    n = len(analysis.processes)
    wedge = analysis.wedge
    if analysis.verdict is Verdict.P2P_DEADLOCK and analysis.p2p_deadlock:
        return f"P2P{analysis.p2p_deadlock[3:]}"
    if edges:
        edge = edges[0]
        call = edge.waiting.where.partition(" (")[0]
        call_text = f" ({call})" if call and call != edge.collective else ""
        waited = edge.waited
        single = len(edge.waiting.ranks) == 1
        prefix = role_prefix(analysis)
        who = (
            f"{prefix.removesuffix('s')} {edge.waiting.ranks[0]} waits"
            if single
            else (f"{prefix} {edge.waiting.label} wait")
        )
        target = waited.name if len(waited.ranks) == 1 else waited.label
        joiner = "" if waited.brief.startswith(",") else " "
        return f"{who} in {edge.collective}{call_text} for {target}{joiner}{waited.brief}"
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
        if wedge is not None:
            return "No wedge in the metrics; no stacks"
        return "No stacks in the evidence"
    if analysis.verdict is Verdict.PROGRESSING:
        unit = "ranks" if analysis.rank_unit == "rank" else "processes"
        return f"No hang: {n} {unit} progressing"
    if analysis.verdict is Verdict.ALL_STUCK:
        collectives = sorted({c.collective for c in analysis.classes if c.collective})
        what = f" in {', '.join(collectives)}" if collectives else ""
        return f"All {n} ranks stuck{what}"
    collectives = sorted({c.collective for c in analysis.classes if c.collective})
    what = f" in {', '.join(collectives)}" if collectives else ""
    return f"Inconclusive: {plural(n, 'rank')}{what}, {analysis.snapshots} snapshot(s)"


def what_line(bundle: Bundle, analysis: Analysis, edges: Sequence[WaitEdge]) -> SummaryLine:
    verdict = analysis.verdict
    wedge = analysis.wedge
    n = len(analysis.processes)
    sources = _stack_sources(analysis)
    if not analysis.classes:
        if wedge is not None and wedge.episode is not None:
            ongoing = "still wedged at the last sample" if wedge.still_wedged else "it ended"
            growing = ", the queue growing" if _queue_growing(analysis) else ""
            return SummaryLine(
                topic="What",
                text=(
                    f"Generation output stopped while requests wait{growing}; {ongoing}. "
                    "No stack dumps, so where the ranks are is not known."
                ),
                sources=(str(wedge.episode.source),),
            )
        possible = wedge.possible if wedge is not None else None
        if wedge is not None and possible is not None:
            return SummaryLine(
                topic="What",
                text=(
                    f"Possibly wedged (window shorter than {wedge.window:g} s): output at zero "
                    f"with work waiting for {possible.duration:g} s by the last sample. No stacks."
                ),
                sources=(str(possible.source),),
            )
        what = "no wedge in the metrics" if wedge is not None else "no metric history"
        return SummaryLine(
            topic="What",
            text=f"No stack dumps and {what}: nothing here shows a hang.",
            sources=tuple(f.path for f in bundle.files),
        )
    unit = plural(n, "rank" if analysis.rank_unit == "rank" else "process").split(" ", 1)[1]
    basis = f"{analysis.snapshots} snapshot{'s' if analysis.snapshots != 1 else ''}"
    if verdict is Verdict.COLLECTIVE_DESYNC:
        text = f"Collective desync among {n} {unit} ({basis})"
        if edges:
            edge = edges[0]
            by_rank = {r: c for c in analysis.classes for r in c.ranks}
            other = by_rank.get(edge.waited.ranks[0]) if edge.waited.ranks else None
            if other is not None and other.collective and edge.group:
                # Both sides in a collective, on different groups: "not" would be wrong.
                text += (
                    f": {edge.waiting.name} in {edge.collective} on the {edge.group} group, "
                    f"{edge.waited.name} {edge.waited.brief}"
                )
            else:
                text += f": {edge.waiting.name} in {edge.collective}, {edge.waited.name} not"
        return SummaryLine(topic="What", text=text + ".", sources=sources)
    if verdict is Verdict.P2P_DEADLOCK:
        return SummaryLine(
            topic="What",
            text=f"P2P{analysis.p2p_deadlock[3:]} ({n} {unit}, {basis}).",
            sources=sources,
        )
    if verdict is Verdict.ALL_STUCK:
        gone, _ = gone_ranks(analysis)
        absent = sorted(set(analysis.missing_ranks) | set(gone))
        extra = f"; {ranks_name(absent, analysis.rank_unit)} not in the stacks" if absent else ""
        return SummaryLine(
            topic="What",
            text=f"All {n} {unit} stuck, unchanged across {basis}{extra}.",
            sources=sources,
        )
    if verdict is Verdict.PROGRESSING:
        return SummaryLine(
            topic="What",
            text=f"No hang: all {n} {unit} progressing; their stacks change across {basis}.",
            sources=sources,
        )
    return SummaryLine(
        topic="What",
        text=f"Inconclusive: {n} {unit} in {basis}; {analysis.confidence_notes[0] if analysis.confidence_notes else 'no decisive pattern'}.",
        sources=sources,
    )


def instance_lines(analysis: Analysis) -> list[SummaryLine]:
    """One line per instance (server, job) when the bundle holds several (`Analysis.instances`)."""
    instances: Sequence[Any] = getattr(analysis, "instances", ())
    if len(instances) < 2:
        return []
    by_pid = {p.identity.pid: p for p in analysis.processes}
    out = []
    for instance in instances:
        sources = tuple(
            str(by_pid[pid].snapshots[-1].source)
            for pid in list(instance.pids)[:2]
            if pid in by_pid and by_pid[pid].snapshots
        )
        first = str(instance.summary).split(". ")[0].rstrip(".")
        out.append(
            SummaryLine(
                topic=f"In {instance.label}",
                text=f"{instance.verdict.value}: {first}.",
                sources=sources,
            )
        )
    return out


def wait_line(edge: WaitEdge) -> SummaryLine:
    waiting, waited = edge.waiting, edge.waited
    verb = "waits" if len(waiting.ranks) == 1 else "wait"
    left = f"{waiting.name[0].upper()}{waiting.name[1:]} {verb} in {edge.collective}"
    if edge.group and edge.kind == "collective":
        left += f" on the {edge.group} group"
    if waiting.where:
        left += f" called at {waiting.where}"
    if waiting.branch and waiting.branch != waiting.where:
        left += f", from {waiting.branch}"
    right = side_text(waited)
    if waited.branch and waited.branch not in (waiting.branch, waited.where):
        right += f", from {waited.branch}"
    sources = tuple(s for s in (waiting.evidence, waited.evidence) if s)
    return SummaryLine(topic="Who waits for whom", text=f"{left}; for {right}.", sources=sources)


def since_line(analysis: Analysis) -> SummaryLine | None:
    wedge = analysis.wedge
    if wedge is not None and wedge.episode is not None:
        onset = wedge.episode.onset
        text = f"Wedge onset {clock(onset)} UTC"
        if wedge.episode.end is None:
            text += f", still wedged {wedge.episode.duration:g} s later at the last sample"
        else:
            text += f", for {wedge.episode.duration:g} s"
        sources = [str(wedge.episode.source)]
        restart = restart_before(analysis.timeline, onset)
        if restart is not None:
            gap = (onset - restart.at).total_seconds()
            text += f"; {gap_text(gap)} after {restart_words(restart)}"
            sources.append(str(restart.source))
        return SummaryLine(topic="Since", text=text + ".", sources=tuple(sources))
    dumps = [e for e in analysis.timeline if e.kind is EventKind.DUMP]
    if dumps and analysis.classes and analysis.verdict is not Verdict.PROGRESSING:
        first = dumps[0]
        return SummaryLine(
            topic="Since",
            text=f"Not known: no metric history; the first dump was taken at {clock(first.at)} UTC.",
            sources=(str(first.source),),
        )
    return None


def recover_line(
    analysis: Analysis, timeouts: Sequence[Timeout], edges: Sequence[WaitEdge]
) -> SummaryLine | None:
    stuck = analysis.verdict in (
        Verdict.COLLECTIVE_DESYNC,
        Verdict.ALL_STUCK,
        Verdict.P2P_DEADLOCK,
    ) or (analysis.wedge is not None and analysis.wedge.episode is not None)
    if not stuck:
        return None
    if not timeouts:
        return SummaryLine(
            topic="Recovers on its own",
            text=(
                "No timeout found: no collective timeout or watchdog in the command lines or "
                "environment, so nothing ends the wait; a restart is needed."
            ),
            sources=(),
        )
    named = ", ".join(f"`{t.name}={t.value}`" for t in timeouts[:3])
    wedge = analysis.wedge
    so_far = (
        f"; wedged {wedge.episode.duration:g} s so far"
        if wedge is not None and wedge.episode is not None
        else ""
    )
    return SummaryLine(
        topic="Recovers on its own",
        text=(
            f"Only by timing out: {named} should end the wait, the process then exits or "
            f"raises{so_far}."
        ),
        sources=tuple(dict.fromkeys(t.source for t in timeouts[:3])),
    )


def clients_line(analysis: Analysis) -> SummaryLine | None:
    parts: list[str] = []
    sources: list[str] = []
    goroutines = analysis.goroutines
    if goroutines is not None and goroutines.waiting:
        bucket = goroutines.waiting[0]
        total = sum(b.count for b in goroutines.waiting)
        since = (
            f" since at least {clock(bucket.waiting_since)[:8]} UTC"
            if bucket.waiting_since is not None
            else ""
        )
        parts.append(f"{total} client goroutines wait for {bucket.client_wait}{since}")
        sources.append(str(bucket.source))
    waiting, signal_sources = _waiting_now(analysis)
    if waiting and analysis.wedge is not None and analysis.wedge.episode is not None:
        parts.append(f"requests waiting: {waiting}")
        sources.extend(signal_sources)
    if not parts:
        return None
    text = "; ".join(parts)
    return SummaryLine(
        topic="Clients affected", text=text[0].upper() + text[1:] + ".", sources=tuple(sources)
    )


def change_line(bundle: Bundle, analysis: Analysis) -> SummaryLine | None:
    change = top_change(analysis)
    if change is None:
        return None
    total = len(analysis.diff.changes) if analysis.diff is not None else 0
    text = (
        f"`{change.key}` {short_value(change.before)} → {short_value(change.after)} "
        f"({_KIND_WORDS.get(change.kind.value, change.kind.value)}, ranked first of {total} "
        f"changes, score {change.score})."
    )
    return SummaryLine(
        topic="Top change since the last good run",
        text=text,
        sources=_change_sources(bundle, change),
    )


def seen_line(seen: Sequence[SeenReport]) -> SummaryLine | None:
    if not seen:
        return None
    ordinal = {1: "second", 2: "third", 3: "fourth", 4: "fifth"}.get(
        len(seen), f"{len(seen) + 1}th"
    )
    first = seen[0]
    same = "same signature" if first.same else "a similar signature (same collectives)"
    items = "; ".join(first.action_items[:2])
    detail = f"status {first.status}" + (f"; action items: {items}" if items else "")
    return SummaryLine(
        topic="Seen before",
        text=f"Yes, {ordinal} time since {first.date} ({same}): {first.path} ({detail}).",
        sources=tuple(s.path for s in seen),
    )


def services(analysis: Analysis, bundle: Bundle) -> str:
    """What must restart together: the service units seen and the ranks of the group."""
    units = sorted(
        {
            e.text.partition(":")[0]
            for e in bundle.events
            if e.kind is EventKind.SERVICE and e.text.partition(":")[0].endswith(".service")
        }
    )
    ranks = {p.identity.rank for p in analysis.processes if p.identity.rank is not None}
    ranks |= {f.rank for f in analysis.failed if f.rank is not None} | set(analysis.missing_ranks)
    n = len(ranks) or len(analysis.processes)
    roles = sorted({p.identity.role for p in analysis.processes if p.identity.role})
    kind = f" {'/'.join(roles)}" if roles else ""
    who = f"all {n}{kind} ranks" if n else "every rank"
    return f"{' and '.join(f'`{u}`' for u in units)} with {who}" if units else who
