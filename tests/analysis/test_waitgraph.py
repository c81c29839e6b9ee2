"""The wait-for graph: node merging, cycles, waits on dead nodes, culprits, the registry."""

from __future__ import annotations

import pytest

from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    NodeState,
    process_key,
    producer,
    rank_key,
    thread_key,
)


def _node(key: str, state: NodeState = NodeState.BLOCKED, seen: int = 0) -> Node:
    return Node(key=key, kind=NodeKind.RANK, state=state, label=key, seen=seen)


def _edge(
    a: str | tuple[str, ...], b: str | tuple[str, ...], kind: EdgeKind = EdgeKind.LOCK
) -> Edge:
    waiters = (a,) if isinstance(a, str) else a
    waited = (b,) if isinstance(b, str) else b
    return Edge(waiters=waiters, waited=waited, kind=kind)


def test_two_threads_waiting_for_each_other_are_a_cycle() -> None:
    a, b, c = (thread_key("h", 1, t) for t in ("1", "2", "3"))
    graph = Graph.of([_node(a), _node(b), _node(c), _edge(a, b), _edge(b, a), _edge(c, a)])
    assert graph.cycles() == ((a, b),)


def test_a_chain_is_no_cycle_and_ends_at_its_culprit() -> None:
    r = [rank_key("1", i) for i in range(4)]
    idle = _node(r[3], NodeState.IDLE)
    graph = Graph.of(
        [*(_node(k) for k in r[:3]), idle, _edge(tuple(r[:3]), r[3], EdgeKind.COLLECTIVE)]
    )
    assert graph.cycles() == ()
    assert graph.culprits() == (r[3],)


def test_a_self_wait_is_a_cycle() -> None:
    a = thread_key("h", 1, "7")
    assert Graph.of([_node(a), _edge(a, a)]).cycles() == ((a,),)


def test_a_cycle_through_a_collective_hyperedge() -> None:
    r = [rank_key("1", i) for i in range(3)]
    graph = Graph.of(
        [
            *(_node(k) for k in r),
            _edge((r[0], r[1]), r[2], EdgeKind.COLLECTIVE),
            _edge(r[2], r[0], EdgeKind.P2P),
        ]
    )
    assert graph.cycles() == ((r[0], r[2]),)


def test_dead_and_frozen_waits() -> None:
    parent, child, other = process_key("h", 1), process_key("h", 2), process_key("h", 3)
    graph = Graph.of(
        [
            _node(parent),
            _node(child, NodeState.ZOMBIE),
            _node(other, NodeState.MOVING),
            _edge(parent, child, EdgeKind.CHILD),
            _edge(other, parent, EdgeKind.QUEUE),
        ]
    )
    assert [e.kind for e in graph.dead_waits()] == [EdgeKind.CHILD]


def test_the_latest_evidence_wins_then_the_more_final_state() -> None:
    key = process_key("h", 9)
    early = _node(key, NodeState.BLOCKED, seen=1)
    late = _node(key, NodeState.ZOMBIE, seen=2)
    assert Graph.of([late, early]).nodes[key].state is NodeState.ZOMBIE
    again = _node(key, NodeState.BLOCKED, seen=3)
    assert Graph.of([late, again]).nodes[key].state is NodeState.BLOCKED
    tie = _node(key, NodeState.GONE, seen=3)
    assert Graph.of([again, tie]).nodes[key].state is NodeState.GONE


def test_an_edge_to_an_unknown_key_makes_a_not_captured_node() -> None:
    a, b = rank_key("1", 0), rank_key("1", 5)
    graph = Graph.of([_node(a), _edge(a, b, EdgeKind.COLLECTIVE)])
    assert graph.nodes[b].state is NodeState.NOT_CAPTURED
    assert graph.waits_of(a)[0].waited == (b,)


def test_a_producer_name_is_registered_once() -> None:
    @producer("test-only-producer")
    def one(bundle: object, ctx: object) -> list[Node | Edge]:
        return []

    with pytest.raises(ValueError, match="already registered"):
        producer("test-only-producer")(one)
    from reporter.analysis import waitgraph

    waitgraph.PRODUCERS[:] = [p for p in waitgraph.PRODUCERS if p.name != "test-only-producer"]
