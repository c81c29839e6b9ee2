"""Grafana panel CSV exports: wide (a time column and one column per series) or the
older long form `Series,Time,Value`."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime
from pathlib import PurePosixPath

from reporter.core.times import from_epoch, parse_iso
from reporter.evidence._text import Unrecognised, excerpt, warning_at
from reporter.evidence.metrics.samples import Collector, Count, Labels, infer_kind, label_pairs
from reporter.model import MetricKind, ParseResult

_TIME_HEADERS = ("time", "timestamp", "date", "datetime", "ts")
_DISPLAY_RE = re.compile(r"\s*(?P<name>[A-Za-z_:][\w:.]*)?\s*(?:\{(?P<labels>.*)\})?\s*")
_UNIT_RE = re.compile(
    r"\s*(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<si>[kKMGT]?)\s*(?P<unit>[^\d\s].*)?"
)
_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_csv(text: str, *, source: str) -> ParseResult:
    """Read a Grafana panel CSV export (wide: Time + one column per series; or Series,Time,Value)."""
    collector = Collector(source)
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
    naive = Count()
    units = Count()

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
            warning_at(source, naive.line, f"{naive.count} times carry no zone; read as UTC")
        )
    if units.count:
        warnings.append(
            warning_at(
                source,
                units.line,
                f"{units.count} values carry units (e.g. {units.example!r}: Grafana's "
                "formatted data); read as plain numbers",
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
    written = label_pairs(inner)
    if written is None:
        return text, ()
    pairs = [(key, value.replace('\\"', '"').replace("\\\\", "\\")) for key, value in written]
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
