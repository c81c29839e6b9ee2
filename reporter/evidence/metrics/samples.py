"""What every metric parser shares: series of one file as they are read, sample kinds,
label sets, the per-file warning cap, and `Selector` (a name with a label filter)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from reporter.evidence._text import warning_at
from reporter.model import (
    Location,
    MetricKind,
    MetricPoint,
    MetricSeries,
    ParseResult,
    ParseWarning,
)

Labels = tuple[tuple[str, str], ...]

_SUFFIXES = ("_total", "_sum", "_count", "_bucket", "_created", "_gsum", "_gcount", "_info")
_COUNTER_SUFFIXES = ("_total", "_count", "_sum")
# Warnings of one kind kept per file; the rest are counted in one last warning.
MAX_WARNINGS_PER_FILE = 20
_LABEL_RE = re.compile(r'\s*([A-Za-z_][\w.-]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(slots=True)
class SeriesPoints:
    """Points of one series while a file is read."""

    kind: MetricKind
    points: list[MetricPoint]
    line: int


class Collector:
    """Series of one file by (name, labels), in first-seen order."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.series: dict[tuple[str, Labels], SeriesPoints] = {}

    def add(
        self, name: str, labels: Labels, kind: MetricKind, at: datetime, value: float, line: int
    ) -> None:
        key = (name, labels)
        acc = self.series.get(key)
        if acc is None:
            acc = self.series[key] = SeriesPoints(kind=kind, points=[], line=line)
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
        return ParseResult(series=series, warnings=capped(list(warnings), self.source))


@dataclass(slots=True)
class Count:
    """How often something happened in a file, where first, and an example."""

    count: int = 0
    line: int = 0
    example: str = ""

    def add(self, line: int, example: str) -> None:
        self.count += 1
        if not self.line:
            self.line, self.example = line, example


def capped(warnings: list[ParseWarning], source: str) -> tuple[ParseWarning, ...]:
    """At most `MAX_WARNINGS_PER_FILE` warnings, then one that counts the rest."""
    if len(warnings) <= MAX_WARNINGS_PER_FILE:
        return tuple(warnings)
    rest = len(warnings) - MAX_WARNINGS_PER_FILE
    last = warning_at(source, 0, f"{rest} more problems in this file not listed")
    return (*warnings[:MAX_WARNINGS_PER_FILE], last)


def base_name(name: str) -> str:
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


def labels_of(raw: dict[str, str]) -> Labels:
    return tuple(sorted((str(k), str(v)) for k, v in raw.items() if k != "__name__"))


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
    pairs = label_pairs(match.group("labels") or "")
    if pairs is None:
        return None
    return Selector(name=match.group("name"), labels=tuple(sorted(pairs)))


def label_pairs(inner: str) -> list[tuple[str, str]] | None:
    """`a="1",b="x\\"y"` (the inside of `{...}`) as (name, value as written) pairs; None
    when it is not a list of `name="value"`."""
    pairs: list[tuple[str, str]] = []
    pos = 0
    while pos < len(inner):
        label = _LABEL_RE.match(inner, pos)
        if label is None or label.end() == pos:
            return None
        pairs.append((label.group(1), label.group(2)))
        pos = label.end()
    return pairs
