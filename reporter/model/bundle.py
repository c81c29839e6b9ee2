"""What parsers return (`ParseResult`) and what the loader folds it into (`Bundle`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from reporter.model.context import (
    CodeExcerpt,
    Environment,
    FrTrace,
    GoroutineDump,
    MetricSeries,
    TimelineEvent,
    WedgeSettings,
)
from reporter.model.procwait import (
    FdEntry,
    LogEvent,
    ProcessRelation,
    SocketRow,
    ThreadState,
)
from reporter.model.stacks import EvidenceKind, FailedDump, ParseWarning, ProcessDump, ProcState


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """What evidence files hold, by kind: the parts a `ParseResult` and a `Bundle` share."""

    dumps: tuple[ProcessDump, ...] = ()
    failures: tuple[FailedDump, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()
    series: tuple[MetricSeries, ...] = ()
    """Metric series (a `ParseResult`'s as read, counters still raw; a `Bundle`'s merged,
    sorted by (name, labels), counters turned into rates)."""
    events: tuple[TimelineEvent, ...] = ()
    """Dated things the files tell: service starts, notable log lines (and in a `Bundle`,
    manual events), sorted by time in a `Bundle`."""
    environment: Environment = field(default_factory=lambda: Environment())
    """Env vars, command lines, packages, GPUs and facts, in file order."""
    excerpts: tuple[CodeExcerpt, ...] = ()
    """Explicit code excerpt files, in file order."""
    goroutine_dumps: tuple[GoroutineDump, ...] = ()
    """Go client dumps; in a `Bundle` in capture order where known, else file order."""
    flight_recorder: tuple[FrTrace, ...] = ()
    """Flight Recorder traces (dumps and watchdog lines); sorted by (trace set, rank) in a
    `Bundle`."""
    proc_states: tuple[ProcState, ...] = ()
    """Process states from `/proc/PID/status` copies: a `ParseResult`'s in file order, a
    `Bundle`'s in capture order (manifest time, then snapshot index, then the file's
    mtime, then file order), so the last copy of a process is its latest."""
    thread_states: tuple[ThreadState, ...] = ()
    """Per-thread kernel state and wchan (`proc-threads`); ordered as `proc_states`."""
    fd_entries: tuple[FdEntry, ...] = ()
    """Open file descriptors as link targets (`proc-fds`); ordered as `proc_states`."""
    socket_rows: tuple[SocketRow, ...] = ()
    """Socket table rows of the processes' sockets (`proc-sockets`); ordered as `proc_states`."""
    process_relations: tuple[ProcessRelation, ...] = ()
    """Parent, children (zombies too), start time and uid (`proc-family`); ordered as
    `proc_states`."""
    log_events: tuple[LogEvent, ...] = ()
    """Timeouts, watchdog aborts, OOM kills, signals and exits read from logs and journals;
    in a `Bundle` sorted by time (undated ones last, in file order)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseResult(Evidence):
    """What one parser made of one file; the loader merges files and makes rates."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RankHint:
    """A manifest's statement about the process(es) in one evidence file."""

    rank: int | None = None
    role: str | None = None
    group: str | None = None
    instance: str | None = None
    """Which server or job the file's process belongs to (`prefill`, `decode`): ranks are
    numbered within it. The strongest instance signal."""


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
    head: str = ""
    """What later steps quote, kept by the loader so that none reopens the file: the first
    `HEAD_LINES` lines joined by newlines for a file the report embeds raw, the whole text
    for an environment script (the upstream draft); "" for every other file."""
    lines: int = 0
    """The file's line count (`str.splitlines`) when `head` is kept, else 0."""
    digest: str = ""
    """16 hex digits of the sha256 of the file's bytes: its identity by content."""
    host: str = ""
    """The host the file was captured on (`host` of its `[[evidence]]` table or of the
    manifest); "" when not known."""


# Lines of a raw evidence file (a log, a failed dump's output) that the loader keeps.
HEAD_LINES = 40


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessNote:
    """A process `report collect` targeted or found above a target: `[[collect.target]]`
    and `[[collect.process]]` of `bundle.toml` (the launcher and process tree)."""

    pid: int
    ppid: int | None = None
    pgid: int | None = None
    title: str = ""
    cmdline: str = ""
    launcher: int | None = None
    """The topmost ancestor below init that is not a shell: the server's or job's launcher."""
    host: str = ""
    """The host the process ran on (`host` of the table, else the manifest's)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostNote:
    """One host of a multi-host capture: `[[collect.remote]]` of `bundle.toml`.

    `status` is `complete`, `partial` (stacks came back, but a snapshot was not taken),
    `incomplete` (reached, but no stack came back), `failed` (not
    reached, or the capture there failed), `timeout` (the deadline passed; what came back
    before it is kept) or `interrupted`; `reason` says why in one line; `via` how it was
    reached (`ssh node-b`, `kubectl exec -n prod pod-3 --`)."""

    name: str
    status: str = "complete"
    reason: str = ""
    via: str = ""

    @property
    def missing(self) -> bool:
        """True when nothing usable came back from this host."""
        return self.status in {"failed", "timeout", "interrupted", "incomplete"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """The parts of `bundle.toml` that are not the evidence list."""

    title: str = ""
    upstream: tuple[str, ...] = ()
    service: str = ""
    version: str = ""
    world_size: int | None = None
    fields: tuple[tuple[str, str], ...] = ()
    events: tuple[TimelineEvent, ...] = ()
    """`[[event]]` tables: things the operator did or saw, for the timeline."""
    wedge: WedgeSettings | None = None
    """`[wedge]`: metric names and window for wedge detection; None: the defaults."""
    baseline: str = ""
    """`baseline = "baseline/"`: a folder inside the bundle holding the last good run."""
    source_root: str = ""
    """`source_root = "src/"`: a folder inside the bundle holding deployed source files."""
    upstream_ref: tuple[tuple[str, str], ...] = ()
    """`[upstream_ref]` as (key, value) pairs: repo, package, tag rule, path prefix, commit."""
    processes: tuple[ProcessNote, ...] = ()
    """The process tree `report collect` recorded (`[collect]` targets and their ancestors)."""
    host: str = ""
    """`host = "..."`: the host every file of this bundle comes from, unless its `[[evidence]]`
    table names another."""
    hosts: tuple[HostNote, ...] = ()
    """`[[collect.remote]]`: each host a multi-host collection tried, with its outcome."""


# A weak reference slot: answers worked out once per bundle are keyed by it without
# keeping it alive (`reporter.render.answer.timeouts`).
@dataclass(frozen=True, slots=True, kw_only=True, weakref_slot=True)
class Bundle(Evidence):
    """Everything ingested for one incident; the only input to analysis.

    `root` is None for loose files given on the command line. `dumps` are in
    capture order (capture time where known, else file order, else position
    in the file). Later evidence kinds add tuples here, never None.
    """

    root: str | None
    manifest: Manifest = field(default_factory=Manifest)
    files: tuple[EvidenceFile, ...] = ()
    rank_hints: tuple[tuple[str, RankHint], ...] = ()
    baseline: Bundle | None = None
    """The last good run (the manifest's `baseline` folder), loaded as a bundle of its own."""
    baseline_note: str = ""
    """How the baseline was found when nobody named it: "two runs in one folder: `good/` is
    the last good run, `bad/` this one"; "" for the manifest's or `--baseline`."""
    folders: tuple[str, ...] = ()
    """Several bundle folders merged as hosts of one job (`report analyze A B`); `root` is
    then None and file paths start with their folder."""

    @property
    def digest(self) -> str:
        """The evidence's identity by content, wherever it lies: 16 hex digits over the
        sorted digests of its files; "" without any. The same files reached by another
        path (a copy, a symlink, a relative path) give the same digest."""
        parts = sorted(f.digest for f in self.files if f.digest)
        if not parts:
            return ""
        return hashlib.sha256("\n".join(parts).encode("ascii")).hexdigest()[:16]
