"""Parse PyTorch Flight Recorder dumps and the NCCL watchdog's timeout lines into `FrTrace`s.

Inputs, all as PyTorch writes them (torch 2.x; the dump's `version` field is honoured):

* the pickle a rank's recorder writes (`torch._C._distributed_c10d._dump_fr_trace()`, the
  `TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>` file of a watchdog dump): a dict of plain values,
  read with an unpickler that allows nothing but containers and scalars. A pickle asking
  for any global (the only way a pickle runs code) is refused with a one-line error;
* its JSON form (`_dump_fr_trace_json()`, one rank of the debug server's `/fr_trace_json`);
* watchdog log lines, one per timed-out collective and rank::

    [rank3]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective
      operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, NumelOut=5,
      Timeout(ms)=600000) ran for 600061 milliseconds before timing out.
    [rank3]:[E1206 18:44:12.715 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an
      error or timeout) detected by watchdog at work: 7753, last enqueued NCCL work: 7755,
      last completed NCCL work: 7752.

A dump's shape (one rank)::

    {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
     "pg_status": {"0": {"last_enqueued_collective": 5, "last_completed_collective": 4, ...}},
     "entries": [{"record_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": 1,
                  "profiling_name": "nccl:all_reduce", "input_sizes": [[4]], "state": "completed",
                  "frames": [{"name": "all_reduce", "filename": "...", "line": 3245}, ...]}, ...]}

torch 2.13's gloo recorder writes `pg_config` under an empty group name with no ranks; group
membership then comes from the entries and `pg_status` (reporter.analysis.flight_recorder).
The rank is not in the dump: it comes from the file name's trailing digits (`..._rank3`).
"""

from __future__ import annotations

import ast
import io
import json
import pickle
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from reporter.core.errors import EvidenceError
from reporter.evidence._text import warning_at
from reporter.model import (
    Frame,
    FrEntry,
    FrGroupConfig,
    FrGroupStatus,
    FrOrigin,
    FrTrace,
    Location,
    ParseResult,
    ParseWarning,
)

KNOWN_MAJOR = 2
"""Dump format major version this parser knows; newer majors are read with a warning."""

_PICKLE_HEAD = re.compile(rb"\A\x80[\x02-\x05]")
_JSON_HEAD = re.compile(r'\A\ufeff?\s*\{[\s\S]{0,4000}?"(?:entries|pg_config|pg_status)"\s*:')
_RANK_IN_NAME = re.compile(r"(?<!\d)(\d++)$")
_SUFFIXES = (".json", ".pkl", ".pickle", ".bin", ".txt")


class RefusedPickleError(EvidenceError):
    """A pickle that asks for a global (code), not plain data."""


def sniff_bytes(head: bytes) -> bool:
    """True for a pickle (protocol 2-5): a Flight Recorder dump or something to refuse."""
    return _PICKLE_HEAD.match(head) is not None


def sniff_text(head: str) -> bool:
    """True for the JSON form of a Flight Recorder dump."""
    return _JSON_HEAD.match(head) is not None


def rank_from_name(path: str) -> int | None:
    """The rank in a per-rank dump's file name: `nccl_trace_rank_3`, `rank3.json` -> 3."""
    name = PurePosixPath(path).name
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    found = _RANK_IN_NAME.search(name)
    return int(found.group(1)) if found else None


def trace_set_of(path: str) -> str:
    """Per-rank files of one folder form one trace set, named by the folder ("." at the top)."""
    parent = str(PurePosixPath(path).parent)
    return parent or "."


class _PlainUnpickler(pickle.Unpickler):
    """Builds only what pickle's own opcodes build (dict, list, tuple, set, str, bytes, numbers).

    Every way for a pickle to run code (REDUCE, BUILD, INST, OBJ, NEWOBJ, EXT) needs a callable
    from `find_class` first; refusing it there means nothing outside plain data is touched.
    """

    def find_class(self, module: str, name: str, /) -> object:
        raise _RefusalError(f"{module}.{name}")

    def persistent_load(self, pid: object, /) -> object:
        raise _RefusalError("a persistent id")


class _RefusalError(Exception):
    """Raised inside the unpickler; turned into `RefusedPickleError` with the file name."""


def load_plain_pickle(data: bytes, *, source: str) -> object:
    """Unpickle `data` allowing plain containers and scalars only.

    Raises `RefusedPickleError` (one line, naming the global asked for) for anything else, and
    `EvidenceError` for a damaged pickle.
    """
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except _RefusalError as refusal:
        raise RefusedPickleError(
            f"{source}: refused: this pickle asks for {refusal} (code, not data); "
            "a Flight Recorder dump holds only plain values",
            tip="do not load this file with pickle anywhere; re-dump the rank's recorder",
        ) from None
    except Exception as exc:  # any damage in untrusted bytes is one error
        raise EvidenceError(
            f"{source}: not a readable pickle ({type(exc).__name__}: {exc})",
            tip="the dump may be truncated; dump the recorder again",
        ) from None


def parse_pickle(data: bytes, *, source: str, rank: int | None = None) -> ParseResult:
    """One rank's pickled dump; see `load_plain_pickle` for what is refused."""
    return _parse_dump(
        load_plain_pickle(data, source=source), source=source, rank=rank, origin=FrOrigin.PICKLE
    )


def parse_json(text: str, *, source: str, rank: int | None = None) -> ParseResult:
    """One rank's dump in its JSON form."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return ParseResult(
            warnings=(
                warning_at(
                    source, exc.lineno, f"not valid JSON ({exc.msg}); Flight Recorder dump skipped"
                ),
            )
        )
    return _parse_dump(obj, source=source, rank=rank, origin=FrOrigin.JSON)


@dataclass(slots=True)
class _Reader:
    """Collects warnings while one dump is read, and shares equal frames between entries."""

    source: str
    warnings: list[ParseWarning]
    frames: dict[tuple[object, object, object], Frame] = field(default_factory=dict)
    stacks: dict[int, tuple[object, tuple[Frame, ...]]] = field(default_factory=dict)

    def warn(self, message: str, entry: int | None = None) -> None:
        line = 0 if entry is None else entry + 1
        prefix = "" if entry is None else f"entry {entry}: "
        self.warnings.append(warning_at(self.source, line, prefix + message))


def _parse_dump(obj: object, *, source: str, rank: int | None, origin: FrOrigin) -> ParseResult:
    reader = _Reader(source=source, warnings=[])
    if not isinstance(obj, Mapping):
        reader.warn(f"a {type(obj).__name__}, not a Flight Recorder dump (a dict); skipped")
        return ParseResult(warnings=tuple(reader.warnings))
    version = str(obj.get("version", ""))
    if not version:
        reader.warn("no `version` field; read as the 2.x format")
    else:
        major = _int(version.split(".")[0])
        if major is None or major > KNOWN_MAJOR:
            reader.warn(f"version {version} is newer than the 2.x format this reader knows")
    if rank is None:
        rank = rank_from_name(source)
        if rank is None:
            reader.warn("no rank in the file name (expected a trailing number, `..._rank3`)")
    raw_entries = obj.get("entries", [])
    if not isinstance(raw_entries, Sequence) or isinstance(raw_entries, str | bytes):
        reader.warn("`entries` is not a list; no entries read")
        raw_entries = []
    entries: list[FrEntry] = []
    backends: set[str] = set()
    for index, raw in enumerate(raw_entries):
        entry = _entry(raw, index, reader, version)
        if entry is not None:
            entries.append(entry)
            if ":" in entry.profiling_name:
                backends.add(entry.profiling_name.split(":", 1)[0])
    trace = FrTrace(
        rank=rank,
        trace_set=trace_set_of(source),
        origin=origin,
        version=version,
        backend=",".join(sorted(backends)),
        entries=tuple(entries),
        status=_status(obj.get("pg_status"), reader),
        groups=_groups(obj.get("pg_config"), reader),
        source=Location(path=source),
    )
    return ParseResult(flight_recorder=(trace,), warnings=tuple(reader.warnings))


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


# Unpickled and JSON data hold only dict, list and tuple containers: exact type checks are
# enough, and far cheaper than the collections.abc ones on millions of values.
_LISTS = (list, tuple)


def _sizes(value: object) -> tuple[tuple[int, ...], ...] | None:
    if not isinstance(value, _LISTS):
        return None
    out: list[tuple[int, ...]] = []
    for shape in value:
        if not isinstance(shape, _LISTS):
            return None
        if all(type(d) is int for d in shape):
            out.append(tuple(shape))
            continue
        dims = [_int(d) for d in shape]
        if any(d is None for d in dims):
            return None
        out.append(tuple(d for d in dims if d is not None))
    return tuple(out)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, _LISTS):
        return ()
    return tuple(v if type(v) is str else str(v) for v in value)


def op_name(profiling_name: str) -> str:
    """`nccl:all_reduce` -> `all_reduce`; `nccl:send 0->1` -> `send`; `ALLREDUCE` -> `all_reduce`."""
    name = profiling_name.split(":", 1)[1] if ":" in profiling_name else profiling_name
    name = name.strip().split(" ", 1)[0]
    if name.isupper() or (name.startswith("_") and name[1:].isupper()):
        return _OPTYPES.get(name, name.lower())
    return name


# The watchdog's OpType names, as the recorder's profiling names spell the same operations.
_OPTYPES = {
    "ALLREDUCE": "all_reduce",
    "ALLREDUCE_COALESCED": "allreduce_coalesced",
    "BROADCAST": "broadcast",
    "REDUCE": "reduce",
    "ALLGATHER": "all_gather",
    "_ALLGATHER_BASE": "_allgather_base",
    "ALLGATHER_COALESCED": "allgather_coalesced",
    "GATHER": "gather",
    "SCATTER": "scatter",
    "REDUCE_SCATTER": "reduce_scatter",
    "_REDUCE_SCATTER_BASE": "_reduce_scatter_base",
    "REDUCE_SCATTER_TENSOR_COALESCED": "reduce_scatter_tensor_coalesced",
    "ALLTOALL": "all_to_all",
    "ALLTOALL_BASE": "all_to_all_base",
    "BARRIER": "barrier",
    "SEND": "send",
    "RECV": "recv",
    "RECVANYSOURCE": "recv_any_source",
    "COALESCED": "coalesced",
}


def _frames(value: object, reader: _Reader) -> tuple[Frame, ...]:
    if not isinstance(value, _LISTS):
        return ()
    # A pickle stores a stack shared by many entries once; reuse its frames the same way.
    known = reader.stacks.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    frames: list[Frame] = []
    for raw in value:
        if isinstance(raw, dict):
            key = (raw.get("name", "?"), raw.get("filename", "?"), raw.get("line"))
            frame = reader.frames.get(key)
            if frame is None:
                frame = Frame(function=str(key[0]), file=str(key[1]), line=_int(key[2]))
                reader.frames[key] = frame
            frames.append(frame)
    out = tuple(frames)
    reader.stacks[id(value)] = (value, out)
    return out


def _entry(raw: object, index: int, reader: _Reader, version: str) -> FrEntry | None:
    if not isinstance(raw, dict):
        reader.warn(f"a {type(raw).__name__}, not an entry (a dict); skipped", index)
        return None
    group_pair = raw.get("process_group")
    if isinstance(group_pair, _LISTS) and len(group_pair) >= 1:
        group = str(group_pair[0])
        desc = str(group_pair[1]) if len(group_pair) > 1 else ""
    else:
        reader.warn("no `process_group`; skipped", index)
        return None
    # Dumps before 2.2 numbered collectives in `seq_id`; later ones in `collective_seq_id`.
    seq = _int(raw.get("collective_seq_id", raw.get("seq_id")))
    if seq is None:
        reader.warn(f"no collective_seq_id (version {version or '?'}); skipped", index)
        return None
    profiling = str(raw.get("profiling_name", ""))
    if not profiling:
        reader.warn("no `profiling_name`; skipped", index)
        return None
    record_id = _int(raw.get("record_id"))
    created = _int(raw.get("time_created_ns"))
    return FrEntry(
        record_id=index if record_id is None else record_id,
        group=group,
        group_desc=desc,
        seq_id=seq,
        p2p_seq_id=_int(raw.get("p2p_seq_id")) or 0,
        is_p2p=bool(raw.get("is_p2p", False)),
        op=op_name(profiling),
        profiling_name=profiling,
        input_sizes=_sizes(raw.get("input_sizes")),
        output_sizes=_sizes(raw.get("output_sizes")),
        input_dtypes=_strings(raw.get("input_dtypes")),
        output_dtypes=_strings(raw.get("output_dtypes")),
        state=str(raw.get("state", "")),
        timeout_ms=_int(raw.get("timeout_ms")),
        time_created_ns=created or None,
        frames=_frames(raw.get("frames"), reader),
        source=Location(path=reader.source, line=index + 1),
    )


def _entries(value: object, reader: _Reader, key: str) -> list[tuple[object, Mapping[Any, Any]]]:
    """The (key, dict) entries of a per-group table (`pg_status`, `pg_config`).

    A table that is not a dict is ignored with a warning; entries that are not dicts
    are skipped.
    """
    if value is None:
        return []
    if not isinstance(value, Mapping):
        reader.warn(f"`{key}` is not a dict; ignored")
        return []
    return [(name, raw) for name, raw in value.items() if isinstance(raw, Mapping)]


def _status(value: object, reader: _Reader) -> tuple[FrGroupStatus, ...]:
    out: list[FrGroupStatus] = []
    for group, raw in _entries(value, reader, "pg_status"):

        def known(key: str, raw: Mapping[object, object] = raw) -> int | None:
            number = _int(raw.get(key))
            return None if number is None or number < 0 else number

        out.append(
            FrGroupStatus(
                group=str(group),
                last_enqueued=known("last_enqueued_collective"),
                last_started=known("last_started_collective"),
                last_completed=known("last_completed_collective"),
            )
        )
    return tuple(sorted(out, key=lambda s: s.group))


def _groups(value: object, reader: _Reader) -> tuple[FrGroupConfig, ...]:
    out: list[FrGroupConfig] = []
    for key, raw in _entries(value, reader, "pg_config"):
        name = str(raw.get("name", key))
        ranks: tuple[int, ...] = ()
        text = raw.get("ranks", "")
        try:
            # `"[0, 1, 2]"`: a Python list literal as text; literal_eval never runs code.
            parsed = ast.literal_eval(text) if isinstance(text, str) and text else text
        except (ValueError, SyntaxError):
            reader.warn(f"pg_config {name!r}: ranks {str(text)[:40]!r} not a list; ignored")
            parsed = []
        if isinstance(parsed, Sequence) and not isinstance(parsed, str | bytes):
            ranks = tuple(r for r in (_int(v) for v in parsed) if r is not None)
        out.append(FrGroupConfig(name=name, desc=str(raw.get("desc", "")), ranks=ranks))
    return tuple(sorted(out, key=lambda g: g.name))


# --- watchdog log lines

_WORK = (
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>[A-Z_]+)"
    r"(?:, NumelIn=(?P<nin>-?\d+), NumelOut=(?P<nout>-?\d+))?"
    r", Timeout\(ms\)=(?P<timeout>\d+)\)"
)
_TIMEOUT_RE = re.compile(
    r"\[Rank (?P<rank>\d+)\] (?:Watchdog caught collective operation timeout: |Work )"
    + _WORK
    + r"(?: ran for (?P<ran>\d+) milliseconds before timing out| timed out in blocking wait)"
)
# The ProcessGroupNCCL line naming the group and its progress; three wordings across versions.
_PG_RE = re.compile(
    r"\[PG (?:ID )?(?P<pg>\w+)(?: PG GUID (?P<guid>[^\s(\]]+))?\s?(?:\((?P<desc>[^)]*)\))?"
    r" Rank (?P<rank>\d+)\]\s+(?:"
    r"Exception \(either an error or timeout\) detected by watchdog at work: (?P<a_seq>\d+), "
    r"last enqueued NCCL work: (?P<a_enq>-?\d+), last completed NCCL work: (?P<a_done>-?\d+)"
    r"|failure detected by watchdog at work sequence id: (?P<b_seq>\d+) PG status: "
    r"last enqueued work: (?P<b_enq>-?\d+), last completed work: (?P<b_done>-?\d+)"
    r"|Timeout at NCCL work: (?P<c_seq>\d+), last enqueued NCCL work: (?P<c_enq>-?\d+), "
    r"last completed NCCL work: (?P<c_done>-?\d+))"
)

UNKNOWN_GROUP = "?"
"""The group of a watchdog timeout whose ProcessGroupNCCL line is not in the log."""


def sniff_watchdog(head: str) -> bool:
    """True when the text holds a watchdog timeout line."""
    return "Watchdog caught collective operation timeout" in head or (
        "timed out in blocking wait" in head and "WorkNCCL(" in head
    )


@dataclass(slots=True)
class _Timeout:
    rank: int
    seq: int
    op: str
    numel_in: int | None
    numel_out: int | None
    timeout_ms: int
    line: int


@dataclass(slots=True)
class _PgLine:
    rank: int
    group: str
    desc: str
    seq: int
    enqueued: int
    completed: int


def parse_watchdog(text: str, *, source: str) -> ParseResult:
    """The watchdog's timeout lines of one log as one `FrTrace` per rank.

    Each rank gets one entry per timed-out collective (state `timed-out`), with the group and
    the group's progress from the ProcessGroupNCCL line that follows it where the log has one.
    Repeated lines (blocking wait after the watchdog line) count once.
    """
    timeouts: list[_Timeout] = []
    pg_lines: list[_PgLine] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "WorkNCCL(" in line:
            found = _TIMEOUT_RE.search(line)
            if found:
                timeouts.append(_timeout(found, number))
                continue
        if "[PG " in line:
            found_pg = _PG_RE.search(line)
            if found_pg:
                pg_lines.append(_pg_line(found_pg))
    if not timeouts:
        return ParseResult()
    groups: dict[tuple[int, int], _PgLine] = {}
    by_seq: dict[int, dict[str, _PgLine]] = {}
    for pg in pg_lines:
        groups.setdefault((pg.rank, pg.seq), pg)
        by_seq.setdefault(pg.seq, {}).setdefault(pg.group, pg)
    every_group = {pg.group: pg for pg in pg_lines}
    by_rank: dict[int, dict[tuple[str, int], FrEntry]] = {}
    statuses: dict[int, dict[str, FrGroupStatus]] = {}
    for t in timeouts:
        pg_line = groups.get((t.rank, t.seq))
        group = pg_line.group if pg_line else UNKNOWN_GROUP
        desc = pg_line.desc if pg_line else ""
        if pg_line is None:
            # Logs are pasted in part: when the lines that are there name one group only
            # (for this id, else at all), a rank without its own line is in that group.
            same_seq = by_seq.get(t.seq, {})
            named = same_seq if len(same_seq) == 1 else every_group if len(every_group) == 1 else {}
            if named:
                only = next(iter(named.values()))
                group, desc = only.group, only.desc
        entries = by_rank.setdefault(t.rank, {})
        if (group, t.seq) in entries:
            continue
        entries[(group, t.seq)] = FrEntry(
            record_id=len(entries),
            group=group,
            group_desc=desc,
            seq_id=t.seq,
            op=op_name(t.op),
            profiling_name=f"nccl:{op_name(t.op)}",
            numel_in=t.numel_in,
            numel_out=t.numel_out,
            state="timed-out",
            timeout_ms=t.timeout_ms,
            source=Location(path=source, line=t.line),
        )
        if pg_line:
            statuses.setdefault(t.rank, {})[group] = FrGroupStatus(
                group=group,
                last_enqueued=pg_line.enqueued if pg_line.enqueued >= 0 else None,
                last_completed=pg_line.completed if pg_line.completed >= 0 else None,
            )
    traces = tuple(
        FrTrace(
            rank=rank,
            trace_set=f"watchdog:{source}",
            origin=FrOrigin.WATCHDOG_LOG,
            backend="nccl",
            entries=tuple(sorted(by_rank[rank].values(), key=lambda e: (e.group, e.seq_id))),
            status=tuple(sorted(statuses.get(rank, {}).values(), key=lambda s: s.group)),
            source=Location(path=source),
        )
        for rank in sorted(by_rank)
    )
    return ParseResult(flight_recorder=traces)


def _timeout(found: re.Match[str], line: int) -> _Timeout:
    nin = found.group("nin")
    nout = found.group("nout")
    return _Timeout(
        rank=int(found.group("rank")),
        seq=int(found.group("seq")),
        op=found.group("op"),
        numel_in=int(nin) if nin else None,
        numel_out=int(nout) if nout else None,
        timeout_ms=int(found.group("timeout")),
        line=line,
    )


def _pg_line(found: re.Match[str]) -> _PgLine:
    def pick(*names: str) -> int:
        for name in names:
            value = found.group(name)
            if value is not None:
                return int(value)
        return -1

    return _PgLine(
        rank=int(found.group("rank")),
        group=found.group("guid") or found.group("pg"),
        desc=found.group("desc") or "",
        seq=pick("a_seq", "b_seq", "c_seq"),
        enqueued=pick("a_enq", "b_enq", "c_enq"),
        completed=pick("a_done", "b_done", "c_done"),
    )
