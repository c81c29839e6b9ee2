"""Align Flight Recorder traces by sequence id and find the first mismatch.

Input: the bundle's `FrTrace`s (one per rank and trace set). Output: a
`FlightRecorderAnalysis`; `flight_recorder.py` joins it with the stacks.

Per process group, each rank's collectives (p2p ops aside) are keyed by `collective_seq_id`.
From the first id every member's ring buffer still holds up to the highest id any member
issued, the ranks must agree at every id on the operation, the sizes and the dtypes, and
every member must have issued it. The first id where they do not is the group's mismatch;
the earliest-issued group mismatch is the trace set's first. Example, 4 TP ranks::

    group 1 #4   all_reduce [[4]] on [0-3]            agree
    group 1 #5   all_reduce [[4]] on [0-1]            FlrMismatch(kind="op",
                 broadcast  [[4]] on [2-3]              by_op=(("all_reduce", (0, 1)),
                                                               ("broadcast", (2, 3))))

A missing entry at the end of the trace is no mismatch when the ranks that have it already
completed it (their dumps were simply taken later). torch 2.13's gloo recorder writes no
group membership (`pg_config` under an empty name), so members are the ranks with entries
or a `pg_status` for the group, and every rank of the set for the default group.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from reporter.analysis.fr_result import (
    FlightRecorderAnalysis,
    FrCell,
    FrGroupView,
    FrMismatch,
    FrRankProgress,
    FrRow,
    FrSide,
)
from reporter.analysis.ranksets import format_ranks
from reporter.model import FrEntry, FrOrigin, FrTrace

# Operations whose per-rank sizes legitimately differ: their sizes are not compared.
_UNEVEN_OPS = frozenset(
    {
        "all_to_all",
        "all_to_all_base",
        "alltoall_base",
        "all_to_allv",
        "send",
        "recv",
        "gather",
        "scatter",
        "coalesced",
    }
)
_AROUND = 2
"""Aligned rows shown before and after the mismatch (or before the last id) per group."""
DEFAULT_GROUP_DESC = "default_pg"


# --- alignment


def _sizes_text(entry: FrEntry) -> str:
    if entry.input_sizes is not None:
        out = (
            ""
            if entry.output_sizes in (None, entry.input_sizes)
            else f"->{_dims(entry.output_sizes)}"
        )
        return _dims(entry.input_sizes) + out
    if entry.numel_in is not None:
        out = "" if entry.numel_out in (None, entry.numel_in) else f"->{entry.numel_out}"
        return f"numel {entry.numel_in}{out}"
    return ""


def _dims(sizes: tuple[tuple[int, ...], ...] | None) -> str:
    if sizes is None:
        return "?"
    return "[" + ",".join("[" + ",".join(str(d) for d in shape) + "]" for shape in sizes) + "]"


def _key(entry: FrEntry) -> tuple[str, str, str]:
    sizes = "" if entry.op in _UNEVEN_OPS else _sizes_text(entry)
    return (entry.op, sizes, ",".join(entry.input_dtypes + entry.output_dtypes))


def _is_default(group: str, desc: str) -> bool:
    return desc == DEFAULT_GROUP_DESC or (group == "0" and not desc)


@dataclass(slots=True)
class _GroupData:
    desc: str
    by_rank: dict[int, dict[int, FrEntry]]
    members: set[int]


def _collect(traces: Sequence[FrTrace]) -> dict[str, _GroupData]:
    ranks = {t.rank for t in traces if t.rank is not None}
    groups: dict[str, _GroupData] = {}
    for trace in traces:
        if trace.rank is None:
            continue
        for entry in trace.entries:
            if entry.is_p2p or entry.seq_id <= 0:
                continue
            data = groups.setdefault(entry.group, _GroupData(entry.group_desc, {}, set()))
            data.desc = data.desc if data.desc not in ("", "undefined") else entry.group_desc
            data.members.add(trace.rank)
            # Coalesced ops share one id: the first entry stands for the group of them.
            data.by_rank.setdefault(trace.rank, {}).setdefault(entry.seq_id, entry)
    # Second pass: a rank with a pg_status for a group is a member even with no entry left.
    for trace in traces:
        if trace.rank is None:
            continue
        for status in trace.status:
            if status.group in groups:
                groups[status.group].members.add(trace.rank)
        for config in trace.groups:
            if config.name in groups and config.ranks:
                groups[config.name].members.update(r for r in config.ranks if r in ranks)
    for name, data in groups.items():
        if _is_default(name, data.desc):
            data.members |= ranks
    return groups


def _completed(trace_by_rank: dict[int, FrTrace], rank: int, group: str, seq: int) -> bool | None:
    """Did `rank` complete collective `seq` of `group`? None when its trace cannot say."""
    trace = trace_by_rank.get(rank)
    if trace is None:
        return None
    entry = next((e for e in trace.entries if e.group == group and e.seq_id == seq), None)
    if entry is not None and entry.state == "completed":
        return True
    status = next((s for s in trace.status if s.group == group), None)
    if status is not None and status.last_completed is not None:
        return status.last_completed >= seq
    if entry is not None and entry.state in ("scheduled", "started", "timed-out"):
        # NCCL entries move to `completed`; gloo entries never leave `scheduled`.
        return False if trace.backend == "nccl" or entry.state == "timed-out" else None
    return None


IN_FLIGHT_S = 5.0
"""A collective issued less than this before the dump (and under half its timeout) may
simply not have reached the other ranks yet."""


def _pending_seconds(present: dict[int, FrEntry], traces: dict[int, FrTrace]) -> float | None:
    """Seconds from the latest issue of the entry to the earliest dump; None when unknown."""
    created = [e.time_created_ns for e in present.values() if e.time_created_ns]
    dumped = [t.captured_at for t in traces.values() if t.captured_at is not None]
    if not created or not dumped:
        return None
    return min(dumped).timestamp() - max(created) / 1e9


def _in_flight(present: dict[int, FrEntry]) -> float:
    timeouts = [e.timeout_ms / 2000 for e in present.values() if e.timeout_ms]
    return min([IN_FLIGHT_S, *timeouts])


def _moved_on(trace: FrTrace, entry: FrEntry) -> bool:
    """True when the rank completed `entry` or recorded anything after it (it went on)."""
    if entry.state == "completed":
        return True
    return any(e.record_id > entry.record_id for e in trace.entries)


def _align_group(
    trace_set: str, group: str, data: _GroupData, trace_by_rank: dict[int, FrTrace]
) -> FrGroupView:
    members = tuple(sorted(data.members))
    spans = {r: (min(s), max(s)) for r, s in data.by_rank.items() if s}
    notes: list[str] = []
    if not spans:
        return FrGroupView(
            group=group,
            desc=data.desc,
            members=members,
            first_seq=None,
            last_seq=None,
            rows=(),
            mismatch=None,
        )
    first = max(lo for lo, _ in spans.values())
    last = max(hi for _, hi in spans.values())
    if first > min(lo for lo, _ in spans.values()):
        notes.append(
            f"ids before #{first} are compared on some ranks only: older entries left the "
            "ring buffer of the others"
        )
    mismatch: FrMismatch | None = None
    mismatch_at: int | None = None
    stale: set[int] = set()
    """Ranks whose dump provably ended before the others' (their later ids are unknown)."""
    for seq in range(first, last + 1):
        present = {r: entries[seq] for r, entries in data.by_rank.items() if seq in entries}
        missing = tuple(r for r in members if r not in present and r not in stale)
        keys: dict[tuple[str, str, str], list[int]] = {}
        for rank in sorted(present):
            keys.setdefault(_key(present[rank]), []).append(rank)
        if len(keys) <= 1 and not missing:
            continue
        at_tail = seq > max(spans.get(r, (0, -1))[1] for r in missing) if missing else False
        pending = _pending_seconds(present, trace_by_rank)
        if len(keys) <= 1 and at_tail and pending is not None and pending < _in_flight(present):
            notes.append(
                f"#{seq} is issued on {format_ranks(sorted(present))}, not yet on "
                f"{format_ranks(missing)}, {pending:.1f} s before the dump: in flight, not a "
                "mismatch"
            )
            stale.update(missing)
            continue
        if (
            len(keys) <= 1
            and at_tail
            and all(_moved_on(trace_by_rank[r], entry) for r, entry in present.items())
        ):
            notes.append(
                f"#{seq} is missing on {format_ranks(missing)} but the others went past "
                "it: their dumps were taken earlier, not a mismatch; later ids are not "
                "compared with them"
            )
            stale.update(missing)
            continue
        mismatch = _mismatch(trace_set, group, data, seq, present, missing, keys, trace_by_rank)
        mismatch_at = seq
        break
    rows = _rows(data, members, first, last, mismatch_at)
    return FrGroupView(
        group=group,
        desc=data.desc,
        members=members,
        first_seq=first,
        last_seq=last,
        rows=rows,
        mismatch=mismatch,
        notes=tuple(notes),
    )


def _mismatch(
    trace_set: str,
    group: str,
    data: _GroupData,
    seq: int,
    present: dict[int, FrEntry],
    missing: tuple[int, ...],
    keys: dict[tuple[str, str, str], list[int]],
    trace_by_rank: dict[int, FrTrace],
) -> FrMismatch:
    ops = {k[0] for k in keys}
    sizes = {k[1] for k in keys}
    kind = (
        "op"
        if len(ops) > 1
        else "sizes"
        if len(sizes) > 1
        else "dtypes"
        if len(keys) > 1
        else "missing"
    )
    sides = tuple(
        FrSide(
            op=key[0],
            sizes=key[1] or _sizes_text(present[ranks[0]]),
            ranks=tuple(ranks),
            states=tuple(sorted({present[r].state for r in ranks})),
        )
        for key, ranks in sorted(keys.items(), key=lambda kv: kv[1][0])
    )
    not_completed = tuple(
        r for r in sorted(present) if _completed(trace_by_rank, r, group, seq) is False
    )
    previous: list[tuple[int, str, int | None]] = []
    for rank in missing:
        earlier = [s for s in data.by_rank.get(rank, {}) if s < seq]
        if earlier:
            last = max(earlier)
            previous.append((rank, data.by_rank[rank][last].op, last))
        else:
            previous.append((rank, "", None))
    return FrMismatch(
        trace_set=trace_set,
        group=group,
        group_desc=data.desc,
        seq_id=seq,
        kind=kind,
        sides=sides,
        missing=missing,
        not_completed=not_completed,
        previous=tuple(previous),
        members=tuple(sorted(data.members)),
    )


def _rows(
    data: _GroupData, members: tuple[int, ...], first: int, last: int, at: int | None
) -> tuple[FrRow, ...]:
    centre = at if at is not None else last
    lo = max(first, centre - _AROUND)
    hi = min(last, centre + _AROUND) if at is not None else last
    rows: list[FrRow] = []
    for seq in range(lo, hi + 1):
        cells = []
        for rank in members:
            entry = data.by_rank.get(rank, {}).get(seq)
            cells.append(
                FrCell(
                    rank=rank,
                    op=entry.op if entry else "",
                    sizes=_sizes_text(entry) if entry else "",
                    state=entry.state if entry else "",
                )
            )
        rows.append(FrRow(seq_id=seq, cells=tuple(cells), agree=seq != at))
    return tuple(rows)


def _progress(traces: Sequence[FrTrace], groups: Iterable[str]) -> tuple[FrRankProgress, ...]:
    wanted = set(groups)
    out: list[FrRankProgress] = []
    for trace in traces:
        if trace.rank is None:
            continue
        names = sorted(
            {e.group for e in trace.entries if not e.is_p2p} | {s.group for s in trace.status}
        )
        for group in names:
            if group not in wanted:
                continue
            issued = [e for e in trace.entries if e.group == group and not e.is_p2p]
            last_entry = max(issued, key=lambda e: (e.seq_id, e.record_id), default=None)
            status = next((s for s in trace.status if s.group == group), None)
            last_issued = last_entry.seq_id if last_entry else None
            if status is not None and status.last_enqueued is not None:
                last_issued = max(last_issued or 0, status.last_enqueued)
            done = [e.seq_id for e in issued if e.state == "completed"]
            last_completed = max(done) if done else None
            if status is not None and status.last_completed is not None:
                last_completed = max(last_completed or 0, status.last_completed)
            out.append(
                FrRankProgress(
                    rank=trace.rank,
                    group=group,
                    last_issued=last_issued,
                    last_issued_op=last_entry.op if last_entry else "",
                    last_completed=last_completed,
                )
            )
    return tuple(sorted(out, key=lambda p: (p.rank, p.group)))


def _group_order(name: str) -> tuple[int, str]:
    return (int(name), "") if name.isdigit() else (1 << 30, name)


def analyze_set(trace_set: str, traces: Sequence[FrTrace]) -> FlightRecorderAnalysis:
    """Align one trace set (one trace per rank; later duplicates of a rank are ignored)."""
    by_rank: dict[int, FrTrace] = {}
    for trace in traces:
        if trace.rank is not None:
            by_rank.setdefault(trace.rank, trace)
    chosen = [by_rank[r] for r in sorted(by_rank)]
    collected = _collect(chosen)
    views = tuple(
        _align_group(trace_set, name, collected[name], by_rank)
        for name in sorted(collected, key=_group_order)
    )
    found = [v.mismatch for v in views if v.mismatch is not None]
    first = min(found, key=lambda m: _issued_at(m, by_rank), default=None)
    notes: list[str] = []
    unranked = [t.source.path for t in traces if t.rank is None]
    if unranked:
        notes.append(f"no rank for {', '.join(unranked)}: left out of the alignment")
    if any(g.name == "" and not g.ranks for t in chosen for g in t.groups):
        notes.append(
            "pg_config is keyed by an empty group name (torch's gloo recorder): group members "
            "taken from the entries and pg_status"
        )
    head = chosen[0] if chosen else traces[0]
    return FlightRecorderAnalysis(
        trace_set=trace_set,
        origin=head.origin,
        backend=",".join(sorted({t.backend for t in chosen if t.backend})),
        version=head.version,
        ranks=tuple(sorted(by_rank)),
        files=tuple(t.source.path for t in chosen),
        progress=_progress(chosen, collected),
        groups=views,
        first_mismatch=first,
        notes=tuple(notes),
    )


def _issued_at(mismatch: FrMismatch, by_rank: dict[int, FrTrace]) -> tuple[int, int, str]:
    """Sort key: when the mismatching collective was first issued (then by group)."""
    times = [
        e.time_created_ns
        for side in mismatch.sides
        for r in side.ranks
        for e in by_rank[r].entries
        if e.group == mismatch.group and e.seq_id == mismatch.seq_id and e.time_created_ns
    ]
    return (min(times) if times else 1 << 62, *_group_order(mismatch.group))


_ORIGIN_RANK = {FrOrigin.PICKLE: 0, FrOrigin.JSON: 1, FrOrigin.WATCHDOG_LOG: 2}


def analyze(traces: Sequence[FrTrace]) -> FlightRecorderAnalysis | None:
    """All trace sets of a bundle; the chosen one has a mismatch if any set has one, then
    the most ranks, then the most ranks known not to have completed the mismatching
    collective, then full dumps before watchdog lines, then the name."""
    if not traces:
        return None
    sets: dict[str, list[FrTrace]] = {}
    for trace in traces:
        sets.setdefault(trace.trace_set, []).append(trace)
    results = [analyze_set(name, members) for name, members in sorted(sets.items())]
    results.sort(
        key=lambda a: (
            a.first_mismatch is None,
            -len(a.ranks),
            # A set that still tells which ranks never completed the collective says more
            # (gloo marks a timed-out collective completed in the dumps written after it).
            -len(a.first_mismatch.not_completed) if a.first_mismatch else 0,
            _ORIGIN_RANK[a.origin],
            a.trace_set,
        )
    )
    chosen = results[0]
    return replace(chosen, other_sets=tuple((r.trace_set, r.first_mismatch) for r in results[1:]))
