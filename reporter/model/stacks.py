"""Evidence files and the stacks in them: kinds, places, frames, threads, dumps, failures.

Example (a py-spy text dump of one SGLang scheduler)::

    ProcessDump(pid=7985, cmdline="sglang::scheduler_TP0", python_version="3.11.7",
                threads=(ThreadStack(thread_id="7985", status=ThreadStatus.IDLE,
                                     name="MainThread",
                                     frames=(Frame(function="Scheduler.recv_requests",
                                                   file="sglang/srt/managers/scheduler.py",
                                                   line=1012), ...)),),
                source=Location(path="rank0.txt", line=1))
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any


class EvidenceKind(StrEnum):
    """What an evidence file holds, as declared in a manifest or sniffed from content."""

    PYSPY_TEXT = "pyspy-text"
    PYSPY_JSON = "pyspy-json"
    FAULTHANDLER = "faulthandler"
    PROMETHEUS_TEXT = "prometheus-text"
    PROMETHEUS_JSON = "prometheus-json"
    GRAFANA_CSV = "grafana-csv"
    SYSTEMD_SHOW = "systemd-show"
    LOG = "log"
    ENVIRON = "environ"
    CMDLINE = "cmdline"
    PACKAGES = "packages"
    SGLANG_CHECK_ENV = "sglang-check-env"
    VLLM_COLLECT_ENV = "vllm-collect-env"
    NVIDIA_SMI = "nvidia-smi"
    SOURCE_HASHES = "source-hashes"
    CODE_EXCERPT = "code-excerpt"
    GOROUTINES = "goroutines"
    FLIGHT_RECORDER = "flight-recorder"
    PROC_STATUS = "proc-status"
    PROC_THREADS = "proc-threads"
    PROC_FDS = "proc-fds"
    PROC_SOCKETS = "proc-sockets"
    PROC_FAMILY = "proc-family"
    UNKNOWN = "unknown"


# Kinds holding stack dumps: embedded raw in the report only when no dump parsed from the
# file (its failure output).
DUMP_KINDS = frozenset(
    {EvidenceKind.PYSPY_TEXT, EvidenceKind.PYSPY_JSON, EvidenceKind.FAULTHANDLER}
)
# The `/proc` reads of each snapshot round that the waits between processes need.
PROC_KINDS = frozenset(
    {
        EvidenceKind.PROC_THREADS,
        EvidenceKind.PROC_FDS,
        EvidenceKind.PROC_SOCKETS,
        EvidenceKind.PROC_FAMILY,
    }
)
# Kinds holding a metric history (charted in the report).
METRIC_KINDS = frozenset(
    {EvidenceKind.PROMETHEUS_TEXT, EvidenceKind.PROMETHEUS_JSON, EvidenceKind.GRAFANA_CSV}
)
# Kinds describing the environment (read by `reporter.evidence.env`).
ENVIRONMENT_KINDS = frozenset(
    {
        EvidenceKind.ENVIRON,
        EvidenceKind.CMDLINE,
        EvidenceKind.PACKAGES,
        EvidenceKind.SGLANG_CHECK_ENV,
        EvidenceKind.VLLM_COLLECT_ENV,
        EvidenceKind.NVIDIA_SMI,
        EvidenceKind.SOURCE_HASHES,
    }
)
# Kinds summarised in a report section of their own and never embedded raw: environment
# files hold every variable (secrets too); excerpts and goroutine dumps have their sections.
SUMMARISED_KINDS = ENVIRONMENT_KINDS | {
    EvidenceKind.CODE_EXCERPT,
    EvidenceKind.GOROUTINES,
    EvidenceKind.FLIGHT_RECORDER,
}
# Evidence around the stacks; its problems are warnings even when the manifest names the file.
CONTEXT_KINDS = (
    METRIC_KINDS
    | SUMMARISED_KINDS
    | {
        EvidenceKind.SYSTEMD_SHOW,
        EvidenceKind.LOG,
        EvidenceKind.PROC_STATUS,
    }
    | PROC_KINDS
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """A place in an evidence file: the path as the user named it and a 1-based line."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseWarning:
    """Something a tolerant parser skipped or guessed, with where it happened."""

    source: Location
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


class Similarity(StrEnum):
    """How loosely stacks group into classes (panicparse's similarity knob).

    `exact`: function, file and line; `lines-ignored`: short function name and
    short file; `loose`: like `lines-ignored` over the informative frames only.
    """

    EXACT = "exact"
    LINES_IGNORED = "lines-ignored"
    LOOSE = "loose"


class ThreadStatus(StrEnum):
    """py-spy's activity word for a thread; `UNKNOWN` where the format has none."""

    IDLE = "idle"
    ACTIVE = "active"
    ACTIVE_GIL = "active+gil"
    GIL = "gil"
    UNKNOWN = "unknown"


class RankSource(StrEnum):
    """Where a process's rank identity came from, strongest first."""

    MANIFEST = "manifest"
    LOCALS = "locals"
    ENVIRON = "environ"
    PROCESS_TITLE = "process-title"
    FILENAME = "filename"
    PID = "pid"


@dataclass(frozen=True, slots=True, kw_only=True)
class Local:
    """One `--locals` entry: `name: repr`, under `Arguments:` when `is_arg`."""

    name: str
    repr: str
    is_arg: bool = False


# Standard-library package names, and the folders a Python installation keeps them in.
_STDLIB = frozenset(name for name in sys.stdlib_module_names if not name.startswith("_"))
_INTERPRETER_DIRS = frozenset(("lib", "lib64", "Lib", "site-packages", "dist-packages", "/"))


def _interpreter_dir(name: str) -> bool:
    """`python3.12`, `lib`, `site-packages`, ...: a folder that holds the stdlib itself."""
    return name in _INTERPRETER_DIRS or name.startswith(("python", "pypy"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One stack frame. `line` is None when unknown (py-spy prints no `:N`)."""

    function: str
    file: str
    line: int | None = None
    native: bool = False
    locals: tuple[Local, ...] = ()

    @property
    def short_function(self) -> str:
        """The name after the last dot: `Scheduler.recv_requests` -> `recv_requests`.

        py-spy 0.4.3 prints `co_qualname` where older versions printed `co_name`;
        comparing on the short name keeps dumps from both versions equal.
        """
        tail = self.function.rpartition(".")[2]
        # A trailing dot (seen in truncated lines) leaves no tail: keep the whole name.
        return tail or self.function

    @property
    def short_file(self) -> str:
        """The file's last two path parts, so full and shortened filenames compare equal.

        Three when the folder is named like a standard-library package inside another
        package: `torch/multiprocessing/spawn.py` stays apart from the stdlib's
        `multiprocessing/spawn.py` (`/usr/lib/python3.12/multiprocessing/spawn.py`).
        """
        parts = PurePosixPath(self.file).parts
        if len(parts) > 2 and parts[-2] in _STDLIB and not _interpreter_dir(parts[-3]):
            return "/".join(parts[-3:])
        return "/".join(parts[-2:]) if len(parts) > 1 else self.file

    def display(self) -> str:
        """`function (file)`: the form used in reports and `analyze --json`."""
        return f"{self.function} ({self.file})"


def innermost_python(frames: Sequence[Frame]) -> Frame | None:
    """The frame that describes a stack: the innermost Python frame, past any native ones.

    `--native` dumps put libc and libtorch frames above the Python code that called
    them; `0x7f25... (libc.so.6)` says nothing a reader can act on. A stack of native
    frames only is described by its innermost named frame (else its innermost one);
    an empty one by None.
    """
    for frame in frames:
        if not frame.native:
            return frame
    for frame in frames:
        # Of native frames, a named one (`gloo::...::waitRecv`) over a bare address.
        if not frame.function.startswith("0x"):
            return frame
    return frames[0] if frames else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadStack:
    """One thread of one process at one moment; `frames` are innermost first."""

    thread_id: str
    status: ThreadStatus = ThreadStatus.UNKNOWN
    name: str | None = None
    frames: tuple[Frame, ...] = ()
    os_thread_id: int | None = None
    owns_gil: bool | None = None
    is_current: bool = False
    truncated: bool = False
    source: Location


# `ThreadStack` and its `Location` built fast, for the parsers' hot loops (a bundle of 16,384
# ranks has 196,608 threads): the frozen `__init__` sets each field through
# `object.__setattr__`, at a call per field. A twin class with the same slots and no frozen
# `__setattr__` takes plain attribute stores; the finished object is then given the frozen
# class, which CPython allows between classes of one layout (same base, same slots in the
# same order). The object is the frozen class's from then on: equal, hashed and immutable
# as any other.
_THREAD_FIELDS = (
    "thread_id",
    "status",
    "name",
    "frames",
    "os_thread_id",
    "owns_gil",
    "is_current",
    "truncated",
    "source",
)


class _LocationTwin:
    __slots__ = ("path", "line")  # noqa: RUF023 - Location's slots, in its order


class _ThreadTwin:
    __slots__ = _THREAD_FIELDS


def _location(path: str, line: int) -> Location:
    """`Location(path=path, line=line)`, built as the records that cite it are: on its
    twin, then given the frozen class."""
    where: Any = _LocationTwin()
    where.path = path
    where.line = line
    where.__class__ = Location
    made: Location = where
    return made


def parsed_thread(
    thread_id: str,
    status: ThreadStatus,
    name: str | None,
    frames: tuple[Frame, ...],
    os_thread_id: int | None,
    owns_gil: bool | None,
    truncated: bool,
    path: str,
    line: int,
) -> ThreadStack:
    """`ThreadStack(..., is_current=False, source=Location(path=path, line=line))`, equal to
    it in every field, built faster (a parser makes one per thread of every snapshot)."""
    stack: Any = _ThreadTwin()
    stack.thread_id = thread_id
    stack.status = status
    stack.name = name
    stack.frames = frames
    stack.os_thread_id = os_thread_id
    stack.owns_gil = owns_gil
    stack.is_current = False
    stack.truncated = truncated
    stack.source = _location(path, line)
    stack.__class__ = ThreadStack
    made: ThreadStack = stack  # typed by assignment: `cast` is a call per thread
    return made


class _DumpMemo:
    """A slot beside ProcessDump's fields for an answer worked out once per dump.

    `main_memo` holds the dump's main thread once `reporter.analysis.clues.main_thread`
    has found it (a dozen passes ask it of every rank). Not a field, so a dump compares,
    hashes, prints and pickles as its fields alone, memo set or not; unset until asked.
    """

    __slots__ = ("main_memo",)
    main_memo: ThreadStack | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessDump(_DumpMemo):
    """One capture of one process: py-spy text/JSON block or one faulthandler dump.

    `pid` is None when the format does not give it (faulthandler, JSON of an
    empty process). `captured_at` comes from a log prefix, SGLang's dump line
    or the manifest. `label` keeps the log tag a dump was wrapped in (`TP6`).
    `truncated` says the capture was cut (the parser also warns). `slot` tells
    apart several processes in one file that names no PIDs (1, 2, ... in file
    order; 0 when the file holds one such process or the PID is known).
    """

    pid: int | None
    kind: EvidenceKind
    cmdline: str | None = None
    python_version: str | None = None
    python_exe: str | None = None
    parent_pid: int | None = None
    parent_cmdline: str | None = None
    threads: tuple[ThreadStack, ...] = ()
    captured_at: datetime | None = None
    label: str | None = None
    truncated: bool = False
    headline: str | None = None
    slot: int = 0
    host: str = ""
    """The host (or container) the process ran on, from the manifest (`host = "..."`, top
    level or per `[[evidence]]`); "" when the evidence does not say. A process is (host, PID)."""
    source: Location


# `ProcessDump` built as `parsed_thread` builds a thread: a plain py-spy file gives one dump
# per snapshot, 49,152 of them at 16,384 ranks.
_DUMP_FIELDS = (
    "pid",
    "kind",
    "cmdline",
    "python_version",
    "python_exe",
    "parent_pid",
    "parent_cmdline",
    "threads",
    "captured_at",
    "label",
    "truncated",
    "headline",
    "slot",
    "host",
    "source",
)


class _DumpTwin(_DumpMemo):
    __slots__ = _DUMP_FIELDS


def parsed_dump(
    pid: int | None,
    kind: EvidenceKind,
    cmdline: str | None,
    python_version: str | None,
    python_exe: str | None,
    threads: tuple[ThreadStack, ...],
    truncated: bool,
    path: str,
    line: int,
) -> ProcessDump:
    """`ProcessDump(pid=..., kind=..., cmdline=..., python_version=..., python_exe=...,
    threads=..., truncated=..., source=Location(path=path, line=line))` with every other
    field at its default, equal to it, built faster."""
    dump: Any = _DumpTwin()
    dump.pid = pid
    dump.kind = kind
    dump.cmdline = cmdline
    dump.python_version = python_version
    dump.python_exe = python_exe
    dump.parent_pid = None
    dump.parent_cmdline = None
    dump.threads = threads
    dump.captured_at = None
    dump.label = None
    dump.truncated = truncated
    dump.headline = None
    dump.slot = 0
    dump.host = ""
    dump.source = _location(path, line)
    dump.__class__ = ProcessDump
    made: ProcessDump = dump
    return made


class FailureState(StrEnum):
    """What a failed dump says about its process (from py-spy's error text).

    `gone`: the process no longer exists ("No such file or directory (os error 2)",
    "No such process", exited); `refused`: not allowed to read it (permissions,
    ptrace); `stopped`: py-spy could not suspend it because it was already stopped
    (SIGSTOP, a debugger: "Failed to suspend process", "unexpected waitpid result");
    `timeout`: py-spy or its caller gave up waiting; `error`: anything else.
    """

    GONE = "gone"
    REFUSED = "refused"
    STOPPED = "stopped"
    TIMEOUT = "timeout"
    ERROR = "error"


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedDump:
    """py-spy's own error output where a dump should be: the PID could not be dumped.

    `state` classifies `reason` and `detail` (see `FailureState`).
    """

    pid: int | None
    reason: str
    detail: str = ""
    captured_at: datetime | None = None
    state: FailureState = FailureState.ERROR
    host: str = ""
    """The host of the process, as for `ProcessDump.host`."""
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcState:
    """A process's scheduler state, from a copy of `/proc/PID/status` (kind `proc-status`).

    `state` is the kernel's one letter (`R`, `S`, `D`, `T`, `t`, `Z`, ...) and
    `state_text` its word (`stopped`, `tracing stop`); `tracer_pid` is 0 unless a
    debugger is attached; `wchan` is the kernel function a blocked task sleeps in
    (`do_signal_stop`), when the capture recorded it (`report collect` appends a
    `Wchan:` line from `/proc/PID/wchan`). Example::

        ProcState(pid=4711, name="python3", state="T", state_text="stopped",
                  tracer_pid=0, wchan="do_signal_stop", source=Location(path="status/rank2.status", line=3))
    """

    pid: int | None
    state: str
    state_text: str = ""
    name: str = ""
    ppid: int | None = None
    tracer_pid: int | None = None
    threads: int | None = None
    wchan: str = ""
    captured_at: datetime | None = None
    snapshot: int | None = None
    """The snapshot round of the copy (`-s2` in `proc/pid4711-s2.status`); None when not known."""
    host: str = ""
    """The host of the process, as for `ProcessDump.host`."""
    source: Location
