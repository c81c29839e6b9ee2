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


# The frames of thread blocks seen before, keyed by the block's lines (everything between
# a `Thread` line and the next unindented line): a stuck rank repeats its stacks in every
# snapshot, and the ranks of one group repeat each other's. Equal keys give equal frames,
# so one tuple serves them all (less memory, and `StackTable.intern` finds it by identity).
BLOCKS: dict[tuple[str, ...], tuple[Frame, ...]] = {}
_BLOCKS_MAX = 1 << 13


@dataclass(slots=True)
class _Snapshot:
    """One process block of the file as read: where it starts, its extent, its dump."""

    start: int
    """0-based index of its `Process` line."""
    length: int
    """Its lines, from the `Process` line to its last non-blank line."""
    marks: int
    """Its unindented lines (the `Process` and `Python v` lines, its threads)."""
    dump: ProcessDump


def read(lines: list[str], source: str) -> list[ProcessDump] | None:
    """The dumps of a plain file, in file order; None when it is not plain."""
    dumps: list[ProcessDump] = []
    count = len(lines)
    # The unindented lines, found in one pass: a thread's block is every line between its
    # `Thread` line and the next of them (frames and blank lines), so frame lines are
    # never visited one by one here.
    starts = [at for at, line in enumerate(lines) if line and line[0] != " "]
    starts.append(count)
    if any(lines[: starts[0]]):
        return None  # an indented line before anything else
    seen: dict[str, _Head] = {}
    last = len(starts) - 1
    index = 0
    before: _Snapshot | None = None
    while index < last:
        at = starts[index]
        if not lines[at].startswith("Process "):
            return None  # a thread with no process, or any other unindented line
        if before is not None:
            again = _again(lines, starts, index, before, source)
            if again is not None:
                dumps.append(again.dump)
                before = again
                index += again.marks
                continue
        header = _header(lines, starts, index)
        if header is None:
            return None
        index += 2  # the `Process` and `Python v` lines
        threads: list[ThreadStack] = []
        while index < last:
            raw = lines[starts[index]]
            if raw[0] != "T":
                break
            stack = _thread(lines, starts, index, seen, source)
            if stack is None:
                return None
            threads.append(stack)
            index += 1
        if not threads:
            return None
        pid, title, version, exe = header
        dump = parsed_dump(
            pid, EvidenceKind.PYSPY_TEXT, title, version, exe, tuple(threads), False, source, at + 1
        )
        dumps.append(dump)
        end = starts[index]
        while not lines[end - 1]:
            end -= 1  # blank lines after the last frame are no part of the comparison
        before = _Snapshot(at, end - at, 2 + len(threads), dump)
    return dumps or None


def _again(
    lines: list[str], starts: list[int], index: int, before: _Snapshot, source: str
) -> _Snapshot | None:
    """The process block at `starts[index]` when its lines are those of the block before
    (a stuck process repeats itself from snapshot to snapshot): the same dump with every
    line moved; None when they differ (it is then read line by line)."""
    at = starts[index]
    length = before.length
    marks = index + before.marks
    if marks >= len(starts):
        return None
    end = starts[marks]
    # Equal lines, then only blank lines up to the next unindented line, which is not a
    # thread of this block (a `Process` line or the end of the file; anything else is
    # refused by `read` on the next turn, as it is after a block read line by line).
    if end < len(lines) and lines[end][0] == "T":
        return None
    if (
        any(lines[at + length : end])
        or lines[at : at + length] != lines[before.start : before.start + length]
    ):
        return None
    shift = at - before.start
    dump = before.dump
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
    return _Snapshot(
        at,
        length,
        before.marks,
        parsed_dump(
            dump.pid,
            EvidenceKind.PYSPY_TEXT,
            dump.cmdline,
            dump.python_version,
            dump.python_exe,
            threads,
            False,
            source,
            at + 1,
        ),
    )


def _header(
    lines: list[str], starts: list[int], index: int
) -> tuple[int, str, str | None, str | None] | None:
    """(PID, title, Python version, interpreter) of the plain `Process` line at
    `starts[index]` and the `Python v` line right after it; None when they are not plain."""
    at = starts[index]
    number = at + 1
    nxt = starts[index + 1]
    match = PROCESS_RE.match(lines[at])
    # The `Python v` line comes at once; after it, blank lines only until a thread.
    if match is None or nxt != number or nxt >= len(lines):
        return None
    if not lines[nxt].startswith("Python v"):
        return None
    if any(lines[nxt + 1 : starts[index + 2]]):
        return None
    # Interned: every snapshot repeats the title, every rank the interpreter.
    title = intern(match.group(2))
    if CONDENSED_RE.match(title) is not None:
        return None
    rest = lines[number][8:]
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
    lines: list[str], starts: list[int], index: int, seen: dict[str, _Head], source: str
) -> ThreadStack | None:
    """The thread whose line is at `starts[index]`, its frames the lines up to the next
    unindented line; None when either is not plain."""
    at = starts[index]
    raw = lines[at]
    head = seen.get(raw)
    if head is None:
        head = _thread_head(raw)
        if head is None:
            return None
        seen[raw] = head
    key = tuple(lines[at + 1 : starts[index + 1]])
    frames = BLOCKS.get(key)
    if frames is None:
        frames = _block_frames(key)
        if frames is None:
            return None
        if len(BLOCKS) >= _BLOCKS_MAX:
            BLOCKS.clear()
        BLOCKS[key] = frames
    tid, status, name, os_id, gil = head
    return parsed_thread(tid, status, name, frames, os_id, gil, False, source, at + 1)


def _block_frames(block: tuple[str, ...]) -> tuple[Frame, ...] | None:
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
