"""The series of all files of one bundle, merged, cleaned and turned into rates.

`finish` runs once in the loader: merges a series split over several files, sorts,
drops NaN/±Inf and duplicates, notes gaps and mixed label sets, and turns counters
into per-second rates. Every problem is a warning naming file and line.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from reporter.core.times import iso
from reporter.evidence._text import warning_at
from reporter.evidence.metrics.samples import Labels
from reporter.model import Location, MetricKind, MetricPoint, MetricSeries, ParseWarning

# A pause longer than this many median intervals is a gap worth a warning.
GAP_FACTOR = 3.0
_ZERO = 1e-12


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    """A stretch with no samples at all, much longer than the usual interval."""

    start: datetime
    end: datetime
    interval: float
    source: Location


def finish(
    series: Sequence[MetricSeries],
) -> tuple[tuple[MetricSeries, ...], tuple[ParseWarning, ...]]:
    """Merge, clean and rate the raw series of all files of one bundle.

    Returns the series sorted by (name, labels), each with sorted points, and the
    warnings: NaN/±Inf values, duplicates and out-of-order samples (counted per
    file), counter resets, gaps, and names seen with different label sets.
    """
    merged: dict[tuple[str, Labels], list[MetricSeries]] = defaultdict(list)
    for one in series:
        merged[(one.name, one.labels)].append(one)
    tally = _Tally()
    out: list[MetricSeries] = []
    for key in sorted(merged):
        parts = merged[key]
        out.append(_clean(parts, tally))
    warnings = tally.warnings()
    warnings.extend(_label_set_warnings(out))
    for gap in scrape_gaps(out):
        warnings.append(
            ParseWarning(
                source=gap.source,
                message=(
                    f"no metric samples for {(gap.end - gap.start).total_seconds():.1f} s "
                    f"from {iso(gap.start)} to {iso(gap.end)} (usual interval {gap.interval:g} s)"
                ),
            )
        )
    return tuple(out), tuple(warnings)


class _Tally:
    """Counts of one problem per (file, problem) with the first line, for one warning each."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], list[int]] = {}
        self.resets: list[ParseWarning] = []

    def add(self, where: Location, problem: str) -> None:
        entry = self.counts.setdefault((where.path, problem), [0, where.line])
        entry[0] += 1
        entry[1] = min(entry[1], where.line) if entry[1] else where.line

    def warnings(self) -> list[ParseWarning]:
        out = [
            warning_at(path, first, f"{count} {problem}")
            for (path, problem), (count, first) in sorted(self.counts.items())
        ]
        return out + self.resets


def _clean(parts: list[MetricSeries], tally: _Tally) -> MetricSeries:
    first = parts[0]
    points: list[MetricPoint] = []
    for part in parts:
        points.extend(part.points)
    ordered = all(a.at <= b.at for a, b in itertools.pairwise(points))
    if not ordered:
        for a, b in itertools.pairwise(points):
            if b.at < a.at:
                tally.add(b.source, "samples out of time order; sorted by time")
        points.sort(key=lambda p: (p.at, p.source.path, p.source.line))
    kept: list[MetricPoint] = []
    for point in points:
        if math.isnan(point.value):
            tally.add(point.source, "NaN values skipped")
            continue
        if math.isinf(point.value):
            tally.add(point.source, "±Inf values skipped")
            continue
        if kept and kept[-1].at == point.at:
            differs = kept[-1].value != point.value
            tally.add(
                point.source,
                "duplicate samples (same series and time) with another value; kept the later"
                if differs
                else "duplicate samples (same series, time and value) dropped",
            )
            kept[-1] = point
            continue
        kept.append(point)
    kind = first.kind
    if any(p.kind is MetricKind.COUNTER for p in parts):
        kind = MetricKind.COUNTER
    cleaned = MetricSeries(
        name=first.name,
        labels=first.labels,
        kind=kind,
        points=tuple(kept),
        source=first.source,
    )
    return _rates(cleaned, tally) if kind is MetricKind.COUNTER else cleaned


def _rates(series: MetricSeries, tally: _Tally) -> MetricSeries:
    """Per-second rates of a counter; a drop is a reset and the new value counts from zero."""
    out: list[MetricPoint] = []
    resets = 0
    first_reset: MetricPoint | None = None
    for before, after in zip(series.points, series.points[1:], strict=False):
        span = (after.at - before.at).total_seconds()
        delta = after.value - before.value
        if delta < 0:
            resets += 1
            first_reset = first_reset or after
            delta = after.value
        out.append(MetricPoint(at=after.at, value=delta / span, source=after.source))
    if resets and first_reset is not None:
        tally.resets.append(
            ParseWarning(
                source=first_reset.source,
                message=(
                    f"{series.display()}: counter went down {resets} time(s) (reset: the "
                    f"process restarted?), first at {iso(first_reset.at)}; counted from zero"
                ),
            )
        )
    if len(series.points) == 1:
        tally.add(series.points[0].source, "counters with a single sample (no rate)")
    return MetricSeries(
        name=series.name,
        labels=series.labels,
        kind=series.kind,
        rate=True,
        points=tuple(out),
        source=series.source,
    )


def median_interval(times: Sequence[datetime]) -> float | None:
    """The median spacing of sorted, distinct `times` in seconds; None under two times."""
    steps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    steps = [s for s in steps if s > 0]
    return statistics.median(steps) if steps else None


def scrape_gaps(series: Sequence[MetricSeries]) -> tuple[Gap, ...]:
    """Stretches longer than `GAP_FACTOR` usual intervals without any sample of any series."""
    stamps: dict[datetime, Location] = {}
    for one in series:
        for point in one.points:
            stamps.setdefault(point.at, point.source)
    times = sorted(stamps)
    interval = median_interval(times)
    if interval is None:
        return ()
    gaps = []
    for before, after in itertools.pairwise(times):
        if (after - before).total_seconds() > GAP_FACTOR * interval:
            gaps.append(
                Gap(start=before, end=after, interval=round(interval, 3), source=stamps[after])
            )
    return tuple(gaps)


def _label_set_warnings(series: Sequence[MetricSeries]) -> list[ParseWarning]:
    """One warning per name that comes with more than one set of label names."""
    by_name: dict[str, dict[tuple[str, ...], MetricSeries]] = defaultdict(dict)
    for one in series:
        by_name[one.name].setdefault(tuple(k for k, _ in one.labels), one)
    out = []
    for name in sorted(by_name):
        sets = by_name[name]
        if len(sets) < 2:
            continue
        shown = "; ".join(
            f"{{{', '.join(keys) or 'no labels'}}} at {one.source}"
            for keys, one in sorted(sets.items())
        )
        first = min(sets.values(), key=lambda s: (s.source.path, s.source.line))
        out.append(
            ParseWarning(
                source=first.source,
                message=f"{name} comes with {len(sets)} label sets ({shown}); they are summed together",
            )
        )
    return out


def zero(value: float) -> bool:
    """True for a value that counts as zero output."""
    return abs(value) <= _ZERO
