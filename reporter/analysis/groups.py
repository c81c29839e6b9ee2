"""Process groups and point-to-point peers, read from the evidence of one process.

Input: a rank's snapshots (`--locals` frames of its main thread), or a bundle's Flight
Recorder traces. Output: the process group of the collective the rank waits in, and for a
point-to-point wait, the peer it waits for. Nothing here guesses: what the evidence does not
show stays None.

The group, as the caller passed it to torch (torch's c10d wrapper keeps the call's `kwargs`;
inside the collective torch has already replaced None by the default group object)::

    kwargs: {}                          -> "default"   (no `group` argument)
    kwargs: {"group": None}             -> "default"
    kwargs: {"group": <ProcessGroup>}   -> "non-default" (an object: its address differs per process)
    kwargs: {"op": <RedOpType>, ...}    -> elided by py-spy: "non-default" when a caller frame
                                           holds the collective's group object, "default" when
                                           the caller's `group` argument is None, else None
    group_name: "tp:0"                  -> "tp:0"

The peer of `recv` / `send` (and `irecv`, `isend`, `recv_object_list`, ...), from the
arguments torch received: `src` / `dst` are global ranks; `group_src` / `group_dst` are ranks
within the group, global only on the default group. A Flight Recorder p2p entry names both
ends in its profiling name, as ranks of its group (`nccl:recv 2<-1`), which `pg_config`
maps to global ranks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis.classify import Classifier, FrameKind
from reporter.analysis.clues import has_locals, main_thread
from reporter.model import Frame, FrTrace, ProcessDump

_GROUP_ARGS = ("group", "process_group", "pg", "group_name")
_QUOTED = re.compile(r"""^["'](.+)["']$""")
# `kwargs: {"group": None}` in torch's c10d wrapper: the group as the caller passed it.
_KWARG_GROUP = re.compile(
    r"""["'](?:group|process_group|pg)["']\s*:\s*(None|["'][^"']*["']|<[^>]*>)"""
)
_PROCESS_GROUP_OBJECT = re.compile(r"ProcessGroup\b")
_INT = re.compile(r"^-?\d+$")


def _group_text(text: str) -> str:
    text = text.strip()
    if text == "None":
        return "default"
    quoted = _QUOTED.match(text)
    if quoted is not None:
        return quoted.group(1)
    # An object: addresses differ between processes, so only "not the default" is known.
    return "non-default"


_ADDRESS = re.compile(r"\bat (0x[0-9a-fA-F]+)")


def _kwargs_group(frame: Frame) -> tuple[bool, str | None]:
    """What torch's c10d wrapper frame says of the group: (has `kwargs`, group). The group
    is the `group` keyword's value when shown; `default` when the keywords are shown in full
    without one and no group object is among the positional arguments; None when py-spy
    elided part of them (`{"op": <...>, ...}`)."""
    kwargs = next((loc for loc in frame.locals if loc.name == "kwargs"), None)
    if kwargs is None:
        return False, None
    match = _KWARG_GROUP.search(kwargs.repr)
    if match is not None:
        return True, _group_text(match.group(1))
    args = next((loc for loc in frame.locals if loc.name == "args"), None)
    if args is not None and _PROCESS_GROUP_OBJECT.search(args.repr):
        return True, "non-default"
    if "..." in kwargs.repr:
        return True, None
    return True, "default"


def _group_of(frames: Sequence[Frame], classifier: Classifier) -> str | None:
    """The group of the collective at the top of `frames` (innermost first), from locals.

    In order: the `group` keyword torch's wrapper kept; a group object the caller's frames
    hold (the same address as the collective's `group` argument: passed explicitly); the
    wrapper's keywords shown in full without a group (the default group); a caller's
    `group=None` argument; else, without torch's wrapper, the collective's own argument."""
    inner: str | None = None
    address: str | None = None
    wrapper = False
    from_kwargs: str | None = None
    end = len(frames)
    for index, frame in enumerate(frames):
        if classifier.classify(frame).kind is FrameKind.APPLICATION:
            end = index
            break
        for local in frame.locals:
            if local.is_arg and local.name in _GROUP_ARGS and inner is None:
                inner = _group_text(local.repr)
                found = _ADDRESS.search(local.repr)
                address = found.group(1) if found else None
        has, value = _kwargs_group(frame)
        if has:
            wrapper = True
            from_kwargs = value if value is not None else from_kwargs
    if from_kwargs is not None and from_kwargs != "default":
        return from_kwargs
    callers = frames[end:]
    if address is not None and any(
        address in loc.repr for frame in callers for loc in frame.locals
    ):
        return "non-default"
    if from_kwargs == "default":
        return "default"
    if wrapper:
        caller_none = any(
            loc.is_arg and loc.name in _GROUP_ARGS and loc.repr.strip() == "None"
            for frame in callers[:1]
            for loc in frame.locals
        )
        return "default" if caller_none else None
    return inner


def process_group(snapshots: Sequence[ProcessDump], classifier: Classifier) -> str | None:
    """The process group of the collective in the latest `--locals` snapshot, as the caller
    passed it: `default`, a quoted name as given, `non-default` for a group object; None when
    no snapshot shows locals or they do not tell. torch replaces None by the default group
    object inside the collective, so its own `group` argument alone cannot tell."""
    for dump in reversed(snapshots):
        thread = main_thread(dump)
        if thread is None or not has_locals(thread.frames):
            continue
        return _group_of(thread.frames, classifier)
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Peer:
    """Who a point-to-point wait waits for: a global rank, or a rank within a group.

    `rank` is global (None when only the group's own numbering is known: `group_rank` then,
    with `group` naming the group); `source` says where it was read (`--locals src=2`,
    `Flight Recorder nccl:recv 2<-1 (rank1.json)`)."""

    rank: int | None
    group_rank: int | None = None
    group: str | None = None
    tag: int | None = None
    source: str = ""


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if _INT.match(text) else None


_PEER_ARGS = {"recv": ("src", "group_src"), "send": ("dst", "group_dst")}


def local_peer(
    snapshots: Sequence[ProcessDump], classifier: Classifier, direction: str
) -> Peer | None:
    """The peer of the point-to-point call in the latest `--locals` snapshot: `src` / `dst`
    (global), else `group_src` / `group_dst` (global on the default group only), from the
    innermost frame that has them above the first application frame; None otherwise.
    `direction` is `recv`, `send` or `either`."""
    names = _PEER_ARGS.get(direction, ("src", "group_src")) + (
        _PEER_ARGS["send"] if direction == "either" else ()
    )
    for dump in reversed(snapshots):
        thread = main_thread(dump)
        if thread is None or not has_locals(thread.frames):
            continue
        group = _group_of(thread.frames, classifier)
        for frame in thread.frames:
            if classifier.classify(frame).kind is FrameKind.APPLICATION:
                break
            values = {loc.name: loc.repr for loc in frame.locals if loc.is_arg}
            tag = _int(values.get("tag", ""))
            for name in names:
                value = _int(values.get(name, ""))
                if value is None:
                    continue
                source = f"--locals {name}={value} in {frame.short_function}"
                if name.startswith("group_"):
                    if group == "default":
                        return Peer(
                            rank=value, group_rank=value, group=group, tag=tag, source=source
                        )
                    return Peer(rank=None, group_rank=value, group=group, tag=tag, source=source)
                return Peer(rank=value, group=group, tag=tag, source=source)
        return None
    return None


_FR_P2P = re.compile(r"\b(?P<op>send|recv)\s+(?P<me>\d+)\s*(?P<arrow>->|<-)\s*(?P<peer>\d+)")
_PENDING = frozenset({"scheduled", "started", "timed-out", ""})


@dataclass(frozen=True, slots=True, kw_only=True)
class FrP2p:
    """A rank's last point-to-point entry of the Flight Recorder that did not complete."""

    rank: int
    direction: str
    peer: Peer


def flight_recorder_p2p(traces: Sequence[FrTrace]) -> dict[int, FrP2p]:
    """Per rank, its latest p2p entry not completed (`nccl:recv 2<-1`, state scheduled or
    started), with the peer mapped to a global rank through `pg_config` (or unchanged on
    the default group); ranks without such an entry are left out."""
    out: dict[int, FrP2p] = {}
    for trace in traces:
        if trace.rank is None:
            continue
        members = {g.name: g.ranks for g in trace.groups}
        for entry in reversed(trace.entries):
            if not entry.is_p2p:
                continue
            match = _FR_P2P.search(entry.profiling_name)
            if match is None or entry.state not in _PENDING:
                break
            local = int(match.group("peer"))
            ranks = members.get(entry.group, ())
            default = entry.group in ("0", "") and not ranks
            if ranks and local < len(ranks):
                rank: int | None = ranks[local]
            elif default:
                rank = local
            else:
                rank = None
            out[trace.rank] = FrP2p(
                rank=trace.rank,
                direction=match.group("op"),
                peer=Peer(
                    rank=rank,
                    group_rank=local,
                    group=entry.group_desc or entry.group,
                    source=f"Flight Recorder {entry.profiling_name} ({entry.source.path})",
                ),
            )
            break
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class FrGroup:
    """The group of a rank's latest collective the Flight Recorder shows not completed, with
    its members from `pg_config` (global ranks)."""

    name: str
    ranks: tuple[int, ...]
    source: str


def flight_recorder_groups(traces: Sequence[FrTrace]) -> dict[int, FrGroup]:
    """Per rank, the process group of its latest collective entry not completed (by the
    group's `pg_status` where the trace has it, else the entry's state), when `pg_config`
    lists that group's ranks; ranks without such an entry are left out."""
    out: dict[int, FrGroup] = {}
    for trace in traces:
        if trace.rank is None or trace.rank in out:
            continue
        members = {g.name: g for g in trace.groups if g.ranks}
        done = {s.group: s.last_completed for s in trace.status}
        for entry in reversed(trace.entries):
            if entry.is_p2p:
                continue
            completed = done.get(entry.group)
            pending = entry.seq_id > completed if completed is not None else entry.state in _PENDING
            config = members.get(entry.group)
            if pending and config is not None:
                out[trace.rank] = FrGroup(
                    name=entry.group_desc or config.desc or entry.group,
                    ranks=config.ranks,
                    source=f"Flight Recorder pg_config ({trace.source.path})",
                )
            break
    return out
