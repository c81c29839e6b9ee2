"""The built-in producers of the wait-for graph (`waitgraph.py`).

- `ranks`: one node per rank or process with stacks (its state from its stacks and its
  process state evidence: stopped, uninterruptible, crashed), and the ranks without stacks
  (gone, not captured);
- `collectives`: the collective and point-to-point waits `verdict.py` found, as edges
  between rank nodes (one edge names every rank it waits for);
- `locks`: the lock cycles and blocked threads `threads.py` found, as thread nodes and lock
  edges.

The one-process readings (threads, the GIL, asyncio loops) are in `procgraph.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from reporter.analysis.result import RankProcess, RankState, WaitsFor
from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    GraphContext,
    Node,
    NodeKind,
    NodeState,
    process_key,
    producer,
    rank_key,
    thread_key,
)
from reporter.model import Bundle

_STATES = {
    RankState.STUCK: NodeState.BLOCKED,
    RankState.MOVING: NodeState.MOVING,
    RankState.IDLE: NodeState.IDLE,
    RankState.UNKNOWN: NodeState.UNKNOWN,
    RankState.MIXED: NodeState.UNKNOWN,
    RankState.STOPPED: NodeState.STOPPED,
    RankState.UNINTERRUPTIBLE: NodeState.UNINTERRUPTIBLE,
    RankState.UNRESPONSIVE: NodeState.UNKNOWN,
    RankState.CRASHED: NodeState.CRASHED,
}
_WAITED = {
    "gone": NodeState.GONE,
    "missing": NodeState.NOT_CAPTURED,
    "stuck": NodeState.BLOCKED,
    "waiting": NodeState.BLOCKED,
    "idle": NodeState.IDLE,
    "moving": NodeState.MOVING,
    "stopped": NodeState.STOPPED,
    "uninterruptible": NodeState.UNINTERRUPTIBLE,
    "crashed": NodeState.CRASHED,
}


def node_state(state: RankState) -> NodeState:
    """The graph state of a rank state."""
    return _STATES[state]


def unit_key(ctx: GraphContext, instance: str, unit: int) -> str:
    """The node key of a unit (`classes[].ranks`) of an instance: a rank, or a process when
    the units are PIDs."""
    analysis = ctx.analysis
    if analysis.rank_unit == "rank":
        return rank_key(instance, unit)
    for process in analysis.processes:
        if process.unit == unit and process.identity.instance == instance:
            ident = process.identity
            twins = sum(
                1
                for p in analysis.processes
                if p.identity.pid == ident.pid and p.identity.host == ident.host
            )
            # PID 1 in two containers on one host: (host, PID) is not enough.
            suffix = f"#{instance}.{unit}" if twins > 1 or ident.pid is None else ""
            return process_key(ident.host, ident.pid, path=f"unit{instance}.{unit}") + suffix
    return process_key("", unit)


def _label(process: RankProcess, unit: str) -> str:
    ident = process.identity
    host = f" on {ident.host}" if ident.host else ""
    if ident.rank is not None and unit == "rank":
        pid = f" (PID {ident.pid})" if ident.pid is not None else ""
        return f"rank {ident.rank}{pid}{host}"
    if unit == "process" and process.unit is not None:
        pid = f" (PID {ident.pid})" if ident.pid is not None else ""
        return f"process {process.unit}{pid}{host}"
    if ident.pid is not None:
        return f"PID {ident.pid}{host}"
    return f"the process in {process.snapshots[-1].source.path}" if process.snapshots else "?"


def process_node(ctx: GraphContext, process: RankProcess) -> Node:
    """The node of one rank or process, with its state across its snapshots."""
    ident = process.identity
    analysis = ctx.analysis
    if process.unit is not None:
        key = unit_key(ctx, ident.instance, process.unit)
    else:
        path = process.snapshots[-1].source.path if process.snapshots else ""
        key = process_key(ident.host, ident.pid, path=path)
    cond = process.condition
    return Node(
        key=key,
        kind=NodeKind.RANK if key.startswith("rank:") else NodeKind.PROCESS,
        state=node_state(process.state),
        label=_label(process, analysis.rank_unit),
        host=ident.host,
        pid=ident.pid,
        rank=ident.rank,
        instance=ident.instance,
        at=cond.at if cond is not None else "",
        why=cond.why if cond is not None else "",
        evidence=cond.sources if cond is not None else (),
        seen=len(process.snapshots),
        producer="ranks",
    )


@producer("ranks")
def ranks(bundle: Bundle, ctx: GraphContext) -> Iterator[Node]:
    """Every rank and process with stacks; ranks without stacks where edges name them."""
    del bundle
    for process in (*ctx.analysis.processes, *ctx.analysis.others):
        yield process_node(ctx, process)


def _edge(ctx: GraphContext, wait: WaitsFor) -> Iterable[Node | Edge]:
    inst = wait.instance
    waited = tuple(unit_key(ctx, inst, u) for u in wait.waited.ranks)
    if not wait.waited.ranks:
        # PIDs only (a process without a unit): the waited processes by PID.
        waited = tuple(process_key("", p) for p in wait.waited.pids)
    state = _WAITED.get(wait.waited.state)
    known = {p.unit for p in ctx.analysis.processes if p.identity.instance == inst}
    if state is not None:
        for unit, key in zip(wait.waited.ranks, waited, strict=True):
            if unit not in known:
                yield Node(
                    key=key,
                    kind=NodeKind.RANK if key.startswith("rank:") else NodeKind.PROCESS,
                    state=state,
                    label=f"rank {unit}" if key.startswith("rank:") else f"PID {unit}",
                    rank=unit if key.startswith("rank:") else None,
                    instance=inst,
                    producer="collectives",
                )
    p2p = wait.kind == "p2p"
    yield Edge(
        waiters=tuple(unit_key(ctx, inst, u) for u in wait.waiting.ranks),
        waited=waited,
        kind=EdgeKind.P2P if p2p else EdgeKind.COLLECTIVE,
        what=wait.waiting.collective,
        at=wait.waiting.at,
        waited_at=wait.waited.at,
        group=wait.waiting.group or wait.group,
        peer=wait.waited.ranks[0] if p2p and len(wait.waited.ranks) == 1 else None,
        instance=inst,
        producer="collectives",
    )


@producer("collectives")
def collectives(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """The collective and point-to-point waits found by `verdict.py`."""
    del bundle
    for wait in ctx.analysis.waits_for:
        yield from _edge(ctx, wait)


@producer("locks")
def locks(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """Lock cycles between threads (`threads.py`): one lock edge per waiting thread, to the
    thread of the cycle holding the lock it waits for."""
    del bundle
    hosts = {
        (p.identity.pid, p.identity.rank): p.identity.host
        for p in (*ctx.analysis.processes, *ctx.analysis.others)
    }
    for lock in ctx.analysis.thread_deadlocks:
        host = hosts.get((lock.pid, lock.rank), "")
        members = (*lock.threads, *lock.behind)
        for thread in members:
            yield Node(
                key=thread_key(host, lock.pid, thread.tid),
                kind=NodeKind.THREAD,
                state=NodeState.BLOCKED if lock.snapshots > 1 else NodeState.UNKNOWN,
                label=f"thread {thread.name or thread.tid}"
                + (f" of PID {lock.pid}" if lock.pid is not None else ""),
                host=host,
                pid=lock.pid,
                tid=thread.tid,
                rank=lock.rank,
                at=f"{thread.waits_in} ({thread.waits_at})",
                evidence=(thread.source,),
                seen=lock.snapshots,
            )
        for thread in members:
            wanted = thread.waits_for.split(" (", 1)[0]
            holders = [
                t
                for t in lock.threads
                if t is not thread and any(h.split(" (", 1)[0] == wanted for h in t.holding)
            ]
            if not holders:
                continue
            yield Edge(
                waiters=(thread_key(host, lock.pid, thread.tid),),
                waited=tuple(thread_key(host, lock.pid, t.tid) for t in holders),
                kind=EdgeKind.LOCK,
                what=thread.waits_for,
                at=f"{thread.waits_in} ({thread.waits_at})",
                waited_at=", ".join(h.holding_from for h in holders if h.holding_from),
                evidence=(thread.source,),
            )
