"""Time helpers shared by every layer: read, check and print UTC times.

Every time in the model is an aware `datetime` in UTC. Evidence gives times as
ISO 8601 text (`2026-11-29T14:43:41.973Z`, `2026-11-29 14:43:41,973`), Unix
seconds or milliseconds; anything outside 2000-2100 is taken as a unit or format
mistake and refused, so a millisecond value read as seconds cannot put a sample
in the year 56000.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
# Unix times above this are milliseconds (in seconds it would be the year 5138).
_MS_THRESHOLD = 1e11
_ISO_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)?"
    r"(?:\s?(?:Z|z|UTC|GMT|[+-]\d{2}(?::?\d{2})?))?"
)


def in_range(moment: datetime) -> bool:
    """True when `moment` lies in 2000-2100, the span real evidence comes from."""
    return EARLIEST <= moment < LATEST


def parse_iso(text: str) -> tuple[datetime | None, bool]:
    """An ISO 8601 date-time as UTC, and whether the text named a zone.

    Naive times are taken as UTC (the caller warns once). Returns (None, False)
    for anything else, including times outside 2000-2100.
    """
    text = text.strip()
    if not _ISO_RE.fullmatch(text):
        return None, False
    zoned = not text[-1].isdigit()
    cleaned = re.sub(r"\s?(?:Z|z|UTC|GMT)$", "+00:00", text)
    # Python 3.11 reads at most six fractional digits; nanoseconds lose the rest.
    cleaned = re.sub(r"([.,]\d{6})\d+", r"\1", cleaned)
    try:
        parsed = datetime.fromisoformat(cleaned)
    except ValueError:
        return None, False
    moment = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    return (moment, zoned) if in_range(moment) else (None, False)


def from_epoch(value: float) -> datetime | None:
    """Unix seconds, or milliseconds when the number is too large for seconds, as UTC."""
    if not math.isfinite(value):
        return None
    seconds = value / 1000.0 if abs(value) >= _MS_THRESHOLD else value
    try:
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    except OverflowError:
        return None
    return moment if in_range(moment) else None


def iso(moment: datetime) -> str:
    """`2026-11-29T14:43:41.973Z`: UTC, milliseconds, the form used in JSON and reports."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def clock(moment: datetime) -> str:
    """`14:43:41.973`: the time of day in UTC, for chart labels and short texts."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%H:%M:%S.") + f"{utc.microsecond // 1000:03d}"


def seconds(delta: timedelta) -> float:
    """A duration in seconds, rounded to the millisecond so printed figures are stable."""
    return round(delta.total_seconds(), 3)


_DURATION_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str | float) -> float | None:
    """`"60s"`, `"1.5m"`, `"500ms"`, `"2h"` or a number of seconds as seconds; None if not."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) and text > 0 else None
    if not isinstance(text, str):
        return None
    match = _DURATION_RE.fullmatch(text)
    if match is None:
        return None
    value = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return value if value > 0 else None
