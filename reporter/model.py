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

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import PurePosixPath


class Similarity(StrEnum):
    """How loosely stacks group into classes (panicparse's similarity knob).

    `exact`: function, file and line; `lines-ignored`: short function name and
    short file; `loose`: like `lines-ignored` over the informative frames only.
    """

    EXACT = "exact"
    LINES_IGNORED = "lines-ignored"
    LOOSE = "loose"


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
    UNKNOWN = "unknown"


# Kinds holding a metric history (charted in the report).
METRIC_KINDS = frozenset(
    {EvidenceKind.PROMETHEUS_TEXT, EvidenceKind.PROMETHEUS_JSON, EvidenceKind.GRAFANA_CSV}
)
# Kinds summarised in a report section of their own and never embedded raw: environment
# files hold every variable (secrets too); excerpts and goroutine dumps have their sections.
SUMMARISED_KINDS = frozenset(
    {
        EvidenceKind.ENVIRON,
        EvidenceKind.CMDLINE,
        EvidenceKind.PACKAGES,
        EvidenceKind.SGLANG_CHECK_ENV,
        EvidenceKind.VLLM_COLLECT_ENV,
        EvidenceKind.NVIDIA_SMI,
        EvidenceKind.SOURCE_HASHES,
        EvidenceKind.CODE_EXCERPT,
        EvidenceKind.GOROUTINES,
        EvidenceKind.FLIGHT_RECORDER,
    }
)
# Evidence around the stacks; its problems are warnings even when the manifest names the file.
CONTEXT_KINDS = METRIC_KINDS | SUMMARISED_KINDS | {EvidenceKind.SYSTEMD_SHOW, EvidenceKind.LOG}


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessDump:
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
    source: Location


class FailureState(StrEnum):
    """What a failed dump says about its process (from py-spy's error text).

    `gone`: the process no longer exists ("No such file or directory (os error 2)",
    "No such process", exited); `refused`: not allowed to read it (permissions,
    ptrace); `timeout`: py-spy or its caller gave up waiting; `error`: anything else.
    """

    GONE = "gone"
    REFUSED = "refused"
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
    series: tuple[MetricSeries, ...] = ()
    """Metric series as read (counters still raw); the loader merges files and makes rates."""
    events: tuple[TimelineEvent, ...] = ()
    """Dated things the file tells: service starts, notable log lines."""
    environment: Environment = field(default_factory=lambda: Environment())
    """Env vars, command lines, packages, GPUs and facts the file holds."""
    excerpts: tuple[CodeExcerpt, ...] = ()
    goroutine_dumps: tuple[GoroutineDump, ...] = ()
    flight_recorder: tuple[FrTrace, ...] = ()


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
    series: tuple[MetricSeries, ...] = ()
    """Metric history, sorted by (name, labels); counters already turned into rates."""
    events: tuple[TimelineEvent, ...] = ()
    """Dated evidence events (service starts, log lines, manual events), sorted by time."""
    environment: Environment = field(default_factory=lambda: Environment())
    """Environment evidence of every file, in file order."""
    excerpts: tuple[CodeExcerpt, ...] = ()
    """Explicit code excerpt files of the bundle, in file order."""
    goroutine_dumps: tuple[GoroutineDump, ...] = ()
    """Go client dumps, in capture order where known, else file order."""
    flight_recorder: tuple[FrTrace, ...] = ()
    """Flight Recorder traces (dumps and watchdog lines), sorted by (trace set, rank)."""
    baseline: Bundle | None = None
    """The last good run (the manifest's `baseline` folder), loaded as a bundle of its own."""


class MetricKind(StrEnum):
    """The Prometheus type of a series; histogram `_sum` / `_count` parts count as counters."""

    GAUGE = "gauge"
    COUNTER = "counter"
    UNTYPED = "untyped"


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricPoint:
    """One sample: UTC time, value, and the file and line it came from."""

    at: datetime
    value: float
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSeries:
    """One time series: a metric name plus its label set, points in time order.

    `rate` is True when a counter's samples were turned into per-second rates
    (each point is the rate over the interval that ends at its time). Example::

        MetricSeries(name="sglang:num_queue_reqs", labels=(("tp_rank", "0"),),
                     kind=MetricKind.GAUGE, points=(MetricPoint(at=..., value=3.0, ...), ...),
                     source=Location(path="metrics/scrapes.prom", line=4))
    """

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    kind: MetricKind = MetricKind.UNTYPED
    rate: bool = False
    points: tuple[MetricPoint, ...] = ()
    source: Location

    def display(self) -> str:
        """`name{a="1",b="2"}`, the PromQL-like form used in reports and JSON."""
        if not self.labels:
            return self.name
        inner = ",".join(f'{k}="{v}"' for k, v in self.labels)
        return f"{self.name}{{{inner}}}"


class EventKind(StrEnum):
    """What a timeline entry is about."""

    SERVICE = "service"
    LOG = "log"
    MANUAL = "manual"
    DUMP = "dump"
    DUMP_FAILED = "dump-failed"
    METRIC = "metric"
    WEDGE = "wedge"
    GOROUTINES = "goroutines"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineEvent:
    """One dated fact for the timeline: UTC time, kind, one line of text, and its source."""

    at: datetime
    kind: EventKind
    text: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class WedgeSettings:
    """The manifest's `[wedge]` table; empty tuples and None mean "use the defaults".

    Names may carry a label filter: `sglang:realtime_tokens_total{mode="decode"}`.
    """

    output: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    window_seconds: float | None = None


# --- Environment, code excerpts and Go goroutines (issue 3, helper B) ---


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvVar:
    """One environment variable as a process saw it (`/proc/PID/environ`, `env`, collect_env)."""

    name: str
    value: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandFlag:
    """One option of a command line: `--tp 4` and `--tp=4` give name `--tp`, value `"4"`.

    `value` is None for a bare switch (`--enable-metrics`).
    """

    name: str
    value: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandLine:
    """A process's argv, the program it runs and its options.

    `program` is the module for `python -m MOD`, else the script or executable.
    Example: `python3 -m sglang.launch_server --tp 4 --mem-fraction-static=0.8` gives
    program `sglang.launch_server`, flags `--tp=4`, `--mem-fraction-static=0.8`.
    """

    argv: tuple[str, ...]
    program: str
    flags: tuple[CommandFlag, ...] = ()
    positional: tuple[str, ...] = ()
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    """An installed distribution: `name` normalised as PyPI does (`flashinfer-python`).

    `origin` keeps a direct reference (`git+https://github.com/o/r@abc123`, `file:///...`)
    where the listing gave one; `version` is "" when it did not say.
    """

    name: str
    version: str
    origin: str = ""
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvFact:
    """A `key: value` fact from `sglang.check_env`, vLLM `collect_env` or `nvidia-smi`."""

    key: str
    value: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One GPU row of `nvidia-smi` (table or `--format=csv`); unknown numbers are None."""

    index: int
    name: str
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    utilization_pct: int | None = None
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class FileHash:
    """A deployed source file's sha256 (`sha256sum` output), to compare with a checkout."""

    path: str
    sha256: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """Everything environment evidence says; several files simply concatenate."""

    variables: tuple[EnvVar, ...] = ()
    cmdlines: tuple[CommandLine, ...] = ()
    packages: tuple[Package, ...] = ()
    facts: tuple[EnvFact, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    file_hashes: tuple[FileHash, ...] = ()

    @staticmethod
    def combined(parts: Sequence[Environment]) -> Environment:
        """The entries of every part, in order (one pass: no copy per part)."""
        return Environment(
            variables=tuple(v for p in parts for v in p.variables),
            cmdlines=tuple(c for p in parts for c in p.cmdlines),
            packages=tuple(k for p in parts for k in p.packages),
            facts=tuple(f for p in parts for f in p.facts),
            gpus=tuple(g for p in parts for g in p.gpus),
            file_hashes=tuple(h for p in parts for h in p.file_hashes),
        )

    def __bool__(self) -> bool:
        return bool(
            self.variables
            or self.cmdlines
            or self.packages
            or self.facts
            or self.gpus
            or self.file_hashes
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeExcerpt:
    """Lines of one source file as deployed: `lines[0]` is line `start` of `path`.

    `path` is repository-relative where known (`python/sglang/srt/managers/scheduler.py`).
    `file_sha256` is the hash of the whole deployed file, when recorded, so that a
    local checkout can be checked against it. `highlight` holds absolute line numbers.
    """

    path: str
    start: int
    lines: tuple[str, ...]
    highlight: tuple[int, ...] = ()
    repo: str = ""
    ref: str = ""
    file_sha256: str = ""
    note: str = ""
    source: Location

    @property
    def end(self) -> int:
        """The last line number shown."""
        return self.start + max(len(self.lines), 1) - 1


class GoDumpForm(StrEnum):
    """Which Go runtime output a goroutine dump came from."""

    TRACEBACK = "traceback"
    """`runtime.Stack(buf, true)` or `/debug/pprof/goroutine?debug=2`."""
    SIGQUIT = "sigquit"
    PANIC = "panic"
    FATAL = "fatal"
    AGGREGATED = "aggregated"
    """`/debug/pprof/goroutine?debug=1`: one stanza per distinct stack, with a count."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GoFrame:
    """One Go frame: `net/http.(*persistConn).roundTrip(0xc000..., ...)` at `file:line`.

    `args` is the text between the parentheses as printed (`...` for inlined calls,
    "" when the form prints none, as `created by` lines and debug=1 stanzas do).
    """

    function: str
    args: str = ""
    file: str = ""
    line: int | None = None

    @property
    def package(self) -> str:
        """The import path: `net/http.(*persistConn).roundTrip` -> `net/http`."""
        slash = self.function.rfind("/")
        dot = self.function.find(".", slash + 1)
        return self.function[:dot] if dot > 0 else self.function


@dataclass(frozen=True, slots=True, kw_only=True)
class Goroutine:
    """One goroutine (or, from debug=1, `count` goroutines with one stack and no id).

    `state` is the wait reason in brackets (`select`, `IO wait`, `chan receive`);
    `wait_minutes` is None when Go printed no duration (under a minute, or not yet
    seen blocked by two GC cycles). `frames` are innermost first.
    """

    id: int | None
    state: str = ""
    wait_minutes: int | None = None
    locked_to_thread: bool = False
    frames: tuple[GoFrame, ...] = ()
    created_by: GoFrame | None = None
    parent_id: int | None = None
    elided: bool = False
    count: int = 1
    labels: tuple[tuple[str, str], ...] = ()
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class GoroutineDump:
    """All goroutines of one dump of one Go process, in the order printed."""

    form: GoDumpForm
    goroutines: tuple[Goroutine, ...] = ()
    headline: str = ""
    captured_at: datetime | None = None
    source: Location


class FrOrigin(StrEnum):
    """Where a Flight Recorder trace came from."""

    PICKLE = "pickle"
    """`_dump_fr_trace()` bytes: the file a watchdog writes (`TORCH_NCCL_DEBUG_INFO_TEMP_FILE`)."""
    JSON = "json"
    """`_dump_fr_trace_json()` text, or one rank of the debug server's `/fr_trace_json`."""
    WATCHDOG_LOG = "watchdog-log"
    """The `ProcessGroupNCCL` watchdog's log lines: one timed-out collective per rank and group."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FrEntry:
    """One collective (or p2p op) in one rank's Flight Recorder ring buffer.

    `op` is the operation without the backend prefix (`gloo:all_reduce` -> `all_reduce`;
    the watchdog's `ALLREDUCE` -> `all_reduce`). `group` is the process group's name
    (`process_group[0]`, "0" for the default group), `seq_id` its `collective_seq_id`.
    `state` is the recorder's (`scheduled`, `started`, `completed`; `timed-out` from a
    watchdog line). Sizes are None where the source does not give them (watchdog lines
    give element counts in `numel_in` / `numel_out` instead).
    """

    record_id: int
    group: str
    group_desc: str = ""
    seq_id: int
    p2p_seq_id: int = 0
    is_p2p: bool = False
    op: str
    profiling_name: str = ""
    input_sizes: tuple[tuple[int, ...], ...] | None = None
    output_sizes: tuple[tuple[int, ...], ...] | None = None
    input_dtypes: tuple[str, ...] = ()
    output_dtypes: tuple[str, ...] = ()
    numel_in: int | None = None
    numel_out: int | None = None
    state: str = ""
    timeout_ms: int | None = None
    time_created_ns: int | None = None
    frames: tuple[Frame, ...] = ()
    """The issuing Python stack, innermost first (pickle dumps with stack traces only)."""
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class FrGroupStatus:
    """A rank's `pg_status` for one group: -1 (or None) where nothing is known."""

    group: str
    last_enqueued: int | None = None
    last_started: int | None = None
    last_completed: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FrGroupConfig:
    """A `pg_config` entry: name, description and global ranks (empty: not recorded)."""

    name: str
    desc: str = ""
    ranks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class FrTrace:
    """One rank's Flight Recorder dump (or its watchdog lines).

    `trace_set` names the set the trace belongs to: the folder of a per-rank dump
    file, or `<log path>` for watchdog lines. `rank` is None when neither the file
    name nor the manifest says it.
    """

    rank: int | None
    trace_set: str
    origin: FrOrigin
    version: str = ""
    backend: str = ""
    entries: tuple[FrEntry, ...] = ()
    status: tuple[FrGroupStatus, ...] = ()
    groups: tuple[FrGroupConfig, ...] = ()
    captured_at: datetime | None = None
    """When the dump was taken (the manifest's `captured_at`); None when unknown."""
    source: Location
