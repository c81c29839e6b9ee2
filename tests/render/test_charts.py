"""Charts: downsampling, Mermaid xychart text the preview can draw, the SVG file, captions."""

from __future__ import annotations

import itertools
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
        # Mermaid's own front matter colours the band light and the line strong.
        config = lines[: lines.index("xychart-beta")]
        assert config[0] == config[-1] == "---"
        assert f'plotColorPalette: "{charts.BAND_COLOUR}, {charts.LINE_COLOUR}"' in "\n".join(
            config
        )
        lines = lines[len(config) :]
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
        assert "the shaded band marks the wedge window" in chart.caption
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
    assert "bar [" not in chart.mermaid and "plotColorPalette" not in chart.mermaid
    assert chart.mermaid.startswith("xychart-beta")
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


SVG = "{http://www.w3.org/2000/svg}"


def test_the_wedge_window_is_one_band_behind_the_line() -> None:
    # Bars at the chart's top over the window read as the highest throughput exactly where
    # it is zero: the SVG draws one shaded rectangle first and the line over it.
    for chart in charts.build(_report()):
        drawing = chart.drawing()
        assert drawing is not None
        root = ET.fromstring(drawing)
        rects = [r for r in root.iter(f"{SVG}rect") if r.attrib.get("class") in ("band", "bar")]
        assert [r.attrib["class"] for r in rects] == ["band"]
        band = rects[0]
        assert band.attrib["fill"] == charts.BAND_COLOUR
        order = [e.tag.removeprefix(SVG) + ":" + e.attrib.get("class", "") for e in root]
        assert order.index("rect:band") < order.index("polyline:series")
        window = chart.window
        assert window is not None
        # The band spans the window's samples: from the first one's slot to the last one's.
        slot = (760 - 70 - 20) / chart.points
        assert float(band.attrib["x"]) == pytest.approx(70 + window[0] * slot, abs=0.1)
        assert float(band.attrib["width"]) == pytest.approx(
            (window[1] - window[0] + 1) * slot, abs=0.2
        )


def test_a_bar_series_with_data_stays_bars() -> None:
    chart = svg.parse_xychart(["bar [5, 20, 30, 40]", "line [10, 40, 80, 95]"])
    drawn = svg.bands_from_bars(chart)
    assert drawn.bands == [] and [k for k, _, _ in drawn.series] == ["bar", "line"]


@pytest.mark.parametrize("n", [12, 40, 120])
def test_x_axis_labels_never_overlap_at_760_px(n: int) -> None:
    labels = [f"15:{i // 60:02d}:{i % 60:02d}.5" for i in range(n)]
    drawing = svg.draw_xychart(
        svg.XYChart(categories=labels, series=[("line", "", [float(i) for i in range(n)])])
    )
    root = ET.fromstring(drawing)
    ticks = [
        (float(t.attrib["x"]), t.text or "")
        for t in root.iter(f"{SVG}text")
        if t.attrib.get("text-anchor") == "middle" and (t.text or "") in labels
    ]
    assert len(ticks) >= min(n, 5)
    # 11px sans-serif: at most 6.6 px a character; centred labels must not touch.
    for (x1, a), (x2, b) in itertools.pairwise(ticks):
        assert x2 - x1 >= (len(a) + len(b)) / 2 * 6.6, (a, b, x2 - x1)


def test_a_drop_to_zero_inside_one_slice_stays_a_step() -> None:
    """90-second means would draw a stop as a slope: the slice that drops keeps its mean
    before the drop, then zero from the first zero sample."""
    values = [500.0] * 53 + [0.0] * 67  # the stop falls inside the 18th of 40 slices
    points = [
        Point(at=T0 + timedelta(seconds=i), value=v, source=Location(path="p"))
        for i, v in enumerate(values)
    ]
    out = [v for _, v in charts.downsample(points)]
    assert set(out) == {500.0, 0.0}
    assert out.index(0.0) == out.count(500.0)


def test_the_last_sample_is_labelled_and_a_stop_is_drawn_as_a_step() -> None:
    built = charts.build(_report())
    chart = built[1]  # gen_throughput: 400+ until sample 100, then 0
    last = chart.source.points[-1].at
    assert chart.labels[-1] == charts._label(last, (last - chart.source.points[0].at).seconds)
    drawing = chart.drawing()
    assert drawing is not None
    root = ET.fromstring(drawing)
    ns = {"s": "http://www.w3.org/2000/svg"}
    ticks = [t.text for t in root.findall("s:text", ns)]
    assert chart.labels[-1] in ticks
    line = root.find("s:polyline", ns)
    assert line is not None
    vertices = [tuple(map(float, p.split(","))) for p in line.get("points", "").split()]
    # One vertex more than values: the corner that holds the last value until the zero.
    assert len(vertices) == len(chart.values) + 1
    drop = chart.values.index(0.0)
    (x0, y0), (x1, y1) = vertices[drop], vertices[drop + 1]
    assert x0 == x1 and y1 > y0  # straight down at the first zero sample


def test_every_series_that_changes_at_the_onset_is_marked() -> None:
    """The queue that starts growing and the output that drops are marked in the signals
    table and the captions, not only the signals that decide the wedge."""
    from reporter.render import parts

    report = _report()
    shows = {s.name: parts.signal_row(s, report).shows for s in report.signals}
    assert shows["sglang:num_queue_reqs"] != "-"
    assert shows["sglang:gen_throughput"] != "-"
    assert shows["sglang:token_usage"] == "-"  # flat from the start: no change at the onset
    captions = {c.signal: c.caption for c in charts.build(report)}
    for name, mark in shows.items():
        if mark not in ("-", "yes"):
            assert mark in captions[name]
