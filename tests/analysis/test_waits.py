"""The waits beyond collectives: producers (waits_proc.py, waits_dist.py), their rules
(wait_rules.toml, waits_verdict.py) and the verdict table rows that rest on them.

Unit tests build graphs by hand; the capture tests read the real captures made by
`fixtures/scenarios/waits/capture_waits.py` (and issue 30's `pipe_deadlock`, `dead_worker`), each
with and without its `--locals` / `--native` dumps.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reporter.analysis import Analysis, Verdict, analyze
from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    NodeState,
    process_key,
    rank_key,
    remote_key,
    task_key,
    thread_key,
)
from reporter.analysis.waits_dist import peer_of
from reporter.analysis.waits_io import kernel_part
from reporter.analysis.waits_verdict import ENDED_WHY, compile_rules, packaged_rules, read
from reporter.core import rules as data_files
from reporter.load.bundle import load
from reporter.load.sources import SourceRoots
from reporter.model import Frame, Local

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"


def _node(key: str, state: NodeState = NodeState.BLOCKED, **kw: object) -> Node:
    kind = NodeKind.RANK if key.startswith("rank:") else NodeKind.PROCESS
    label = str(kw.pop("label", key))
    return Node(key=key, kind=kind, state=state, label=label, **kw)  # type: ignore[arg-type]


def _edge(a: str, b: str, kind: EdgeKind, producer: str = "", what: str = "w") -> Edge:
    return Edge(waiters=(a,), waited=(b,), kind=kind, producer=producer, what=what)


# --------------------------------------------------------------------------- the rules


def test_the_rules_file_fits_its_shape_and_ids_are_unique() -> None:
    rules = packaged_rules()
    assert [r.id for r in rules][:2] == ["hang-ended", "kernel-wait"]
    assert len({r.id for r in rules}) == len(rules)
    data = data_files.parse(
        '[[rule]]\nid = "a"\nverdict = "x"\nheadline = "h"\nwhat = "t"\nwho = "w"\n'
        '[[rule]]\nid = "a"\nverdict = "x"\nheadline = "h"\nwhat = "t"\nwho = "w"\n',
        data_files.SHAPES["wait_rules.toml"],
        source="wait_rules.toml",
    )
    with pytest.raises(data_files.RulesError, match="used twice"):
        compile_rules(data)


def test_a_parent_in_a_pipe_cycle_with_its_child_is_a_pipe_deadlock() -> None:
    parent, child = process_key("h", 10), process_key("h", 11)
    graph = Graph.of(
        [
            _node(parent, pid=10),
            _node(child, pid=11),
            _edge(parent, child, EdgeKind.CHILD, "child-process", "run"),
            _edge(child, parent, EdgeKind.PIPE, "pipes", "writes to pipe:[7] (fd 1)"),
        ]
    )
    reading = read(graph)
    assert reading is not None and reading.verdict == "pipe-deadlock"
    assert "kill the child, pid 11," in reading.steps[0][0].lower()
    assert "communicate()" in reading.steps[1][0]
    assert {e.kind for e in reading.edges} == {EdgeKind.CHILD, EdgeKind.PIPE}


def test_a_child_wait_without_a_cycle_is_a_child_wait_naming_what_the_child_waits_for() -> None:
    parent, child, far = process_key("h", 10), process_key("h", 11), remote_key("10.0.0.9", 443)
    graph = Graph.of(
        [
            _node(parent, pid=10),
            _node(child, NodeState.IDLE, pid=11),
            _edge(parent, child, EdgeKind.CHILD, "child-process", "run"),
            _edge(child, far, EdgeKind.HTTP, "pipes", "the reply to an HTTP request"),
        ]
    )
    reading = read(graph)
    assert reading is not None and reading.rule == "child-waits"
    assert "10.0.0.9:443" in reading.who
    assert "kill 11" in reading.steps[0][0]
    assert not any("restart" in a.lower() and "together" in a.lower() for a, _ in reading.steps)


def test_a_consumer_waiting_for_a_zombie_is_a_dead_worker_and_beats_live_workers() -> None:
    consumer, dead, live = process_key("h", 1), process_key("h", 2), process_key("h", 3)
    graph = Graph.of(
        [
            _node(consumer, pid=1),
            _node(dead, NodeState.ZOMBIE, pid=2, why="State Z (zombie); killed by SIGKILL"),
            _node(live, NodeState.MOVING, pid=3),
            _edge(consumer, live, EdgeKind.QUEUE, "queue-workers", "Queue.get"),
            _edge(consumer, dead, EdgeKind.QUEUE, "queue-workers", "Queue.get"),
        ]
    )
    reading = read(graph)
    assert reading is not None and reading.verdict == "dead-worker"
    assert "killed by SIGKILL" in reading.who
    assert "OOM killer" in reading.steps[1][0]


def test_live_workers_only_make_the_consumer_wait_on_them_not_idle() -> None:
    consumer, w1, w2 = process_key("h", 1), rank_key("1", 0), rank_key("1", 1)
    graph = Graph.of(
        [
            _node(consumer, pid=1),
            _node(w1, NodeState.BLOCKED),
            _node(w2, NodeState.IDLE),
            Edge(
                waiters=(consumer,), waited=(w1, w2), kind=EdgeKind.QUEUE, producer="queue-workers"
            ),
        ]
    )
    reading = read(graph)
    assert reading is not None and reading.verdict == "waiting-on-workers"
    assert "rank:1:0, rank:1:1" in reading.headline


def test_an_actor_cycle_through_a_queued_method() -> None:
    a, b, queued = process_key("h", 5), process_key("h", 6), task_key("A.h")
    graph = Graph.of(
        [
            _node(a, pid=5),
            _node(b, pid=6),
            Node(key=queued, kind=NodeKind.TASK, state=NodeState.BLOCKED, label="A.h (queued)"),
            _edge(a, b, EdgeKind.ACTOR, "ray-actors", "ray.get on B.g"),
            _edge(b, queued, EdgeKind.ACTOR, "ray-actors", "ray.get on A.h"),
            _edge(queued, a, EdgeKind.ACTOR, "ray-actors", "queued behind A.f on actor A"),
        ]
    )
    reading = read(graph)
    assert reading is not None and reading.verdict == "actor-cycle"
    assert reading.headline.count("->") == 3
    assert "ray.get on B.g" in reading.headline and "queued behind A.f" in reading.headline


def test_an_ended_wait_comes_before_everything_and_names_who_never_arrived() -> None:
    r = [rank_key("1", i) for i in range(3)]
    why = ENDED_WHY + "timed out after 5000 ms at 10:00:00 UTC (logs/rank0.log:3: Timed out)"
    graph = Graph.of(
        [
            _node(r[0], NodeState.GONE, why=why, label="rank 0"),
            _node(r[1], NodeState.GONE, why=why, label="rank 1"),
            _node(r[2], NodeState.BLOCKED, label="rank 2"),
            Edge(
                waiters=(r[0], r[1]),
                waited=(r[2],),
                kind=EdgeKind.COLLECTIVE,
                producer="collectives",
                what="all_reduce",
            ),
            Edge(
                waiters=(r[2],),
                waited=(process_key("h", 9),),
                kind=EdgeKind.KERNEL,
                producer="kernel",
            ),
        ]
    )
    reading = read(graph)
    assert reading is not None and reading.verdict == "ended"
    assert reading.headline.endswith("rank 2 never arrived")
    assert "10:00:00 UTC" in reading.who
    assert "as a whole" in reading.steps[0][0]


def test_a_collective_wait_that_did_not_end_is_no_ended_hang() -> None:
    r = [rank_key("1", i) for i in range(2)]
    graph = Graph.of(
        [
            _node(r[0], NodeState.GONE, why="gone"),
            _node(r[1]),
            _edge(r[0], r[1], EdgeKind.COLLECTIVE, "collectives", "barrier"),
        ]
    )
    assert read(graph) is None


@pytest.mark.parametrize(
    ("wchan", "part"),
    [
        ("request_wait_answer", "FUSE"),
        ("rpc_wait_bit_killable", "NFS"),
        ("nfs_wait_on_request", "NFS"),
        ("folio_wait_bit_common", "storage"),
        ("io_schedule", "storage"),
        ("uvm_spin_loop", "GPU driver"),
        ("mystery_wait", "the kernel"),
    ],
)
def test_a_wchan_names_the_part_below_python(wchan: str, part: str) -> None:
    assert kernel_part(wchan)[0] == part


def test_peer_and_tag_come_from_locals() -> None:
    frames = (
        Frame(
            function="recv_from",
            file="pp.py",
            line=9,
            locals=(Local(name="peer", repr="2", is_arg=True), Local(name="tag", repr="7")),
        ),
    )
    assert peer_of(frames) == (2, 7)
    assert peer_of((Frame(function="f", file="x.py", line=1),)) == (None, None)


# --------------------------------------------------------------------------- real captures


def _without(folder: Path, tmp: Path, drop: tuple[str, ...]) -> Path:
    """A copy of a bundle without the dumps under `drop` (their manifest entries too)."""
    if not drop:
        return folder
    out = tmp / folder.name
    shutil.copytree(folder, out)
    for sub in drop:
        shutil.rmtree(out / sub, ignore_errors=True)
    manifest = out / "bundle.toml"
    text = manifest.read_text(encoding="utf-8")
    blocks = re.split(r"(?m)^(?=\[\[evidence\]\])", text)
    keep = [b for b in blocks if not any(f'path = "{sub}/' in b for sub in drop)]
    manifest.write_text("".join(keep), encoding="utf-8")
    return out


def _read(folder: Path) -> Analysis:
    source = folder / "source"
    roots = SourceRoots([source]) if source.is_dir() else None
    return analyze(load([folder]), sources=roots)


def _edges(analysis: Analysis) -> set[tuple[str, str]]:
    graph = analysis.graph
    assert isinstance(graph, Graph)
    return {(e.kind.value, e.producer) for e in graph.edges}


VARIANTS = [(), ("locals",), ("native",), ("locals", "native")]


@pytest.mark.parametrize("drop", VARIANTS)
def test_child_stuck(drop: tuple[str, ...], tmp_path: Path) -> None:
    analysis = _read(_without(BUNDLES / "child_stuck", tmp_path, drop))
    assert analysis.verdict is Verdict.CHILD_WAIT
    assert re.fullmatch(r"PID \d+ waits for its child PID \d+ in run", analysis.headline)
    assert {("child", "child-process"), ("http", "pipes")} <= _edges(analysis)
    assert "127.0.0.1:" in analysis.who_waits
    assert "kill" in analysis.rule_steps[0][0]


@pytest.mark.parametrize("drop", VARIANTS)
def test_child_exited_pipe_held(drop: tuple[str, ...], tmp_path: Path) -> None:
    analysis = _read(_without(BUNDLES / "child_exited_pipe_held", tmp_path, drop))
    assert analysis.verdict is Verdict.CHILD_WAIT
    assert analysis.rule == "waits-child"
    assert re.fullmatch(
        r"PID \d+ waits for its child's output to end, but PID \d+ holds the pipe open",
        analysis.headline,
    )
    assert "exited (zombie)" in analysis.who_waits
    assert "metrics_agent (child_exited_pipe_held.py:" in analysis.who_waits
    graph = analysis.graph
    assert isinstance(graph, Graph)
    assert any(n.state is NodeState.ZOMBIE for n in graph.nodes.values())
    assert ("pipe", "pipes") in _edges(analysis)
    assert "DEVNULL" in analysis.rule_steps[1][0]


@pytest.mark.parametrize("drop", VARIANTS)
def test_fork_lock(drop: tuple[str, ...], tmp_path: Path) -> None:
    analysis = _read(_without(BUNDLES / "fork_lock", tmp_path, drop))
    assert analysis.verdict is Verdict.FORK_LOCK
    assert "REGISTRY_LOCK (inherited locked across fork)" in analysis.headline
    assert "flush_metrics (fork_lock.py:" in analysis.who_waits
    assert {("child", "child-process"), ("lock", "fork-lock")} <= _edges(analysis)
    steps = " ".join(a for a, _ in analysis.rule_steps)
    assert "spawn" in steps and "os.register_at_fork" in steps


def test_pipeline_work_wait_with_locals_is_a_cycle_of_three(tmp_path: Path) -> None:
    for drop in ((), ("native",)):
        analysis = _read(_without(BUNDLES / "pipeline_work_wait", tmp_path / "_".join(drop), drop))
        assert analysis.verdict is Verdict.P2P_DEADLOCK
        assert analysis.rule == "waits-work-wait-cycle"
        assert analysis.headline.startswith("P2P deadlock through Work.wait: rank 0")
        graph = analysis.graph
        assert isinstance(graph, Graph)
        p2p = sorted((e.waiters[0], e.peer) for e in graph.edges if e.producer == "work-wait")
        assert p2p == [("rank:1:0", 2), ("rank:1:1", 0), ("rank:1:2", 1)]


@pytest.mark.parametrize("drop", [("locals",), ("locals", "native")])
def test_pipeline_work_wait_without_locals_asks_for_them(
    drop: tuple[str, ...], tmp_path: Path
) -> None:
    analysis = _read(_without(BUNDLES / "pipeline_work_wait", tmp_path, drop))
    assert analysis.verdict is Verdict.P2P_DEADLOCK
    assert analysis.rule == "waits-work-wait-receive"
    assert analysis.headline == (
        "P2P deadlock through Work.wait: every rank waits in a receive, none sends"
    )
    graph = analysis.graph
    assert isinstance(graph, Graph)
    p2p = [e for e in graph.edges if e.producer == "work-wait"]
    assert len(p2p) == 3 and all(e.waited == () for e in p2p)  # peers never guessed
    assert "py-spy dump --locals" in analysis.rule_steps[0][0]


def test_a_rank_missing_from_the_evidence_gets_no_peerless_edges(tmp_path: Path) -> None:
    from dataclasses import replace

    folder = _without(BUNDLES / "pipeline_work_wait", tmp_path, ("locals", "native"))
    bundle = load([folder])
    # Rank 2's dumps left out: the others still wait, but "every rank receives" is not shown.
    dumps = tuple(d for d in bundle.dumps if "rank2" not in d.source.path)
    analysis = analyze(replace(bundle, dumps=dumps), sources=SourceRoots([folder / "source"]))
    graph = analysis.graph
    assert isinstance(graph, Graph)
    assert analysis.missing_ranks == (2,)
    assert not [e for e in graph.edges if e.producer == "work-wait"]
    assert analysis.rule != "waits-work-wait-receive"


@pytest.mark.parametrize("drop", VARIANTS)
def test_ended_gloo_timeout(drop: tuple[str, ...], tmp_path: Path) -> None:
    analysis = _read(_without(BUNDLES / "ended_gloo_timeout", tmp_path, drop))
    assert analysis.verdict is Verdict.ENDED
    assert re.fullmatch(
        r"The hang is over: rank 0 \(PID \d+\), rank 1 \(PID \d+\), rank 2 \(PID \d+\) gave up "
        r"waiting in all_reduce; rank 3 \(PID \d+\) never arrived",
        analysis.headline,
    )
    assert "timed out after 8000 ms" in analysis.who_waits
    assert "save_checkpoint" in analysis.who_waits
    assert not any("No timeout found" in a for a, _ in analysis.rule_steps)


@pytest.mark.parametrize("drop", [(), ("locals",)])
def test_fuse_d_state_reads_the_latest_status_copy(drop: tuple[str, ...], tmp_path: Path) -> None:
    folder = _without(BUNDLES / "fuse_d_state", tmp_path, drop)
    bundle = load([folder])
    states = sorted(
        (s.snapshot, s.state) for s in bundle.proc_states if s.wchan == "request_wait_answer"
    )
    assert states[0][1] == "S" and states[-1][1] == "D"  # the first copy says S: not the one read
    analysis = _read(folder)
    assert analysis.verdict is Verdict.KERNEL_WAIT
    assert "State D in request_wait_answer (FUSE)" in analysis.headline
    assert ("kernel", "kernel") in _edges(analysis)
    first = analysis.rule_steps[0][0]
    assert first.startswith("Look below Python") and "FUSE" in first
    assert "the FUSE daemon serving the mount does not answer" in analysis.who_waits
    assert "shard-00001.bin" in analysis.who_waits
    assert "read both sides of the branch" not in first


@pytest.mark.parametrize("drop", VARIANTS)
def test_ray_actor_cycle(drop: tuple[str, ...], tmp_path: Path) -> None:
    analysis = _read(_without(BUNDLES / "ray_actor_cycle", tmp_path, drop))
    assert analysis.verdict is Verdict.ACTOR_CYCLE
    assert "ray.get on Critic.score" in analysis.headline
    assert "queued behind Planner.plan on actor Planner" in analysis.headline
    graph = analysis.graph
    assert isinstance(graph, Graph)
    (cycle,) = graph.cycles()
    assert "task:Planner.refine" in cycle and len(cycle) == 3
    driver = [
        e for e in graph.edges if "from the driver" not in e.what and e.at.startswith("main (")
    ]
    assert driver and all(e.waiters[0] not in cycle for e in driver)  # a bystander


def test_pipe_deadlock_capture_is_a_cycle_through_the_full_pipe() -> None:
    analysis = _read(BUNDLES / "pipe_deadlock" / "collect")
    assert analysis.verdict is Verdict.PIPE_DEADLOCK
    assert {("child", "child-process"), ("pipe", "pipes")} <= _edges(analysis)
    assert "the pipe is full" in analysis.who_waits


def test_dead_worker_capture_names_the_zombie() -> None:
    analysis = _read(BUNDLES / "dead_worker" / "collect")
    assert analysis.verdict is Verdict.DEAD_WORKER
    assert "State Z (zombie)" in analysis.who_waits
    assert ("queue", "queue-workers") in _edges(analysis)
    assert ("pipe", "pipes") not in _edges(analysis)  # a shared queue pipe is no edge


def test_vllm_like_engine_core_waits_for_its_workers_and_stays_a_desync() -> None:
    analysis = _read(BUNDLES / "vllm_like")
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    graph = analysis.graph
    assert isinstance(graph, Graph)
    queue = [e for e in graph.edges if e.producer == "queue-workers"]
    assert len(queue) == 1 and len(queue[0].waited) == 4
    assert graph.nodes[queue[0].waiters[0]].state is not NodeState.IDLE


def test_keys_of_threads_are_stable() -> None:
    assert thread_key("h", 1, "fork-holder:L") == "thread:h:1:fork-holder:L"


def test_a_dead_worker_is_named_with_how_it_died_when_a_log_says_so() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from reporter.model import Location, LogEvent, LogEventKind

    folder = BUNDLES / "dead_worker" / "collect"
    bundle = load([folder])
    zombie = next(c.pid for r in bundle.process_relations for c in r.children if c.state == "Z")
    oom = LogEvent(
        kind=LogEventKind.OOM_KILL,
        at=datetime(2026, 12, 7, 12, 47, 1, tzinfo=UTC),
        text=f"Out of memory: Killed process {zombie} (python)",
        pid=zombie,
        host=next(r.host for r in bundle.process_relations),
        source=Location(path="logs/kern.log", line=3),
    )
    analysis = analyze(replace(bundle, log_events=(*bundle.log_events, oom)))
    assert analysis.verdict is Verdict.DEAD_WORKER
    assert "killed by the kernel's OOM killer at 12:47:01 UTC" in analysis.who_waits
    graph = analysis.graph
    assert isinstance(graph, Graph)
    dead = next(n for n in graph.nodes.values() if n.pid == zombie)
    assert "logs/kern.log:3" in dead.evidence


def test_the_kernels_hung_task_warning_is_kernel_evidence_too() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from reporter.model import Location, LogEvent, LogEventKind

    folder = BUNDLES / "fuse_d_state"
    bundle = load([folder])
    pid = next(s.pid for s in bundle.proc_states if s.state == "D")
    warning = LogEvent(
        kind=LogEventKind.HUNG_TASK,
        at=datetime(2026, 12, 7, 13, 0, 0, tzinfo=UTC),
        text=f"INFO: task python:{pid} blocked for more than 120 seconds.",
        pid=pid,
        source=Location(path="logs/dmesg.txt", line=7),
    )
    # Without the D status copies: the warning alone makes the kernel edge.
    quiet = tuple(
        replace(s, state="S", state_text="sleeping") if s.pid == pid else s
        for s in bundle.proc_states
    )
    threads = tuple(replace(t, state="S") if t.pid == pid else t for t in bundle.thread_states)
    both = replace(bundle, log_events=(warning,), proc_states=quiet, thread_states=threads)
    analysis = analyze(both, sources=SourceRoots([folder / "source"]))
    assert analysis.verdict is Verdict.KERNEL_WAIT
    graph = analysis.graph
    assert isinstance(graph, Graph)
    node = next(n for n in graph.nodes.values() if n.key.startswith("kernel:"))
    assert node.key.endswith(":?")  # no wchan: only the warning said it
    assert "hung-task warning at 13:00:00 UTC" in node.why
    assert "logs/dmesg.txt:7" in node.evidence


def test_ray_without_the_source_says_what_would_name_the_calls(tmp_path: Path) -> None:
    folder = _without(BUNDLES / "ray_actor_cycle", tmp_path, ("source",))
    manifest = folder / "bundle.toml"
    text = manifest.read_text(encoding="utf-8").replace('source_root = "source/"\n', "")
    manifest.write_text(text, encoding="utf-8")
    analysis = _read(folder)
    assert analysis.verdict is Verdict.ALL_STUCK
    assert analysis.rule == "waits-actor-calls-unread"
    assert analysis.headline.startswith("Ray actors wait in ray.get and none runs: PID ")
    graph = analysis.graph
    assert isinstance(graph, Graph)
    actor = [e for e in graph.edges if e.producer == "ray-actors"]
    assert len(actor) == 2 and all(e.waited == () for e in actor)  # the driver is no actor
    assert "--source-root" in analysis.rule_steps[0][0]
