"""Wedge detection on synthetic metric histories: onset, end, signals, step changes, notes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from reporter.analysis import wedge
from reporter.analysis.wedge import Point, Role, StepKind
from reporter.evidence import metrics
from reporter.model import Location, MetricKind, MetricPoint, MetricSeries, WedgeSettings

T0 = datetime(2026, 11, 29, 14, 40, tzinfo=UTC)


def _raw(
    name: str,
    values: Sequence[float | None],
    *,
    kind: MetricKind = MetricKind.GAUGE,
    step: float = 1.0,
    labels: tuple[tuple[str, str], ...] = (),
) -> MetricSeries:
    points = tuple(
        MetricPoint(
            at=T0 + timedelta(seconds=i * step),
            value=v,
            source=Location(path="m.prom", line=i + 1),
        )
        for i, v in enumerate(values)
        if v is not None
    )
    return MetricSeries(
        name=name, labels=labels, kind=kind, points=points, source=Location(path="m.prom", line=1)
    )


def _finish(*series: MetricSeries) -> tuple[MetricSeries, ...]:
    return metrics.finish(series)[0]


def _history(
    n: int, wedge_at: float, *, step: float = 1.0, drain_at: float | None = None
) -> tuple[MetricSeries, ...]:
    """A server at 500 tokens/s that stops at `wedge_at` s; requests keep arriving."""
    times = [i * step for i in range(n)]
    gauge = [0.0 if t >= wedge_at else 500.0 for t in times]
    counter = [500.0 * min(t, wedge_at) for t in times]
    running = [0.0 if drain_at is not None and t >= drain_at else 4.0 for t in times]
    queue = [max(0.0, (t - wedge_at) * 2) if drain_at is None or t < drain_at else 0 for t in times]
    return _finish(
        _raw("sglang:gen_throughput", list(gauge), step=step),
        _raw("sglang:generation_tokens_total", list(counter), kind=MetricKind.COUNTER, step=step),
        _raw("sglang:num_running_reqs", list(running), step=step),
        _raw("sglang:num_queue_reqs", list(queue), step=step),
    )


def test_no_metrics_means_no_report() -> None:
    assert wedge.detect(()) is None
    assert wedge.detect(_finish(_raw("sglang:num_running_reqs", []))) is None


@pytest.mark.parametrize("fraction", [0.01, 0.25, 0.5, 0.75, 0.99])
@pytest.mark.parametrize("use_counter", [True, False])
def test_onset_within_one_interval_of_the_truth(fraction: float, use_counter: bool) -> None:
    step = 0.5
    truth = 20 * step + fraction * step
    series = _history(80, truth, step=step)
    if not use_counter:
        series = tuple(s for s in series if s.kind is not MetricKind.COUNTER)
    report = wedge.detect(series, WedgeSettings(window_seconds=5))
    assert report is not None and report.episode is not None
    error = (report.episode.onset - (T0 + timedelta(seconds=truth))).total_seconds()
    assert 0 <= error < step
    assert report.episode.onset_after == report.episode.onset - timedelta(seconds=step)
    assert report.still_wedged and report.episode.end is None
    deciding = [s.name for s in report.signals if s.role is Role.OUTPUT and s.shows_wedge]
    expected = "sglang:generation_tokens_total" if use_counter else "sglang:gen_throughput"
    assert deciding == [expected]
    assert "still wedged at the last sample" in report.summary


def test_wedge_that_ends_when_output_resumes() -> None:
    times = range(60)
    out = [0.0 if 10 <= t < 40 else 100.0 for t in times]
    report = wedge.detect(
        _finish(
            _raw("sglang:gen_throughput", out),
            _raw("sglang:num_running_reqs", [3.0] * 60),
        ),
        WedgeSettings(window_seconds=10),
    )
    assert report is not None and report.episode is not None
    assert report.episode.end == T0 + timedelta(seconds=40)
    assert report.episode.end_reason == "output resumed"
    assert report.episode.duration == 30.0 and not report.still_wedged


def test_wedge_that_ends_when_work_drains() -> None:
    report = wedge.detect(_history(100, 10, drain_at=80))
    assert report is not None and report.episode is not None
    assert report.episode.end == T0 + timedelta(seconds=80)
    assert report.episode.end_reason == "no work waiting any more"


def test_idle_server_is_not_wedged() -> None:
    report = wedge.detect(
        _finish(
            _raw("sglang:gen_throughput", [0.0] * 100), _raw("sglang:num_queue_reqs", [0.0] * 100)
        )
    )
    assert report is not None and report.episode is None
    assert report.summary.startswith("No wedge in the metrics")


def test_short_stall_at_the_end_is_possibly_a_wedge_in_the_headline() -> None:
    report = wedge.detect(_history(30, 20))
    assert report is not None and report.episode is None and report.possible is not None
    assert report.summary.startswith("Possibly wedged (window shorter than ")
    # Said once: the headline, not a note as well.
    assert not any("possibly" in n.lower() for n in report.notes)


def test_missing_roles_are_named_in_notes() -> None:
    report = wedge.detect(
        _finish(_raw("process_cpu_seconds_total", [1, 2, 3], kind=MetricKind.COUNTER))
    )
    assert report is not None and report.episode is None
    notes = " ".join(report.notes)
    assert "no output signal" in notes and "no running or queued requests" in notes


def test_manifest_names_and_label_filters() -> None:
    decode = [float(i * 10) if i < 10 else 100.0 for i in range(40)]
    prefill = [float(i * 10) for i in range(40)]  # keeps moving: must not count
    series = _finish(
        _raw("my_tokens_total", decode, kind=MetricKind.COUNTER, labels=(("mode", "decode"),)),
        _raw("my_tokens_total", prefill, kind=MetricKind.COUNTER, labels=(("mode", "prefill"),)),
        _raw("pending", [2.0] * 40),
    )
    settings = WedgeSettings(
        output=('my_tokens_total{mode="decode"}',),
        waiting=("pending", "absent_metric"),
        window_seconds=10,
    )
    report = wedge.detect(series, settings)
    assert report is not None and report.episode is not None
    assert report.episode.onset == T0 + timedelta(seconds=10)
    assert any(
        "absent_metric (named in [wedge] waiting) is not in the metrics" in n for n in report.notes
    )
    assert wedge.detect(series, WedgeSettings(window_seconds=10)) is not None


def test_counters_outrank_a_frozen_gauge() -> None:
    # The scheduler stopped updating gen_throughput at its last value; the token counter stalls.
    counter = [float(min(i, 10) * 100) for i in range(80)]
    series = _finish(
        _raw("sglang:gen_throughput", [100.0] * 80),
        _raw("sglang:generation_tokens_total", counter, kind=MetricKind.COUNTER),
        _raw("sglang:num_running_reqs", [4.0] * 80),
    )
    report = wedge.detect(series)
    assert report is not None and report.episode is not None
    assert report.episode.onset == T0 + timedelta(seconds=10)
    assert any("gauges shown but not used: sglang:gen_throughput" in n for n in report.notes)


def test_several_episodes_follow_the_first() -> None:
    out = [0.0 if (10 <= t < 80) or (100 <= t < 170) else 50.0 for t in range(200)]
    report = wedge.detect(
        _finish(_raw("sglang:gen_throughput", out), _raw("sglang:num_running_reqs", [1.0] * 200))
    )
    assert report is not None and len(report.episodes) == 2
    assert report.episode is report.episodes[0]
    assert any("2 wedge episodes" in n for n in report.notes)


def test_a_scrape_gap_neither_starts_nor_breaks_a_wedge() -> None:
    out: list[float | None] = [100.0] * 10 + [0.0] * 30 + [None] * 40 + [0.0] * 30
    report = wedge.detect(
        _finish(_raw("sglang:gen_throughput", out), _raw("sglang:num_running_reqs", [2.0] * 110))
    )
    assert report is not None and report.episode is not None
    assert report.episode.onset == T0 + timedelta(seconds=10) and report.still_wedged


def _points(values: list[float], step: float = 1.0) -> list[Point]:
    return [
        Point(at=T0 + timedelta(seconds=i * step), value=v, source=Location(path="p", line=i))
        for i, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 0, 1, 0] * 5 + [2 * i for i in range(20)], (20, 39)),
        ([3] * 10 + [3 + i for i in range(1, 15)], (9, 23)),
        ([0, 1, 0, 2, 1, 0, 1, 2, 0, 1] * 3, None),
        ([5] * 30, None),
        ([1, 2, 3, 4, 5, 6, 7], None),
        ([0] * 10 + [0, 0, 0, 0, 0, 0, 0, 100], None),
        ([10 - i * 0.5 for i in range(20)], None),
    ],
)
def test_linear_growth(values: list[float], expected: tuple[int, int] | None) -> None:
    found = wedge.linear_growth(_points([float(v) for v in values]))
    assert (found[:2] if found else None) == expected
    if found:
        assert found[2] > 0


def test_step_changes_queue_growth_and_frozen_gauge() -> None:
    n = 80
    usage = [0.1 + 0.01 * (i % 5) if i < 30 else 0.14 for i in range(n)]
    series = (*_history(n, 30), *_finish(_raw("sglang:token_usage", usage)))
    report = wedge.detect(series, WedgeSettings(window_seconds=10))
    assert report is not None
    kinds = {(s.signal, s.kind) for s in report.steps}
    assert ("sglang:num_queue_reqs", StepKind.LINEAR_GROWTH) in kinds
    assert ("sglang:token_usage", StepKind.FROZEN) in kinds
    growth = next(s for s in report.steps if s.kind is StepKind.LINEAR_GROWTH)
    assert growth.slope == pytest.approx(2.0)
    assert growth.source.path == "m.prom"
    assert report.steps == tuple(sorted(report.steps, key=lambda s: (s.at, s.signal, s.kind.value)))
