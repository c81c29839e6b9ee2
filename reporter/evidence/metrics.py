"""Metric history: Prometheus text scrapes, `query_range` JSON and Grafana CSV into `MetricSeries`.

Three pure parsers (text in, `ParseResult` with raw series out) and `finish`, which the
loader runs once over the series of every file of a bundle: it merges a series split
over several files (one file per scrape), sorts, drops NaN/±Inf and duplicates, notes
gaps and mixed label sets, and turns counters into per-second rates. Every problem
becomes a warning naming the file and line; nothing here raises on bad input.

Series keep their labels; a series is one (name, label set). Histogram buckets and
`*_created` samples are dropped: the wedge and the charts use gauges, counters and
histogram `_sum` / `_count`.

**Text exposition** (`prometheus-text`). Sample lines are read with the official
client's parser (`prometheus_client.parser.text_string_to_metric_families`), one line
at a time so that every warning can name its line; `# TYPE` comments give the types.
A sample's time is, in this order: its own timestamp (milliseconds, as the format
says); the last scrape marker above it; the file's `captured_at` from bundle.toml. The
marker is the line our collector (`fixtures/scenarios/capture_metrics.py`) writes
before each scrape when it appends several scrapes to one file::

    # scrape at 2026-11-29T14:43:41.973Z
    # HELP sglang:num_running_reqs The number of running requests.
    # TYPE sglang:num_running_reqs gauge
    sglang:num_running_reqs{engine_type="unified",tp_rank="0"} 12.0

One file per scrape works too: give each file its `captured_at` in bundle.toml.

**query_range JSON** (`prometheus-json`): the HTTP API answer, `resultType` `matrix`
(also `vector` and `scalar`); values are strings, times Unix seconds. A series
without `__name__` (the answer to `rate(...)`) is named after the file.

**Grafana CSV** (`grafana-csv`): a time column and one column per series (its
display name, `metric{label="v"}` or `{label="v"}` or a legend), or the older
long form `Series,Time,Value`. BOM, `sep=` line, `,` `;` or tab, epoch s or ms or
formatted times, empty cells (nulls) and unit suffixes (`12 req/s`, `45%`) are read.

Counters: the type says so (text), or the name ends in `_total`, `_count` or `_sum`.
A rate point is the rate over the interval that ends at its time; a drop in a
counter is a reset (the process restarted) and the new value counts from zero.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from reporter.evidence._text import Unrecognised, clean_lines, excerpt
from reporter.model import (
    Location,
    MetricKind,
    MetricPoint,
    MetricSeries,
    ParseResult,
    ParseWarning,
)
from reporter.times import from_epoch, iso, parse_iso

Labels = tuple[tuple[str, str], ...]

SCRAPE_MARKER = "# scrape at "
_SCRAPE_RE = re.compile(r"#\s*scrape at\s+(\S+(?:\s\d{2}:\d{2}:\d{2}\S*)?)")
_TYPE_RE = re.compile(r"#\s*TYPE\s+(\S+)\s+(\S+)")
_SUFFIXES = ("_total", "_sum", "_count", "_bucket", "_created", "_gsum", "_gcount", "_info")
_COUNTER_SUFFIXES = ("_total", "_count", "_sum")
# Warnings of one kind kept per file; the rest are counted in one last warning.
MAX_WARNINGS_PER_FILE = 20
# A pause longer than this many median intervals is a gap worth a warning.
GAP_FACTOR = 3.0
_ZERO = 1e-12


# ---------------------------------------------------------------------------- collecting


@dataclass(slots=True)
class _Acc:
    """Points of one series while a file is read."""

    kind: MetricKind
    points: list[MetricPoint]
    line: int


class _Collector:
    """Series of one file by (name, labels), in first-seen order."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.series: dict[tuple[str, Labels], _Acc] = {}

    def add(
        self, name: str, labels: Labels, kind: MetricKind, at: datetime, value: float, line: int
    ) -> None:
        key = (name, labels)
        acc = self.series.get(key)
        if acc is None:
            acc = self.series[key] = _Acc(kind=kind, points=[], line=line)
        acc.points.append(
            MetricPoint(at=at, value=value, source=Location(path=self.source, line=line))
        )

    def result(self, warnings: Iterable[ParseWarning]) -> ParseResult:
        series = tuple(
            MetricSeries(
                name=name,
                labels=labels,
                kind=acc.kind,
                points=tuple(acc.points),
                source=Location(path=self.source, line=acc.line),
            )
            for (name, labels), acc in self.series.items()
        )
        return ParseResult(series=series, warnings=_capped(list(warnings), self.source))


@dataclass(slots=True)
class _Count:
    """How often something happened in a file, where first, and an example."""

    count: int = 0
    line: int = 0
    example: str = ""

    def add(self, line: int, example: str) -> None:
        self.count += 1
        if not self.line:
            self.line, self.example = line, example


def _capped(warnings: list[ParseWarning], source: str) -> tuple[ParseWarning, ...]:
    """At most `MAX_WARNINGS_PER_FILE` warnings, then one that counts the rest."""
    if len(warnings) <= MAX_WARNINGS_PER_FILE:
        return tuple(warnings)
    rest = len(warnings) - MAX_WARNINGS_PER_FILE
    last = ParseWarning(
        source=Location(path=source),
        message=f"{rest} more problems in this file not listed",
    )
    return (*warnings[:MAX_WARNINGS_PER_FILE], last)


def _base_name(name: str) -> str:
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def infer_kind(name: str, declared: str | None) -> MetricKind | None:
    """The kind of sample `name` given its family's declared type; None: drop the sample.

    Histogram buckets and `_created` timestamps are dropped; `_sum` and `_count` of a
    histogram or summary count up, so they are counters. Without a type, a name
    ending in `_total`, `_count` or `_sum` is taken as a counter.
    """
    if name.endswith("_created"):
        return None
    if declared in ("histogram", "summary", "gaugehistogram"):
        if name.endswith("_bucket"):
            return None
        if name.endswith(("_gsum", "_gcount")):
            return MetricKind.GAUGE
        if name.endswith(("_sum", "_count")):
            return MetricKind.COUNTER
        return MetricKind.GAUGE
    if declared == "counter":
        return MetricKind.COUNTER
    if declared in ("gauge", "info", "stateset"):
        return MetricKind.GAUGE
    if name.endswith(_COUNTER_SUFFIXES):
        return MetricKind.COUNTER
    return MetricKind.UNTYPED


def _labels(raw: dict[str, str]) -> Labels:
    return tuple(sorted((str(k), str(v)) for k, v in raw.items() if k != "__name__"))


# ---------------------------------------------------------------------------- text exposition


def parse_text(text: str, *, source: str, captured_at: datetime | None = None) -> ParseResult:
    """Read Prometheus text-exposition scrapes (see the module docstring for times)."""
    # Imported here: the client costs ~40 ms of start-up to every command, metrics or not.
    from prometheus_client.parser import text_string_to_metric_families

    collector = _Collector(source)
    unread = Unrecognised(source, "a Prometheus sample")
    declared: dict[str, str] = {}
    scrape_at = captured_at
    untimed = 0
    untimed_line = 0
    for index, raw in enumerate(clean_lines(text)):
        number = index + 1
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            marker = _SCRAPE_RE.match(line)
            if marker:
                scrape_at, _ = parse_iso(marker.group(1))
                if scrape_at is None:
                    unread.warn(
                        number,
                        f"scrape marker with an unreadable time {excerpt(line)}; "
                        "the samples under it are skipped",
                    )
                continue
            typed = _TYPE_RE.match(line)
            if typed:
                declared[typed.group(1)] = typed.group(2).lower()
            continue
        try:
            families = list(text_string_to_metric_families(line + "\n"))
        except (ValueError, IndexError, KeyError, TypeError):
            # The client's parser raises these for a malformed line; the line is skipped.
            unread.add(number, line)
            continue
        for family in families:
            for sample in family.samples:
                name = str(sample.name)
                kind = infer_kind(name, declared.get(name) or declared.get(_base_name(name)))
                if kind is None:
                    continue
                if sample.timestamp is not None:
                    at = from_epoch(float(sample.timestamp) * 1000.0)
                    if at is None:
                        unread.warn(
                            number,
                            f"sample timestamp {sample.timestamp!r} s is outside 2000-2100; "
                            "sample skipped",
                        )
                        continue
                elif scrape_at is not None:
                    at = scrape_at
                else:
                    untimed += 1
                    untimed_line = untimed_line or number
                    continue
                collector.add(name, _labels(sample.labels), kind, at, float(sample.value), number)
    unread.flush()
    warnings = list(unread.warnings)
    if untimed:
        warnings.append(
            ParseWarning(
                source=Location(path=source, line=untimed_line),
                message=(
                    f"{untimed} samples have no time (no timestamp, no `{SCRAPE_MARKER}...` line "
                    "above them, no captured_at in bundle.toml); skipped"
                ),
            )
        )
    if not collector.series and not warnings:
        warnings.append(
            ParseWarning(source=Location(path=source), message="no Prometheus samples found")
        )
    return collector.result(warnings)


# ---------------------------------------------------------------------------- query_range JSON


def parse_query_range(text: str, *, source: str) -> ParseResult:
    """Read a Prometheus HTTP API answer (`query_range` matrix; `query` vector or scalar)."""
    collector = _Collector(source)
    warnings: list[ParseWarning] = []

    def warn(line: int, message: str) -> None:
        warnings.append(ParseWarning(source=Location(path=source, line=line), message=message))

    body = text.removeprefix("\ufeff")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as err:
        warn(err.lineno, f"not valid JSON ({err.msg}, column {err.colno}); truncated?")
        return collector.result(warnings)
    except RecursionError:
        warn(1, "JSON nested too deeply to read")
        return collector.result(warnings)
    if not isinstance(data, dict):
        warn(1, "not a Prometheus API answer (expected a JSON object with `data`)")
        return collector.result(warnings)
    for note in _strings(data.get("warnings")) + _strings(data.get("infos")):
        warn(1, f"Prometheus said: {note}")
    if data.get("status") == "error":
        warn(
            1,
            f"Prometheus answered with an error: {data.get('errorType', '?')}: "
            f"{data.get('error', '')}",
        )
        return collector.result(warnings)
    payload = data.get("data")
    if not isinstance(payload, dict):
        warn(1, "no `data` object in the answer")
        return collector.result(warnings)
    result_type = payload.get("resultType")
    result = payload.get("result")
    if result_type == "scalar" and isinstance(result, list):
        result = [{"metric": {}, "value": result}]
    elif result_type not in ("matrix", "vector") or not isinstance(result, list):
        warn(1, f"resultType {result_type!r} has no series (expected matrix, vector or scalar)")
        return collector.result(warnings)
    lines = _occurrence_lines(body, '"metric"')
    stem = PurePosixPath(source).stem
    unnamed = 0
    for position, item in enumerate(result):
        line = lines[position] if position < len(lines) else 1
        if not isinstance(item, dict) or not isinstance(item.get("metric", {}), dict):
            warn(line, f"series {position + 1} is not an object with `metric`; skipped")
            continue
        metric: dict[str, Any] = item.get("metric") or {}
        name = str(metric.get("__name__") or "")
        if not name:
            unnamed += 1
            name = stem if unnamed == 1 else f"{stem}_{unnamed}"
        labels = _labels({str(k): str(v) for k, v in metric.items()})
        kind = infer_kind(name, None) if "__name__" in metric else MetricKind.GAUGE
        if kind is None:
            continue
        pairs = item.get("values")
        if pairs is None and "value" in item:
            pairs = [item["value"]]
        if pairs is None and "histograms" in item:
            warn(line, f"{name}: native histogram samples are not read; skipped")
            continue
        if not isinstance(pairs, list):
            warn(line, f"{name}: no `values` list; skipped")
            continue
        bad = 0
        for pair in pairs:
            point = _json_point(pair)
            if point is None:
                bad += 1
                continue
            collector.add(name, labels, kind, point[0], point[1], line)
        if bad:
            warn(line, f"{name}: {bad} samples with a bad time or non-numeric value; skipped")
    if unnamed:
        warn(1, f"{unnamed} series without __name__ (a rate() or sum() answer?); named {stem!r}")
    return collector.result(warnings)


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _occurrence_lines(text: str, needle: str) -> list[int]:
    """1-based line of each occurrence of `needle`: where each series starts."""
    out: list[int] = []
    line = 1
    last = 0
    at = text.find(needle)
    while at >= 0:
        line += text.count("\n", last, at)
        last = at
        out.append(line)
        at = text.find(needle, at + 1)
    return out


def _json_point(pair: object) -> tuple[datetime, float] | None:
    """`[1712345670.5, "12"]` as (time, value); None when either part is unusable."""
    if not isinstance(pair, list | tuple) or len(pair) != 2:
        return None
    raw_time, raw_value = pair
    try:
        stamp = float(raw_time)
        value = float(raw_value)
    except (TypeError, ValueError):
        return None
    at = from_epoch(stamp)
    return (at, value) if at is not None else None


# ---------------------------------------------------------------------------- Grafana CSV

_TIME_HEADERS = ("time", "timestamp", "date", "datetime", "ts")
_DISPLAY_RE = re.compile(r"\s*(?P<name>[A-Za-z_:][\w:.]*)?\s*(?:\{(?P<labels>.*)\})?\s*")
_LABEL_RE = re.compile(r'\s*([A-Za-z_][\w.-]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNIT_RE = re.compile(
    r"\s*(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<si>[kKMGT]?)\s*(?P<unit>[^\d\s].*)?"
)
_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_csv(text: str, *, source: str) -> ParseResult:
    """Read a Grafana panel CSV export (wide: Time + one column per series; or Series,Time,Value)."""
    collector = _Collector(source)
    unread = Unrecognised(source, "a number")
    body = text.removeprefix("\ufeff")
    head = body.split("\n", 2)
    skip = 0
    delimiter = ""
    if head[0].strip().lower().startswith("sep=") and len(head[0].strip()) >= 5:
        delimiter = head[0].strip()[4]
        skip = 1
    header_line = head[skip] if len(head) > skip else ""
    if not delimiter:
        delimiter = max((",", ";", "\t"), key=lambda d: (header_line.count(d), d == ","))
    reader = csv.reader(io.StringIO(body, newline=""), delimiter=delimiter)
    rows: list[tuple[int, list[str]]] = []
    try:
        for row in reader:
            if reader.line_num > skip and any(cell.strip() for cell in row):
                rows.append((reader.line_num, row))
    except csv.Error as err:
        unread.warn(reader.line_num, f"CSV cannot be read past this line ({err})")
    if not rows:
        unread.warn(1, "no rows in this CSV")
        unread.flush()
        return collector.result(unread.warnings)
    header_number, header = rows[0]
    names = [cell.strip() for cell in header]
    lowered = [n.lower() for n in names]
    naive = _Count()
    units = _Count()

    def read_time(cell: str, number: int) -> datetime | None:
        cell = cell.strip()
        try:
            epoch = from_epoch(float(cell))
        except ValueError:
            pass
        else:
            if epoch is None:
                unread.warn(number, f"time {excerpt(cell)} not understood (outside 2000-2100)")
            return epoch
        moment, zoned = parse_iso(cell)
        if moment is not None and not zoned:
            naive.add(number, cell)
        if moment is None:
            unread.warn(number, f"time {excerpt(cell)} not understood; row skipped")
        return moment

    def read_value(cell: str, number: int) -> float | None:
        value, had_unit = _csv_value(cell)
        if value is None and cell.strip():
            unread.add(number, cell.strip())
        if had_unit:
            units.add(number, cell.strip())
        return value

    if {"series", "time", "value"} <= set(lowered):
        s_col, t_col, v_col = (lowered.index(k) for k in ("series", "time", "value"))
        for number, row in rows[1:]:
            if len(row) <= max(s_col, t_col, v_col):
                unread.warn(number, f"row has {len(row)} cells, the header {len(names)}; skipped")
                continue
            at = read_time(row[t_col], number)
            value = read_value(row[v_col], number)
            if at is None or value is None:
                continue
            name, labels = _display_name(row[s_col].strip(), source)
            kind = infer_kind(name, None) or MetricKind.GAUGE
            collector.add(name, labels, kind, at, value, number)
    else:
        t_col = next((i for i, n in enumerate(lowered) if n in _TIME_HEADERS), -1)
        if t_col < 0:
            unread.warn(
                header_number,
                f"no time column in the header {excerpt(header_line)} "
                "(expected `Time` as Grafana writes it)",
            )
            unread.flush()
            return collector.result(unread.warnings)
        columns = [(i, _display_name(n, source)) for i, n in enumerate(names) if i != t_col]
        if not columns:
            unread.warn(header_number, "the CSV has a time column and no series column")
        for number, row in rows[1:]:
            if len(row) != len(names):
                unread.warn(
                    number,
                    f"row has {len(row)} cells, the header {len(names)}; "
                    "missing cells read as empty, extra cells ignored",
                )
            if t_col >= len(row):
                continue
            at = read_time(row[t_col], number)
            if at is None:
                continue
            for index, (name, labels) in columns:
                value = read_value(row[index] if index < len(row) else "", number)
                if value is not None:
                    kind = infer_kind(name, None) or MetricKind.GAUGE
                    collector.add(name, labels, kind, at, value, number)
    unread.flush()
    warnings = list(unread.warnings)
    if naive.count:
        warnings.append(
            ParseWarning(
                source=Location(path=source, line=naive.line),
                message=f"{naive.count} times carry no zone; read as UTC",
            )
        )
    if units.count:
        warnings.append(
            ParseWarning(
                source=Location(path=source, line=units.line),
                message=(
                    f"{units.count} values carry units (e.g. {units.example!r}: Grafana's "
                    "formatted data); read as plain numbers"
                ),
            )
        )
    return collector.result(warnings)


def _display_name(text: str, source: str) -> tuple[str, Labels]:
    """`metric{a="1"}` -> ("metric", (("a", "1"),)); anything else is a legend, kept as the name."""
    stem = PurePosixPath(source).stem
    match = _DISPLAY_RE.fullmatch(text)
    if match is None or not (match.group("name") or match.group("labels") is not None):
        return text or stem, ()
    inner = match.group("labels") or ""
    pairs: list[tuple[str, str]] = []
    pos = 0
    while pos < len(inner):
        label = _LABEL_RE.match(inner, pos)
        if label is None or label.end() == pos:
            return text, ()
        value = label.group(2).replace('\\"', '"').replace("\\\\", "\\")
        pairs.append((label.group(1), value))
        pos = label.end()
    named = dict(pairs)
    name = match.group("name") or named.get("__name__", "") or stem
    return name, tuple(sorted(p for p in pairs if p[0] != "__name__"))


def _csv_value(cell: str) -> tuple[float | None, bool]:
    """A number from a cell and whether it carried a unit: plain, `NaN`/`+Inf`, or
    formatted (`12 req/s`, `1.2 K`, `45%`)."""
    cell = cell.strip()
    if not cell or cell.lower() == "null":
        return None, False
    try:
        return float(cell), False
    except ValueError:
        pass
    match = _UNIT_RE.fullmatch(cell)
    if match is None:
        return None, False
    value = float(match.group("num")) * _SI[match.group("si")]
    if (match.group("unit") or "").strip() == "%":
        value /= 100.0
    return value, True


# ---------------------------------------------------------------------------- finishing


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
            ParseWarning(source=Location(path=path, line=first), message=f"{count} {problem}")
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Selector:
    """A metric name with an optional label filter: `name{mode="decode"}`."""

    name: str
    labels: Labels = ()

    def matches(self, series: MetricSeries) -> bool:
        """True for a series of this name whose labels include every filter label."""
        if series.name != self.name:
            return False
        have = dict(series.labels)
        return all(have.get(k) == v for k, v in self.labels)

    def __str__(self) -> str:
        if not self.labels:
            return self.name
        return self.name + "{" + ",".join(f'{k}="{v}"' for k, v in self.labels) + "}"


_SELECTOR_RE = re.compile(r"\s*(?P<name>[A-Za-z_:][\w:]*)\s*(?:\{(?P<labels>[^}]*)\})?\s*")


def parse_selector(text: str) -> Selector | None:
    """`sglang:realtime_tokens_total{mode="decode"}` as a `Selector`; None when malformed."""
    match = _SELECTOR_RE.fullmatch(text)
    if match is None:
        return None
    inner = match.group("labels") or ""
    pairs: list[tuple[str, str]] = []
    pos = 0
    while pos < len(inner):
        label = _LABEL_RE.match(inner, pos)
        if label is None or label.end() == pos:
            return None
        pairs.append((label.group(1), label.group(2)))
        pos = label.end()
    return Selector(name=match.group("name"), labels=tuple(sorted(pairs)))
