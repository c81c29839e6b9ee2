"""Parse `py-spy dump` output (text and `--json`, py-spy 0.4.x) into `ParseResult`s.

Inputs are the file's text and the name to cite in warnings; nothing here reads
files. Text output, by example (formats.md 1.2)::

    Process 7985: sglang::scheduler_TP0
    Python v3.11.7 (/usr/local/bin/python3.11)

    Thread 7985 (idle): "MainThread"
        Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)
    Thread 8039 (active+gil): "watchdog"
        ...

gives one `ProcessDump(pid=7985, cmdline="sglang::scheduler_TP0", ...)`. The text
parser also accepts what real captures wrap around that: ANSI colours and CRLF,
per-line log prefixes (`sglang-1  | `, `[2026-07-14 08:34:44 TP6] `), SGLang's
`Pyspy dump PID 187: rc=0 timeout=False truncated=True` lines (capture time,
tag and PID for the dump after them), several dumps per file, `--subprocesses`
trees (including py-spy 0.4.1's repeated children, merged by PID), `--locals`,
`--native`, `--core` headers, truncated output, and py-spy's own error text,
which becomes a `FailedDump` rather than an exception. Whatever is not
understood becomes a `ParseWarning` with file:line and parsing goes on.

Thread order: every `ProcessDump` lists threads oldest first (normally the main
thread first). That is the order py-spy's text prints; `--json` prints newest
first, so `parse_json` reverses it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reporter.evidence._text import (
    GC_PAUSE_MIN_CHARS,
    LinePrefix,
    Unrecognised,
    clean_lines,
    excerpt,
    stamp_and_label,
)
from reporter.gcpause import gc_paused
from reporter.model import (
    EvidenceKind,
    FailedDump,
    FailureState,
    Frame,
    Local,
    Location,
    ParseResult,
    ParseWarning,
    ProcessDump,
    ThreadStack,
    ThreadStatus,
)

_KIND = EvidenceKind.PYSPY_TEXT
_WHAT = "py-spy output"

# Line grammar (formats.md 1.2, 1.7). Numbers are bounded so int() never sees a huge literal.
_PROCESS_RE = re.compile(r"Process (\d{1,18}): ?(.*)\Z")
_PARENT_RE = re.compile(r"Parent Process (\d{1,18}): ?(.*)\Z")
# The id is optional: condensed and hand-edited dumps print `Thread (idle) "MainThread"`.
_THREAD_RE = re.compile(
    r'Thread(?: (0x[0-9A-Fa-f]{1,32}|\d{1,18}))?(?: \(([a-z+]+)\))?(?::? "(.*)")?\Z'
)
# `Process 7985: sglang::scheduler_TP0   (Python 3.12.3)`: title and version on one line.
_CONDENSED_RE = re.compile(r"(.*?)\s+\(Python v?(\d[\w.+-]{0,30})\)\Z")
# SGLang's watchdog: `Pyspy failed (py-spy dump --native --pid 82). Error: Error: ...`, the
# older `Pyspy failed to dump PID 171. Error: ...`, and the closing summary line.
_FAILED_RE = re.compile(
    r"Pyspy failed (?:\([^()\n]{0,200}?--pid (\d{1,18})\)|to dump PID (\d{1,18}))\.? ?"
    r"(?:Error: ?)*(.*)\Z"
)
# `ray stack`: `Stack dump for USER  PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND`
# (a `ps aux` row) before each process's py-spy output.
_RAY_STACK_RE = re.compile(r"Stack dump for \S+\s+(\d{1,18})\s()")
_ALL_FAILED_RE = re.compile(r"All pyspy dump attempts failed for PID (\d{1,18})")
# Two frame lines glued into one (a paste that lost a newline).
_GLUE_SPLIT_RE = re.compile(r"(?<=\)) {2,}(?=\S)")
# A thread line cut short (`Thread 8157 (idle): "Thread-1 (lock_wa`): keep the id and what follows.
_THREAD_CUT_RE = re.compile(
    r"Thread (0x[0-9A-Fa-f]{1,32}|\d{1,18})(?: \(([a-z+]*)\)?)?(?:: \"?(.*))?\Z"
)
_SIGNAL_RE = re.compile(r"Signal (\d{1,4}): (.*)\Z")
_WRAPPER_RE = re.compile(r"Pyspy dump (?:for )?PID (\d{1,18})\b:?(.*)\Z")
_PANIC_RE = re.compile(r"thread '[^']*' panicked at")
# Where py-spy text starts inside a prefixed line; the text before it is the prefix.
# No `.*` here: a search tries every position, and a long junk line must stay linear.
_ANCHOR_RE = re.compile(
    r"Process \d{1,18}: |Python v\d"
    r'|Thread (?:0x[0-9A-Fa-f]+|\d+)(?: \([a-z+]+\)|: "|\Z)'
    r'|Thread \([a-z+]+\):? "'
    r"|Pyspy dump (?:for )?PID \d"
)
_ERROR_ANCHOR_RE = re.compile(r"Error: |Permission Denied")
_HEX_RE = re.compile(r"0x[0-9A-Fa-f]+\Z")

_STATUS = {
    "idle": ThreadStatus.IDLE,
    "active": ThreadStatus.ACTIVE,
    "active+gil": ThreadStatus.ACTIVE_GIL,
    "gil": ThreadStatus.GIL,
}
# Only these statuses say the thread holds the GIL; `idle` threads may hold it too.
_OWNS_GIL = {ThreadStatus.ACTIVE_GIL: True, ThreadStatus.GIL: True}
_NATIVE_SUFFIXES = (
    ".so",
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".h",
    ".hh",
    ".hpp",
    ".cu",
    ".pyx",
    ".rs",
    ".dylib",
    ".dll",
    ".pyd",
)
_SEPARATOR_MIN = 20
# A `Process` header whose cmdline runs longer than this without a `Python v` line is
# taken as cut short; protects against swallowing a whole file into one cmdline.
_MAX_CMDLINE_LINES = 64

# Frames are immutable, so one object per distinct frame line serves every dump in a
# run: a bundle of thousands of ranks repeats the same few hundred lines millions of
# times. Cleared when full to bound memory.
_FRAME_CACHE: dict[str, Frame] = {}
_FRAME_CACHE_MAX = 1 << 18

# Parser states.
_NONE, _HEADER, _META, _THREAD, _ERROR = range(5)

# Thread id for thread lines that print none (`Thread (idle) "MainThread"`) and fragments.
UNKNOWN_THREAD_ID = "?"

# py-spy's error text → what it says about the process; first match wins (FailureState).
_GONE_MARKERS = (
    "no such file or directory (os error 2)",
    "no such process",
    "(os error 3)",
    "process exited",
    "process has exited",
    "check that the process is running",
    "is not running",
    "process not found",
)
_REFUSED_MARKERS = (
    "permission denied",
    "operation not permitted",
    "(os error 1)",
    "(os error 13)",
    "ptrace",
    "access is denied",
    "requires root",
)
_TIMEOUT_MARKERS = ("timed out", "timeout", "time out")


def classify_failure(text: str) -> FailureState:
    """What py-spy's error text (reason and detail) says about the process.

    >>> classify_failure("Failed to get process executable name. No such file or directory (os error 2)")
    <FailureState.GONE: 'gone'>
    """
    lowered = text.lower()
    if any(marker in lowered for marker in _GONE_MARKERS):
        return FailureState.GONE
    if any(marker in lowered for marker in _REFUSED_MARKERS):
        return FailureState.REFUSED
    if any(marker in lowered for marker in _TIMEOUT_MARKERS):
        return FailureState.TIMEOUT
    return FailureState.ERROR


def parse_text(text: str, *, source: str) -> ParseResult:
    """Parse `py-spy dump` text output (any number of dumps) found in `text`.

    `source` names the file in warnings and `Location`s; lines are 1-based in
    the original text. Never raises on malformed input.
    """
    with gc_paused(len(text) >= GC_PAUSE_MIN_CHARS):
        parser = _TextParser(source)
        parser.run(clean_lines(text))
        return parser.result()


def parse_json(text: str, *, source: str) -> ParseResult:
    """Parse `py-spy dump --json` output: a JSON array of thread objects of one process.

    Threads come out oldest first (py-spy's JSON is newest first, so it is reversed
    to match the text format). `thread_id` becomes the decimal string of the JSON
    `thread_id` (the pthread id, which is the hex id of faulthandler dumps), and the
    status is rebuilt from `active` and `owns_gil`. Several arrays one after the
    other give one dump each. Invalid JSON gives a warning naming line and column.
    """
    warnings: list[ParseWarning] = []
    dumps: list[ProcessDump] = []
    thread_lines = _json_object_lines(text)
    decoder = json.JSONDecoder()
    position = 0
    size = len(text)
    while True:
        position = _skip_space(text, position)
        if position >= size:
            break
        start_line = text.count("\n", 0, position) + 1
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as err:
            warnings.append(
                _warning(source, err.lineno, f"invalid JSON: {err.msg} (column {err.colno})")
            )
            break
        except (RecursionError, ValueError) as err:
            warnings.append(_warning(source, start_line, f"invalid JSON: {err}"))
            break
        if not isinstance(value, list):
            warnings.append(
                _warning(
                    source,
                    start_line,
                    f"expected a JSON array of threads, found {type(value).__name__}",
                )
            )
            continue
        dumps.extend(_json_dump(value, source, start_line, thread_lines, warnings))
    if not dumps and not warnings:
        warnings.append(_warning(source, 1, "no JSON found"))
    return ParseResult(dumps=tuple(dumps), warnings=tuple(warnings))


# --------------------------------------------------------------------------- text


@dataclass(slots=True, eq=False)
class _Thread:
    """A thread line and the frames under it, while parsing."""

    tid: str
    status: ThreadStatus
    name: str | None
    line: int
    frames: list[Frame] = field(default_factory=list)
    truncated: bool = False
    shared_from: int | None = None  # line of the first thread line sharing this stack


@dataclass(slots=True, eq=False)
class _Proc:
    """One `Process` block (or threads with no header), while parsing."""

    pid: int | None
    line: int
    group: int
    after_separator: int  # line of the separator just before the header; 0 = none
    cmd: list[str] = field(default_factory=list)
    version: str | None = None
    exe: str | None = None
    parent_pid: int | None = None
    parent_cmdline: str | None = None
    threads: list[_Thread] = field(default_factory=list)
    captured_at: datetime | None = None
    label: str | None = None
    truncated: bool = False
    headline: str | None = None
    headerless: bool = False  # threads (or frames) pasted without a `Process` line
    slot: int = 0


@dataclass(slots=True, eq=False)
class _Context:
    """What an SGLang `Pyspy dump PID N: ...` line says about the output after it."""

    pid: int
    line: int
    captured_at: datetime | None
    label: str | None
    truncated: bool
    used: bool = False


@dataclass(slots=True, eq=False)
class _Error:
    """py-spy's own error text (`Error: ...`, a Rust panic, `Permission Denied`)."""

    pid: int | None
    line: int
    reason: str
    captured_at: datetime | None
    resume: int
    panic: bool = False
    free_text: bool = False
    causes: bool = False
    detail: list[str] = field(default_factory=list)


class _TextParser:
    """State machine over the cleaned lines of one text file."""

    __slots__ = (
        "_block",
        "_cmd_lines",
        "_context",
        "_error",
        "_failures",
        "_group",
        "_group_root",
        "_headline",
        "_loc_arg",
        "_loc_items",
        "_loc_open",
        "_mode",
        "_prefix",
        "_procs",
        "_retrying",
        "_separator_line",
        "_source",
        "_thread",
        "_unknown",
    )

    def __init__(self, source: str) -> None:
        self._source = source
        self._procs: list[_Proc] = []
        self._failures: list[FailedDump] = []
        self._unknown = Unrecognised(source, _WHAT)
        self._block: _Proc | None = None
        self._thread: _Thread | None = None
        self._mode = _NONE
        self._prefix: LinePrefix | None = None
        self._group = 0
        self._group_root: _Proc | None = None
        self._separator_line = 0  # line of a separator not yet followed by a block; 0 = none
        self._context: _Context | None = None
        self._error: _Error | None = None
        self._headline: str | None = None
        self._cmd_lines = 0
        self._loc_arg = False
        self._loc_open = False
        self._loc_items: list[Local] = []
        self._retrying = False

    # The hot loop. Most lines are frame lines seen before: one dict lookup and an
    # append while `sink` is set (inside a thread, no pending `--locals`).
    def run(self, lines: list[str]) -> None:
        """Feed every line; `result()` afterwards."""
        cache_get = _FRAME_CACHE.get
        sink: Callable[[Frame], None] | None = None
        for number, raw in enumerate(lines, 1):
            if sink is not None:
                frame = cache_get(raw)
                if frame is not None:
                    sink(frame)
                    continue
            line = raw
            prefix = self._prefix
            if prefix is not None:
                stripped = prefix.strip(raw)
                if stripped is not None:
                    line = stripped
                    frame = cache_get(line) if sink is not None else None
                    if sink is not None and frame is not None:
                        sink(frame)
                        continue
            self._line(number, raw, line)
            sink = self._frame_sink()
        self._finish(len(lines))

    def _frame_sink(self) -> Callable[[Frame], None] | None:
        """Where a plain frame line goes without the slow path, or None."""
        thread = self._thread
        if self._mode != _THREAD or thread is None or self._loc_items or self._loc_open:
            return None
        return thread.frames.append

    def result(self) -> ParseResult:
        """The dumps, failures and warnings gathered by `run`."""
        dumps: list[ProcessDump] = []
        self._name_headerless()
        groups: dict[int, list[_Proc]] = {}
        for proc in self._procs:
            groups.setdefault(proc.group, []).append(proc)
        for members in groups.values():
            for proc in self._merge_repeats(members):
                dumps.append(self._dump(proc))
        self._unknown.flush()
        warnings = sorted(self._unknown.warnings, key=lambda w: (w.source.line, w.message))
        return ParseResult(
            dumps=tuple(dumps), failures=tuple(self._failures), warnings=tuple(warnings)
        )

    def _name_headerless(self) -> None:
        """PIDs and slots for blocks pasted without a `Process` line.

        On Linux py-spy prints OS thread ids, and a main thread's id is its PID, so a
        `Thread 8251 (idle): "MainThread"` names PID 8251 (said in a warning). Blocks
        still without a PID are numbered 1, 2, ... in file order when there are several,
        so each stays a process of its own; no PID is made up for them.
        """
        unnamed: list[_Proc] = []
        for proc in self._procs:
            if not proc.headerless or proc.pid is not None:
                continue
            main = next((t for t in proc.threads if t.name == "MainThread"), None)
            if main is not None and main.tid.isdigit() and len(main.tid) < 19:
                proc.pid = int(main.tid)
                self._unknown.warn(
                    main.line,
                    f"PID {proc.pid} taken from the main thread's id (py-spy prints OS "
                    "thread ids; on Linux the main thread's is the PID)",
                )
            else:
                unnamed.append(proc)
        if len(unnamed) > 1:
            for index, proc in enumerate(unnamed, 1):
                proc.slot = index

    # ------------------------------------------------------------ line dispatch

    def _line(self, number: int, raw: str, line: str) -> None:
        """Everything but a cached frame line."""
        mode = self._mode
        if mode == _HEADER and self._header_line(number, line):
            return
        if mode == _ERROR and self._error_line(number, line):
            return
        if not line:
            return
        first = line[0]
        if first == "\t":
            # py-spy 0.1 (`ray stack`) indented frames with a tab: `\t run (threading.py:864)`.
            line = "    " + line.lstrip("\t ")
            first = " "
        if first == " ":
            self._indented(number, raw, line)
        elif first == "T" and line.startswith("Thread "):
            self._thread_line(number, raw, line)
        elif first == "P" and line.startswith("Process "):
            match = _PROCESS_RE.match(line)
            if match is None:
                self._other(number, raw, line)
            else:
                self._process(number, raw, line, match)
        elif first == "P" and line.startswith("Python v"):
            self._python_line(number, line)
        elif first == "P" and line.startswith("Parent Process "):
            self._parent_line(number, raw, line)
        elif first == "-" and len(line) >= _SEPARATOR_MIN and not line.strip("-"):
            self._separator(number)
        elif first == "E" and line.startswith("Error: "):
            self._start_error(number, raw, line, line[7:])
        elif first == "P" and line.startswith("Permission Denied"):
            self._start_error(number, raw, line, line, free_text=True)
        elif first == "t" and _PANIC_RE.match(line):
            self._start_error(number, raw, line, line, panic=True)
        elif first == "S" and line.startswith("Signal "):
            self._signal(number, raw, line)
        elif first == "S" and line.startswith("SGLANG_FATAL_EXIT_BEGIN"):
            return  # SGLang's marker before a fatal dump; nothing to keep.
        else:
            self._other(number, raw, line)

    def _other(self, number: int, raw: str, line: str) -> None:
        """A line no branch took: an SGLang wrapper, a new prefix, or not understood."""
        if "Pyspy dump" in raw:
            match = _WRAPPER_RE.search(raw)
            if match is not None:
                self._wrapper(number, raw, match)
                return
        if line.startswith("Stack dump for "):
            match = _RAY_STACK_RE.match(line)
            if match is not None:
                self._wrapper(number, "", match)
                return
        if ("yspy failed" in raw or "yspy dump attempts failed" in raw) and (
            self._watchdog_failure(number, raw)
        ):
            return
        if self._retrying:
            self._not_understood(number, line)
            return
        retry = line
        anchor = _ANCHOR_RE.search(raw)
        if anchor is None and self._context is not None:
            # Right after an SGLang dump line, py-spy's error text may carry the log prefix too.
            anchor = _ERROR_ANCHOR_RE.search(raw)
        if anchor is not None and anchor.start() > 0:
            prefix = LinePrefix(raw[: anchor.start()])
            stripped = prefix.strip(raw)
            if stripped is not None and stripped != line:
                self._prefix = prefix
                retry = stripped
        # Trailing blanks (pasted text, editors) hide an otherwise valid line.
        retry = retry.rstrip()
        if retry == line:
            self._not_understood(number, line)
            return
        self._retrying = True
        self._line(number, raw, retry)
        self._retrying = False

    def _not_understood(self, number: int, line: str) -> None:
        # A log line between dumps: what an SGLang dump line said no longer applies.
        self._unused_context()
        self._unknown.add(number, line)

    # ------------------------------------------------------------ headers

    def _process(self, number: int, raw: str, line: str, match: re.Match[str]) -> None:
        """`Process N: cmdline` starts a block; after a separator it is a subprocess."""
        self._end_thread()
        self._end_header(number)
        after_separator = self._separator_line if self._group_root is not None else 0
        if not after_separator:
            self._end_group()
            self._group += 1
        block = _Proc(
            pid=int(match.group(1)),
            line=number,
            group=self._group,
            after_separator=after_separator,
            cmd=[match.group(2)],
            headline=self._headline,
        )
        self._headline = None
        self._separator_line = 0
        self._stamp(block, raw, line)
        if not after_separator:
            self._group_root = block
        self._procs.append(block)
        self._block = block
        self._mode = _HEADER
        self._cmd_lines = 0
        condensed = _CONDENSED_RE.match(match.group(2))
        if condensed is not None:
            # The condensed form carries the version on the header line; no `Python v` follows.
            block.cmd = [condensed.group(1)]
            block.version = condensed.group(2)
            self._mode = _META

    def _stamp(self, block: _Proc, raw: str, line: str) -> None:
        """Capture time, tag and truncation from the SGLang line or the line's own prefix."""
        context = self._context
        if context is not None:
            block.captured_at = context.captured_at
            block.label = context.label
            if context.truncated and not block.truncated:
                self._unknown.warn(
                    context.line,
                    f"process {context.pid}: SGLang says this py-spy output was cut "
                    "(truncated or timed out); the stacks after it may be incomplete",
                )
            block.truncated = block.truncated or context.truncated
            context.used = True
        if block.captured_at is None and len(raw) > len(line):
            block.captured_at, label = stamp_and_label(raw[: len(raw) - len(line)])
            block.label = block.label or label

    def _header_line(self, number: int, line: str) -> bool:
        """Inside a header: the `Python v` line ends it, anything else extends the cmdline.

        Returns False when the line is not part of the header (it is handled normally).
        """
        block = self._block
        if block is None:
            self._mode = _NONE
            return False
        if line.startswith("Python v"):
            self._mode = _META
            self._set_python(number, block, line)
            return True
        if self._ends_header(line) or self._cmd_lines >= _MAX_CMDLINE_LINES:
            self._end_header(number)
            return False
        block.cmd.append(line)
        self._cmd_lines += 1
        return True

    @staticmethod
    def _ends_header(line: str) -> bool:
        """Lines that cannot continue a cmdline: the next structure of the output."""
        if not line:
            return False
        first = line[0]
        if first == "P":
            return line.startswith(
                ("Process ", "Parent Process ", "Pyspy dump", "Permission Denied")
            )
        if first == "T":
            return _thread_match(line) is not None
        if first == "-":
            return len(line) >= _SEPARATOR_MIN and not line.strip("-")
        if first == "E":
            return line.startswith("Error: ")
        return "Pyspy dump" in line and _WRAPPER_RE.search(line) is not None

    def _end_header(self, number: int) -> None:
        """Leave header state early: there was no `Python v` line."""
        if self._mode != _HEADER:
            return
        self._mode = _META
        block = self._block
        if block is None:
            return
        while len(block.cmd) > 1 and not block.cmd[-1].strip():
            block.cmd.pop()
        block.truncated = True
        self._unknown.warn(
            block.line, f"process {block.pid}: header has no 'Python v...' line (output cut?)"
        )

    def _set_python(self, number: int, block: _Proc, line: str) -> None:
        """`Python v3.11.7 (/usr/bin/python3.11)`, or `Python v3.11.7` in `--core` output."""
        rest = line[8:]
        cut = rest.find(" (")
        if cut < 0:
            block.version = rest.strip() or None
            return
        block.version = rest[:cut]
        exe = rest[cut + 2 :]
        if exe.endswith(")"):
            block.exe = exe[:-1]
        else:
            block.exe = exe
            block.truncated = True
            self._unknown.warn(number, f"interpreter line cut short: {excerpt(line)}")

    def _python_line(self, number: int, line: str) -> None:
        """A `Python v` line outside a header: only valid right after one."""
        block = self._block
        if self._mode == _META and block is not None and block.version is None:
            self._set_python(number, block, line)
            return
        self._not_understood(number, line)

    def _parent_line(self, number: int, raw: str, line: str) -> None:
        """`Parent Process N: cmdline`, printed for children under `--subprocesses`."""
        match = _PARENT_RE.match(line)
        block = self._block
        if match is None or block is None or self._mode != _META:
            # Not `_other`: its `Process N: ` anchor would take "Parent " for a prefix.
            self._not_understood(number, line)
            return
        block.parent_pid = int(match.group(1))
        block.parent_cmdline = match.group(2)

    def _signal(self, number: int, raw: str, line: str) -> None:
        """`Signal 11: /cores/core.123` opens a `--core` dump; kept as its headline."""
        if _SIGNAL_RE.match(line) is None:
            self._other(number, raw, line)
            return
        self._end_thread()
        self._end_header(number)
        self._end_group()
        self._group_root = None
        self._block = None
        self._mode = _NONE
        self._headline = line

    # ------------------------------------------------------------ threads and frames

    def _thread_line(self, number: int, raw: str, line: str) -> None:
        """`Thread 8152 (active+gil): "cpu-worker-1"` and its shorter forms."""
        match = _thread_match(line)
        cut = False
        if match is None:
            match = _THREAD_CUT_RE.match(line)
            if match is None or self._block is None:
                self._other(number, raw, line)
                return
            cut = True
        tid, word, name = match.groups()
        if tid is None:
            tid = UNKNOWN_THREAD_ID
        previous = self._thread if self._mode == _THREAD else None
        if self._loc_items:
            self._end_locals()
        self._loc_open = False
        status = ThreadStatus.UNKNOWN
        if word:
            found = _STATUS.get(word)
            if found is not None:
                status = found
            elif not cut:
                self._unknown.warn(number, f"unknown thread status {word!r}")
        thread = _Thread(tid=tid, status=status, name=name, line=number, frames=[])
        if cut:
            thread.truncated = True
            self._unknown.warn(number, f"thread line cut short: {excerpt(line)}")
        block = self._block
        if block is None or self._separator_line or block.after_separator:
            block = self._owner(number, raw, line)
        elif block.headerless and name == "MainThread" and _has_main(block):
            # A second main thread in pasted threads: the next process of a hand-made file.
            block = self._headerless(number, raw, line, "another 'MainThread' without a header")
        if (
            previous is not None
            and not previous.frames
            and not previous.truncated
            and previous.line == number - 1
            and _same_role(previous.name, name)
        ):
            # Thread lines of one role one after the other with no frames between: a
            # hand-collapsed dump where they share the stack that follows; each gets it.
            # py-spy itself prints frameless threads too (`Thread 4076 (idle)`, unnamed,
            # or a main thread caught exiting), so differently named ones keep none.
            thread.frames = previous.frames
            if previous.shared_from is None:
                self._unknown.warn(
                    previous.line,
                    "thread lines with no frames between them: each is given the stack "
                    "that follows (a hand-collapsed dump?)",
                )
            thread.shared_from = previous.shared_from or previous.line
        block.threads.append(thread)
        self._thread = thread
        self._mode = _THREAD

    def _owner(self, number: int, raw: str, line: str) -> _Proc:
        """The block a thread line belongs to.

        After a separator with no `Process` header since, the thread belongs to the
        top process of the tree (py-spy <= 0.4.1 went back to the parent's next
        thread after listing the children).
        """
        block = self._block
        if self._separator_line and self._group_root is not None:
            self._separator_line = 0
            self._block = self._group_root
            return self._group_root
        if block is not None:
            if (
                self._mode in (_HEADER, _META)
                and block.after_separator
                and block.parent_pid is None
            ):
                # A "child" without a `Parent Process` line is another top-level dump
                # that happened to follow a trailing separator.
                self._separator_line = block.after_separator
                self._end_group()
                self._separator_line = 0
                self._group += 1
                block.group = self._group
                block.after_separator = 0
                self._group_root = block
            return block
        return self._headerless(
            number, raw, line, "threads without a 'Process N:' header: PID not given"
        )

    def _headerless(self, number: int, raw: str, line: str, why: str) -> _Proc:
        """A new block for threads or frames pasted without their `Process` header."""
        self._end_group()
        self._group += 1
        block = _Proc(pid=None, line=number, group=self._group, after_separator=0, headerless=True)
        context = self._context
        if context is not None and not context.used:
            # A wrapper line named the PID (SGLang's `Pyspy dump PID N`, `ray stack`).
            block.pid = context.pid
            why = (
                f"threads without a 'Process N:' header; PID {context.pid} from line {context.line}"
            )
        self._stamp(block, raw, line)
        self._unknown.warn(number, why)
        self._procs.append(block)
        self._block = self._group_root = block
        return block

    def _indented(self, number: int, raw: str, line: str) -> None:
        """Frame lines (4 spaces), `--locals` headers (8) and entries (12)."""
        thread = self._thread
        if self._mode != _THREAD or thread is None:
            if self._mode in (_NONE, _META) and looks_like_frame(line):
                thread = self._fragment(number, raw, line)
            else:
                self._other(number, raw, line)
                return
        if not line.strip():
            return
        if (not line.startswith("    ") or line[4] == " ") and not self._loc_open:
            # Frames indented other than py-spy's four spaces (pasted, re-indented).
            body = line.lstrip(" ")
            if looks_like_frame(line):
                line = "    " + body
        if not line.startswith("    "):
            self._other(number, raw, line)
            return
        if line[4] != " ":
            self._end_locals()
            self._loc_open = False
            if line == "    ..." or line == "    …":
                # Frames left out by whoever pasted the dump.
                thread.truncated = True
                self._unknown.warn(number, "frames left out here ('...'): the stack is partial")
                return
            if line.endswith(")"):
                glued = _GLUE_SPLIT_RE.split(line[4:]) if ")  " in line else None
                if glued is not None and len(glued) > 1:
                    frames = [_frame("    " + piece) for piece in glued]
                    if all(f is not None for f in frames):
                        thread.frames.extend(f for f in frames if f is not None)
                        self._unknown.warn(number, f"{len(frames)} frames glued on one line; split")
                        return
                frame = _frame(line)
                if frame is None:
                    self._other(number, raw, line)
                else:
                    thread.frames.append(frame)
                return
            # No closing parenthesis: the line was cut (pipe closed, size limit).
            thread.frames.append(_cut_frame(line))
            thread.truncated = True
            self._unknown.warn(number, f"frame line cut short: {excerpt(line)}")
            return
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if indent == 8 and body in ("Arguments:", "Locals:") and thread.frames:
            self._end_locals()
            self._loc_arg = body == "Arguments:"
            self._loc_open = True
            return
        if indent >= 12 and self._loc_open:
            colon = body.find(": ")
            if colon > 0:
                name, value = body[:colon], body[colon + 2 :]
            elif body.endswith(":"):
                name, value = body[:-1], ""
            else:
                self._other(number, raw, line)
                return
            self._loc_items.append(Local(name=name, repr=value, is_arg=self._loc_arg))
            return
        self._other(number, raw, line)

    def _fragment(self, number: int, raw: str, line: str) -> _Thread:
        """Frames with no `Thread` line above them: one anonymous thread holds them."""
        block = self._block
        if block is None or self._separator_line:
            block = self._headerless(
                number, raw, line, "frames without a 'Thread' line: one anonymous thread"
            )
        else:
            self._unknown.warn(number, "frames without a 'Thread' line: one anonymous thread")
        thread = _Thread(tid=UNKNOWN_THREAD_ID, status=ThreadStatus.UNKNOWN, name=None, line=number)
        block.threads.append(thread)
        self._thread = thread
        self._mode = _THREAD
        return thread

    def _end_locals(self) -> None:
        """Attach pending `--locals` entries to the frame above them."""
        items = self._loc_items
        if not items:
            return
        thread = self._thread
        if thread is not None and thread.frames:
            top = thread.frames[-1]
            thread.frames[-1] = Frame(
                function=top.function,
                file=top.file,
                line=top.line,
                native=top.native,
                locals=(*top.locals, *items),
            )
        self._loc_items = []

    def _end_thread(self) -> None:
        self._end_locals()
        self._loc_open = False
        self._thread = None
        if self._mode == _THREAD:
            self._mode = _META

    # ------------------------------------------------------------ separators, wrappers, errors

    def _separator(self, number: int) -> None:
        """A dash line between `--subprocesses` blocks; empty pairs are normal."""
        self._end_thread()
        self._end_header(number)
        self._mode = _NONE
        self._block = None
        self._separator_line = number

    def _end_group(self) -> None:
        """Close the current tree of blocks; a separator with nothing after it means a cut."""
        root = self._group_root
        if self._separator_line and root is not None:
            root.truncated = True
            self._unknown.warn(
                self._separator_line,
                "output ends after a subprocess separator: a child process is missing "
                "(py-spy stopped, e.g. at a non-Python child)",
            )
        self._separator_line = 0
        self._group_root = None

    def _wrapper(self, number: int, raw: str, match: re.Match[str]) -> None:
        """`Pyspy dump PID 187: rc=0 timeout=False truncated=True` (SGLang, formats.md 4.5)."""
        self._end_thread()
        self._end_header(number)
        self._end_error()
        self._end_group()
        self._unused_context()
        self._block = None
        self._mode = _NONE
        stamp, label = stamp_and_label(raw[: match.start()])
        tail = match.group(2)
        self._context = _Context(
            pid=int(match.group(1)),
            line=number,
            captured_at=stamp,
            label=label,
            truncated="truncated=True" in tail or "timeout=True" in tail,
        )

    def _watchdog_failure(self, number: int, raw: str) -> bool:
        """SGLang's `Pyspy failed (... --pid N)` / `All pyspy dump attempts failed for PID N`.

        The failure belongs to the PID the line names, never to the dump before it.
        False when the line is neither.
        """
        failed = _FAILED_RE.search(raw)
        summary = None if failed is not None else _ALL_FAILED_RE.search(raw)
        if failed is None and summary is None:
            return False
        self._end_thread()
        self._end_header(number)
        self._end_error()
        self._end_group()
        self._unused_context()
        self._block = None
        self._mode = _NONE
        match = failed if failed is not None else summary
        assert match is not None
        stamp = stamp_and_label(raw[: match.start()])[0]
        if failed is not None:
            pid = int(failed.group(1) or failed.group(2))
            self._error = _Error(
                pid=pid,
                line=number,
                reason=failed.group(3).strip() or "py-spy failed",
                captured_at=stamp,
                resume=_NONE,
            )
            self._mode = _ERROR
            return True
        assert summary is not None
        pid = int(summary.group(1))
        if not any(f.pid == pid for f in self._failures):
            # The attempts' own lines are not in this file: the summary is all there is.
            self._failures.append(
                FailedDump(
                    pid=pid,
                    reason="all py-spy dump attempts failed",
                    captured_at=stamp,
                    source=Location(path=self._source, line=number),
                )
            )
        return True

    def _unused_context(self) -> None:
        context = self._context
        if context is not None and not context.used:
            self._unknown.warn(
                context.line, f"SGLang py-spy line for PID {context.pid} has no dump after it"
            )
        self._context = None

    def _start_error(
        self,
        number: int,
        raw: str,
        line: str,
        reason: str,
        *,
        panic: bool = False,
        free_text: bool = False,
    ) -> None:
        """py-spy's error text where a dump (or the rest of one) should be."""
        self._end_error()
        resume = self._mode if self._mode in (_THREAD, _META) else _NONE
        self._end_header(number)
        pid: int | None = None
        block = self._block
        context = self._context
        if block is not None and not self._separator_line:
            pid = block.pid
        elif not self._separator_line and context is not None:
            pid = context.pid
        stamp = context.captured_at if context is not None else None
        if context is not None:
            context.used = True
        if stamp is None and len(raw) > len(line):
            stamp = stamp_and_label(raw[: len(raw) - len(line)])[0]
        self._error = _Error(
            pid=pid,
            line=number,
            reason=reason.strip() or line.strip(),
            captured_at=stamp,
            resume=resume,
            panic=panic,
            free_text=free_text,
        )
        self._mode = _ERROR

    def _error_line(self, number: int, line: str) -> bool:
        """Continue an error block; False when the line is not part of it."""
        error = self._error
        if error is None:
            self._mode = _NONE
            return False
        if not line.strip():
            error.detail.append("")
            return True
        first = line[0]
        if first == " ":
            looks_like_frame = line.startswith("    ") and line[4:5] != " " and line.endswith(")")
            if error.causes or error.panic or not looks_like_frame or error.resume != _THREAD:
                error.detail.append(line)
                return True
        elif line.startswith(("Caused by:", "Reason: ", "Stack backtrace:", "stack backtrace:")):
            error.causes = True
            error.detail.append(line)
            return True
        elif (error.panic or error.free_text) and not self._structural(line):
            error.detail.append(line)
            return True
        self._end_error()
        return False

    @staticmethod
    def _structural(line: str) -> bool:
        """Lines that start py-spy structure again after an error."""
        return _TextParser._ends_header(line) or line.startswith(("Thread ", "Signal ", "Python v"))

    def _end_error(self) -> None:
        error = self._error
        if error is None:
            return
        self._error = None
        detail = error.detail
        while detail and not detail[-1].strip():
            detail.pop()
        while detail and not detail[0].strip():
            detail.pop(0)
        self._failures.append(
            FailedDump(
                pid=error.pid,
                reason=error.reason,
                detail="\n".join(detail),
                captured_at=error.captured_at,
                state=classify_failure(error.reason + "\n" + "\n".join(detail)),
                source=Location(path=self._source, line=error.line),
            )
        )
        if self._mode == _ERROR:
            self._mode = error.resume
            if error.resume == _THREAD and self._thread is None:
                self._mode = _META

    def _finish(self, last_line: int) -> None:
        """End of input: close whatever is open."""
        if self._mode == _ERROR:
            self._end_error()
        self._end_thread()
        self._end_header(last_line)
        self._end_group()
        self._unused_context()
        self._unknown.flush()

    # ------------------------------------------------------------ output

    def _merge_repeats(self, members: list[_Proc]) -> list[_Proc]:
        """Undo py-spy <= 0.4.1's `--subprocesses` layout: merge blocks of one PID.

        0.4.1 printed every descendant after *each* thread of the parent, so one tree
        shows some PIDs several times, and a parent's later thread lands right after
        a child's frames (formats.md 1.5). A thread found in every copy of its block
        belongs there; any other thread belongs to the nearest ancestor printed as
        many times as the thread was (the root is printed once).
        """
        pids = [proc.pid for proc in members]
        if len(set(pids)) == len(pids):
            return members
        copies: dict[int | None, list[_Proc]] = {}
        for proc in members:
            copies.setdefault(proc.pid, []).append(proc)
        seen_total: Counter[str] = Counter()
        seen_in_pid: dict[int | None, Counter[str]] = {pid: Counter() for pid in copies}
        for proc in members:
            tids = {thread.tid for thread in proc.threads}
            seen_in_pid[proc.pid].update(tids)
            seen_total.update(thread.tid for thread in proc.threads)
        parent_of = {pid: blocks[0].parent_pid for pid, blocks in copies.items()}
        root = members[0].pid
        owned: dict[int | None, list[_Thread]] = {pid: [] for pid in copies}
        moved = 0
        for proc in members:
            for thread in proc.threads:
                owner = proc.pid
                if thread.tid != str(proc.pid) and seen_in_pid[proc.pid][thread.tid] < len(
                    copies[proc.pid]
                ):
                    owner = _stray_owner(thread.tid, proc, copies, parent_of, seen_total, root)
                    moved += owner != proc.pid
                owned[owner].append(thread)
        merged: list[_Proc] = []
        for pid, blocks in copies.items():
            first = blocks[0]
            first.threads = _unique_threads(owned[pid])
            # One complete copy is enough; a copy cut at the end of the output does not count.
            first.truncated = all(block.truncated for block in blocks)
            merged.append(first)
        self._unknown.warn(
            members[0].line,
            f"{len(members)} process blocks for {len(copies)} PIDs: py-spy <= 0.4.1 repeats "
            f"subprocesses after every parent thread; merged by PID, {moved} thread(s) moved "
            "back to their process",
        )
        return merged

    def _dump(self, proc: _Proc) -> ProcessDump:
        """Freeze one block into a `ProcessDump`."""
        source = self._source
        if not proc.threads and not proc.truncated:
            proc.truncated = True
            self._unknown.warn(
                proc.line, f"process {proc.pid}: header without threads (output cut?)"
            )
        threads = tuple(
            ThreadStack(
                thread_id=thread.tid,
                status=thread.status,
                name=thread.name,
                frames=tuple(thread.frames),
                # A decimal id is the OS thread id; hex is the pthread id (formats.md 1.2).
                os_thread_id=int(thread.tid) if thread.tid.isdigit() else None,
                owns_gil=_OWNS_GIL.get(thread.status),
                truncated=thread.truncated,
                source=Location(path=source, line=thread.line),
            )
            for thread in proc.threads
        )
        return ProcessDump(
            pid=proc.pid,
            kind=_KIND,
            cmdline="\n".join(proc.cmd) if proc.cmd else None,
            python_version=proc.version,
            python_exe=proc.exe,
            parent_pid=proc.parent_pid,
            parent_cmdline=proc.parent_cmdline,
            threads=threads,
            captured_at=proc.captured_at,
            label=proc.label,
            truncated=proc.truncated or any(thread.truncated for thread in threads),
            headline=proc.headline,
            slot=proc.slot,
            source=Location(path=source, line=proc.line),
        )


def _stray_owner(
    tid: str,
    proc: _Proc,
    copies: dict[int | None, list[_Proc]],
    parent_of: dict[int | None, int | None],
    seen_total: Counter[str],
    root: int | None,
) -> int | None:
    """Which process a thread found in only some copies of `proc` belongs to."""
    if tid.isdigit() and len(tid) < 19 and int(tid) in copies:
        return int(tid)  # a main thread's TID is its process's PID
    times = seen_total[tid]
    walk = proc.parent_pid
    visited: set[int | None] = set()
    while walk in copies and walk not in visited:
        if len(copies[walk]) == times:
            return walk
        visited.add(walk)
        walk = parent_of.get(walk)
    return root


def _thread_match(line: str) -> re.Match[str] | None:
    """`_THREAD_RE` with an id or a status at least (a bare `Thread` is not a thread line)."""
    match = _THREAD_RE.match(line)
    if match is None or (match.group(1) is None and match.group(2) is None):
        return None
    return match


_DIGITS = re.compile(r"\d+")


def _same_role(first: str | None, second: str | None) -> bool:
    """Two thread names that differ at most in numbers (`worker-0`, `worker-1`)."""
    if not first or not second:
        return False
    return first == second or _DIGITS.sub("#", first) == _DIGITS.sub("#", second)


def _has_main(block: _Proc) -> bool:
    return any(thread.name == "MainThread" for thread in block.threads)


def looks_like_frame(line: str) -> bool:
    """An indented `name (file:line)`, `name (lib.so)` or `name (?)`: a py-spy frame line.

    Used for frames out of place (fragments, other indents) and by the sniffer.
    """
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    if not 1 <= indent <= 16 or not body.endswith(")") or body[:1] in ("(", ""):
        return False
    cut = body.rfind(" (")
    if cut <= 0:
        return False
    where = body[cut + 2 : -1]
    if not where or "(" in where or ")" in where:
        return False
    if where == "?" or ".so" in where:
        return True
    colon = where.rfind(":")
    return colon > 0 and where[colon + 1 :].isdigit()


def _unique_threads(threads: list[_Thread]) -> list[_Thread]:
    """One thread per id, in order of first appearance, preferring a complete copy."""
    chosen: dict[str, _Thread] = {}
    for thread in sorted(threads, key=lambda t: t.line):
        kept = chosen.get(thread.tid)
        if kept is None or (kept.truncated and not thread.truncated):
            chosen[thread.tid] = thread
    return sorted(chosen.values(), key=lambda t: t.line)


def _frame(line: str) -> Frame | None:
    """`    function (file:line)` → Frame, cached; None when the line is not frame-shaped.

    The last ` (` splits function from file: C++ names from `--native` contain ` (`
    themselves (`std::function<void (int)>::operator()`). The caller checks
    that the line ends with `)`.
    """
    cached = _FRAME_CACHE.get(line)
    if cached is not None:
        return cached
    body = line[4:]
    cut = body.rfind(" (")
    if cut <= 0:
        return None
    function = body[:cut]
    where = body[cut + 2 : -1]
    number: int | None = None
    colon = where.rfind(":")
    if colon >= 0:
        tail = where[colon + 1 :]
        if tail.isdigit() and tail.isascii() and len(tail) < 10:
            number = int(tail) or None
            where = where[:colon]
    # `--native` prints interpreter frames with the binary's name and no line:
    # `PyThread_acquire_lock_timed (python3.12)`; Python frames always carry `:line`.
    native = _is_native(function, where) or (
        number is None and colon < 0 and not where.endswith((".py", ".pyw", ">"))
    )
    frame = Frame(function=function, file=where, line=number, native=native)
    if len(_FRAME_CACHE) >= _FRAME_CACHE_MAX:
        _FRAME_CACHE.clear()
    _FRAME_CACHE[line] = frame
    return frame


def _cut_frame(line: str) -> Frame:
    """Whatever a frame line cut mid-way still says; the line number is not trusted."""
    body = line[4:]
    cut = body.rfind(" (")
    if cut <= 0:
        return Frame(function=body, file="", native=_is_native(body, ""))
    function = body[:cut]
    where = body[cut + 2 :]
    if where.endswith(")"):
        where = where[:-1]
    colon = where.rfind(":")
    if colon >= 0:
        where = where[:colon]
    return Frame(function=function, file=where, native=_is_native(function, where))


def _is_native(function: str, file: str) -> bool:
    """Frames from `--native`: shared objects, C/C++ sources, `?`, or a bare address."""
    if file.endswith(".py"):
        return False
    if file == "?" or file.endswith(_NATIVE_SUFFIXES) or ".so." in file:
        return True
    if "::" in function:
        return True  # a C++ name (`c10d::ProcessGroupGloo::RecvWork::wait`); Python names use dots
    return function.startswith("0x") and _HEX_RE.match(function) is not None


# --------------------------------------------------------------------------- JSON


def _skip_space(text: str, position: int) -> int:
    size = len(text)
    while position < size and text[position] in " \t\r\n\ufeff":
        position += 1
    return position


def _json_object_lines(text: str) -> list[int]:
    """Line numbers of thread objects in py-spy's pretty-printed JSON (`  {` lines)."""
    return [number for number, line in enumerate(text.split("\n"), 1) if line.rstrip("\r") == "  {"]


def _json_dump(
    threads: list[Any],
    source: str,
    start_line: int,
    thread_lines: list[int],
    warnings: list[ParseWarning],
) -> list[ProcessDump]:
    """One array → one dump per PID found in it (one, for py-spy's output)."""
    if not threads:
        warnings.append(
            _warning(source, start_line, "empty JSON array: the process has no threads")
        )
        return [
            ProcessDump(
                pid=None,
                kind=EvidenceKind.PYSPY_JSON,
                source=Location(path=source, line=start_line),
            )
        ]
    later = [n for n in thread_lines if n > start_line]
    lines = later[: len(threads)] if len(later) >= len(threads) else [start_line] * len(threads)
    by_pid: dict[int | None, list[ThreadStack]] = {}
    for index, item in enumerate(threads):
        line = lines[index]
        if not isinstance(item, dict):
            warnings.append(_warning(source, line, f"thread {index}: expected an object"))
            continue
        stack = _json_thread(item, source, line, warnings)
        by_pid.setdefault(_int(item.get("pid")), []).append(stack)
    dumps = []
    for pid, stacks in by_pid.items():
        stacks.reverse()  # py-spy's JSON is newest first; the model is oldest first
        dumps.append(
            ProcessDump(
                pid=pid,
                kind=EvidenceKind.PYSPY_JSON,
                threads=tuple(stacks),
                source=Location(path=source, line=start_line),
            )
        )
    return dumps


def _json_thread(
    item: dict[str, Any], source: str, line: int, warnings: list[ParseWarning]
) -> ThreadStack:
    """One StackTrace object (formats.md 1.6)."""
    active = item.get("active")
    owns_gil = item.get("owns_gil")
    if not isinstance(active, bool):
        status = ThreadStatus.UNKNOWN
    elif not active:
        status = ThreadStatus.IDLE
    else:
        status = ThreadStatus.ACTIVE_GIL if owns_gil is True else ThreadStatus.ACTIVE
    thread_id = _int(item.get("thread_id"))
    if thread_id is None:
        warnings.append(_warning(source, line, "thread object without an integer thread_id"))
    name = item.get("thread_name")
    frames: list[Frame] = []
    raw_frames = item.get("frames")
    if isinstance(raw_frames, list):
        for raw in raw_frames:
            frame = _json_frame(raw)
            if frame is None:
                warnings.append(_warning(source, line, "frame without a name or filename skipped"))
            else:
                frames.append(frame)
    elif raw_frames is not None:
        warnings.append(_warning(source, line, "thread 'frames' is not a list"))
    return ThreadStack(
        thread_id=str(thread_id) if thread_id is not None else "?",
        status=status,
        name=name if isinstance(name, str) else None,
        frames=tuple(frames),
        os_thread_id=_int(item.get("os_thread_id")),
        owns_gil=owns_gil if isinstance(owns_gil, bool) else None,
        source=Location(path=source, line=line),
    )


def _json_frame(raw: Any) -> Frame | None:
    """One Frame object: text mode's short filename where py-spy computed one."""
    if not isinstance(raw, dict):
        return None
    name = raw.get("name")
    short = raw.get("short_filename")
    full = raw.get("filename")
    file = short if isinstance(short, str) and short else full
    if not isinstance(name, str) or not isinstance(file, str):
        return None
    number = _int(raw.get("line"))
    module = raw.get("module")
    local_items: list[Local] = []
    raw_locals = raw.get("locals")
    if isinstance(raw_locals, list):
        for entry in raw_locals:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                value = entry.get("repr")
                local_items.append(
                    Local(
                        name=entry["name"],
                        # py-spy prints `?` when it could not read the value; JSON says null.
                        repr=value if isinstance(value, str) else "?",
                        is_arg=entry.get("arg") is True,
                    )
                )
    return Frame(
        function=name,
        file=file,
        line=number or None,
        native=isinstance(module, str) and bool(module),
        locals=tuple(local_items),
    )


def _int(value: Any) -> int | None:
    """JSON integers only (booleans are ints in Python; they are not ids)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _warning(source: str, line: int, message: str) -> ParseWarning:
    return ParseWarning(source=Location(path=source, line=line), message=message)
