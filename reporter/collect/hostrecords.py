"""What one host sends back to a remote capture: its lines read within bounds, each value
checked before use.

`RecordSink` turns a host's stdout into the probe's JSON records as they arrive (at most
`--max-size` bytes and `MAX_HOST_RECORDS` records, only the probe's kinds); the checks
(`pid`, `text`, `when`, ...) read one field of a record or raise `BadRecordError`, so a
broken or hostile host costs the record it sent, never the capture. Used by `remote.py`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from reporter.core import inert
from reporter.core.fileio import human_size

# Records one host may send (`remote.MAX_HOST_FILES` says why the caps).
MAX_HOST_RECORDS = 20_000


# The kernel's largest PID (PID_MAX_LIMIT): a record's PID above it is not a PID.
PID_MAX = 1 << 22


# The kinds of record the probe sends; any other line is not kept.
RECORD_KINDS = frozenset(
    {"hello", "target", "process", "passed", "skip", "nomatch", "file", "pyspy", "dump",
     "round", "envscript", "packages", "log", "end"}
)  # fmt: skip


class RecordSink:
    """Parses a host's stdout into records as it arrives, within the host's caps: at most
    `max_bytes` read and `MAX_HOST_RECORDS` kept; only the probe's kinds are kept (never
    the raw text), so what a host sends costs at most about `max_bytes` of memory."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.read = 0
        self.parts: list[bytes] = []
        """The line not yet ended."""
        self.records: list[dict[str, Any]] = []
        self.noise: list[str] = []
        self.capped = ""

    def __call__(self, chunk: bytes) -> bool:
        self.read += len(chunk)
        if self.read > self.max_bytes:
            self.capped = (
                f"it sent more than {human_size(self.max_bytes)} (--max-size, per host); "
                "the rest was not read"
            )
            return False
        if b"\n" not in chunk:  # a long line: joined once it ends (never chunk by chunk)
            self.parts.append(chunk)
            return True
        *lines, tail = b"".join((*self.parts, chunk)).split(b"\n")
        self.parts = [tail]
        for line in lines:
            self.line(line)
            if self.capped:
                return False
        return True

    def line(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
        except ValueError:
            text = raw.decode("utf-8", "replace").strip()
            if text and len(self.noise) < 5:
                self.noise.append(inert.one_line(text, limit=200))
            return
        if not (isinstance(record, dict) and record.get("t") in RECORD_KINDS):
            return
        if len(self.records) >= MAX_HOST_RECORDS:
            self.capped = (
                f"it sent more than {MAX_HOST_RECORDS:,} records (the cap per host); "
                "the rest was not read"
            )
            return
        self.records.append(record)

    def close(self) -> None:
        """The last line, when the output did not end with a newline."""
        tail = b"".join(self.parts)
        if tail and not self.capped:
            self.line(tail)
        self.parts = []


class BadRecordError(ValueError):
    """A value in a host's record that is not what the probe sends (the value is never
    repeated: it is the host's text)."""


def pid(r: Mapping[str, Any], key: str = "pid") -> int:
    value = r.get(key)
    if type(value) is not int or not 0 <= value <= PID_MAX:
        raise BadRecordError(f"{key!r} is not a PID")
    return value


def small_int(r: Mapping[str, Any], key: str, *, default: int | None = None) -> int | None:
    """An optional whole number that fits everywhere it goes (TOML, a file name)."""
    value = r.get(key)
    if value is None:
        return default
    if type(value) is not int or not -(1 << 31) <= value < 1 << 32:
        raise BadRecordError(f"{key!r} is not a small whole number")
    return value


def snapshot(r: Mapping[str, Any], rounds: int) -> int:
    value = r.get("snapshot")
    if type(value) is not int or not 0 <= value < max(rounds, 1):
        raise BadRecordError("'snapshot' is not one of the snapshots asked for")
    return value


def text(r: Mapping[str, Any], key: str, *, limit: int = 1 << 30, required: bool = False) -> str:
    value = r.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadRecordError(f"{key!r} is not text")
    return value[:limit]


def seconds(r: Mapping[str, Any], key: str) -> float:
    value = r.get(key, 0.0)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecordError(f"{key!r} is not a number")
    number = float(value)
    if not math.isfinite(number) or not 0 <= number <= 1e7:
        raise BadRecordError(f"{key!r} is not a duration")
    return number


def when(r: Mapping[str, Any], key: str) -> datetime:
    """A UTC time the probe stamped: ISO 8601, years 1970 to 9999."""
    stamp = text(r, key, limit=64, required=True)
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        raise BadRecordError(f"{key!r} is not a time") from None
    if moment.tzinfo is None or not 1970 <= moment.year <= 9999:
        raise BadRecordError(f"{key!r} is not a time with a zone after 1970")
    return moment.astimezone(UTC)


def pids(r: Mapping[str, Any]) -> list[int]:
    value = r.get("pids")
    if not isinstance(value, list) or not 1 <= len(value) <= 4096:
        raise BadRecordError("'pids' is not a list of PIDs")
    return [pid({"pid": p}) for p in value]


def strings(r: Mapping[str, Any], key: str, *, limit: int = 4096) -> list[str]:
    value = r.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRecordError(f"{key!r} is not a list of text")
    return [v[:limit] for v in value[:limit]]
