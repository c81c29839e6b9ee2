"""What the text parser holds while it reads: mutable blocks, and how they are frozen.

A `ProcBlock` is one `Process` block (or threads pasted with no header) and its
`ThreadBlock`s; `WrapperContext` is what an SGLang `Pyspy dump PID N: ...` line said
about the output after it. `freeze` turns a finished block into a `ProcessDump`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter

from reporter.evidence._text import Unrecognised
from reporter.model import (
    EvidenceKind,
    Frame,
    Location,
    ProcessDump,
    ThreadStack,
    ThreadStatus,
)
from reporter.model.stacks import parsed_thread

_TRUNCATED = attrgetter("truncated")

# Parser states (ints: the hot loop compares them for every line it does not cache).
NONE, HEADER, META, THREAD, ERROR = range(5)

# Only these statuses say the thread holds the GIL; `idle` threads may hold it too.
OWNS_GIL = {ThreadStatus.ACTIVE_GIL: True, ThreadStatus.GIL: True}


@dataclass(slots=True, eq=False)
class ThreadBlock:
    """A thread line and the frames under it, while parsing."""

    tid: str
    status: ThreadStatus
    name: str | None
    line: int
    frames: list[Frame] = field(default_factory=list)
    truncated: bool = False
    shared_from: int | None = None  # line of the first thread line sharing this stack


@dataclass(slots=True, eq=False)
class ProcBlock:
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
    threads: list[ThreadBlock] = field(default_factory=list)
    captured_at: datetime | None = None
    label: str | None = None
    truncated: bool = False
    headline: str | None = None
    headerless: bool = False  # threads (or frames) pasted without a `Process` line
    slot: int = 0
    failed: bool = False  # py-spy's error text for this PID follows: no thread, nothing cut


@dataclass(slots=True, eq=False)
class WrapperContext:
    """What an SGLang `Pyspy dump PID N: ...` line says about the output after it."""

    pid: int
    line: int
    captured_at: datetime | None
    label: str | None
    truncated: bool
    used: bool = False


def name_headerless(procs: list[ProcBlock], unknown: Unrecognised) -> None:
    """PIDs and slots for blocks pasted without a `Process` line.

    On Linux py-spy prints OS thread ids, and a main thread's id is its PID, so a
    `Thread 8251 (idle): "MainThread"` names PID 8251 (said in a warning). Blocks
    still without a PID are numbered 1, 2, ... in file order when there are several,
    so each stays a process of its own; no PID is made up for them.
    """
    unnamed: list[ProcBlock] = []
    for proc in procs:
        if not proc.headerless or proc.pid is not None:
            continue
        main = next((t for t in proc.threads if t.name == "MainThread"), None)
        if main is not None and main.tid.isdigit() and len(main.tid) < 19:
            proc.pid = int(main.tid)
            unknown.warn(
                main.line,
                f"PID {proc.pid} taken from the main thread's id (py-spy prints OS "
                "thread ids; on Linux the main thread's is the PID)",
            )
        else:
            unnamed.append(proc)
    if len(unnamed) > 1:
        for index, proc in enumerate(unnamed, 1):
            proc.slot = index


def freeze(proc: ProcBlock, source: str, unknown: Unrecognised) -> ProcessDump:
    """Freeze one block into a `ProcessDump`."""
    if not proc.threads and not proc.truncated and not proc.failed:
        proc.truncated = True
        unknown.warn(proc.line, f"process {proc.pid}: header without threads (output cut?)")
    threads = tuple(
        [
            thread_stack(t.tid, t.status, t.name, tuple(t.frames), t.truncated, t.line, source)
            for t in proc.threads
        ]
    )
    return dump_of(proc, threads, source)


def thread_stack(
    tid: str,
    status: ThreadStatus,
    name: str | None,
    frames: tuple[Frame, ...],
    truncated: bool,
    line: int,
    source: str,
) -> ThreadStack:
    """One thread, frozen (its line is the `Thread` line's)."""
    return parsed_thread(
        tid,
        status,
        name,
        frames,
        # A decimal id is the OS thread id; hex is the pthread id (docs/formats.md 1.2).
        int(tid) if tid.isdigit() else None,
        OWNS_GIL.get(status),
        truncated,
        source,
        line,
    )


def dump_of(proc: ProcBlock, threads: tuple[ThreadStack, ...], source: str) -> ProcessDump:
    """The `ProcessDump` of a block whose threads are frozen already."""
    return ProcessDump(
        pid=proc.pid,
        kind=EvidenceKind.PYSPY_TEXT,
        cmdline="\n".join(proc.cmd) if proc.cmd else None,
        python_version=proc.version,
        python_exe=proc.exe,
        parent_pid=proc.parent_pid,
        parent_cmdline=proc.parent_cmdline,
        threads=threads,
        captured_at=proc.captured_at,
        label=proc.label,
        truncated=proc.truncated or any(map(_TRUNCATED, threads)),
        headline=proc.headline,
        slot=proc.slot,
        source=Location(path=source, line=proc.line),
    )
