"""Prometheus: text-exposition scrapes and the HTTP API's `query_range` JSON.

See the package docstring for where a text sample's time comes from.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from reporter.core.times import from_epoch, parse_iso
from reporter.evidence._text import Unrecognised, clean_lines, excerpt, warning_at
from reporter.evidence.metrics.samples import Collector, base_name, infer_kind, labels_of
from reporter.model import MetricKind, ParseResult, ParseWarning

SCRAPE_MARKER = "# scrape at "
_SCRAPE_RE = re.compile(r"#\s*scrape at\s+(\S+(?:\s\d{2}:\d{2}:\d{2}\S*)?)")
_TYPE_RE = re.compile(r"#\s*TYPE\s+(\S+)\s+(\S+)")


def parse_text(text: str, *, source: str, captured_at: datetime | None = None) -> ParseResult:
    """Read Prometheus text-exposition scrapes (see the module docstring for times)."""
    # Imported here: the client costs ~40 ms of start-up to every command, metrics or not.
    from prometheus_client.parser import text_string_to_metric_families

    collector = Collector(source)
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
                kind = infer_kind(name, declared.get(name) or declared.get(base_name(name)))
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
                collector.add(name, labels_of(sample.labels), kind, at, float(sample.value), number)
    unread.flush()
    warnings = list(unread.warnings)
    if untimed:
        warnings.append(
            warning_at(
                source,
                untimed_line,
                f"{untimed} samples have no time (no timestamp, no `{SCRAPE_MARKER}...` line "
                "above them, no captured_at in bundle.toml); skipped",
            )
        )
    if not collector.series and not warnings:
        warnings.append(warning_at(source, 0, "no Prometheus samples found"))
    return collector.result(warnings)


def parse_query_range(text: str, *, source: str) -> ParseResult:
    """Read a Prometheus HTTP API answer (`query_range` matrix; `query` vector or scalar)."""
    collector = Collector(source)
    warnings: list[ParseWarning] = []

    def warn(line: int, message: str) -> None:
        warnings.append(warning_at(source, line, message))

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
        labels = labels_of({str(k): str(v) for k, v in metric.items()})
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
