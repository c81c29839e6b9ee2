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

Modules: `prometheus` (text and query_range), `grafana` (CSV), `cleaning` (`finish`,
gaps, rates) and `samples` (what the parsers share; `Selector`).
"""

from __future__ import annotations

from reporter.evidence.metrics.cleaning import (
    GAP_FACTOR,
    Gap,
    finish,
    median_interval,
    scrape_gaps,
    zero,
)
from reporter.evidence.metrics.grafana import parse_csv
from reporter.evidence.metrics.prometheus import SCRAPE_MARKER, parse_query_range, parse_text
from reporter.evidence.metrics.samples import (
    MAX_WARNINGS_PER_FILE,
    Labels,
    Selector,
    infer_kind,
    parse_selector,
)

__all__ = [
    "GAP_FACTOR",
    "MAX_WARNINGS_PER_FILE",
    "SCRAPE_MARKER",
    "Gap",
    "Labels",
    "Selector",
    "finish",
    "infer_kind",
    "median_interval",
    "parse_csv",
    "parse_query_range",
    "parse_selector",
    "parse_text",
    "scrape_gaps",
    "zero",
]
