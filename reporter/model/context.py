"""The evidence around the stacks: metric series and dated events, environment and code
excerpts, Go goroutine dumps and torch Flight Recorder traces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reporter.model.document import document, spec
from reporter.model.stacks import Frame, Location


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


@document
class TimelineEvent:
    """One timeline entry.

    One dated fact: UTC time, kind, one line of text, and its source. It is also an entry
    of `analyze --json`'s `timeline` (`reporter.model.document`).
    """

    at: datetime = spec("ISO 8601 UTC")
    kind: EventKind
    text: str
    source: Location = spec("file:line")


@dataclass(frozen=True, slots=True, kw_only=True)
class WedgeSettings:
    """The manifest's `[wedge]` table; empty tuples and None mean "use the defaults".

    Names may carry a label filter: `sglang:realtime_tokens_total{mode="decode"}`.
    """

    output: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    window_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvVar:
    """One environment variable as a process saw it (`/proc/PID/environ`, `env`, collect_env)."""

    name: str
    value: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandFlag:
    """One command-line flag.

    One option of a command line: `--tp 4` and `--tp=4` give name `--tp`, value `"4"`;
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
    """One fact about the host or the run.

    A `key: value` fact from `sglang.check_env`, vLLM `collect_env` or `nvidia-smi`.
    """

    key: str
    value: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One GPU.

    One GPU row of `nvidia-smi` (table or `--format=csv`); unknown numbers are None.
    """

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


@document
class GoFrame:
    """A Go frame.

    `net/http.(*persistConn).roundTrip(0xc000..., ...)` at `file:line`; also the `top` and
    `created_by` of a goroutine bucket in `analyze --json`. `args` is the text between the
    parentheses as printed (`...` for inlined calls, "" when the form prints none, as
    `created by` lines and debug=1 stanzas do).
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
