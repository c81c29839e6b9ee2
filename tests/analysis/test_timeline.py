"""The timeline: ordering with explicit tie-breaks, dump clusters, failures, wedge entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reporter.analysis import timeline, wedge
from reporter.evidence import metrics
from reporter.model import (
    Bundle,
    EventKind,
    EvidenceKind,
    FailedDump,
    Location,
    MetricKind,
    MetricPoint,
    MetricSeries,
    ProcessDump,
    TimelineEvent,
    WedgeSettings,
)

T0 = datetime(2026, 11, 29, 14, 40, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _event(seconds: float, kind: EventKind, text: str, path: str, line: int) -> TimelineEvent:
    return TimelineEvent(
        at=_at(seconds), kind=kind, text=text, source=Location(path=path, line=line)
    )


def _dump(seconds: float, pid: int, path: str) -> ProcessDump:
    return ProcessDump(
        pid=pid,
        kind=EvidenceKind.PYSPY_TEXT,
        captured_at=_at(seconds),
        source=Location(path=path, line=1),
    )


def test_order_and_tie_breaks() -> None:
    events = (
        _event(5, EventKind.LOG, "b", "z.log", 2),
        _event(5, EventKind.LOG, "a", "a.log", 9),
        _event(5, EventKind.SERVICE, "svc", "s.txt", 4),
        _event(1, EventKind.MANUAL, "first", "bundle.toml", 3),
        _event(5, EventKind.LOG, "a", "a.log", 9),  # the same event twice is listed once
    )
    bundle = Bundle(root="b", events=events)
    got = [(e.text, str(e.source)) for e in timeline.build(bundle, None)]
    assert got == [
        ("first", "bundle.toml:3"),
        ("svc", "s.txt:4"),
        ("a", "a.log:9"),
        ("b", "z.log:2"),
    ]


def test_dumps_cluster_and_failures_stand_alone() -> None:
    dumps = (
        _dump(10, 1, "r0_s0.txt"),
        _dump(10.5, 2, "r1_s0.txt"),
        _dump(11, 1, "r0_s1.txt"),
        _dump(60, 1, "late.txt"),
        ProcessDump(pid=3, kind=EvidenceKind.PYSPY_TEXT, source=Location(path="undated.txt")),
    )
    failure = FailedDump(
        pid=4, reason="No such process", captured_at=_at(12), source=Location(path="r3.txt", line=1)
    )
    entries = timeline.build(Bundle(root="b", dumps=dumps, failures=(failure,)), None)
    assert [(e.kind, e.text, str(e.source)) for e in entries] == [
        (
            EventKind.DUMP,
            "3 stack dumps (pyspy-text) of 2 processes captured over 1.0 s, to 14:40:11.000",
            "r0_s0.txt:1",
        ),
        (EventKind.DUMP_FAILED, "stack dump of PID 4 failed: No such process", "r3.txt:1"),
        (EventKind.DUMP, "stack dump of PID 1 captured (pyspy-text)", "late.txt:1"),
    ]


def test_wedge_entries_cite_their_samples() -> None:
    n = 40

    def raw(name: str, values: list[float], kind: MetricKind = MetricKind.GAUGE) -> MetricSeries:
        return MetricSeries(
            name=name,
            kind=kind,
            points=tuple(
                MetricPoint(at=_at(i), value=v, source=Location(path="m.prom", line=100 + i))
                for i, v in enumerate(values)
            ),
            source=Location(path="m.prom", line=100),
        )

    series, _ = metrics.finish(
        [
            raw("sglang:gen_throughput", [0.0 if i >= 10 else 50.0 for i in range(n)]),
            raw("sglang:num_queue_reqs", [float(max(0, i - 10)) for i in range(n)]),
            raw("sglang:num_running_reqs", [2.0] * n),
        ]
    )
    bundle = Bundle(root="b", series=series)
    report = wedge.detect(series, WedgeSettings(window_seconds=10))
    assert report is not None
    entries = timeline.build(bundle, report)
    texts = [(e.kind, e.at, e.text.split(":")[0], str(e.source)) for e in entries]
    assert (
        EventKind.METRIC,
        _at(0),
        "metric history begins (3 series, about every 1 s)",
        "m.prom:100",
    ) in texts
    assert (EventKind.WEDGE, _at(10), "wedge onset", "m.prom:110") in texts
    assert (
        EventKind.WEDGE,
        _at(39),
        "still wedged at the last metric sample (29 s since onset)",
        "m.prom:139",
    ) in texts
    assert any(e.kind is EventKind.METRIC and "starts growing linearly" in e.text for e in entries)
    assert list(entries) == sorted(entries, key=timeline.sort_key)
