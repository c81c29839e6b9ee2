"""The verdict of the waits beyond collectives, read off the wait-for graph by the ordered
rules of `reporter/data/wait_rules.toml`.

`read(graph)` tries the rules in file order and returns the first that fits an edge of
the graph (a `WaitReading`: verdict, headline, who-waits line, next steps, the rule's id
and the edges it rests on), or None when none fits. A rule fits an edge when the edge's
kind and producer are among the rule's, some node it waits for is in one of the rule's
states, and, for `cycle`, the edge lies on a cycle of the graph (holding an edge of
`with_kind` when given). The text is the rule's, filled from that edge and its nodes.

These rules are meant to sit in the one ordered verdict table with the collective rules;
this module reads them on their own until then. Pure: the rules file is data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from reporter.analysis.waitgraph import Edge, Graph, Node, NodeState
from reporter.core import rules as data_files

RULES_FILE = "wait_rules.toml"


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitRule:
    """One row of `wait_rules.toml`."""

    id: str
    verdict: str
    headline: str
    what: str
    who: str
    steps: tuple[tuple[str, str], ...]
    """(action, why) pairs, most useful first."""
    kinds: frozenset[str] = frozenset()
    producers: frozenset[str] = frozenset()
    waited: frozenset[str] = frozenset()
    cycle: bool | None = None
    with_kind: frozenset[str] = frozenset()
    ended: bool | None = None
    peer: bool | None = None
    what_prefix: tuple[str, ...] = ()
    recovers: str = ""
    """The "Recovers on its own" answer for this kind of wait ("" leaves it to the timeouts)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitReading:
    """What the winning rule says about the graph."""

    rule: str
    verdict: str
    headline: str
    what: str
    who: str
    steps: tuple[tuple[str, str], ...]
    edges: tuple[Edge, ...]
    recovers: str = ""


def compile_rules(data: Mapping[str, Any]) -> tuple[WaitRule, ...]:
    """The checked TOML data as rules, in file order; duplicate ids refused."""
    out: list[WaitRule] = []
    for row in data.get("rule", []):
        if any(r.id == row["id"] for r in out):
            raise data_files.RulesError(f"{RULES_FILE}: rule id {row['id']!r} used twice")
        out.append(
            WaitRule(
                id=row["id"],
                verdict=row["verdict"],
                headline=row["headline"],
                what=row["what"],
                who=row["who"],
                recovers=row.get("recovers", ""),
                steps=tuple((s["action"], s["why"]) for s in row.get("step", ())),
                kinds=frozenset(row.get("kind", ())),
                producers=frozenset(row.get("producer", ())),
                waited=frozenset(row.get("waited", ())),
                cycle=row.get("cycle"),
                with_kind=frozenset(row.get("with_kind", ())),
                ended=row.get("ended"),
                peer=row.get("peer"),
                what_prefix=tuple(row.get("what_prefix", ())),
            )
        )
    return tuple(out)


@cache
def packaged_rules() -> tuple[WaitRule, ...]:
    """The shipped rules."""
    return compile_rules(data_files.load(RULES_FILE))


ENDED_WHY = "the wait ended: "
"""How the `ended` producer starts the `why` of a rank whose wait a logged timeout ended."""


def _ended(graph: Graph, edge: Edge) -> bool:
    return any(
        graph.nodes[k].state is NodeState.GONE and graph.nodes[k].why.startswith(ENDED_WHY)
        for k in edge.waiters
    )


class _Cycles(Sequence[frozenset[str]]):
    """The graph's cycles, found on first use (most graphs never need them)."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._found: list[frozenset[str]] | None = None

    def _all(self) -> list[frozenset[str]]:
        if self._found is None:
            self._found = [frozenset(c) for c in self._graph.cycles()]
        return self._found

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, index: int) -> frozenset[str]:  # type: ignore[override]
        return self._all()[index]

    def __iter__(self) -> Iterator[frozenset[str]]:
        return iter(self._all())


def _fits(rule: WaitRule, graph: Graph, edge: Edge, cycles: Sequence[frozenset[str]]) -> bool:
    if rule.kinds and edge.kind.value not in rule.kinds:
        return False
    if rule.producers and edge.producer not in rule.producers:
        return False
    if rule.waited and not any(graph.nodes[k].state.value in rule.waited for k in edge.waited):
        return False
    if rule.ended is not None and _ended(graph, edge) != rule.ended:
        return False
    if rule.peer is not None and bool(edge.waited) != rule.peer:
        return False
    if rule.what_prefix and not edge.what.startswith(rule.what_prefix):
        return False
    if rule.cycle is not None:
        cycle = _cycle_of(edge, cycles)
        if (cycle is not None) != rule.cycle:
            return False
        if cycle is not None and rule.with_kind:
            inside = [e for e in graph.edges if _on(e, cycle)]
            if not any(e.kind.value in rule.with_kind for e in inside):
                return False
    return True


def _on(edge: Edge, cycle: frozenset[str]) -> bool:
    return any(k in cycle for k in edge.waiters) and any(k in cycle for k in edge.waited)


def _cycle_of(edge: Edge, cycles: Sequence[frozenset[str]]) -> frozenset[str] | None:
    return next((c for c in cycles if _on(edge, c)), None)


def read(graph: Graph, rules: Sequence[WaitRule] | None = None) -> WaitReading | None:
    """The first rule that fits an edge of `graph`, with its text filled, or None."""
    rules = packaged_rules() if rules is None else rules
    cycles = _Cycles(graph)
    for rule in rules:
        for edge in graph.edges:
            if _fits(rule, graph, edge, cycles):
                cycle = _cycle_of(edge, cycles) if rule.cycle else None
                on = tuple(e for e in graph.edges if cycle is not None and _on(e, cycle))
                values = _values(graph, edge, on)
                return WaitReading(
                    rule=rule.id,
                    verdict=rule.verdict,
                    headline=_fill(rule.headline, values),
                    what=_fill(rule.what, values),
                    who=_fill(rule.who, values),
                    steps=tuple((_fill(a, values), _fill(w, values)) for a, w in rule.steps),
                    edges=on or (edge,),
                    recovers=_fill(rule.recovers, values),
                )
    return None


def _label(node: Node) -> str:
    pid = f" (PID {node.pid})" if node.pid is not None and str(node.pid) not in node.label else ""
    return node.label + pid


def _names(graph: Graph, keys: Sequence[str]) -> str:
    return ", ".join(_label(graph.nodes[k]) for k in keys)


def _cycle_text(graph: Graph, edges: Sequence[Edge]) -> str:
    """`A (waits in x) -> B (waits in y) -> A`, following the edges from the first."""
    if not edges:
        return ""
    by_waiter = {e.waiters[0]: e for e in edges}
    start = edges[0].waiters[0]
    parts: list[str] = []
    key = start
    said: set[str] = set()
    for _ in range(len(edges) + 1):
        edge = by_waiter.get(key)
        if edge is None:
            break
        # A place said once: the next rank at the same line is "at the same place".
        where = "" if not edge.at else " at the same place" if edge.at in said else f" at {edge.at}"
        said.add(edge.at)
        parts.append(f"{_label(graph.nodes[key])} waits in {edge.what}{where}")
        key = next((k for k in edge.waited if k in by_waiter), edge.waited[0])
        if key == start:
            break
    return " -> ".join(parts) + f" -> {_label(graph.nodes[start])}"


def _ended_text(graph: Graph, edge: Edge) -> str:
    whys = [graph.nodes[k].why for k in edge.waiters if graph.nodes[k].why.startswith(ENDED_WHY)]
    if not whys:
        return ""
    first = whys[0].removeprefix(ENDED_WHY)
    # The waiters are named just before in the who line: here they are "they".
    subject = "they" if len(edge.waiters) > 1 else "it"
    return f"{subject} gave up: {first}"


def _values(graph: Graph, edge: Edge, cycle: Sequence[Edge]) -> dict[str, str]:
    waiter = graph.nodes[edge.waiters[0]]
    waited = graph.nodes[edge.waited[0]] if edge.waited else None
    alike = [e for e in graph.edges if e.kind is edge.kind and e.producer == edge.producer]
    return {
        "waiters_all": _names(graph, list(dict.fromkeys(k for e in alike for k in e.waiters))),
        "waiter": _names(graph, edge.waiters),
        "waited": _names(graph, edge.waited),
        "waiter_pid": str(waiter.pid) if waiter.pid is not None else "PID",
        "waited_pid": str(waited.pid) if waited is not None and waited.pid is not None else "PID",
        "what": edge.what or "a wait",
        "at": edge.at or "(place not known)",
        "waited_at": edge.waited_at or "not known",
        "why": (waited.why if waited is not None and waited.why else "its state is not known"),
        "cycle": _cycle_text(graph, cycle),
        "ended": _ended_text(graph, edge),
        "then": _then(graph, edge),
    }


def _then(graph: Graph, edge: Edge) -> str:
    """`; it waits in X for Y` for the first waited node that waits itself, "" otherwise."""
    for key in edge.waited:
        for onward in graph.waits_of(key):
            return f"; it waits in turn for {_names(graph, onward.waited)}: {onward.what}"
    return ""


def _fill(template: str, values: Mapping[str, str]) -> str:
    out = template
    for name, value in values.items():
        out = out.replace("{" + name + "}", value)
    return out
