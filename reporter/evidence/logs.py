"""Service logs: the notable timestamped lines, as timeline events.

Input: a log file as text. Output: `ParseResult.events` (kind `log`) for lines that
carry a time and are worth a place on the timeline: level WARNING or worse, or a
message about starting, stopping, errors, timeouts, watchdogs, NCCL and the like.
Lines without a time (traceback bodies, continuation lines) belong to the line
above and are not events. A message repeated many times is one event that says how
often and until when.

Time forms understood at the start of a line (after an optional `name  | ` prefix
of docker compose and ANSI colours):

* ISO 8601: `2026-11-29T14:43:41.973Z`, `2026-11-29 14:43:41,973` (Python
  logging), `2026-11-29T14:43:41+0000` (journalctl -o short-iso);
* bracketed, as SGLang writes it: `[2026-11-29 14:43:41] ...` and
  `[2026-11-29 14:43:41 TP0] ...`;
* syslog and journalctl's default: `Nov 29 14:43:41 host unit[4242]: ...`;
* vLLM: `INFO 11-29 14:43:41 [file.py:12] ...` (optionally after `(Worker pid=7) `).

Besides the timeline events, every line (dated or not) is read for what ended or broke a
wait: timeouts, watchdog aborts, OOM kills, signals and exits (`reporter.evidence.logevents`),
as `ParseResult.log_events`.

Times without a zone are read as UTC (one warning per file). The last two forms
have no year: it is taken from `reference` (the file's `captured_at`, or the
bundle's earliest one); without a reference those lines are skipped with a warning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from reporter.core.times import parse_iso
from reporter.evidence import logevents
from reporter.evidence._text import clean_lines, excerpt, warning_at
from reporter.model import EventKind, Location, LogEvent, ParseResult, ParseWarning, TimelineEvent

# Events kept per file; the rest are counted in a warning.
MAX_EVENTS = 200
MAX_TEXT = 160
# Lines a log may step back in time (interleaved writers) before it is worth a warning.
BACKWARDS_TOLERANCE = timedelta(seconds=60)

_PREFIX_RE = re.compile(r"[\w.-]+\s+\|\s?")
_ISO = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?"
_ISO_RE = re.compile(rf"(?P<stamp>{_ISO})(?![\d:])")
_BRACKET_RE = re.compile(rf"\[(?P<stamp>{_ISO})(?:\s++(?P<tag>[^\]]*+))?\]")
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    )
}
_SYSLOG_RE = re.compile(
    r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+(?P<day>\d{1,2})\s+"
    r"(?P<time>\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\s+(?P<host>\S+)\s+(?P<proc>[^:\s][^:]*?):\s?"
)
_VLLM_RE = re.compile(
    r"(?:\([^)]*\)\s+)?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"(?P<month>\d{2})-(?P<day>\d{2})\s+(?P<time>\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\s+"
)
_LEVEL_RE = re.compile(r"\b(DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL|EXCEPTION)\b")
_SEVERE = frozenset({"WARNING", "WARN", "ERROR", "CRITICAL", "FATAL", "EXCEPTION"})
_NOTABLE_RE = re.compile(
    r"traceback|exception|\berror\b|timeout|timed out|\bhang|\bhung\b|\bstuck\b|watchdog|"
    r"deadlock|killed|sigterm|sigkill|sigabrt|sigquit|\boom\b|out of memory|\bnccl\b|restart|"
    r"shutting down|shutdown|running on|\bstarted\b|\bstarting\b|\bready\b|listening|fired up|wedge|abort",
    re.IGNORECASE,
)
_DIGITS_RE = re.compile(r"\d+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Stamped:
    """One timestamped log line: its time, whether the zone was given, and the message."""

    at: datetime
    zoned: bool
    message: str


class Miss(StrEnum):
    """Why a line gave no time."""

    NO_TIME = "no-time"
    NO_YEAR = "no-year"


def read_stamp(line: str, *, reference: datetime | None) -> Stamped | Miss:
    """The time and message of one line, or why there is none (`NO_YEAR`: a year-less
    form and no reference to take the year from)."""
    prefix = _PREFIX_RE.match(line)
    if prefix and not _ISO_RE.match(line):
        line = line[prefix.end() :]
    bracket = _BRACKET_RE.match(line)
    if bracket:
        moment, zoned = parse_iso(bracket.group("stamp"))
        if moment is None:
            return Miss.NO_TIME
        tag = (bracket.group("tag") or "").strip()
        rest = line[bracket.end() :].strip()
        return Stamped(at=moment, zoned=zoned, message=f"{tag}: {rest}" if tag else rest)
    iso = _ISO_RE.match(line)
    if iso:
        moment, zoned = parse_iso(iso.group("stamp"))
        if moment is None:
            return Miss.NO_TIME
        return Stamped(at=moment, zoned=zoned, message=line[iso.end() :].lstrip(" -|:]\t"))
    syslog = _SYSLOG_RE.match(line)
    if syslog:
        if reference is None:
            return Miss.NO_YEAR
        moment = _yearless(
            reference, _MONTHS[syslog.group("mon")], int(syslog.group("day")), syslog.group("time")
        )
        if moment is None:
            return Miss.NO_TIME
        proc = syslog.group("proc").strip()
        return Stamped(at=moment, zoned=False, message=f"{proc}: {line[syslog.end() :].strip()}")
    vllm = _VLLM_RE.match(line)
    if vllm:
        if reference is None:
            return Miss.NO_YEAR
        moment = _yearless(
            reference, int(vllm.group("month")), int(vllm.group("day")), vllm.group("time")
        )
        if moment is None:
            return Miss.NO_TIME
        return Stamped(
            at=moment, zoned=False, message=f"{vllm.group('level')} {line[vllm.end() :].strip()}"
        )
    return Miss.NO_TIME


def _yearless(reference: datetime, month: int, day: int, clock: str) -> datetime | None:
    """A month/day/time in the year of `reference`, or the year before when that is closer."""
    hms, _, fraction = clock.partition(".")
    hour, minute, second = (int(p) for p in hms.split(":"))
    micro = int(fraction.ljust(6, "0")) if fraction else 0
    best: datetime | None = None
    for year in (reference.year, reference.year - 1, reference.year + 1):
        try:
            moment = datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
        except ValueError:
            continue
        if best is None or abs(moment - reference) < abs(best - reference):
            best = moment
    return best


def stamped_share(head: str) -> float:
    """The share of the first 50 non-blank lines of `head` that start with a time form.

    Year-less forms count too (sniffing needs no year).
    """
    lines = [line for line in clean_lines(head)[:400] if line.strip()][:50]
    if not lines:
        return 0.0
    probe = datetime(2026, 1, 1, tzinfo=UTC)
    hits = sum(1 for line in lines if isinstance(read_stamp(line, reference=probe), Stamped))
    return hits / len(lines)


def _level(message: str) -> str:
    match = _LEVEL_RE.search(message[:80])
    return match.group(1) if match else ""


def notable(message: str) -> bool:
    """True for a line that belongs on the timeline: a warning or worse, or a notable word."""
    return _level(message) in _SEVERE or bool(_NOTABLE_RE.search(message))


def parse(text: str, *, source: str, reference: datetime | None = None) -> ParseResult:
    """Timeline events for the notable timestamped lines of a log."""
    warnings: list[ParseWarning] = []
    firsts: dict[str, int] = {}
    events: list[TimelineEvent] = []
    repeats: dict[int, tuple[int, datetime]] = {}
    stamped = 0
    naive_line = 0
    yearless_line = 0
    yearless = 0
    dropped = 0
    last: datetime | None = None
    backwards = 0
    log_events: list[LogEvent] = []
    dated: datetime | None = None
    more_events = 0
    for index, raw in enumerate(clean_lines(text)):
        number = index + 1
        if not raw.strip():
            continue
        found = read_stamp(raw, reference=reference)
        if isinstance(found, Stamped):
            dated = found.at
        # Undated lines (a traceback body) belong to the dated line above them.
        told = logevents.read_line(raw, at=dated, source=Location(path=source, line=number))
        if told is not None:
            if len(log_events) < logevents.MAX_LOG_EVENTS:
                log_events.append(told)
            else:
                more_events += 1
        if found is Miss.NO_YEAR:
            yearless += 1
            yearless_line = yearless_line or number
            continue
        if not isinstance(found, Stamped):
            continue
        stamped += 1
        if not found.zoned and not naive_line:
            naive_line = number
        if last is not None and found.at < last - BACKWARDS_TOLERANCE:
            backwards += 1
            if backwards <= 3:
                warnings.append(
                    warning_at(
                        source,
                        number,
                        f"time goes back {(last - found.at).total_seconds():.0f} s here "
                        "(several writers, a clock change, or a wrong timestamp)",
                    )
                )
        last = found.at if last is None else max(last, found.at)
        if not notable(found.message):
            continue
        key = _DIGITS_RE.sub("#", found.message)
        if key in firsts:
            position = firsts[key]
            count, _ = repeats.get(position, (0, found.at))
            repeats[position] = (count + 1, found.at)
            continue
        if len(events) >= MAX_EVENTS:
            dropped += 1
            continue
        firsts[key] = len(events)
        message = " ".join(found.message.split())
        if len(message) > MAX_TEXT:
            message = message[: MAX_TEXT - 1] + "…"
        events.append(
            TimelineEvent(
                at=found.at,
                kind=EventKind.LOG,
                text=message or "(empty message)",
                source=Location(path=source, line=number),
            )
        )
    for position, (count, until) in repeats.items():
        event = events[position]
        events[position] = TimelineEvent(
            at=event.at,
            kind=event.kind,
            text=f"{event.text} (and {count} more time{'s' if count > 1 else ''} to "
            f"{until:%H:%M:%S})",
            source=event.source,
        )
    if naive_line:
        warnings.append(warning_at(source, naive_line, "log times carry no zone; read as UTC"))
    if yearless:
        warnings.append(
            warning_at(
                source,
                yearless_line,
                f"{yearless} lines have times without a year (syslog or vLLM form) and the "
                "bundle gives no captured_at to take it from; skipped",
            )
        )
    if dropped:
        warnings.append(
            warning_at(
                source,
                0,
                f"{dropped} more notable lines after the first {MAX_EVENTS} not put on the timeline",
            )
        )
    if more_events:
        warnings.append(
            warning_at(
                source,
                0,
                f"{more_events} more timeout, kill or exit lines after the first "
                f"{logevents.MAX_LOG_EVENTS} not read",
            )
        )
    if not stamped and not yearless:
        first = next((line for line in clean_lines(text) if line.strip()), "")
        warnings.append(
            warning_at(
                source,
                1,
                f"no line starts with a time this reader knows (first line: {excerpt(first)})",
            )
        )
    return ParseResult(events=tuple(events), warnings=tuple(warnings), log_events=tuple(log_events))
