"""Text helpers shared by the dump parsers: cleaning, per-line prefixes, timestamps, warnings.

Dumps rarely arrive as the tool printed them. A terminal adds ANSI colours and
CRLF; a log pipeline puts a prefix in front of every line::

    sglang-1  | [2026-07-14 08:34:44 TP6] Thread 187 (idle): "MainThread"
    sglang-1  | [2026-07-14 08:34:45 TP6]     recv (zmq/sugar/socket.py:802)

`clean_lines` removes the terminal artefacts without changing the line count, so
line numbers still point into the original file. `LinePrefix` learns the shape of
a prefix from one line (digits may vary: timestamps, replica numbers) and strips
that shape from the lines after it. `stamp_and_label` reads the capture time and
the SGLang tag (`TP6`) from a prefix. `Unrecognised` folds runs of lines a parser
could not place into one warning per run instead of one per line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Protocol

from reporter.model import Frame, Location, ParseWarning

# CSI sequences (colours, cursor moves) that terminals and `script` leave in captures.
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_DIGITS_RE = re.compile(r"(\d+)")
_STAMP_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?"
    r"(?:\s?(Z|[+-]\d{2}:?\d{2})(?![\d:]))?"
)
_EXCERPT_CHARS = 80


# Below this size a pause costs more than it saves: turning the collector back on
# runs a collection over everything allocated meanwhile.
GC_PAUSE_MIN_CHARS = 1 << 20


def strip_ansi(text: str) -> str:
    """`text` without ANSI escape sequences (colours, cursor moves)."""
    return _ANSI_RE.sub("", text) if "\x1b" in text else text


def clean_lines(text: str) -> list[str]:
    """Split `text` into lines after removing ANSI escapes, a BOM and CR of CRLF.

    Line `i` of the result (0-based) is line `i + 1` of the original text; only
    `\\n` splits lines, so form feeds and other separators never shift numbering.
    """
    return split_lines(clean_text(text))


def clean_text(text: str) -> str:
    """`text` without ANSI escapes, a BOM and CR of CRLF: `clean_lines` before the split
    (the lines' count and numbers stay those of `text`)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = strip_ansi(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


def split_lines(text: str) -> list[str]:
    """The lines of a cleaned text (`clean_text`), as `clean_lines` gives them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        # A final newline does not start another line.
        lines.pop()
    return lines


def excerpt(line: str) -> str:
    """A short, quoted form of `line` for warning messages."""
    if len(line) > _EXCERPT_CHARS:
        line = line[: _EXCERPT_CHARS - 3] + "..."
    return repr(line)


class LinePrefix:
    """The shape of a per-line prefix, learned from one example.

    Runs of digits in the example match any run of digits, so
    `[2026-07-14 08:34:44 TP6] ` also strips `[2026-07-14 08:35:02 TP7] `. Trailing
    whitespace of the example is optional at the end of a line, because blank
    dump lines often lose it (`sglang-1  |`).
    """

    __slots__ = ("_literal", "_regex", "example")

    def __init__(self, example: str) -> None:
        self.example = example
        core = example.rstrip()
        tail = example[len(core) :]
        if any(ch.isdigit() for ch in example):
            pattern = "".join(
                r"\d+" if part.isdigit() else re.escape(part) for part in _DIGITS_RE.split(core)
            )
            if tail:
                pattern += f"(?:{re.escape(tail)}|$)"
            self._regex: re.Pattern[str] | None = re.compile(pattern)
            self._literal = ""
        else:
            self._regex = None
            self._literal = example

    def strip(self, line: str) -> str | None:
        """`line` without the prefix, or None when the line does not carry it."""
        if self._regex is None:
            if line.startswith(self._literal):
                return line[len(self._literal) :]
            if line == self._literal.rstrip():
                return ""
            return None
        match = self._regex.match(line)
        if match is None:
            return None
        return line[match.end() :]

    def same_shape(self, example: str) -> bool:
        """True when `example` would be stripped completely by this prefix."""
        rest = self.strip(example)
        return rest == ""


def stamp_and_label(text: str) -> tuple[datetime | None, str | None]:
    """Capture time and tag from a log prefix or log line.

    `[2026-07-14 08:34:44 TP6] ` gives (2026-07-14 08:34:44 UTC, "TP6"): a naive
    timestamp is taken as UTC; the tag is what follows the timestamp inside the
    same brackets. Either part is None when absent or invalid.
    """
    match = _STAMP_RE.search(text)
    if match is None:
        return None, None
    stamp = _to_datetime(match)
    label: str | None = None
    opened = text.rfind("[", 0, match.start())
    if opened >= 0 and "]" not in text[opened : match.start()]:
        closed = text.find("]", match.end())
        if closed >= 0:
            label = text[match.end() : closed].strip() or None
    return stamp, label


def _to_datetime(match: re.Match[str]) -> datetime | None:
    """The datetime for a `_STAMP_RE` match, or None for impossible dates."""
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7) or ""
    micro = int((fraction + "000000")[:6]) if fraction else 0
    zone = match.group(8)
    tz: timezone = UTC
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        if offset >= timedelta(hours=24):
            return None
        tz = timezone(-offset if zone[0] == "-" else offset)
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError:
        return None


def warning_at(source: str, line: int, message: str) -> ParseWarning:
    """A parser's warning at 1-based `line` of `source` (0: about the file as a whole)."""
    return ParseWarning(source=Location(path=source, line=line), message=message)


class Unrecognised:
    """Collects lines a parser could not place; one warning per run of adjacent lines."""

    __slots__ = ("_count", "_first", "_last", "_sample", "_source", "_what", "warnings")

    def __init__(self, source: str, what: str) -> None:
        self._source = source
        self._what = what
        self._first = 0
        self._last = 0
        self._count = 0
        self._sample = ""
        self.warnings: list[ParseWarning] = []

    def add(self, number: int, line: str) -> None:
        """Record that line `number` (1-based) was not understood."""
        if self._count and number == self._last + 1:
            self._last = number
            self._count += 1
            return
        self.flush()
        self._first = self._last = number
        self._count = 1
        self._sample = line

    def flush(self) -> None:
        """Turn the pending run, if any, into a warning."""
        if not self._count:
            return
        if self._count == 1:
            message = f"line not understood as {self._what}: {excerpt(self._sample)}"
        else:
            message = (
                f"{self._count} lines (to line {self._last}) not understood as "
                f"{self._what}, starting {excerpt(self._sample)}"
            )
        self.warnings.append(warning_at(self._source, self._first, message))
        self._count = 0

    def warn(self, number: int, message: str) -> None:
        """Add a warning of its own at line `number`, keeping file order with the runs."""
        self.flush()
        self.warnings.append(warning_at(self._source, number, message))


class LineParser(Protocol):
    """A dump parser fed line by line, whose frame lines seen before can skip its dispatch."""

    @property
    def prefix(self) -> LinePrefix | None:
        """The log prefix learned so far, stripped from every line after it."""

    def feed(self, number: int, raw: str, line: str) -> None:
        """Handle line `number`: `raw` as in the file, `line` without the known prefix."""

    def frame_sink(self) -> Callable[[Frame], None] | None:
        """Where a frame line goes without `feed` (the current thread's frames), or None."""


class LineMachine:
    """The state every dump parser fed by `feed_lines` starts with: the file it reads, the
    log prefix learned so far and the lines it could not place (`what` names the dump kind
    in their warning). The py-spy text and faulthandler parsers build on it."""

    __slots__ = ("_source", "_unknown", "prefix")

    def __init__(self, source: str, what: str) -> None:
        self._source = source
        self._unknown = Unrecognised(source, what)
        self.prefix: LinePrefix | None = None


def feed_lines(lines: list[str], parser: LineParser, cache: dict[str, Frame]) -> None:
    """Feed `lines` to `parser`; a line found in `cache` goes straight to its frame sink.

    The hot loop of the dump parsers: a bundle of thousands of ranks repeats the same
    few hundred frame lines millions of times, so most lines are one dict lookup and
    an append (tried on the line as written, then without the known prefix).
    """
    cache_get = cache.get
    sink: Callable[[Frame], None] | None = None
    for number, raw in enumerate(lines, 1):
        if sink is not None:
            frame = cache_get(raw)
            if frame is not None:
                sink(frame)
                continue
        line = raw
        prefix = parser.prefix
        if prefix is not None:
            stripped = prefix.strip(raw)
            if stripped is not None:
                line = stripped
                frame = cache_get(line) if sink is not None else None
                if sink is not None and frame is not None:
                    sink(frame)
                    continue
        parser.feed(number, raw, line)
        sink = parser.frame_sink()


def reread(raw: str, line: str, anchor: re.Match[str] | None) -> tuple[LinePrefix | None, str]:
    """A line no branch took, made ready for one more try.

    `anchor` is where the tool's own text starts in `raw`; the text before it is a log
    prefix to learn. Returns that new prefix (None: keep the old one) and the line to
    try again without trailing blanks (pasted text, editors); it equals `line` when
    there is nothing new to try.
    """
    retry = line
    learned: LinePrefix | None = None
    if anchor is not None and anchor.start() > 0:
        candidate = LinePrefix(raw[: anchor.start()])
        stripped = candidate.strip(raw)
        if stripped is not None and stripped != line:
            learned, retry = candidate, stripped
    return learned, retry.rstrip()
