"""Charts: downsampling, Mermaid xychart text the preview can draw, the SVG file, captions."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from reporter.analysis import wedge
from reporter.analysis.wedge import Point
from reporter.evidence import metrics
from reporter.model import Location, MetricKind, MetricPoint, MetricSeries, WedgeSettings
from reporter.render import charts, svg

T0 = datetime(2026, 11, 29, 14, 40, tzinfo=UTC)


def _series(name: str, values: list[float], kind: MetricKind = MetricKind.GAUGE) -> MetricSeries:
    return MetricSeries(
        name=name,
        kind=kind,
        points=tuple(
            MetricPoint(
                at=T0 + timedelta(seconds=i * 0.5), value=v, source=Location(path="m", line=i)
            )
            for i, v in enumerate(values)
        ),
        source=Location(path="m", line=0),
    )


def _report(n: int = 200) -> wedge.WedgeReport:
    series, _ = metrics.finish(
        [
            _series("sglang:gen_throughput", [0.0 if i >= 100 else 400.0 + i for i in range(n)]),
            _series(
                "sglang:generation_tokens_total",
                [10.0 * min(i, 100) for i in range(n)],
                MetricKind.COUNTER,
            ),
            _series("sglang:num_queue_reqs", [float(max(0, i - 100)) for i in range(n)]),
            _series("sglang:num_running_reqs", [4.0] * n),
            _series("sglang:token_usage", [0.5] * n),
        ]
    )
    report = wedge.detect(series, WedgeSettings(window_seconds=10))
    assert report is not None
    return report


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (5, 5), (40, 40), (41, 40), (1000, 40)])
def test_downsample_keeps_at_most_the_limit(n: int, expected: int) -> None:
    points = [
        Point(at=T0 + timedelta(seconds=i), value=float(i), source=Location(path="p"))
        for i in range(n)
    ]
    out = charts.downsample(points)
    assert len(out) == expected
    assert [a for a, _ in out] == sorted(a for a, _ in out)
    if n > 40:
        # Means of equal slices: the overall mean is kept.
        assert sum(v for _, v in out) / len(out) == pytest.approx((n - 1) / 2, rel=0.05)


def test_charts_are_mermaid_the_preview_can_draw() -> None:
    built = charts.build(_report())
    assert [c.signal for c in built] == [
        "sglang:generation_tokens_total",
        "sglang:gen_throughput",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
        "sglang:token_usage",
    ]
    for chart in built:
        lines = chart.mermaid.split("\n")
        assert lines[0] == "xychart-beta"
        parsed = svg.parse_xychart(lines[1:])
        assert len(parsed.categories) == chart.points <= charts.MAX_POINTS
        # The wedge window is drawn as bars (first, under the line), the signal as the line.
        kinds = [kind for kind, _name, _values in parsed.series]
        assert kinds == ["bar", "line"]
        assert all(len(values) == chart.points for _k, _n, values in parsed.series)
        band = parsed.series[0][2]
        assert band[0] == 0 and band[-1] > 0  # still wedged at the last sample
        # One wedge caption for all charts: not repeated under each one.
        assert "Wedge window" not in chart.caption
        assert "bars mark the wedge window" in chart.caption
    assert "not deciding" in built[1].caption
    assert charts.window_text(_report()).startswith(
        "Wedge window: 14:40:50.000 UTC, still wedged at the last sample"
    )


def test_no_wedge_caption_and_no_metrics() -> None:
    series, _ = metrics.finish([_series("sglang:num_running_reqs", [1.0] * 10)])
    report = wedge.detect(series)
    assert report is not None
    (chart,) = charts.build(report)
    assert charts.window_text(report).startswith("No wedge")
    assert "bar [" not in chart.mermaid
    assert charts.build(None) == ()


def test_svg_document_is_wellformed_and_names_the_window() -> None:
    built = charts.build(_report())
    text = charts.svg_document(built, title='Wedge <"test">', window=charts.window_text(_report()))
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag.endswith("svg")
    assert text.count("<polyline") == len(built)
    assert "Wedge &lt;&quot;test&quot;&gt;" in text
    assert "Wedge window: 14:40:50.000 UTC" in text


def test_svg_is_drawn_from_the_chart_data_as_the_mermaid_text_shows_it() -> None:
    # The SVG file no longer re-reads the Mermaid text; both come from the same data and
    # must still agree with what the preview draws from the report's Mermaid block.
    for chart in charts.build(_report()):
        drawing = chart.drawing()
        assert drawing is not None and drawing == svg.draw(chart.mermaid)
        assert chart.labels[0] in drawing and chart.heading in chart.mermaid
