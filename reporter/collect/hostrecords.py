"""What one host sends back to a remote capture: its lines read within bounds, each value
checked before use.

`RecordSink` turns a host's stdout into the probe's JSON records as they arrive (at most
`--max-size` bytes and `MAX_HOST_RECORDS` records, only the probe's kinds, and never more
than twice `--max-size` of memory, whatever the host sends); the checks
(`pid`, `text`, `when`, ...) read one field of a record or raise `BadRecordError`, so a
broken or hostile host costs the record it sent, never the capture. Used by `remote.py`.
"""

from __future__ import annotations

import json
import math
import re
import sys
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


# A record can take many times its bytes once decoded: a string holding one character past
# U+FFFF costs 4 bytes a character, a `[]` costs 56 bytes for 3. So the sink counts what
# the kept records take in memory, and decodes a line only when that, plus an upper bound
# of what decoding it may take (`decoding_cost`), stays within MEMORY_TIMES times --max-size.
MEMORY_TIMES = 2

# Bytes that decoding may cost per token (a `,`, `:`, `[`, `{` or a string): the object,
# its slot in a list or dict, a key's memo entry. Traced, json.loads takes at most about 50
# a token (`[]` or `{}` in a list, a new key, a one-character wide string).
TOKEN_COST = 128
_STRUCTURE = (b",", b":", b"[", b"{")

_ASTRAL_UTF8 = re.compile(rb"[\xf0-\xff]")
_WIDE_UTF8 = re.compile(rb"[\xc4-\xef]")
_ASTRAL_ESCAPE = re.compile(rb"\\u[dD][89abAB]")
_WIDE_ESCAPE = re.compile(rb"\\u(?!00)")


def decoding_cost(line: bytes | bytearray, *, exact: bool = False) -> int:
    """An upper bound of the memory decoding `line` takes at its peak: its text (Python
    keeps 1, 2 or 4 bytes a character, by the widest one), then the records' strings (with
    room for the copy made when a string turns wide) and objects, beside the text.

    Tokens are counted anywhere in the line, inside strings too (a py-spy dump has a `:`
    in every frame); `exact` counts only those outside strings, at a Python step per
    string (`_tokens`)."""
    size = len(line)
    if line.isascii():
        text_width = 1
    elif not json.detect_encoding(line).startswith("utf-8") or _ASTRAL_UTF8.search(line):
        text_width = 4
    else:
        text_width = 2 if _WIDE_UTF8.search(line) else 1
    value_width = text_width
    if b"\\u" in line:  # escapes (as the probe sends non-ASCII) can be wider than the text
        if _ASTRAL_ESCAPE.search(line):
            value_width = 4
        elif _WIDE_ESCAPE.search(line):
            value_width = max(value_width, 2)
    values = (value_width + (value_width > 1)) * size * 11 // 10
    quotes = line.count(b'"')
    if exact and quotes <= size // 16:  # strings of texts, not of a list: worth finding
        tokens = _tokens(line)
    else:
        tokens = sum(line.count(c) for c in _STRUCTURE) + quotes // 2 + 1
    return text_width * size + values + TOKEN_COST * tokens + 256


def fits(line: bytes | bytearray, room: int) -> bool:
    """Whether decoding `line` surely takes at most `room` bytes of memory."""
    # The most any line of its size can cost (4 bytes a character, every byte a token): a
    # line far under `room`, as nearly all are, is not counted at all.
    if len(line) * (10 + TOKEN_COST) + TOKEN_COST + 256 <= room:
        return True
    return decoding_cost(line) <= room or decoding_cost(line, exact=True) <= room


_BACKSLASHES_AT_END = re.compile(rb"\\+\Z")


def _tokens(line: bytes | bytearray) -> int:
    """Strings, and structure bytes outside them, in a JSON line (a bound: an unended
    string runs to the end)."""
    tokens, at, end = 1, 0, len(line)
    while at < end:
        opened = line.find(b'"', at)
        outside_to = end if opened < 0 else opened
        tokens += sum(line.count(c, at, outside_to) for c in _STRUCTURE)
        if opened < 0:
            break
        tokens += 1
        at = opened + 1
        while True:  # to the quote that closes it: one after an even run of backslashes
            closed = line.find(b'"', at)
            if closed < 0:
                return tokens
            run = _BACKSLASHES_AT_END.search(line, at, closed)
            at = closed + 1
            if run is None or (run.end() - run.start()) % 2 == 0:
                break
    return tokens


def held(value: object) -> int:
    """The memory a decoded record takes: its objects' sizes, shared ones counted again."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack += item.keys()
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return total


class RecordSink:
    """Parses a host's stdout into records as it arrives, within the host's caps: at most
    `max_bytes` read and `MAX_HOST_RECORDS` kept; only the probe's kinds are kept (never
    the raw text). What the kept records take in memory, with the line being read or
    decoded, stays under `MEMORY_TIMES` times `max_bytes` whatever the host sends."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.read = 0
        self.held = 0
        """Memory the kept records take (`held`)."""
        self.pending = bytearray()
        """The line not yet ended: grown in place, never joined from parts (no second copy)."""
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
        view, start = memoryview(chunk), 0
        while not self.capped:
            end = chunk.find(b"\n", start)
            self.grow(view[start:] if end < 0 else view[start:end])
            if end < 0 or self.capped:
                break
            self.end_line()
            start = end + 1
        return not self.capped

    def grow(self, part: memoryview) -> None:
        # A bytearray grows by an eighth at a time: count what it may have allocated.
        if self.held + (len(self.pending) + len(part)) * 9 // 8 > MEMORY_TIMES * self.max_bytes:
            self.over_memory()
        else:
            self.pending += part

    def over_memory(self) -> None:
        self.capped = (
            f"its records would take more than {human_size(MEMORY_TIMES * self.max_bytes)} "
            f"of memory ({MEMORY_TIMES} times --max-size, per host: wide characters or dense "
            "structures take more than their bytes); the rest was not read"
        )

    def end_line(self) -> None:
        raw, self.pending = self.pending, bytearray()
        if not fits(raw, MEMORY_TIMES * self.max_bytes - self.held):
            self.over_memory()
            return
        try:
            text = raw.decode(json.detect_encoding(raw), "surrogatepass")
        except ValueError:
            self.heard(raw[:8192].decode("utf-8", "replace"))  # as much as `heard` reads
            return
        del raw  # only the text from here: the bytes are not kept beside it
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):
            self.heard(text)
            return
        del text
        if not (isinstance(record, dict) and record.get("t") in RECORD_KINDS):
            return
        if len(self.records) >= MAX_HOST_RECORDS:
            self.capped = (
                f"it sent more than {MAX_HOST_RECORDS:,} records (the cap per host); "
                "the rest was not read"
            )
            return
        self.held += held(record)
        self.records.append(record)

    def heard(self, text: str) -> None:
        """A line that is not a record (a login script's greeting): the first few are kept."""
        if len(self.noise) < 5:
            # Its first 8 KiB hold the 200 characters kept, without copying a long line.
            first = text[:8192].strip()
            if first:
                self.noise.append(inert.one_line(first, limit=200))

    def close(self) -> None:
        """The last line, when the output did not end with a newline."""
        if self.pending and not self.capped:
            self.end_line()
        self.pending = bytearray()


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
