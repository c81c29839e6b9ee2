"""The "Since" and "Recovers on its own" lines: when the hang began (the wedge onset and a
restart before it) and what would end the wait (a timeout set, the library's default, or
one already fired).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from reporter.analysis.result import Analysis, Verdict
from reporter.core.times import clock
from reporter.model import Bundle, EventKind, TimelineEvent
from reporter.render.answer.records import SummaryLine, Timeout
from reporter.render.answer.series import cite
from reporter.render.answer.timeouts import captured
from reporter.render.answer.topics import RECOVERS, SINCE
from reporter.render.answer.waits import gone_ranks, ranks_name

_RESTART = re.compile(r"\b(restart\w*|deploy\w*|roll(ed)?[ -]?out|upgrad\w*|started)\b", re.I)


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
