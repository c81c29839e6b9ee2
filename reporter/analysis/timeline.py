"""One ordered timeline of everything in a bundle that carries a time.

Input: the `Bundle` (its dated events: service starts from `systemctl show`,
notable log lines, manual `[[event]]`s from the manifest, and any other evidence
that adds events, such as Go goroutine dumps), its dumps' capture times, and the
`WedgeReport`. Output: a tuple of `TimelineEvent`, sorted by time, then by kind
(service, manual, log, metric, wedge, dump...), file, line and text, so the
order is byte-stable. Every entry cites the file and line it comes from.

Dumps taken close together (less than `DUMP_CLUSTER` apart) are one entry
("20 stack dumps of 5 processes over 2.2 s"); each failed dump is an entry of
its own. From the metrics come: where the history begins, the wedge onset and end
(or "still wedged at the last sample"), step changes and gaps in scraping.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from reporter.analysis.wedge import WedgeReport
from reporter.core.times import clock, iso
from reporter.model import (
    Bundle,
    EventKind,
    FailedDump,
    Location,
    ProcessDump,
    TimelineEvent,
)

DUMP_CLUSTER = timedelta(seconds=5)
_KIND_ORDER = {
    kind: index
    for index, kind in enumerate(
        (
            EventKind.SERVICE,
            EventKind.MANUAL,
            EventKind.LOG,
            EventKind.METRIC,
            EventKind.WEDGE,
            EventKind.GOROUTINES,
            EventKind.DUMP,
            EventKind.DUMP_FAILED,
        )
    )
}


def sort_key(event: TimelineEvent) -> tuple[datetime, int, str, int, str]:
    """Time, then kind, file, line and text: the explicit tie-break of the timeline."""
    return (
        event.at,
        _KIND_ORDER.get(event.kind, len(_KIND_ORDER)),
        event.source.path,
        event.source.line,
        event.text,
    )


def build(
    bundle: Bundle, wedge: WedgeReport | None, extra: Sequence[TimelineEvent] = ()
) -> tuple[TimelineEvent, ...]:
    """The bundle's timeline; `extra` adds events from other analyses."""
    events: list[TimelineEvent] = [*bundle.events, *extra]
    hosts = {d.host for d in bundle.dumps} | {f.host for f in bundle.failures}
    events.extend(_dump_events(bundle.dumps, hosts))
    events.extend(_failure_events(bundle.failures, hosts))
    if wedge is not None:
        events.extend(wedge_events(bundle, wedge))
    return tuple(sorted(set(events), key=sort_key))


def _dump_events(dumps: Sequence[ProcessDump], hosts: set[str]) -> list[TimelineEvent]:
    dated = sorted(
        (d for d in dumps if d.captured_at is not None),
        key=lambda d: (d.captured_at or datetime.min, d.source.path, d.source.line),
    )
    clusters: list[list[ProcessDump]] = []
    for dump in dated:
        previous = clusters[-1][-1].captured_at if clusters else None
        if previous and dump.captured_at and dump.captured_at - previous < DUMP_CLUSTER:
            clusters[-1].append(dump)
            continue
        clusters.append([dump])
    out = []
    for cluster in clusters:
        first, last = cluster[0], cluster[-1]
        assert first.captured_at is not None and last.captured_at is not None
        kinds = ", ".join(sorted({d.kind.value for d in cluster}))
        # A process is (host, PID): two hosts can each have a PID 4711.
        pids = {(d.host, d.pid) for d in cluster if d.pid is not None}
        if len(cluster) == 1:
            who = f"PID {first.pid}" if first.pid is not None else "one process"
            who += f" on {first.host}" if first.host and len(hosts) > 1 else ""
            text = f"stack dump of {who} captured ({kinds})"
        else:
            span = (last.captured_at - first.captured_at).total_seconds()
            procs = f"{len(pids)} process{'es' if len(pids) != 1 else ''}"
            spread = {host for host, _ in pids if host}
            procs += f" on {len(spread)} hosts" if len(spread) > 1 else ""
            text = f"{len(cluster)} stack dumps ({kinds}) of {procs} captured over {span:.1f} s"
            text += f", to {clock(last.captured_at)}"
        out.append(
            TimelineEvent(at=first.captured_at, kind=EventKind.DUMP, text=text, source=first.source)
        )
    return out


def _failure_events(failures: Sequence[FailedDump], hosts: set[str]) -> list[TimelineEvent]:
    out = []
    for failure in failures:
        if failure.captured_at is None:
            continue
        who = f"PID {failure.pid}" if failure.pid is not None else "a process"
        who += f" on {failure.host}" if failure.host and len(hosts) > 1 else ""
        out.append(
            TimelineEvent(
                at=failure.captured_at,
                kind=EventKind.DUMP_FAILED,
                text=f"stack dump of {who} failed: {failure.reason}",
                source=failure.source,
            )
        )
    return out


def wedge_events(bundle: Bundle, wedge: WedgeReport) -> list[TimelineEvent]:
    """Metric entries: history start, wedge onset and end, step changes, gaps."""
    out: list[TimelineEvent] = []
    first_source = _first_source(bundle, wedge.first_sample)
    every = f", about every {wedge.interval:g} s" if wedge.interval else ""
    out.append(
        TimelineEvent(
            at=wedge.first_sample,
            kind=EventKind.METRIC,
            text=f"metric history begins ({len(bundle.series)} series{every})",
            source=first_source,
        )
    )
    episode = wedge.episode
    if episode is not None:
        waiting = [s for s in wedge.signals if s.role.value == "waiting" and s.shows_wedge]
        detail = ", ".join(f"{s.name} {_num(s.at_onset)}" for s in waiting)
        out.append(
            TimelineEvent(
                at=episode.onset,
                kind=EventKind.WEDGE,
                text=f"wedge onset: generation output at zero while requests wait ({detail})",
                source=episode.source,
            )
        )
        if episode.end is not None:
            out.append(
                TimelineEvent(
                    at=episode.end,
                    kind=EventKind.WEDGE,
                    text=f"wedge ends after {episode.duration:g} s: {episode.end_reason}",
                    source=_first_source(bundle, episode.end),
                )
            )
        else:
            out.append(
                TimelineEvent(
                    at=wedge.last_sample,
                    kind=EventKind.WEDGE,
                    text=f"still wedged at the last metric sample ({episode.duration:g} s since onset)",
                    source=_first_source(bundle, wedge.last_sample),
                )
            )
    for step in wedge.steps:
        out.append(
            TimelineEvent(at=step.at, kind=EventKind.METRIC, text=step.text, source=step.source)
        )
    for gap in wedge.gaps:
        out.append(
            TimelineEvent(
                at=gap.start,
                kind=EventKind.METRIC,
                text=(
                    f"no metric samples for {(gap.end - gap.start).total_seconds():.1f} s "
                    f"(until {iso(gap.end)})"
                ),
                source=gap.source,
            )
        )
    return out


def _first_source(bundle: Bundle, moment: datetime) -> Location:
    """The sample at `moment` that comes first by file and line (for a citation)."""
    found = [p.source for s in bundle.series for p in s.points if p.at == moment]
    if not found:
        return Location(path=bundle.series[0].source.path if bundle.series else "metrics")
    return min(found, key=lambda loc: (loc.path, loc.line))


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if value == int(value) else f"{value:.3g}"
