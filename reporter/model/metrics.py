"""Metric history and dated events: series, points, timeline events, wedge settings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reporter.model.evidence import Location


class MetricKind(StrEnum):
    """The Prometheus type of a series; histogram `_sum` / `_count` parts count as counters."""

    GAUGE = "gauge"
    COUNTER = "counter"
    UNTYPED = "untyped"


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricPoint:
    """One sample: UTC time, value, and the file and line it came from."""

    at: datetime
    value: float
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSeries:
    """One time series: a metric name plus its label set, points in time order.

    `rate` is True when a counter's samples were turned into per-second rates
    (each point is the rate over the interval that ends at its time). Example::

        MetricSeries(name="sglang:num_queue_reqs", labels=(("tp_rank", "0"),),
                     kind=MetricKind.GAUGE, points=(MetricPoint(at=..., value=3.0, ...), ...),
                     source=Location(path="metrics/scrapes.prom", line=4))
    """

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    kind: MetricKind = MetricKind.UNTYPED
    rate: bool = False
    points: tuple[MetricPoint, ...] = ()
    source: Location

    def display(self) -> str:
        """`name{a="1",b="2"}`, the PromQL-like form used in reports and JSON."""
        if not self.labels:
            return self.name
        inner = ",".join(f'{k}="{v}"' for k, v in self.labels)
        return f"{self.name}{{{inner}}}"


class EventKind(StrEnum):
    """What a timeline entry is about."""

    SERVICE = "service"
    LOG = "log"
    MANUAL = "manual"
    DUMP = "dump"
    DUMP_FAILED = "dump-failed"
    METRIC = "metric"
    WEDGE = "wedge"
    GOROUTINES = "goroutines"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineEvent:
    """One dated fact for the timeline: UTC time, kind, one line of text, and its source."""

    at: datetime
    kind: EventKind
    text: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class WedgeSettings:
    """The manifest's `[wedge]` table; empty tuples and None mean "use the defaults".

    Names may carry a label filter: `sglang:realtime_tokens_total{mode="decode"}`.
    """

    output: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    window_seconds: float | None = None
