"""Decide what kind of evidence a text holds, and parse it with the matching parser.

`sniff(text)` looks only at the first 64 KiB, so it stays cheap on huge files:

* a JSON array (`[` then `{` or `]`) → PYSPY_JSON;
* `Process N:` with a `Python v` line after it, `Thread N (idle)`, SGLang's
  `Pyspy dump` line (or its `Pyspy failed` / `All pyspy dump attempts failed`), or py-spy's own error text alone (`Error: ...`,
  `Permission Denied`, a Rust panic) → PYSPY_TEXT;
* `Thread 0x... (most recent call first):`, `Stack (most recent call first):`,
  `Fatal Python error:`, `Timeout (0:00:01)!` or `  File "...", line N in f`
  → FAULTHANDLER;
* when both kinds appear, the one seen first wins;
* no marker, but two or more indented `name (file:line)` lines making up two
  thirds of the head → PYSPY_TEXT (a fragment of frames); the same with
  faulthandler's `File "f.py", line N in f` lines at any indent → FAULTHANDLER;
* then the other kinds (the rows of `_DETECTORS`, in order): a JSON object with `resultType`
  or `status` → PROMETHEUS_JSON; `systemctl show` keys → SYSTEMD_SHOW; `# TYPE`,
  `# HELP`, `# scrape at` or sample lines → PROMETHEUS_TEXT; a CSV header starting
  with `Time` (or `Series`) → GRAFANA_CSV; mostly timestamped lines → LOG;
* the kinds of the registry (`reporter.evidence.kinds`) by their `looks_like`, at their
  `SniffPlace`: `report collect`'s per-round `/proc` files (first line `# report-proc:
  KIND pid=N ...`) before anything else;
* a NUL-separated `/proc` copy → ENVIRON or CMDLINE, and `pip list --format=json`
  → PACKAGES, before the py-spy JSON test; after the dump kinds and before
  the metric kinds: `reporter-excerpt: 1` → CODE_EXCERPT, a goroutine header →
  GOROUTINES, check_env / collect_env / nvidia-smi (`env.sniff_distinctive`); after
  the logs: sha256sum, pip freeze / list, KEY=VALUE lines and a command line
  (`env.sniff_generic`);
* py-spy's error text alone counts only after all of these; nothing known → UNKNOWN.

Log prefixes in front of these lines do not matter: a marker counts at the
start of a line or after a space, `|` or `]`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from reporter.evidence import (
    env,
    flight_recorder,
    kinds,
    logs,
    prochead,
    procstatus,
    pyspy,
    systemd,
)
from reporter.evidence._text import strip_ansi
from reporter.evidence.kinds.interface import Parser, Read, SniffPlace
from reporter.model import EvidenceKind, ParseResult

SNIFF_CHARS = 64 * 1024
_QUICK_CHARS = 4 * 1024

_JSON_RE = re.compile(r"\A\ufeff?\s*\[\s*[{\]]")

# Each marker is a needle found with str.find, then checked with a pattern matched
# at the needle and bounded by the end of its line: a few C-level scans per file.
_Marker = tuple[str, re.Pattern[str]]
_PYSPY_MARKERS: tuple[_Marker, ...] = (
    ("Process ", re.compile(r"Process \d+: ")),
    (
        "Thread ",
        re.compile(
            r'Thread (?:\d+|0x[0-9A-F]+)(?: \((?:idle|active|active\+gil|gil)\))?(?:: ".*")?\r?$'
        ),
    ),
    # The condensed form: `Thread (idle) "MainThread"`, no id.
    ("Thread (", re.compile(r'Thread \((?:idle|active|active\+gil|gil)\):? "[^\n]*"\r?$')),
    ("Pyspy dump", re.compile(r"Pyspy dump (?:for )?PID \d")),
    # SGLang's watchdog when py-spy failed: a failed dump is still py-spy evidence.
    ("Pyspy failed ", re.compile(r"Pyspy failed (?:\([^()\n]*--pid \d|to dump PID \d)")),
    ("All pyspy dump", re.compile(r"All pyspy dump attempts failed for PID \d")),
)
_CONDENSED_RE = re.compile(r"\(Python v?\d[\w.+-]{0,30}\)\r?$")
_PYSPY_ERROR_MARKERS: tuple[_Marker, ...] = (
    ("Error: ", re.compile(r"Error: ")),
    ("Permission Denied", re.compile(r"Permission Denied")),
    ("thread '", re.compile(r"thread '[^'\n]*' panicked at")),
)
_FAULTHANDLER_MARKERS: tuple[_Marker, ...] = (
    ("Thread 0x", re.compile(r"Thread 0x[0-9a-fA-F]+ \(most recent call first\):")),
    ("Current thread 0x", re.compile(r"Current thread 0x[0-9a-fA-F]+ \(most recent call first\):")),
    ("Stack (", re.compile(r"Stack \(most recent call first\):")),
    ("Fatal Python error: ", re.compile(r"Fatal Python error: ")),
    ("Timeout (", re.compile(r"Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!")),
    ('  File "', re.compile(r'  File "[^\n]{0,600}?", line (?:\d+|\?\?\?) in ')),
)


def sniff(text: str) -> EvidenceKind:
    """The kind of evidence in `text`, judged from its first 64 KiB."""
    quick = text[:_QUICK_CHARS]
    if quick.lstrip("\ufeff").startswith(prochead.MARKER):
        # `report collect`'s per-round /proc files name their kind on their first line.
        return _sniff_head(quick)
    # A /proc copy separates its entries with NULs, not lines: one stray NUL in a
    # line-oriented dump (issue 16) does not make it one.
    nuls = quick.count("\x00")
    proc_copy = nuls > 0 and nuls >= quick.count("\n")
    # /proc copies and pip's JSON: py-spy text never holds NUL, py-spy JSON has thread ids.
    if proc_copy or (
        quick.lstrip("\ufeff \t\r\n").startswith("[") and env.looks_like_pip_json(quick)
    ):
        return env.sniff_distinctive(text)
    if flight_recorder.sniff_text(quick):
        return EvidenceKind.FLIGHT_RECORDER
    if _JSON_RE.match(text, 0, SNIFF_CHARS):
        return EvidenceKind.PYSPY_JSON
    # Nearly every file shows its kind in the first lines; the earliest marker of a
    # prefix is also the earliest of the whole head, so a decision there is final.
    kind = _sniff_head(strip_ansi(text[:_QUICK_CHARS]))
    if kind is EvidenceKind.UNKNOWN and len(text) > _QUICK_CHARS:
        kind = _sniff_head(strip_ansi(text[:SNIFF_CHARS]))
    return kind


def _sniff_head(head: str) -> EvidenceKind:
    """`sniff` on an already cut and cleaned head."""
    pyspy_at = _earliest(head, _PYSPY_MARKERS)
    # py-spy wins ties, so only a faulthandler marker up to `pyspy_at` can change the answer.
    fault_at = _earliest(head, _FAULTHANDLER_MARKERS, pyspy_at if pyspy_at >= 0 else len(head))
    if pyspy_at >= 0 and (fault_at < 0 or pyspy_at <= fault_at):
        return EvidenceKind.PYSPY_TEXT
    if fault_at >= 0:
        return EvidenceKind.FAULTHANDLER
    for detect in _DETECTORS:
        kind = detect(head)
        if kind is not EvidenceKind.UNKNOWN:
            return kind
    return EvidenceKind.UNKNOWN


def _when(kind: EvidenceKind, test: Callable[[str], bool]) -> Callable[[str], EvidenceKind]:
    """A detector that names `kind` when `test(head)` holds."""
    return lambda head: kind if test(head) else EvidenceKind.UNKNOWN


def _env_distinctive(head: str) -> EvidenceKind:
    return env.sniff_distinctive(head)


def _env_generic(head: str) -> EvidenceKind:
    return env.sniff_generic(head)


def _mostly(head: str, is_frame: Callable[[str], bool]) -> bool:
    """Two or more non-blank lines are frames (`is_frame`), and at least two thirds of them."""
    frames = 0
    other = 0
    for line in head.split("\n"):
        if not line.strip():
            continue
        if is_frame(line):
            frames += 1
        else:
            other += 1
    return frames >= 2 and frames >= 2 * other


def _frames_only(head: str) -> bool:
    """A fragment of py-spy frames with no `Thread` line: two or more frame lines, most lines."""
    return _mostly(head, lambda line: pyspy.looks_like_frame(line.rstrip("\r")))


_FAULT_FRAME_RE = re.compile(r'File "[^"\n]{1,600}", line (?:\d+|\?\?\?) in \S')


def _fault_frames_only(head: str) -> bool:
    """faulthandler `File` lines that lost their indentation, making up most lines."""
    return _mostly(head, lambda line: _FAULT_FRAME_RE.match(line.strip()) is not None)


def _earliest(head: str, markers: tuple[_Marker, ...], limit: int | None = None) -> int:
    """Offset of the earliest marker in `head` (starting at `limit` or before), or -1."""
    found = -1
    end = len(head) if limit is None else limit
    for needle, pattern in markers:
        at = _find(head, needle, pattern, found if found >= 0 else end)
        if at >= 0:
            found = at
    return found


def _find(head: str, needle: str, pattern: re.Pattern[str], limit: int) -> int:
    """Offset of the first `needle` before `limit` where `pattern` matches, or -1.

    A marker counts at the start of a line or after a log prefix (the character
    before it is a space, `|` or `]`), so `ValueError: ` is not py-spy's `Error: `.
    """
    start = 0
    while True:
        at = head.find(needle, start, limit + len(needle))
        if at < 0:
            return -1
        end = head.find("\n", at)
        if end < 0:
            end = len(head)
        before = head[at - 1] if at else "\n"
        if before in "\n\r \t|]" and pattern.match(head, at, end) and _confirmed(head, needle, at):
            return at
        # One try per line keeps a long line full of needles linear.
        start = end + 1


def _confirmed(head: str, needle: str, at: int) -> bool:
    """`Process N:` is only py-spy's when a `Python v` line follows (or, condensed, ends it)."""
    if needle != "Process ":
        return True
    end = head.find("\n", at)
    line = head[at : end if end >= 0 else len(head)]
    return head.find("Python v", at) >= 0 or _CONDENSED_RE.search(line) is not None


def parse(
    kind: EvidenceKind, text: str, *, source: str, captured_at: datetime | None = None
) -> ParseResult:
    """Parse `text` with the parser of `kind` (its registry entry); UNKNOWN gives a warning only.

    `captured_at` (the manifest's, else the bundle's earliest) dates a single
    Prometheus scrape without timestamps, and gives year-less log times their year.
    """
    return PARSERS[kind](text, Read(source=source, captured_at=captured_at))


# The parser of every evidence kind, from its registry entry (`reporter.evidence.kinds`).
PARSERS: dict[EvidenceKind, Parser] = {entry.kind: entry.parse for entry in kinds.REGISTRY}


_PROM_JSON_RE = re.compile(r'\A\ufeff?\s*\{[\s\S]{0,200}?"(?:status|resultType|data)"\s*:')
_PROM_COMMENT_RE = re.compile(r"(?m)^#\s*(?:TYPE|HELP)\s+[A-Za-z_:][\w:]*\s|^#\s*scrape at\s")
_PROM_SAMPLE_RE = re.compile(
    r"[A-Za-z_:][\w:]*(?:\{[^}\n]*\})?[ \t]+[-+]?(?:\d|\.\d|NaN|Inf)[^\s]*(?:[ \t]+-?\d+)?[ \t]*"
)
_CSV_HEAD_RE = re.compile(r'\A\ufeff?(?:sep=.\r?\n)?"?(?:Time|time|Series|series)"?[,;\t]')
# Share of a head's first lines that must carry a time for the file to count as a log.
LOG_SHARE = 0.3


def _prometheus_samples(head: str) -> bool:
    """The first 20 non-blank lines are all exposition-format samples."""
    lines = [line.strip() for line in head.split("\n")[:50] if line.strip()]
    return bool(lines) and all(_PROM_SAMPLE_RE.fullmatch(line) for line in lines[:20])


def _log_lines(head: str) -> bool:
    return logs.stamped_share(head) >= LOG_SHARE or flight_recorder.sniff_watchdog(head)


# What `sniff` tries after the py-spy and faulthandler markers, in this order; the first
# that names a kind wins. Dumps that lost their headers come first, then the kinds with
# a distinctive first line, then the looser shapes (samples, timestamped lines, KEY=VALUE).
_DETECTORS: tuple[Callable[[str], EvidenceKind], ...] = (
    # Registered kinds with a line nothing else starts with (`# report-proc: ...`).
    *(_when(kind, test) for kind, test in kinds.detectors(SniffPlace.FIRST)),
    _when(EvidenceKind.PYSPY_TEXT, _frames_only),
    _when(EvidenceKind.FAULTHANDLER, _fault_frames_only),
    # Registered kinds with a distinctive header (an excerpt's marker, a goroutine header).
    *(_when(kind, test) for kind, test in kinds.detectors(SniffPlace.DISTINCTIVE)),
    _when(EvidenceKind.PROC_STATUS, procstatus.looks_like),
    _env_distinctive,
    _when(EvidenceKind.PROMETHEUS_JSON, lambda head: _PROM_JSON_RE.match(head) is not None),
    _when(EvidenceKind.SYSTEMD_SHOW, systemd.looks_like),
    _when(EvidenceKind.PROMETHEUS_TEXT, lambda head: _PROM_COMMENT_RE.search(head) is not None),
    _when(EvidenceKind.GRAFANA_CSV, lambda head: _CSV_HEAD_RE.match(head) is not None),
    _when(EvidenceKind.PROMETHEUS_TEXT, _prometheus_samples),
    _when(EvidenceKind.LOG, _log_lines),
    _env_generic,
    # py-spy's error text alone is a failed dump, and still py-spy evidence.
    _when(EvidenceKind.PYSPY_TEXT, lambda head: _earliest(head, _PYSPY_ERROR_MARKERS) >= 0),
)
