"""Parse Python `faulthandler` dumps (docs/formats.md section 2) into `ParseResult`s.

Input is the file's text and the name to cite; nothing here reads files. By example::

    Fatal Python error: Segmentation fault

    Thread 0x00007fcf15d3f6c0 (most recent call first):
      File "/srv/app/worker.py", line 3 in <lambda>

    Current thread 0x00007fcf16333b80 (most recent call first):
      File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at

gives one `ProcessDump(pid=None, headline="Fatal Python error: Segmentation fault")`
with two threads, ids kept as printed (`0x00007fcf15d3f6c0`), status UNKNOWN and
`is_current=True` on the `Current thread`. A file may hold many dumps (repeated
`dump_traceback_later`, several processes writing to one stderr): a headline, a
thread id already seen in the current dump, a header after the main thread (the
one ending in `<module>`, printed last) or after a `Current thread` that is the main
thread starts the next dump; a current worker thread is printed first and the
rest of its dump follows it. Where the lines of two
dumps are mixed line by line the parser keeps going and says so in a warning.
Log prefixes are stripped as in the py-spy parser.

Thread order: faulthandler prints the newest thread first; dumps list threads
oldest first (normally the main thread first), the same as the py-spy parsers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from reporter.core.gcpause import gc_paused
from reporter.evidence._text import (
    GC_PAUSE_MIN_CHARS,
    LineMachine,
    clean_lines,
    excerpt,
    feed_lines,
    reread,
    stamp_and_label,
)
from reporter.model import (
    EvidenceKind,
    Frame,
    Location,
    ParseResult,
    ProcessDump,
    ThreadStack,
    ThreadStatus,
)

_WHAT = "faulthandler output"
_HEADER_RE = re.compile(
    r"(Current thread|Thread) (0x[0-9a-fA-F]{1,32}) \(most recent call first\):\Z"
)
_TIMEOUT_RE = re.compile(r"Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\Z")
_ANCHOR_RE = re.compile(
    r"Fatal Python error: "
    r"|(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):\Z"
    r"|Stack \(most recent call first\):\Z"
    r"|Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\Z"
    # Bounded: CPython cuts strings at 500 characters, and a search must stay linear.
    r'|  File "[^\n]{0,600}?", line (?:\d+|\?\?\?) in '
)
_STACK_HEADER = "Stack (most recent call first):"
_C_STACK_HEADER = "Current thread's C stack trace"
# Lines under a thread that say why it has no (more) Python frames.
_THREAD_NOTES = frozenset(
    (
        "  <no Python frame>",
        "  <tstate is freed>",
        "  Garbage-collecting",
        "  <truncated rest of calls>",
    )
)
# Thread id used for `Stack (most recent call first):`, which prints none.
UNKNOWN_THREAD_ID = "?"

_FRAME_CACHE: dict[str, Frame] = {}
_FRAME_CACHE_MAX = 1 << 16


def forget() -> None:
    """Empty the frame-line cache kept across the files of one load."""
    _FRAME_CACHE.clear()


def parse(text: str, *, source: str) -> ParseResult:
    """Parse every faulthandler dump found in `text`; never raises on malformed input."""
    with gc_paused(len(text) >= GC_PAUSE_MIN_CHARS):
        parser = _Parser(source)
        parser.run(clean_lines(text))
        return parser.result()


@dataclass(slots=True, eq=False)
class _Thread:
    tid: str
    is_current: bool
    line: int
    frames: list[Frame] = field(default_factory=list)
    truncated: bool = False
    noted: bool = False  # a `<no Python frame>`-style line stands in for frames


@dataclass(slots=True, eq=False)
class _Dump:
    line: int
    headline: str | None = None
    threads: list[_Thread] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    truncated: bool = False
    closed: bool = False  # `Extension modules:` ends a fatal-error dump
    has_current: bool = False
    mixed: bool = False
    captured_at: datetime | None = None
    label: str | None = None


class _Parser(LineMachine):
    """State machine over the cleaned lines of one file."""

    __slots__ = ("_c_stack", "_dump", "_dumps", "_retrying", "_thread")

    def __init__(self, source: str) -> None:
        super().__init__(source, _WHAT)
        self._dumps: list[_Dump] = []
        self._dump: _Dump | None = None
        self._thread: _Thread | None = None
        self._c_stack = False
        self._retrying = False

    def run(self, lines: list[str]) -> None:
        """Feed every line; `result()` afterwards."""
        feed_lines(lines, self, _FRAME_CACHE)
        self._unknown.flush()

    def frame_sink(self) -> Callable[[Frame], None] | None:
        """The current thread's frames.append: frame lines seen before skip `feed`."""
        thread = self._thread
        return thread.frames.append if thread is not None and not self._c_stack else None

    def result(self) -> ParseResult:
        """The dumps and warnings gathered by `run`."""
        dumps = [self._freeze(dump) for dump in self._dumps]
        self._unknown.flush()
        warnings = sorted(self._unknown.warnings, key=lambda w: (w.source.line, w.message))
        return ParseResult(dumps=tuple(dumps), warnings=tuple(warnings))

    # ------------------------------------------------------------ dispatch

    def feed(self, number: int, raw: str, line: str) -> None:
        """One line that is not a frame line seen before."""
        if self._c_stack:
            if line.startswith(" "):
                return
            self._c_stack = False
        if not line:
            return
        first = line[0]
        if first == "F" and line.startswith('File "') and ('", line ' in line):
            # A dump pasted without its indentation: `File "a.py", line 3 in f`.
            line = "  " + line
            first = " "
        if first == " ":
            self._indented(number, raw, line)
        elif line.startswith(("Thread ", "Current thread ")):
            self._header(number, raw, line)
        elif line.startswith(_C_STACK_HEADER):
            # 3.14 appends the C stack of fatal errors; addresses, not Python frames.
            self._c_stack = True
            self._thread = None
        elif line.startswith("Fatal Python error: ") or (
            first == "T" and line.startswith("Timeout (") and _TIMEOUT_RE.match(line)
        ):
            self._headline(number, raw, line)
        elif line == _STACK_HEADER:
            self._stack(number, raw, line)
        elif line == "...":
            if self._dump is None:
                self._other(number, raw, line)
            else:
                # faulthandler stops after 100 threads.
                self._dump.truncated = True
                self._unknown.warn(number, "threads cut at faulthandler's limit ('...')")
        elif line.startswith("Extension modules: "):
            if self._dump is not None:
                self._dump.closed = True
            self._thread = None
        elif line.startswith("Python runtime state: "):
            return
        else:
            self._other(number, raw, line)

    def _other(self, number: int, raw: str, line: str) -> None:
        """A new log prefix, trailing blanks, or a line not understood."""
        if self._retrying:
            self._unknown.add(number, line)
            return
        learned, retry = reread(raw, line, _ANCHOR_RE.search(raw))
        if learned is not None:
            self.prefix = learned
        if retry == line:
            self._unknown.add(number, line)
            return
        self._retrying = True
        self.feed(number, raw, retry)
        self._retrying = False

    # ------------------------------------------------------------ structure

    def _new_dump(self, number: int, raw: str, line: str) -> _Dump:
        dump = _Dump(line=number)
        if len(raw) > len(line):
            dump.captured_at, dump.label = stamp_and_label(raw[: len(raw) - len(line)])
        self._dumps.append(dump)
        self._dump = dump
        self._thread = None
        return dump

    def _headline(self, number: int, raw: str, line: str) -> None:
        """`Fatal Python error: ...` or `Timeout (0:00:01)!` opens a dump."""
        previous = self._dump
        mixed = previous is not None and not previous.threads and previous.headline is not None
        if previous is not None and mixed:
            self._mixed(previous, number)
        dump = self._new_dump(number, raw, line)
        dump.headline = line
        dump.mixed = mixed  # one warning per mixed stretch

    def _header(self, number: int, raw: str, line: str) -> None:
        """`Thread 0x... (most recent call first):`, or the `Current thread` one."""
        match = _HEADER_RE.match(line)
        if match is None:
            self._other(number, raw, line)
            return
        tid = match.group(2)
        is_current = match.group(1) == "Current thread"
        dump = self._dump
        previous = self._thread
        if previous is not None and dump is not None and not previous.frames and not previous.noted:
            # Every header is followed by at least one line of its own: two headers in a
            # row mean two writers are interleaved line by line.
            self._mixed(dump, number)
        if (
            dump is None
            or dump.closed
            or tid in dump.seen
            or (is_current and dump.has_current)
            or _ended(dump)
        ):
            carried = dump is not None and dump.mixed and not dump.closed
            dump = self._new_dump(number, raw, line)
            dump.mixed = carried
        self._open_thread(dump, tid, is_current=is_current, number=number)
        dump.seen.add(tid)

    def _stack(self, number: int, raw: str, line: str) -> None:
        """`Stack (most recent call first):`: the current thread only, id not printed."""
        dump = self._dump
        if dump is None or dump.threads or dump.closed:
            dump = self._new_dump(number, raw, line)
        self._open_thread(dump, UNKNOWN_THREAD_ID, is_current=True, number=number)

    def _open_thread(self, dump: _Dump, tid: str, *, is_current: bool, number: int) -> _Thread:
        """A new thread at the end of `dump`: frame lines go to it from now on."""
        thread = _Thread(tid=tid, is_current=is_current, line=number)
        dump.threads.append(thread)
        dump.has_current = dump.has_current or is_current
        self._thread = thread
        return thread

    def _mixed(self, dump: _Dump, number: int) -> None:
        if dump.mixed:
            return
        dump.mixed = True
        self._unknown.warn(
            number,
            "faulthandler output of several processes is mixed line by line here "
            "(one stderr shared by several writers); frames from this line on may be "
            "attributed to the wrong thread or dump",
        )

    def _indented(self, number: int, raw: str, line: str) -> None:
        """Frame lines, `  ...` (frame limit) and thread notes."""
        thread = self._thread
        if thread is None:
            if not line.startswith('  File "') or _frame(line) is None:
                self._other(number, raw, line)
                return
            thread = self._fragment(number, raw, line)
        if line.startswith('  File "'):
            glued = line.find('  File "', 8)
            if glued > 0 and self._glued(number, thread, line, glued):
                return
            frame = _frame(line)
            if frame is not None:
                thread.frames.append(frame)
                return
            if '", line ' not in line:
                # Cut mid-way: keep the file as far as it goes.
                thread.frames.append(Frame(function="???", file=line[8:].rstrip('"')))
                thread.truncated = True
                self._unknown.warn(number, f"frame line cut short: {excerpt(line)}")
                return
            self._other(number, raw, line)
        elif line == "  ...":
            # faulthandler stops after 100 frames per thread.
            thread.truncated = True
            self._unknown.warn(
                number, f"thread {thread.tid}: frames cut at faulthandler's limit ('...')"
            )
        elif line in _THREAD_NOTES:
            thread.noted = True
            if line == "  <truncated rest of calls>":
                thread.truncated = True
                self._unknown.warn(number, f"thread {thread.tid}: rest of the calls cut")
        else:
            self._other(number, raw, line)

    def _fragment(self, number: int, raw: str, line: str) -> _Thread:
        """`File` lines with no thread header above them: one anonymous thread holds them."""
        dump = self._dump
        if dump is None or dump.closed or dump.has_current:
            dump = self._new_dump(number, raw, line)
        self._unknown.warn(number, "frames without a thread header: one anonymous thread")
        return self._open_thread(dump, UNKNOWN_THREAD_ID, is_current=False, number=number)

    def _glued(self, number: int, thread: _Thread, line: str, at: int) -> bool:
        """Two or more `File` frames on one line (a paste that lost newlines); False if not."""
        pieces: list[str] = []
        start = 0
        while at > 0:
            pieces.append(line[start:at])
            start = at
            at = line.find('  File "', at + 8)
        pieces.append(line[start:])
        frames = [_frame(piece.rstrip()) for piece in pieces]
        if any(frame is None for frame in frames):
            return False
        thread.frames.extend(frame for frame in frames if frame is not None)
        self._unknown.warn(number, f"{len(frames)} frames glued on one line; split")
        return True

    # ------------------------------------------------------------ output

    def _freeze(self, dump: _Dump) -> ProcessDump:
        source = self._source
        if not dump.threads:
            self._unknown.warn(dump.line, "faulthandler dump without any thread stack")
        threads = tuple(
            ThreadStack(
                thread_id=thread.tid,
                status=ThreadStatus.UNKNOWN,
                frames=tuple(thread.frames),
                is_current=thread.is_current,
                truncated=thread.truncated,
                source=Location(path=source, line=thread.line),
            )
            for thread in reversed(dump.threads)
        )
        return ProcessDump(
            pid=None,
            kind=EvidenceKind.FAULTHANDLER,
            threads=threads,
            captured_at=dump.captured_at,
            label=dump.label,
            truncated=dump.truncated or any(thread.truncated for thread in threads),
            headline=dump.headline,
            source=Location(path=source, line=dump.line),
        )


def _ended(dump: _Dump) -> bool:
    """True when nothing more of this dump can follow.

    faulthandler prints threads newest first, so the main thread (the oldest, whose
    outermost frame is `<module>`) comes last. The current thread is usually the
    main thread too (a fatal error, a signal handler), which ends the dump; but when
    a worker thread called `dump_traceback` it is printed first, with the main
    thread still to come: a current thread that started in `threading`'s bootstrap
    does not end the dump.
    """
    last = dump.threads[-1] if dump.threads else None
    if last is not None and last.frames and last.frames[-1].function == "<module>":
        return True
    if not dump.has_current:
        return False
    current = next((t for t in dump.threads if t.is_current), None)
    return not (
        current is not None
        and current.frames
        and current.frames[-1].function == "_bootstrap"
        and current.frames[-1].file.endswith("threading.py")
    )


def _frame(line: str) -> Frame | None:
    """`  File "f.py", line 12 in func` → Frame (line `???` → None); None if malformed."""
    cached = _FRAME_CACHE.get(line)
    if cached is not None:
        return cached
    # rfind: a file name may contain `", line ` itself; a function name cannot.
    cut = line.rfind('", line ')
    if cut < 8:
        return None
    rest = line[cut + 8 :]
    space = rest.find(" in ")
    if space <= 0:
        return None
    number_text = rest[:space]
    number: int | None
    if number_text == "???":
        number = None
    elif number_text.isdigit() and number_text.isascii() and len(number_text) < 10:
        number = int(number_text)
    else:
        return None
    frame = Frame(function=rest[space + 4 :], file=line[8:cut], line=number)
    if len(_FRAME_CACHE) >= _FRAME_CACHE_MAX:
        _FRAME_CACHE.clear()
    _FRAME_CACHE[line] = frame
    return frame
