"""The one wait-for graph: who waits for whom, across threads, processes, ranks, event loops,
actors and remote peers.

Nodes are what can wait or be waited for (`NodeKind`), each with its state from the latest
evidence (`NodeState`). An edge says that its `waiters` cannot go on until its `waited` do
something: of which kind (`EdgeKind`), where on each side (`at`, `waited_at`: `f (x.py:9)`),
and on what evidence (`file:line` citations). One edge names every node it waits for (a
collective's two absent ranks are one edge, not two). Cycles and waits on something dead or
frozen are found on this one graph (`Graph.cycles`, `Graph.dead_waits`, `Graph.culprits`).

Producers add the nodes and edges. A producer is a function of the bundle and a
`GraphContext` (the stack analysis done so far) that yields `Node`s and `Edge`s; it is
registered with `@producer(name)` in a module listed in `PRODUCER_MODULES`, and
`build_graph` runs every registered producer in registration order. Example::

    from collections.abc import Iterable

    from reporter.analysis.waitgraph import (
        Edge, EdgeKind, GraphContext, Node, NodeKind, NodeState, producer, process_key,
    )
    from reporter.model import Bundle

    @producer("child-process")
    def child_waits(bundle: Bundle, ctx: GraphContext) -> Iterable[Node | Edge]:
        for parent, child in _pairs(bundle):          # your own evidence reading
            yield Node(key=process_key(parent.host, parent.pid), kind=NodeKind.PROCESS,
                       state=NodeState.BLOCKED, label=f"PID {parent.pid}",
                       host=parent.host, pid=parent.pid, at="wait (subprocess.py:1264)")
            yield Node(key=process_key(child.host, child.pid), kind=NodeKind.PROCESS,
                       state=NodeState.ZOMBIE, label=f"PID {child.pid}",
                       host=child.host, pid=child.pid, seen=2,
                       evidence=("proc/1234/status:3",))
            yield Edge(waiters=(process_key(parent.host, parent.pid),),
                       waited=(process_key(child.host, child.pid),),
                       kind=EdgeKind.CHILD, what="Popen.wait",
                       at="run (parent.py:12)", evidence=("stacks/parent.txt:7",))

Two producers may yield the same node (same `key`): the one resting on the latest evidence
(`seen`, larger is later) wins; on a tie the more final state does (`STATE_ORDER`); their
evidence is merged. Keys come from the `*_key` helpers, so that producers agree on them.

Pure: no I/O. The types here are frozen and their names stable (add, never rename).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from sys import intern
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reporter.analysis.classify import Classifier
    from reporter.analysis.excerpts import SourceReader
    from reporter.analysis.result import Analysis
    from reporter.analysis.stacks import StackTable
    from reporter.model import Bundle


class NodeKind(StrEnum):
    """What a node is."""

    THREAD = "thread"
    """One thread of one process: (host, PID, thread id)."""
    PROCESS = "process"
    """One process: (host, PID); a process that is not a rank (launcher, worker, child)."""
    RANK = "rank"
    """One rank of one instance (server or job); its process is the rank's."""
    EVENT_LOOP = "event-loop"
    """An asyncio event loop: the thread that runs it."""
    ACTOR = "actor"
    """A Ray actor (`ray::Class`)."""
    TASK = "task"
    """A Ray task or an actor method call (`ray::Class.method`)."""
    REMOTE = "remote"
    """A peer outside the evidence, by address (`host:port`): an HTTP server, a socket peer."""


class NodeState(StrEnum):
    """A node's state from the latest evidence about it."""

    RUNNING = "running"
    """On CPU at the same place in every snapshot (busy: spinning, computing)."""
    MOVING = "moving"
    """Its stacks change between snapshots."""
    IDLE = "idle"
    """Waiting for work by design (an event loop in `select`, a worker in its queue)."""
    BLOCKED = "blocked"
    """Waiting at the same place in every snapshot, for something else."""
    STOPPED = "stopped"
    """Stopped by a signal or a debugger (State T)."""
    UNINTERRUPTIBLE = "uninterruptible"
    """In uninterruptible sleep in the kernel (State D)."""
    ZOMBIE = "zombie"
    """Exited, not yet reaped by its parent (State Z)."""
    CRASHED = "crashed"
    """Died of a fatal error (faulthandler's report)."""
    GONE = "gone"
    """No longer exists (its dump failed: no such process)."""
    NOT_CAPTURED = "not-captured"
    """Known to exist (a world size, a peer address) but no evidence of it was captured."""
    UNKNOWN = "unknown"
    """Seen in one snapshot only: blocked or passing through cannot be told."""


DEAD = frozenset({NodeState.CRASHED, NodeState.GONE, NodeState.ZOMBIE})
"""States of a node that will never answer."""
FROZEN = frozenset({NodeState.STOPPED, NodeState.UNINTERRUPTIBLE})
"""States of a node that cannot answer until something outside it acts."""

STATE_ORDER: Mapping[NodeState, int] = {
    state: i
    for i, state in enumerate(
        (
            NodeState.NOT_CAPTURED,
            NodeState.UNKNOWN,
            NodeState.IDLE,
            NodeState.MOVING,
            NodeState.RUNNING,
            NodeState.BLOCKED,
            NodeState.UNINTERRUPTIBLE,
            NodeState.STOPPED,
            NodeState.ZOMBIE,
            NodeState.GONE,
            NodeState.CRASHED,
        )
    )
}
"""Which of two states of one node, seen in evidence of the same moment, wins (larger)."""


class EdgeKind(StrEnum):
    """What a wait is."""

    COLLECTIVE = "collective"
    """A collective (group, sequence) waits for every member of its group."""
    P2P = "p2p"
    """A point-to-point call waits for its peer (and tag)."""
    LOCK = "lock"
    """A thread acquiring a lock waits for its holder."""
    GIL = "gil"
    """A thread waits for the thread that holds the GIL."""
    CHILD = "child"
    """A parent in `waitpid` / `Popen.wait` waits for its child."""
    PIPE = "pipe"
    """A read or write on a pipe or socket waits for the other end (fd tables)."""
    QUEUE = "queue"
    """A queue, result, future or RPC reply waits for the worker that should produce it."""
    EVENT_LOOP = "event-loop"
    """An event loop (and every coroutine on it) waits for a synchronous call in its thread."""
    ACTOR = "actor"
    """An actor call (`ray.get`) waits for the actor method that produces it."""
    HTTP = "http"
    """An HTTP request waits for the remote server's response."""
    KERNEL = "kernel"
    """A thread in the kernel (State D, its wchan) waits for storage, a mount or a driver."""


def thread_key(host: str, pid: int | None, tid: str) -> str:
    """Key of one thread: `thread:host:pid:tid`."""
    return f"thread:{host}:{pid if pid is not None else '?'}:{tid}"


# Rank and process keys are interned: several producers make the key of every rank (its
# node, its edges, its facts), and one string serves them all (0.7 MiB at 4,096 ranks).


def process_key(host: str, pid: int | None, *, path: str = "") -> str:
    """Key of one process: `process:host:pid` (`process:host:file:<path>` without a PID)."""
    return intern(f"process:{host}:{pid}" if pid is not None else f"process:{host}:file:{path}")


def rank_key(instance: str, rank: int) -> str:
    """Key of one rank: `rank:instance:rank`."""
    return intern(f"rank:{instance}:{rank}")


def loop_key(host: str, pid: int | None, tid: str) -> str:
    """Key of the event loop run by one thread."""
    return f"loop:{host}:{pid if pid is not None else '?'}:{tid}"


def actor_key(name: str) -> str:
    """Key of a Ray actor (`ray::Worker` -> `actor:Worker`)."""
    return f"actor:{name.removeprefix('ray::')}"


def task_key(name: str) -> str:
    """Key of a Ray task or actor method call (`ray::Worker.step` -> `task:Worker.step`)."""
    return f"task:{name.removeprefix('ray::')}"


def remote_key(host: str, port: int | None) -> str:
    """Key of a peer outside the evidence, by address."""
    return f"remote:{host}:{port if port is not None else '?'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """Something that can wait or be waited for.

    `label` names it for a reader (`rank 3 (PID 4711) on node-b`, `thread worker (1234) of
    PID 99`); `at` is where it was last seen (`handler (server.py:41)`, "" when not known);
    `evidence` cites what its state rests on (`file:line`); `seen` orders evidence in time
    (larger is later: a snapshot's index, a status copy's time) for merging.
    """

    key: str
    kind: NodeKind
    state: NodeState
    label: str
    host: str = ""
    pid: int | None = None
    tid: str = ""
    rank: int | None = None
    instance: str = ""
    at: str = ""
    why: str = ""
    """The state in words, with its evidence (`State Z (zombie) in proc/88/status:3`)."""
    evidence: tuple[str, ...] = ()
    seen: int = 0
    producer: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """`waiters` cannot go on until `waited` act: one wait, naming every node on each side.

    `what` is the call waited in (`all_reduce`, `Lock.acquire`, `Popen.wait`, `GET
    http://127.0.0.1:8081/`); `at` / `waited_at` are where each side is (`f (x.py:9)`);
    `group` / `seq` a collective's process group and sequence number; `peer` / `tag` a
    point-to-point wait's; `evidence` the `file:line` citations it rests on.
    """

    waiters: tuple[str, ...]
    waited: tuple[str, ...]
    kind: EdgeKind
    what: str = ""
    at: str = ""
    waited_at: str = ""
    evidence: tuple[str, ...] = ()
    group: str = ""
    seq: int | None = None
    peer: int | None = None
    tag: int | None = None
    instance: str = ""
    producer: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphContext:
    """What producers read besides the bundle: the stack analysis before any verdict
    (`analysis`: processes with their snapshots and conditions, `waits_for`, thread
    deadlocks, failed dumps), the frame classifier, the interned stacks and the source of
    the frames when given (the bundle's `source_root`, `--source-root`)."""

    analysis: Analysis
    classifier: Classifier
    table: StackTable
    sources: SourceReader | None = None


Producer = Callable[["Bundle", GraphContext], Iterable[Node | Edge]]
"""Adds nodes and edges from the bundle and the stack analysis."""


@dataclass(frozen=True, slots=True)
class Registered:
    name: str
    run: Producer


PRODUCERS: list[Registered] = []
"""Every registered producer, in registration (= run) order."""

PRODUCER_MODULES: tuple[str, ...] = (
    "reporter.analysis.graphproducers",
    "reporter.analysis.procgraph",
    "reporter.analysis.waits_proc",
    "reporter.analysis.waits_dist",
)
"""Modules whose import registers producers; `build_graph` imports them first. Add yours."""


def producer(name: str) -> Callable[[Producer], Producer]:
    """Register a producer under `name` (unique); returns it unchanged."""

    def add(run: Producer) -> Producer:
        if any(p.name == name for p in PRODUCERS):
            raise ValueError(f"a wait-graph producer named {name!r} is already registered")
        PRODUCERS.append(Registered(name, run))
        return run

    return add


def _merge(old: Node, new: Node) -> Node:
    if (new.seen, STATE_ORDER[new.state]) > (old.seen, STATE_ORDER[old.state]):
        win, lose = new, old
    else:
        win, lose = old, new
    evidence = tuple(dict.fromkeys((*win.evidence, *lose.evidence)))
    from dataclasses import replace

    return replace(win, evidence=evidence, at=win.at or lose.at, why=win.why or lose.why)


@dataclass(frozen=True, slots=True)
class Graph:
    """Nodes by key and the edges between them (every edge's keys are nodes)."""

    nodes: Mapping[str, Node]
    edges: tuple[Edge, ...]
    _out: Mapping[str, tuple[int, ...]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, items: Iterable[Node | Edge], *, producer_name: str = "") -> Graph:
        """A graph from nodes and edges in any order; an edge's unknown keys become
        `not-captured` nodes."""
        nodes: dict[str, Node] = {}
        edges: list[Edge] = []
        for item in items:
            if isinstance(item, Node):
                old = nodes.get(item.key)
                nodes[item.key] = item if old is None else _merge(old, item)
            else:
                edges.append(item)
        for edge in edges:
            for key in (*edge.waiters, *edge.waited):
                if key not in nodes:
                    nodes[key] = Node(
                        key=key,
                        kind=_kind_of(key),
                        state=NodeState.NOT_CAPTURED,
                        label=key.split(":", 1)[-1],
                        producer=edge.producer,
                    )
        out: dict[str, list[int]] = {}
        for i, edge in enumerate(edges):
            for key in edge.waiters:
                out.setdefault(key, []).append(i)
        return cls(nodes, tuple(edges), {k: tuple(v) for k, v in out.items()})

    def waits_of(self, key: str) -> tuple[Edge, ...]:
        """The edges `key` waits in."""
        return tuple(self.edges[i] for i in self._out.get(key, ()))

    def waited_by(self, key: str) -> tuple[Edge, ...]:
        """The edges that wait for `key`."""
        return tuple(e for e in self.edges if key in e.waited)

    def of_kind(self, *kinds: EdgeKind) -> tuple[Edge, ...]:
        return tuple(e for e in self.edges if e.kind in kinds)

    def cycles(self) -> tuple[tuple[str, ...], ...]:
        """Sets of nodes that wait for each other (strongly connected, two or more nodes,
        or one that waits for itself), each sorted, in key order. Linear in the size of
        the edges: an edge is a vertex between its waiters and its waited."""
        return tuple(sorted(_cycles(self)))

    def dead_waits(self) -> tuple[Edge, ...]:
        """Edges that wait for a node that is dead (crashed, gone, zombie) or frozen
        (stopped, in the kernel): it will not answer on its own."""
        bad = DEAD | FROZEN
        return tuple(e for e in self.edges if any(self.nodes[k].state in bad for k in e.waited))

    def culprits(self) -> tuple[str, ...]:
        """Nodes waited for, directly or through others, that wait for nothing in the graph
        and are not running forward (idle, blocked, dead, frozen, not captured): where the
        chains of waits end. Sorted by key."""
        waited = {k for e in self.edges for k in e.waited}
        return tuple(
            sorted(
                k
                for k in waited
                if not self._out.get(k) and self.nodes[k].state is not NodeState.MOVING
            )
        )


def _kind_of(key: str) -> NodeKind:
    prefix = key.split(":", 1)[0]
    return {
        "thread": NodeKind.THREAD,
        "process": NodeKind.PROCESS,
        "rank": NodeKind.RANK,
        "loop": NodeKind.EVENT_LOOP,
        "actor": NodeKind.ACTOR,
        "task": NodeKind.TASK,
    }.get(prefix, NodeKind.REMOTE)


def _cycles(graph: Graph) -> Iterator[tuple[str, ...]]:
    """Tarjan's strongly connected components, iterative, over nodes plus one vertex per edge."""
    keys = list(graph.nodes)
    n = len(keys)
    index_of = {k: i for i, k in enumerate(keys)}
    succ: list[list[int]] = [[] for _ in range(n + len(graph.edges))]
    for j, edge in enumerate(graph.edges):
        v = n + j
        for k in edge.waiters:
            succ[index_of[k]].append(v)
        succ[v] = [index_of[k] for k in edge.waited]
    total = len(succ)
    index = [-1] * total
    low = [0] * total
    on = [False] * total
    stack: list[int] = []
    counter = 0
    for root in range(total):
        if index[root] != -1:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = True
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if index[w] == -1:
                    work.append((w, 0))
                elif on[w]:
                    low[v] = min(low[v], index[w])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                members: list[int] = []
                while True:
                    w = stack.pop()
                    on[w] = False
                    members.append(w)
                    if w == v:
                        break
                found = sorted(keys[m] for m in members if m < n)
                selfwait = len(found) == 1 and any(
                    found[0] in graph.edges[j].waited for j in graph._out.get(found[0], ())
                )
                if len(found) > 1 or selfwait:
                    yield tuple(found)


def build_graph(
    bundle: Bundle, context: GraphContext, producers: Sequence[Registered] | None = None
) -> Graph:
    """Run every producer (default: all registered ones) and join what they yield."""
    if producers is None:
        for module in PRODUCER_MODULES:
            importlib.import_module(module)
        producers = PRODUCERS

    def items() -> Iterator[Node | Edge]:
        from dataclasses import replace

        for registered in producers:
            for item in registered.run(bundle, context):
                # `replace` is slow at thousands of ranks: producers may name themselves.
                yield item if item.producer else replace(item, producer=registered.name)

    return Graph.of(items())
