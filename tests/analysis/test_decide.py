"""The verdict table: decided once, from data, and nothing rewrites it afterwards."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reporter.analysis import decide
from reporter.analysis.result import Verdict
from reporter.core import rules
from reporter.core.errors import ReporterError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reporter"
# The table's module sets the verdict; verdict.py builds the stack reading (a `Finding`)
# that the table reads, before it.
ALLOWED = {PACKAGE / "analysis" / "decide.py", PACKAGE / "analysis" / "verdict.py"}
# Where an `Analysis` may be built: analyze.py builds it with the stack reading standing in,
# right before the table decides.
BUILDS = {PACKAGE / "analysis" / "analyze.py"}


def _rewrites(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = (
                node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            )
            if name == "replace" and any(k.arg == "verdict" for k in node.keywords):
                lines.append(node.lineno)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "verdict" for t in targets):
                lines.append(node.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "__setattr__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "verdict"
        ):
            lines.append(node.lineno)
    return sorted(lines)


def _builds(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Analysis"
        and any(k.arg == "verdict" for k in node.keywords)
    ]


def test_no_module_rewrites_the_verdict_after_the_table() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if path not in ALLOWED:
            found += [f"{path.relative_to(ROOT)}:{n}" for n in _rewrites(tree)]
        if path not in BUILDS | {PACKAGE / "analysis" / "decide.py"}:
            found += [f"{path.relative_to(ROOT)}:{n} builds an Analysis" for n in _builds(tree)]
    assert not found, "the verdict is set outside the verdict table: " + ", ".join(found)


def test_the_scan_finds_a_rewrite() -> None:
    tree = ast.parse("a = replace(analysis, verdict=V.X)\nb.verdict = 1\n")
    assert _rewrites(tree) == [1, 2]


def test_the_packaged_table_compiles_and_ends_with_a_catch_all() -> None:
    table = decide.table()
    assert table[-1].id == "inconclusive"
    assert table[-1].stacks is None and table[-1].process is None and not table[-1].flags
    ids = [r.id for r in table]
    # The order the architecture doc shows: recorder, crash, lock cycle, then the rest.
    assert ids.index("fr-first-mismatch") < ids.index("crashed") < ids.index("thread-deadlock")
    assert ids.index("gil-held") < ids.index("p2p-deadlock") < ids.index("collective-desync")
    every = {r.verdict for r in table}
    assert every == set(Verdict)


def test_every_verdict_value_is_named_in_the_architecture_doc() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for rule in decide.table():
        assert f"`{rule.id}`" in text, rule.id


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('verdict = "gil-held"', 'verdict = "gil-hold"'), "unknown verdict"),
        (
            (
                'summary = ["stack", "crashes", "frozen", "blocked", "hosts", "fr"]\nconfidence = "stack"\nsignature = "stack"\n\n[[rule]]\nid = "collective-desync"',
                'summary = ["stak"]\nconfidence = "stack"\nsignature = "stack"\n\n[[rule]]\nid = "collective-desync"',
            ),
            "unknown summary pieces",
        ),
        (('process = ["gil"]', 'process = ["gill"]'), "unknown process"),
        (("{others} cannot run", "{nobody} cannot run"), "unknown placeholder"),
    ],
)
def test_a_bad_table_is_refused_naming_the_rule(change: tuple[str, str], message: str) -> None:
    text = rules.read_text("verdicts.toml")
    old, new = change
    assert old in text
    data = rules.parse(text.replace(old, new, 1), rules.SHAPES["verdicts.toml"], source="t")
    with pytest.raises(ReporterError, match=message):
        decide.compile_rules(data)


def test_an_unknown_condition_key_is_refused_by_the_shape() -> None:
    text = rules.read_text("verdicts.toml").replace("one_process = true", "one_proces = true", 1)
    with pytest.raises(rules.RulesError, match="one_proces"):
        rules.parse(text, rules.SHAPES["verdicts.toml"], source="t")


def _facts(graph: object) -> decide.Facts:
    from reporter.analysis.flight_recorder import FrReading
    from reporter.analysis.outcomes import Outcome
    from reporter.analysis.result import Confidence, Signature

    outcome = Outcome(
        deadlocks=(),
        blocked=(),
        crash=False,
        live=True,
        crashes="",
        deadlock_lines="",
        frozen="",
        blocked_text="",
        crash_level=Confidence.HIGH,
        crash_notes=(),
        deadlock_level=Confidence.HIGH,
        deadlock_notes=(),
        crashed=(),
    )
    return decide.Facts(
        stacks=Verdict.INCONCLUSIVE,
        stack_text="",
        stack_level=Confidence.LOW,
        stack_notes=(),
        stack_signature=Signature(hash="", text=""),
        outcome=outcome,
        hosts_sentence="",
        hosts_note="",
        fr=FrReading(fr=None, sentence="", mismatch=False, idle=False, no_stacks=False),
        process=None,
        graph=graph,  # type: ignore[arg-type]
    )


def test_rules_can_ask_the_graph_for_cycles_dead_waits_and_edge_kinds() -> None:
    from reporter.analysis.waitgraph import Edge, EdgeKind, Graph, Node, NodeKind, NodeState

    def node(key: str, state: NodeState) -> Node:
        return Node(key=key, kind=NodeKind.PROCESS, state=state, label=key)

    table = """
[[rule]]
id = "child-dead"
edges = ["child"]
dead_wait = true
verdict = "all-stuck"
summary = ["stack"]
confidence = "stack"
signature = "stack"

[[rule]]
id = "cycle"
cycle = true
verdict = "all-stuck"
summary = ["stack"]
confidence = "stack"
signature = "stack"

[[rule]]
id = "rest"
verdict = "inconclusive"
summary = ["stack"]
confidence = "stack"
signature = "stack"
"""
    compiled = decide.compile_rules(rules.parse(table, rules.SHAPES["verdicts.toml"], source="t"))
    dead = Graph.of(
        [
            node("process::1", NodeState.BLOCKED),
            node("process::2", NodeState.ZOMBIE),
            Edge(waiters=("process::1",), waited=("process::2",), kind=EdgeKind.CHILD),
        ]
    )
    assert decide.winner(_facts(dead), compiled).id == "child-dead"
    loop = Graph.of(
        [
            node("process::1", NodeState.BLOCKED),
            node("process::2", NodeState.BLOCKED),
            Edge(waiters=("process::1",), waited=("process::2",), kind=EdgeKind.QUEUE),
            Edge(waiters=("process::2",), waited=("process::1",), kind=EdgeKind.QUEUE),
        ]
    )
    assert decide.winner(_facts(loop), compiled).id == "cycle"
    assert decide.winner(_facts(Graph.of([])), compiled).id == "rest"
