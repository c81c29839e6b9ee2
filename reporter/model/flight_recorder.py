"""Flight Recorder traces: per-rank collective entries, group status and config."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reporter.model.evidence import Location
from reporter.model.stacks import Frame


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
