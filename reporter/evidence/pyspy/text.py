"""The text form of `py-spy dump`: a state machine over the cleaned lines of one file.

See the package docstring for what it accepts. Line grammar in `grammar`, frames in
`frames`, error blocks in `failures`, the blocks it fills in `blocks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from reporter.core.gcpause import gc_paused
from reporter.evidence._text import (
    GC_PAUSE_MIN_CHARS,
    LineMachine,
    clean_text,
    excerpt,
    feed_lines,
    reread,
    split_lines,
    stamp_and_label,
)
from reporter.evidence.pyspy import plain
from reporter.evidence.pyspy.blocks import (
    ERROR,
    HEADER,
    META,
    NONE,
    THREAD,
    ProcBlock,
    ThreadBlock,
    WrapperContext,
    freeze,
    name_headerless,
)
from reporter.evidence.pyspy.failures import ErrorBlock, watchdog_failure
from reporter.evidence.pyspy.frames import FRAME_CACHE, cut_frame, looks_like_frame, parse_frame
from reporter.evidence.pyspy.grammar import (
    ANCHOR_RE,
    ERROR_ANCHOR_RE,
    GLUE_SPLIT_RE,
    PANIC_RE,
    PARENT_RE,
    PROCESS_RE,
    RAY_STACK_RE,
    SIGNAL_RE,
    STATUS,
    THREAD_CUT_RE,
    UNKNOWN_THREAD_ID,
    WRAPPER_RE,
    condensed_header,
    ends_header,
    is_separator,
    same_role,
    thread_match,
)
from reporter.evidence.pyspy.subprocesses import merge_repeats
from reporter.model import (
    Environment,
    FailedDump,
    Frame,
    Local,
    ParseResult,
    ProcessDump,
    ThreadStatus,
)

_WHAT = "py-spy output"
_NO_ENVIRONMENT = Environment()
# A `Process` header whose cmdline runs longer than this without a `Python v` line is
# taken as cut short; protects against swallowing a whole file into one cmdline.
_MAX_CMDLINE_LINES = 64


def forget() -> None:
    """Empty the caches the text parsers keep across files (frame lines, thread lines,
    thread blocks): useful while one bundle loads, dead weight after it."""
    FRAME_CACHE.clear()
    plain.THREAD_LINES.clear()
    plain.BLOCKS.clear()


def parse_text(text: str, *, source: str) -> ParseResult:
    """Parse `py-spy dump` text output (any number of dumps) found in `text`.

    `source` names the file in warnings and `Location`s; lines are 1-based in
    the original text. Never raises on malformed input.
    """
    if len(text) < GC_PAUSE_MIN_CHARS:
        return _parse(text, source)  # the usual file: no pause (see `GC_PAUSE_MIN_CHARS`)
    with gc_paused():
        return _parse(text, source)


def _parse(text: str, source: str) -> ParseResult:
    text = clean_text(text)
    dumps = plain.read(text, source)
    if dumps is not None:
        # The plain shape: no warning, no failure, and the one empty environment (frozen,
        # so shared: not one built per file).
        return ParseResult(dumps=tuple(dumps), environment=_NO_ENVIRONMENT)
    parser = _TextParser(source)
    parser.run(split_lines(text))
    return parser.result()


class _TextParser(LineMachine):
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
        "_procs",
        "_retrying",
        "_separator_line",
        "_thread",
    )

    def __init__(self, source: str) -> None:
        super().__init__(source, _WHAT)
        self._procs: list[ProcBlock] = []
        self._failures: list[FailedDump] = []
        self._block: ProcBlock | None = None
        self._thread: ThreadBlock | None = None
        self._mode = NONE
        self._group = 0
        self._group_root: ProcBlock | None = None
        self._separator_line = 0  # line of a separator not yet followed by a block; 0 = none
        self._context: WrapperContext | None = None
        self._error: ErrorBlock | None = None
        self._headline: str | None = None
        self._cmd_lines = 0
        self._loc_arg = False
        self._loc_open = False
        self._loc_items: list[Local] = []
        self._retrying = False

    def run(self, lines: list[str]) -> None:
        """Feed every line; `result()` afterwards."""
        feed_lines(lines, self, FRAME_CACHE)
        self._finish(len(lines))

    def frame_sink(self) -> Callable[[Frame], None] | None:
        """Where a plain frame line goes without `feed`: inside a thread, no pending `--locals`."""
        thread = self._thread
        if self._mode != THREAD or thread is None or self._loc_items or self._loc_open:
            return None
        return thread.frames.append

    def result(self) -> ParseResult:
        """The dumps, failures and warnings gathered by `run`."""
        dumps: list[ProcessDump] = []
        name_headerless(self._procs, self._unknown)
        failed = {f.pid for f in self._failures if f.pid is not None}
        for proc in self._procs:
            proc.failed = proc.pid in failed
        groups: dict[int, list[ProcBlock]] = {}
        for proc in self._procs:
            groups.setdefault(proc.group, []).append(proc)
        for members in groups.values():
            for proc in merge_repeats(members, self._unknown):
                dumps.append(freeze(proc, self._source, self._unknown))
        self._unknown.flush()
        warnings = sorted(self._unknown.warnings, key=lambda w: (w.source.line, w.message))
        return ParseResult(
            dumps=tuple(dumps), failures=tuple(self._failures), warnings=tuple(warnings)
        )

    # ------------------------------------------------------------ line dispatch

    def feed(self, number: int, raw: str, line: str) -> None:
        """Everything but a cached frame line."""
        mode = self._mode
        if mode == HEADER and self._header_line(number, line):
            return
        if mode == ERROR and self._error_line(number, line):
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
            match = PROCESS_RE.match(line)
            if match is None:
                self._other(number, raw, line)
            else:
                self._process(number, raw, line, match)
        elif first == "P" and line.startswith("Python v"):
            self._python_line(number, line)
        elif first == "P" and line.startswith("Parent Process "):
            self._parent_line(number, raw, line)
        elif first == "-" and is_separator(line):
            self._separator(number)
        elif first == "E" and line.startswith("Error: "):
            self._start_error(number, raw, line, line[7:])
        elif first == "P" and line.startswith("Permission Denied"):
            self._start_error(number, raw, line, line, free_text=True)
        elif first == "t" and PANIC_RE.match(line):
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
            match = WRAPPER_RE.search(raw)
            if match is not None:
                self._wrapper(number, raw, match)
                return
        if line.startswith("Stack dump for "):
            match = RAY_STACK_RE.match(line)
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
        anchor = ANCHOR_RE.search(raw)
        if anchor is None and self._context is not None:
            # Right after an SGLang dump line, py-spy's error text may carry the log prefix too.
            anchor = ERROR_ANCHOR_RE.search(raw)
        learned, retry = reread(raw, line, anchor)
        if learned is not None:
            self.prefix = learned
        if retry == line:
            self._not_understood(number, line)
            return
        self._retrying = True
        self.feed(number, raw, retry)
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
        block = ProcBlock(
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
        self._mode = HEADER
        self._cmd_lines = 0
        condensed = condensed_header(match.group(2))
        if condensed is not None:
            # The condensed form carries the version on the header line; no `Python v` follows.
            block.cmd = [condensed[0]]
            block.version = condensed[1]
            self._mode = META

    def _stamp(self, block: ProcBlock, raw: str, line: str) -> None:
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
            self._mode = NONE
            return False
        if line.startswith("Python v"):
            self._mode = META
            self._set_python(number, block, line)
            return True
        if ends_header(line) or self._cmd_lines >= _MAX_CMDLINE_LINES:
            self._end_header(number)
            return False
        block.cmd.append(line)
        self._cmd_lines += 1
        return True

    def _end_header(self, number: int) -> None:
        """Leave header state early: there was no `Python v` line."""
        if self._mode != HEADER:
            return
        self._mode = META
        block = self._block
        if block is None:
            return
        while len(block.cmd) > 1 and not block.cmd[-1].strip():
            block.cmd.pop()
        block.truncated = True
        self._unknown.warn(
            block.line, f"process {block.pid}: header has no 'Python v...' line (output cut?)"
        )

    def _set_python(self, number: int, block: ProcBlock, line: str) -> None:
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
        if self._mode == META and block is not None and block.version is None:
            self._set_python(number, block, line)
            return
        self._not_understood(number, line)

    def _parent_line(self, number: int, raw: str, line: str) -> None:
        """`Parent Process N: cmdline`, printed for children under `--subprocesses`."""
        match = PARENT_RE.match(line)
        block = self._block
        if match is None or block is None or self._mode != META:
            # Not `_other`: its `Process N: ` anchor would take "Parent " for a prefix.
            self._not_understood(number, line)
            return
        block.parent_pid = int(match.group(1))
        block.parent_cmdline = match.group(2)

    def _signal(self, number: int, raw: str, line: str) -> None:
        """`Signal 11: /cores/core.123` opens a `--core` dump; kept as its headline."""
        if SIGNAL_RE.match(line) is None:
            self._other(number, raw, line)
            return
        self._end_thread()
        self._end_header(number)
        self._end_group()
        self._group_root = None
        self._block = None
        self._mode = NONE
        self._headline = line

    # ------------------------------------------------------------ threads and frames

    def _thread_line(self, number: int, raw: str, line: str) -> None:
        """`Thread 8152 (active+gil): "cpu-worker-1"` and its shorter forms."""
        groups = plain.THREAD_LINES.get(line)
        cut = False
        if groups is None:
            match = thread_match(line)
            if match is None:
                match = THREAD_CUT_RE.match(line)
                if match is None or self._block is None:
                    self._other(number, raw, line)
                    return
                cut = True
            groups = match.groups()
            if not cut:
                plain.remember_thread_line(line, groups)
        tid, word, name = groups
        if tid is None:
            tid = UNKNOWN_THREAD_ID
        previous = self._thread if self._mode == THREAD else None
        if self._loc_items:
            self._end_locals()
        self._loc_open = False
        status = ThreadStatus.UNKNOWN
        if word:
            found = STATUS.get(word)
            if found is not None:
                status = found
            elif not cut:
                self._unknown.warn(number, f"unknown thread status {word!r}")
        thread = ThreadBlock(tid=tid, status=status, name=name, line=number, frames=[])
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
            and same_role(previous.name, name)
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
        self._mode = THREAD

    def _owner(self, number: int, raw: str, line: str) -> ProcBlock:
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
            if self._mode in (HEADER, META) and block.after_separator and block.parent_pid is None:
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

    def _headerless(self, number: int, raw: str, line: str, why: str) -> ProcBlock:
        """A new block for threads or frames pasted without their `Process` header."""
        self._end_group()
        self._group += 1
        block = ProcBlock(
            pid=None, line=number, group=self._group, after_separator=0, headerless=True
        )
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
        if self._mode != THREAD or thread is None:
            if self._mode in (NONE, META) and looks_like_frame(line):
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
                glued = GLUE_SPLIT_RE.split(line[4:]) if ")  " in line else None
                if glued is not None and len(glued) > 1:
                    frames = [parse_frame("    " + piece) for piece in glued]
                    if all(f is not None for f in frames):
                        thread.frames.extend(f for f in frames if f is not None)
                        self._unknown.warn(number, f"{len(frames)} frames glued on one line; split")
                        return
                frame = parse_frame(line)
                if frame is None:
                    self._other(number, raw, line)
                else:
                    thread.frames.append(frame)
                return
            # No closing parenthesis: the line was cut (pipe closed, size limit).
            thread.frames.append(cut_frame(line))
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

    def _fragment(self, number: int, raw: str, line: str) -> ThreadBlock:
        """Frames with no `Thread` line above them: one anonymous thread holds them."""
        block = self._block
        if block is None or self._separator_line:
            block = self._headerless(
                number, raw, line, "frames without a 'Thread' line: one anonymous thread"
            )
        else:
            self._unknown.warn(number, "frames without a 'Thread' line: one anonymous thread")
        thread = ThreadBlock(
            tid=UNKNOWN_THREAD_ID, status=ThreadStatus.UNKNOWN, name=None, line=number
        )
        block.threads.append(thread)
        self._thread = thread
        self._mode = THREAD
        return thread

    def _end_locals(self) -> None:
        """Attach pending `--locals` entries to the frame above them."""
        items = self._loc_items
        if not items:
            return
        thread = self._thread
        if thread is not None and thread.frames:
            top = thread.frames[-1]
            thread.frames[-1] = replace(top, locals=(*top.locals, *items))
        self._loc_items = []

    def _end_thread(self) -> None:
        self._end_locals()
        self._loc_open = False
        self._thread = None
        if self._mode == THREAD:
            self._mode = META

    # ------------------------------------------------------------ separators, wrappers, errors

    def _separator(self, number: int) -> None:
        """A dash line between `--subprocesses` blocks; empty pairs are normal."""
        self._end_thread()
        self._end_header(number)
        self._mode = NONE
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
        """`Pyspy dump PID 187: rc=0 timeout=False truncated=True` (SGLang, docs/formats.md 4.5)."""
        self._close_all(number)
        stamp, label = stamp_and_label(raw[: match.start()])
        tail = match.group(2)
        self._context = WrapperContext(
            pid=int(match.group(1)),
            line=number,
            captured_at=stamp,
            label=label,
            truncated="truncated=True" in tail or "timeout=True" in tail,
        )

    def _watchdog_failure(self, number: int, raw: str) -> bool:
        """SGLang's watchdog lines (see `watchdog_failure`); False when the line is neither."""
        found = watchdog_failure(raw, number, self._source)
        if found is None:
            return False
        self._close_all(number)
        if isinstance(found, ErrorBlock):
            self._error = found
            self._mode = ERROR
        elif not any(f.pid == found.pid for f in self._failures):
            # The attempts' own lines are not in this file: the summary is all there is.
            self._failures.append(found)
        return True

    def _close_all(self, number: int) -> None:
        """A line that starts afresh: close the thread, header, error, tree and context."""
        self._end_thread()
        self._end_header(number)
        self._end_error()
        self._end_group()
        self._unused_context()
        self._block = None
        self._mode = NONE

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
        resume = self._mode if self._mode in (THREAD, META) else NONE
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
        self._error = ErrorBlock(
            pid=pid,
            line=number,
            reason=reason.strip() or line.strip(),
            captured_at=stamp,
            resume=resume,
            panic=panic,
            free_text=free_text,
        )
        self._mode = ERROR

    def _error_line(self, number: int, line: str) -> bool:
        """Continue an error block; False when the line is not part of it."""
        error = self._error
        if error is None:
            self._mode = NONE
            return False
        if error.takes(line):
            return True
        self._end_error()
        return False

    def _end_error(self) -> None:
        error = self._error
        if error is None:
            return
        self._error = None
        self._failures.append(error.failed_dump(self._source))
        if self._mode == ERROR:
            self._mode = error.resume
            if error.resume == THREAD and self._thread is None:
                self._mode = META

    def _finish(self, last_line: int) -> None:
        """End of input: close whatever is open."""
        if self._mode == ERROR:
            self._end_error()
        self._end_thread()
        self._end_header(last_line)
        self._end_group()
        self._unused_context()
        self._unknown.flush()


def _has_main(block: ProcBlock) -> bool:
    return any(thread.name == "MainThread" for thread in block.threads)
