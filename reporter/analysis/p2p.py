"""Point-to-point waits: edges from a rank to its peer, and the cycles they close.

Input: `UnitView`s of one instance whose main stack waits in a point-to-point operation
(`recv`, `send`, `irecv`, ... : `[p2p]` in frames.toml), each with the peer the evidence
names (`--locals` `src` / `dst`, or the Flight Recorder). Output: one `WaitsFor` edge per
waiting rank and peer (kind `p2p`), and the cycles among them::

    rank 0 recv from 2, rank 2 recv from 0, rank 1 recv from 3, rank 3 recv from 1
    -> cycles (0, 2) and (1, 3): "0<->2, 1<->3: both sides wait in recv, none sends"

A cycle is a deadlock when no pair in it meets: a `recv` from X meets X's `send` to it, and
nothing else does. Cycles are found with Tarjan's strongly connected components, iteratively,
in time linear in ranks plus edges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reporter.analysis.ranksets import format_ranks
from reporter.analysis.result import P2pCycle

MAX_NAMED = 5
"""Cycles named in one sentence; the rest are counted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class P2pWait:
    """One rank waiting in a point-to-point call: direction, call site and peers."""

    rank: int
    direction: str
    """`recv`, `send` or `either` (`batch_isend_irecv`: the evidence does not say which)."""
    op: str
    at: str
    peers: tuple[int, ...]
    stuck: bool


def components(graph: Mapping[int, Sequence[int]]) -> list[list[int]]:
    """Strongly connected components of `graph` (node -> successors), iteratively (Tarjan),
    each in the order found; nodes without an entry have no successors."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = graph.get(node, ())
            if child < len(successors):
                work.append((node, child + 1))
                nxt = successors[child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                members: list[int] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    members.append(top)
                    if top == node:
                        break
                out.append(members)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def _meets(a: P2pWait, b: P2pWait) -> bool:
    """True when `a`'s wait on `b` is answered by `b`'s wait on `a`: a recv and a send."""
    if a.rank not in b.peers:
        return False
    pair = {a.direction, b.direction}
    return pair == {"recv", "send"} or "either" in pair


def _path(members: Sequence[int], graph: Mapping[int, Sequence[int]]) -> tuple[int, ...] | None:
    """The members in cycle order from the smallest, when the component is one simple cycle
    (each member has exactly one successor inside it); else None."""
    inside = set(members)
    succ: dict[int, int] = {}
    for node in members:
        nexts = [n for n in graph.get(node, ()) if n in inside]
        if len(nexts) != 1:
            return None
        succ[node] = nexts[0]
    start = min(members)
    order = [start]
    seen = {start}
    while len(order) < len(members):
        nxt = succ[order[-1]]
        if nxt in seen:
            return None
        order.append(nxt)
        seen.add(nxt)
    return tuple(order) if succ[order[-1]] == start else None


MAX_SHOWN = 8
"""Ranks of one cycle written out; a longer cycle shows its first and last ones."""


def cycle_name(cycle: P2pCycle) -> str:
    """`0<->2`, `0->3->2->1->0`, `0->1->2->3->4->5->...->99->0 (100 ranks)` for a long one,
    or `ranks [4-7]` for a component that is not one cycle."""
    if not cycle.order:
        return f"ranks {format_ranks(cycle.ranks)}"
    if len(cycle.order) == 2:
        return f"{cycle.order[0]}<->{cycle.order[1]}"
    if len(cycle.order) > MAX_SHOWN:
        head = "->".join(str(r) for r in cycle.order[: MAX_SHOWN - 2])
        return f"{head}->...->{cycle.order[-1]}->{cycle.order[0]} ({len(cycle.order)} ranks)"
    return "->".join(str(r) for r in (*cycle.order, cycle.order[0]))


def find_cycles(waits: Sequence[P2pWait]) -> tuple[P2pCycle, ...]:
    """Cycles of point-to-point waits among present ranks, smallest rank first.

    `deadlock` is True when every member is stuck (the same stack in every snapshot) and no
    two members meet (a recv answered by the matching send)."""
    by_rank = {w.rank: w for w in waits}
    graph = {w.rank: tuple(p for p in w.peers if p in by_rank) for w in waits}
    cycles: list[P2pCycle] = []
    for members in components(graph):
        if len(members) < 2 and not (members and members[0] in graph[members[0]]):
            continue
        ranks = tuple(sorted(members))
        inside = set(ranks)
        meets = any(
            _meets(by_rank[a], by_rank[b])
            for a in ranks
            for b in graph[a]
            if b in inside and b != a
        )
        directions = tuple(sorted({by_rank[r].direction for r in ranks}))
        cycles.append(
            P2pCycle(
                ranks=ranks,
                order=_path(ranks, graph) or (),
                directions=directions,
                sites=tuple(sorted({by_rank[r].at for r in ranks if by_rank[r].at})),
                deadlock=not meets and all(by_rank[r].stuck for r in ranks),
            )
        )
    cycles.sort(key=lambda c: c.ranks[0])
    return tuple(cycles)


def deadlock_text(cycles: Sequence[P2pCycle], *, unnamed: str = "") -> str:
    """`p2p deadlock: 0<->2, 1<->3: both sides wait in recv, none sends`; with no cycles
    named (peers unknown), `unnamed` says who waits (`every rank waits in recv`)."""
    if not cycles:
        return f"p2p deadlock: {unnamed}"
    names = [cycle_name(c) for c in cycles[:MAX_NAMED]]
    if len(cycles) > MAX_NAMED:
        names.append(f"and {len(cycles) - MAX_NAMED} more")
    directions = {d for c in cycles for d in c.directions}
    pairs = all(len(c.ranks) == 2 for c in cycles)
    who = "both sides wait" if pairs else "every rank waits"
    if directions == {"recv"}:
        what = f"{who} in recv, none sends"
    elif directions == {"send"}:
        what = f"{who} in send, none receives"
    else:
        what = "each rank waits for a peer that waits for another"
    return f"p2p deadlock: {', '.join(names)}: {what}"
