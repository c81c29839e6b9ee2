"""One process judged on its own snapshots: real captures (fixtures/scenarios/capture_oneproc.py),
each read the same with and without `--json`, `--locals` and `--native` dumps beside the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.analysis import analyze
from reporter.analysis.result import Analysis, Verdict
from reporter.analysis.waitgraph import EdgeKind, Graph, NodeKind, NodeState
from reporter.load.bundle import load
from reporter.load.sources import SourceRoots

BUNDLES = Path(__file__).resolve().parents[2] / "fixtures" / "bundles"

# bundle -> (verdict, words the headline must hold)
EXPECTED = {
    "loop_blocked": (
        Verdict.LOOP_BLOCKED,
        ("event loop", "urlopen", "fetch_profile (oneproc.py:56)"),
    ),
    "loop_idle": (Verdict.IDLE, ("idle", "select")),
    "gil_held": (Verdict.GIL_HELD, ("rule-checker", "GIL", "check_rules (oneproc.py:100)")),
    "cpu_busy": (Verdict.PROGRESSING, ("No hang", "progressing")),
    "thread_deadlock_json": (Verdict.THREAD_DEADLOCK, ("cache-evictor", "metrics-exporter")),
}
# Which dump folders each reading takes beside the three text snapshots.
FORMS = {
    "text": (),
    "text+json": ("json",),
    "text+locals": ("locals",),
    "text+native": ("native",),
    "all": ("json", "locals", "native"),
}


def _read(name: str, extra: tuple[str, ...]) -> Analysis:
    folder = BUNDLES / name
    files = sorted((folder / "snapshots").glob("*.txt"))
    for sub in extra:
        files += sorted((folder / sub).glob("*")) if (folder / sub).is_dir() else []
    # The programs' source (as `source_root` in bundle.toml): lock lines are read from it.
    return analyze(load(files), sources=SourceRoots([folder / "source"]))


def _whole(name: str) -> Analysis:
    return analyze(load([BUNDLES / name]), sources=SourceRoots([BUNDLES / name / "source"]))


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_read_the_same_in_every_form(name: str, form: str) -> None:
    verdict, words = EXPECTED[name]
    analysis = _read(name, FORMS[form])
    assert analysis.verdict is verdict, (analysis.verdict, analysis.summary)
    title = analysis.headline or analysis.summary
    for word in words:
        assert word in title or word in analysis.summary, (word, title)
    assert "no other rank to compare" not in analysis.summary


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_whole_bundle_reads_as_expected(name: str) -> None:
    analysis = _whole(name)
    assert analysis.verdict is EXPECTED[name][0]


def test_a_json_dump_of_the_same_moment_is_not_a_fourth_snapshot() -> None:
    analysis = _whole("thread_deadlock_json")
    assert analysis.snapshots == 3
    assert analysis.thread_deadlocks[0].snapshots == 3


def _graph(analysis: Analysis) -> Graph:
    assert isinstance(analysis.graph, Graph)
    return analysis.graph


def test_the_gil_holder_is_waited_for_by_every_other_thread() -> None:
    graph = _graph(_whole("gil_held"))
    (edge,) = graph.of_kind(EdgeKind.GIL)
    holder = graph.nodes[edge.waited[0]]
    assert holder.state is NodeState.RUNNING and "check_rules" in holder.at
    waiting = sorted(graph.nodes[k].label.split(" ", 1)[0] for k in edge.waiters)
    assert waiting == ["MainThread", "heartbeat"]


def test_the_blocked_loop_waits_for_its_thread_and_the_thread_for_the_peer() -> None:
    graph = _graph(_whole("loop_blocked"))
    (loop_edge,) = graph.of_kind(EdgeKind.EVENT_LOOP)
    assert graph.nodes[loop_edge.waiters[0]].kind is NodeKind.EVENT_LOOP
    assert loop_edge.what == "urlopen"
    (http,) = graph.of_kind(EdgeKind.HTTP)  # the URL from --locals
    peer = graph.nodes[http.waited[0]]
    assert peer.kind is NodeKind.REMOTE and peer.key.startswith("remote:127.0.0.1:")


def test_without_locals_the_peer_is_said_to_be_unknown() -> None:
    analysis = _read("loop_blocked", ())
    assert not _graph(analysis).of_kind(EdgeKind.HTTP)
    assert any("not in the evidence" in n for n in analysis.confidence_notes)


def test_a_quiet_loop_is_idle_not_blocked() -> None:
    graph = _graph(_whole("loop_idle"))
    loops = [n for n in graph.nodes.values() if n.kind is NodeKind.EVENT_LOOP]
    assert [n.state for n in loops] == [NodeState.IDLE]
    assert not graph.of_kind(EdgeKind.EVENT_LOOP)


def test_the_rule_steps_lead_the_next_steps() -> None:
    analysis = _whole("gil_held")
    assert analysis.rule == "gil-held"
    assert analysis.rule_steps and "check_rules (oneproc.py:100)" in analysis.rule_steps[0][0]


def test_one_rank_idle_in_its_dataloader_is_the_one_culprit_of_the_broadcast() -> None:
    """Real gloo job on two simulated nodes: ranks 0-2 in broadcast(src=3), rank 3 in its
    DataLoader's queue.get: one edge naming every waiting rank, one culprit on the graph."""
    analysis = _whole("dataloader_broadcast")
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    (edge,) = analysis.waits_for
    assert edge.waiting.ranks == (0, 1, 2) and edge.waited.ranks == (3,)
    graph = _graph(analysis)
    (collective,) = graph.of_kind(EdgeKind.COLLECTIVE)
    assert collective.what == "broadcast" and len(collective.waiters) == 3
    (culprit,) = graph.culprits()
    node = graph.nodes[culprit]
    assert node.rank == 3 and node.host == "node-b" and node.state is NodeState.IDLE
    assert graph.cycles() == ()
