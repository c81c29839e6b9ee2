"""The usual `py-spy dump` text file, read without the state machine (the fast path of `text`).

A clean capture is a run of blocks of one shape, and a bundle of thousands of ranks is
mostly such files::

    Process 8251: sglang::scheduler_TP0
    Python v3.11.7 (/usr/bin/python3.11)

    Thread 8251 (idle): "MainThread"
        recv (zmq/sugar/socket.py:802)

`read` takes a file only when every line is one of these: a `Process` header followed at
once by its `Python v` line, a thread line with a known status, a frame line of four
spaces, or a blank line; and every process shows threads and every thread frames. For
such a file it makes the dumps the state machine makes (with the same freezing helpers),
and no warning. Anything else (a log prefix, `--locals`, subprocess separators, error text, a
condensed header, a cut or re-indented line, a thread without frames) gives None, and the
state machine reads the file from the start: its rules, warnings included, stay the only
ones for everything but the plain shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from sys import intern

from reporter.evidence.pyspy.blocks import OWNS_GIL
from reporter.evidence.pyspy.frames import FRAME_CACHE, parse_frame
from reporter.evidence.pyspy.grammar import (
    CONDENSED_RE,
    PROCESS_RE,
    STATUS,
    UNKNOWN_THREAD_ID,
    thread_match,
)
from reporter.model import EvidenceKind, Frame, ProcessDump, ThreadStack, ThreadStatus
from reporter.model.stacks import parsed_dump, parsed_thread

# The parts of thread lines seen before: each snapshot of a process repeats its lines.
THREAD_LINES: dict[str, tuple[str | None, ...]] = {}
_THREAD_LINES_MAX = 1 << 16


def remember_thread_line(line: str, groups: tuple[str | None, ...]) -> None:
    """Keep the parts of a thread line that matched in full (the cache is bounded)."""
    if len(THREAD_LINES) >= _THREAD_LINES_MAX:
        THREAD_LINES.clear()
    THREAD_LINES[line] = groups


# What a thread line says, frozen as `parsed_thread` takes it: (id, status, name, OS id,
# owns the GIL). Kept per file: each snapshot of a process repeats its thread lines, but
# their thread ids are the process's own, so a cache across files would only hold memory.
_Head = tuple[str, ThreadStatus, str | None, int | None, bool | None]


def _thread_head(raw: str) -> _Head | None:
    """The parts of a plain thread line; None when it is not one (or its status is unknown)."""
    groups = THREAD_LINES.get(raw)  # the state machine's, when it read the file first
    if groups is None:
        match = thread_match(raw) if raw.startswith("Thread ") else None
        if match is None:
            return None
        groups = match.groups()
    tid, word, name = groups
    status = STATUS.get(word) if word else ThreadStatus.UNKNOWN
    if status is None:
        return None
    tid = UNKNOWN_THREAD_ID if tid is None else tid
    # One string per distinct name (`MainThread` in every process), not one per match.
    name = intern(name) if name is not None else None
    # A decimal id is the OS thread id; hex is the pthread id (docs/formats.md 1.2).
    return tid, status, name, int(tid) if tid.isdigit() else None, OWNS_GIL.get(status)


# The frames of thread blocks seen before, keyed by the block's lines joined (everything
# between a `Thread` line and the next unindented line): the ranks of one group repeat each
# other's stacks. Equal keys give equal frames, so one tuple serves them all (less memory,
# and `StackTable.intern` finds it by identity). One string per key, not a tuple of lines:
# the cache outlives the load, and its keys are all it holds beside the frames.
BLOCKS: dict[str, tuple[Frame, ...]] = {}
_BLOCKS_MAX = 1 << 13


@dataclass(slots=True)
class _Snapshot:
    """One process block of the file as read: its text, where it starts, its dump."""

    body: str
    """Its text, from the `Process` line to its last non-blank line (no newline after)."""
    newlines: int
    """The newlines in `body`."""
    line: int
    """The 1-based number of its `Process` line."""
    dump: ProcessDump


def read(text: str, source: str) -> list[ProcessDump] | None:
    """The dumps of a plain file (its text as `clean_text` leaves it), in file order; None
    when it is not plain.

    The file is read one process block at a time (from a `Process` line to the next): a
    block whose text is the block's before (a stuck process, snapshot after snapshot) is
    that block's dump with its lines moved, found by one comparison of text and never
    split into lines.
    """
    size = len(text)
    pos = 0
    if text.startswith("\n"):
        pos = size - len(text.lstrip("\n"))  # blank lines before the first process
    if not text.startswith("Process ", pos):
        return None  # a thread with no process, an indented line, or any other line
    number = pos + 1  # the 1-based line number at `pos`
    dumps: list[ProcessDump] = []
    seen: dict[str, _Head] = {}
    before: _Snapshot | None = None
    while pos < size:
        end = text.find("\nProcess ", pos) + 1 or size  # where the next block starts
        trim = end
        while text[trim - 1] == "\n":
            trim -= 1  # blank lines after the last frame are no part of the comparison
        if (
            before is not None
            and trim - pos == len(before.body)
            and text.startswith(before.body, pos)
        ):
            moved = _moved(before.dump, number - before.line, source)
            before = _Snapshot(before.body, before.newlines, number, moved)
            dumps.append(moved)
            number += before.newlines + end - trim
            pos = end
            continue
        lines = text[pos:end].split("\n")
        if not lines[-1]:
            lines.pop()  # what follows the block's last newline: no line
        dump = _block(lines, number, seen, source, before.dump.cmdline if before else None)
        if dump is None:
            return None
        dumps.append(dump)
        body = len(lines)
        while not lines[body - 1]:
            body -= 1
        before = _Snapshot(text[pos:trim], body - 1, number, dump)
        number += len(lines)
        pos = end
    return dumps


def _block(
    lines: list[str], number: int, seen: dict[str, _Head], source: str, title_before: str | None
) -> ProcessDump | None:
    """The dump of one process block (`lines[0]` its `Process` line, at line `number`);
    None when the block is not plain. `title_before` is the block before's title: when the
    same, one string serves both."""
    count = len(lines)
    # The unindented lines, found in one pass: a thread's block is every line between its
    # `Thread` line and the next of them (frames and blank lines), so frame lines are
    # never visited one by one here.
    starts = [at for at, line in enumerate(lines) if line and line[0] != " "]
    starts.append(count)
    header = _header(lines, starts)
    if header is None:
        return None
    threads: list[ThreadStack] = []
    for index in range(2, len(starts) - 1):  # past the `Process` and `Python v` lines
        if lines[starts[index]][0] != "T":
            return None  # any other unindented line
        stack = _thread(lines, starts, index, seen, source, number)
        if stack is None:
            return None
        threads.append(stack)
    if not threads:
        return None
    pid, title, version, exe = header
    if title == title_before:
        title = title_before
    return parsed_dump(
        pid, EvidenceKind.PYSPY_TEXT, title, version, exe, tuple(threads), False, source, number
    )


def _moved(dump: ProcessDump, shift: int, source: str) -> ProcessDump:
    """`dump` with every line `shift` lines further."""
    threads = tuple(
        [
            parsed_thread(
                t.thread_id,
                t.status,
                t.name,
                t.frames,
                t.os_thread_id,
                t.owns_gil,
                False,
                source,
                t.source.line + shift,
            )
            for t in dump.threads
        ]
    )
    return parsed_dump(
        dump.pid,
        EvidenceKind.PYSPY_TEXT,
        dump.cmdline,
        dump.python_version,
        dump.python_exe,
        threads,
        False,
        source,
        dump.source.line + shift,
    )


def _header(lines: list[str], starts: list[int]) -> tuple[int, str, str | None, str | None] | None:
    """(PID, title, Python version, interpreter) of the block's `Process` line and the
    `Python v` line right after it; None when they are not plain."""
    match = PROCESS_RE.match(lines[0])
    nxt = starts[1]
    # The `Python v` line comes at once; after it, blank lines only until a thread.
    if match is None or nxt != 1 or nxt >= len(lines):
        return None
    if not lines[nxt].startswith("Python v"):
        return None
    if any(lines[nxt + 1 : starts[2]]):
        return None
    # The interpreter interned: every rank repeats it (a title is most often the rank's own).
    title = match.group(2)
    if CONDENSED_RE.match(title) is not None:
        return None
    rest = lines[1][8:]
    cut = rest.find(" (")
    exe: str | None = None
    if cut < 0:
        version = rest.strip() or None
    else:
        version, exe = rest[:cut], rest[cut + 2 :]
        if not exe.endswith(")"):
            return None
        exe = exe[:-1]
    return (
        int(match.group(1)),
        title,
        intern(version) if version is not None else None,
        intern(exe) if exe is not None else None,
    )


def _thread(
    lines: list[str],
    starts: list[int],
    index: int,
    seen: dict[str, _Head],
    source: str,
    number: int,
) -> ThreadStack | None:
    """The thread whose line is at `starts[index]` (`lines[0]` is at line `number`), its
    frames the lines up to the next unindented line; None when either is not plain."""
    at = starts[index]
    raw = lines[at]
    head = seen.get(raw)
    if head is None:
        head = _thread_head(raw)
        if head is None:
            return None
        seen[raw] = head
    block = lines[at + 1 : starts[index + 1]]
    key = "\n".join(block)  # lines hold no newline: equal keys, equal lines
    frames = BLOCKS.get(key)
    if frames is None:
        frames = _block_frames(block)
        if frames is None:
            return None
        if len(BLOCKS) >= _BLOCKS_MAX:
            BLOCKS.clear()
        BLOCKS[key] = frames
    tid, status, name, os_id, gil = head
    return parsed_thread(tid, status, name, frames, os_id, gil, False, source, number + at)


def _block_frames(block: list[str]) -> tuple[Frame, ...] | None:
    """The frames of one thread's lines (blank or indented); None when one is not a plain
    frame line, or there is no frame (a thread without frames is not plain)."""
    cached = FRAME_CACHE.get
    frames: list[Frame] = []
    for raw in block:
        frame = cached(raw)
        if frame is not None:
            frames.append(frame)
            continue
        if not raw:
            continue
        # `raw[4:5]`, not `raw[4]`: a line of exactly four spaces is not a frame line.
        if (
            not raw.startswith("    ")
            or raw[4:5] in ("", " ")
            or not raw.endswith(")")
            or ")  " in raw
        ):
            return None
        frame = parse_frame(raw)
        if frame is None:
            return None
        frames.append(frame)
    return tuple(frames) if frames else None
