"""Charts of the wedge signals: Mermaid `xychart-beta` blocks for the report, one SVG file for offline use.

Input: a `WedgeReport` (its signals carry their summed points). Output: strings only;
the application layer writes the SVG beside the report with the atomic writer.

Each chosen signal (the output signals, the waiting signals that ever held work, and
the context signals with data; at most `MAX_CHARTS`) becomes one chart, downsampled
to at most `MAX_POINTS` points by averaging equal slices of time, e.g.::

    xychart-beta
        title "rate of sglang:generation_tokens_total (per second)"
        x-axis "UTC" ["15:06:48.9", "15:06:49.7", ...]
        y-axis "per second"
        line [0, 543.68, 749.71, ...]

The wedge window is said once (`window_text`) and drawn on every chart as one shaded
band behind the line: in the SVG a single light rectangle over the window's samples;
in Mermaid (which has no bands) a bar series at the chart's top over those samples,
coloured light by the block's `plotColorPalette` and drawn before the line, which the
SVG drawer (`svg.py`) reads back as the same band. A `Chart` is data (labels, figures,
band); its Mermaid text (`Chart.mermaid`) and its SVG drawing are both made from that
data, so nothing re-reads generated Mermaid. `svg_document` stacks the drawings in one file.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from reporter.analysis.wedge import Point, Role, Signal, WedgeReport
from reporter.core.text import number, wrap
from reporter.core.times import clock
from reporter.render import svg
from reporter.render.parts import onset_change

MAX_POINTS = 40
MAX_CHARTS = 6
# The band's colour (light, behind the line) and the line's, in Mermaid's palette order.
BAND_COLOUR = "#f3d9d9"
LINE_COLOUR = "#1c7ed6"
_CHART_W, _CHART_H, _CAPTION_H, _TITLE_H = 760, 380, 46, 40


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    """One wedge signal's chart as data: time labels, the values (downsampled), the
    wedge-window bars, and the caption under it (its role and how many samples it shows)."""

    source: Signal
    labels: tuple[str, ...]
    values: tuple[float, ...]
    band: tuple[float, ...]
    """Bar values marking the wedge window (the chart's top inside it, 0 outside); () without."""
    caption: str

    @property
    def signal(self) -> str:
        """The metric name charted."""
        return self.source.name

    @property
    def title(self) -> str:
        """`rate of <name>` for a counter, else the name."""
        return _title(self.source)

    @property
    def unit(self) -> str:
        """The y-axis unit: `per second`, `tokens/s`, `ratio`, `requests`, `tokens`, `value`."""
        return _unit(self.source)

    @property
    def points(self) -> int:
        """How many points the chart draws (at most `MAX_POINTS`)."""
        return len(self.values)

    @property
    def heading(self) -> str:
        """The title drawn above the chart, with its unit."""
        return f"{_quote(self.title)} ({self.unit})"

    @property
    def window(self) -> tuple[int, int] | None:
        """The first and last sample index inside the wedge window; None without one."""
        inside = [i for i, v in enumerate(self.band) if v]
        return (inside[0], inside[-1]) if inside else None

    @property
    def mermaid(self) -> str:
        """The chart as a Mermaid `xychart-beta` block (without the fence)."""
        labels = ", ".join(f'"{label}"' for label in self.labels)
        rows = []
        if self.band:
            # Mermaid's palette colours series in order: the band light, the line strong.
            rows += [
                "---",
                "config:",
                "  themeVariables:",
                "    xyChart:",
                f'      plotColorPalette: "{BAND_COLOUR}, {LINE_COLOUR}"',
                "---",
            ]
        rows += [
            "xychart-beta",
            f'    title "{self.heading}"',
            f'    x-axis "UTC" [{labels}]',
            f'    y-axis "{self.unit}"',
        ]
        if self.band:
            # The band first, so the line is drawn over the shaded wedge window.
            rows.append(f"    bar [{', '.join(_figure(v) for v in self.band)}]")
        rows.append(f"    line [{', '.join(_figure(v) for v in self.values)}]")
        return "\n".join(rows)

    def drawing(self) -> str | None:
        """The chart as SVG, the same figures the Mermaid text shows; None without values."""
        if not self.values:
            return None
        series = [("bar", "", [float(_figure(v)) for v in self.band])] if self.band else []
        series.append(("line", "", [float(_figure(v)) for v in self.values]))
        chart = svg.XYChart(
            title=self.heading,
            x_title="UTC",
            y_title=self.unit,
            categories=list(self.labels),
            series=series,
            palette=[BAND_COLOUR, LINE_COLOUR] if self.band else [],
        )
        # The same reading of the bars as the preview's: one band behind the line.
        return svg.draw_xychart(svg.bands_from_bars(chart))


def _figure(value: float) -> str:
    """A chart value as written in the Mermaid text and drawn in the SVG: 4 decimals at most,
    4 significant digits (`reporter.core.text.number`)."""
    return number(round(value, 4))


def choose(wedge: WedgeReport) -> tuple[Signal, ...]:
    """The signals worth a chart, output first, then waiting, then context."""
    chosen = [s for s in wedge.signals if s.role is Role.OUTPUT and s.points]
    chosen += [s for s in wedge.signals if s.role is Role.WAITING and s.maximum > 0]
    chosen += [s for s in wedge.signals if s.role is Role.CONTEXT and s.points]
    return tuple(chosen[:MAX_CHARTS])


def downsample(points: Sequence[Point], limit: int = MAX_POINTS) -> list[tuple[datetime, float]]:
    """About `limit` (time, value) pairs: the mean of each equal slice of the time span.

    Slices with no point are left out, so a gap shows as a jump in the time labels. A slice
    in which the series drops to zero and stays there gives two pairs (the mean before the
    drop, then zero), so a stop reads as a step, not a slope.
    """
    if len(points) <= limit:
        return [(p.at, p.value) for p in points]
    start, end = points[0].at, points[-1].at
    span = (end - start).total_seconds() or 1.0
    buckets: dict[int, list[Point]] = {}
    for point in points:
        index = min(limit - 1, int((point.at - start).total_seconds() / span * limit))
        buckets.setdefault(index, []).append(point)
    out: list[tuple[datetime, float]] = []
    for _, group in sorted(buckets.items()):
        cut = _drop_to_zero(group)
        if cut:
            # A drop to zero inside one slice stays a drop: the mean before it, then zero
            # from its first zero sample, rather than one mean halfway down.
            out.append((group[0].at, statistics.fmean(p.value for p in group[:cut])))
            out.append((group[cut].at, 0.0))
            continue
        out.append((group[0].at, statistics.fmean(p.value for p in group)))
    return out


def _drop_to_zero(group: Sequence[Point]) -> int:
    """The index of the first of the trailing zeros of a slice that was above zero before
    them; 0 when the slice does not drop to zero and stay there."""
    if len(group) < 2 or group[-1].value != 0 or group[0].value <= 0:
        return 0
    cut = len(group)
    while cut > 0 and group[cut - 1].value == 0:
        cut -= 1
    return cut


def _title(signal: Signal) -> str:
    return f"rate of {signal.name}" if signal.rate else signal.name


def _unit(signal: Signal) -> str:
    name = signal.name.lower()
    if signal.rate:
        return "per second"
    if "throughput" in name:
        return "tokens/s"
    if "usage" in name or "perc" in name or "ratio" in name or "rate" in name:
        return "ratio"
    if "reqs" in name or "requests" in name:
        return "requests"
    if "tokens" in name:
        return "tokens"
    return "value"


def _labels(
    pairs: Sequence[tuple[datetime, float]], points: Sequence[Point], span: float
) -> tuple[str, ...]:
    """Each point's time; the last one's is the last sample's (a mean is dated by its
    slice's first sample, and the axis must say where the data ends)."""
    labels = [_label(at, span) for at, _ in pairs]
    if labels and points:
        labels[-1] = _label(points[-1].at, span)
    return tuple(labels)


def _label(moment: datetime, span: float) -> str:
    if span <= 120:
        return clock(moment)[:10]  # 15:06:48.9
    if span <= 86400:
        return clock(moment)[:8]
    return moment.strftime("%m-%d %H:%M")


def _quote(text: str) -> str:
    """Text for a double-quoted Mermaid string (no double quotes inside)."""
    return text.replace('"', "'")


def window_text(wedge: WedgeReport) -> str:
    """The wedge window in words, said once above the charts."""
    episode = wedge.episode
    if episode is None and wedge.possible is not None:
        return (
            f"Possibly wedged from {clock(wedge.possible.onset)} UTC to the last sample "
            f"({wedge.possible.duration:g} s, shorter than the {wedge.window:g} s window); "
            "the shaded band on each chart marks it."
        )
    if episode is None:
        return (
            f"No wedge: output never stayed at zero for {wedge.window:g} s while requests waited."
        )
    if episode.end is None:
        until = f"still wedged at the last sample ({clock(wedge.last_sample)})"
    else:
        until = f"to {clock(episode.end)} ({episode.end_reason})"
    return (
        f"Wedge window: {clock(episode.onset)} UTC, {until}, {episode.duration:g} s; "
        "the shaded band on each chart marks it."
    )


def _wedge_band(wedge: WedgeReport, pairs: Sequence[tuple[datetime, float]]) -> list[float]:
    """Values marking the wedge window: the chart's top inside it, 0 outside; [] without one
    (Mermaid's bar series; the SVG draws the run of non-zero values as one band)."""
    episode = wedge.episode or wedge.possible
    if episode is None or not pairs:
        return []
    top = max((v for _, v in pairs), default=0.0) or 1.0
    end = episode.end or wedge.last_sample
    band = [round(top, 4) if episode.onset <= at <= end else 0.0 for at, _ in pairs]
    return band if any(band) else []


def build(wedge: WedgeReport | None) -> tuple[Chart, ...]:
    """One chart per chosen signal; () without metrics."""
    if wedge is None:
        return ()
    charts = []
    for signal in choose(wedge):
        pairs = downsample(signal.points)
        span = (
            (signal.points[-1].at - signal.points[0].at).total_seconds() if signal.points else 0.0
        )
        band = _wedge_band(wedge, pairs)
        shown = (
            f"{len(pairs)} means of {len(signal.points)} samples"
            if len(pairs) < len(signal.points)
            else f"{len(pairs)} samples"
        )
        role = signal.role.value
        if signal.role is Role.OUTPUT and not signal.shows_wedge and wedge.episode is not None:
            role += ", not deciding"
        series = f", sum of {signal.series} series" if signal.series > 1 else ""
        change = "" if signal.shows_wedge else onset_change(signal, wedge)
        role += f", {change}" if change else ""
        marked = "; the shaded band marks the wedge window" if band else ""
        charts.append(
            Chart(
                source=signal,
                labels=_labels(pairs, signal.points, span),
                values=tuple(v for _, v in pairs),
                band=tuple(band),
                caption=f"{_title(signal)}: {role}{series}; {shown}{marked}.",
            )
        )
    return tuple(charts)


def svg_document(charts: Sequence[Chart], *, title: str, window: str = "") -> str:
    """All charts in one standalone SVG file, the wedge window once, each chart's caption under it."""
    height = _TITLE_H + len(charts) * (_CHART_H + _CAPTION_H)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_CHART_W}" height="{height}" '
        f'viewBox="0 0 {_CHART_W} {height}">',
        f'<rect x="0" y="0" width="{_CHART_W}" height="{height}" fill="#ffffff"/>',
        f'<text x="{_CHART_W / 2:.0f}" y="26" text-anchor="middle" font-size="16" '
        f'font-family="sans-serif" font-weight="bold" fill="#1b1b1b">{svg.esc(title)}</text>',
    ]
    y = _TITLE_H
    if window:
        out.append(
            f'<text x="{_CHART_W / 2:.0f}" y="{_TITLE_H - 4}" text-anchor="middle" font-size="11" '
            f'font-family="sans-serif" fill="#333">{svg.esc(window)}</text>'
        )
    for chart in charts:
        drawing = chart.drawing()
        if drawing is None:  # pragma: no cover - every chosen signal has points
            continue
        out.append(f'<g transform="translate(0 {y})">{drawing}</g>')
        for index, line in enumerate(wrap(chart.caption, 118)[:3]):
            out.append(
                f'<text x="12" y="{y + _CHART_H + 14 + 14 * index}" font-size="11" '
                f'font-family="sans-serif" fill="#333">{svg.esc(line)}</text>'
            )
        y += _CHART_H + _CAPTION_H
    out.append("</svg>")
    return "\n".join(out) + "\n"
