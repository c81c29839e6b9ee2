"""Frozen data model shared by parsers, the bundle loader, analysis and rendering.

Everything ingested for one incident ends up in one `Bundle`. Parsers return
`ParseResult`s; the loader folds them into the bundle; analysis reads only the
bundle. All classes are frozen, slotted and keyword-only so that values can be
hashed, compared and shared between threads without copying.

Shapes, by example (a py-spy text dump of one SGLang scheduler)::

    ProcessDump(pid=7985, cmdline="sglang::scheduler_TP0", python_version="3.11.7",
                threads=(ThreadStack(thread_id="7985", status=ThreadStatus.IDLE,
                                     name="MainThread",
                                     frames=(Frame(function="Scheduler.recv_requests",
                                                   file="sglang/srt/managers/scheduler.py",
                                                   line=1012), ...)),),
                source=Location(path="rank0.txt", line=1))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import PurePosixPath


class EvidenceKind(StrEnum):
    """What an evidence file holds, as declared in a manifest or sniffed from content."""

    PYSPY_TEXT = "pyspy-text"
    PYSPY_JSON = "pyspy-json"
    FAULTHANDLER = "faulthandler"
    UNKNOWN = "unknown"


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
    PROCESS_TITLE = "process-title"
    FILENAME = "filename"
    PID = "pid"


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """A place in an evidence file: the path as the user named it and a 1-based line."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True, slots=True, kw_only=True)
class Local:
    """One `--locals` entry: `name: repr`, under `Arguments:` when `is_arg`."""

    name: str
    repr: str
    is_arg: bool = False


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
        """The file's last two path parts, so full and shortened filenames compare equal."""
        parts = PurePosixPath(self.file).parts
        return "/".join(parts[-2:]) if len(parts) > 1 else self.file

    def display(self) -> str:
        """`function (file)`: the form used in reports and `analyze --json`."""
        return f"{self.function} ({self.file})"


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessDump:
    """One capture of one process: py-spy text/JSON block or one faulthandler dump.

    `pid` is None when the format does not give it (faulthandler, JSON of an
    empty process). `captured_at` comes from a log prefix, SGLang's dump line
    or the manifest. `label` keeps the log tag a dump was wrapped in (`TP6`).
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
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class FailedDump:
    """py-spy's own error output where a dump should be: the PID could not be dumped."""

    pid: int | None
    reason: str
    detail: str = ""
    captured_at: datetime | None = None
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseWarning:
    """Something a tolerant parser skipped or guessed, with where it happened."""

    source: Location
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseResult:
    """What one parser made of one file."""

    dumps: tuple[ProcessDump, ...] = ()
    failures: tuple[FailedDump, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RankHint:
    """A manifest's statement about the process(es) in one evidence file."""

    rank: int | None = None
    role: str | None = None
    group: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceFile:
    """One file of the bundle: path relative to the bundle root (or as given)."""

    path: str
    kind: EvidenceKind
    sniffed: bool
    size: int
    captured_at: datetime | None = None
    rank_hint: RankHint | None = None
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """The parts of `bundle.toml` that are not the evidence list."""

    title: str = ""
    upstream: tuple[str, ...] = ()
    service: str = ""
    version: str = ""
    world_size: int | None = None
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Bundle:
    """Everything ingested for one incident; the only input to analysis.

    `root` is None for loose files given on the command line. `dumps` are in
    capture order (capture time where known, else file order, else position
    in the file). Later evidence kinds add tuples here, never None.
    """

    root: str | None
    manifest: Manifest = field(default_factory=Manifest)
    files: tuple[EvidenceFile, ...] = ()
    dumps: tuple[ProcessDump, ...] = ()
    failures: tuple[FailedDump, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()
    rank_hints: tuple[tuple[str, RankHint], ...] = ()
