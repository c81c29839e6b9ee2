"""Instances (several servers or jobs in one bundle), collective identity, rank-source
sanity and gone ranks, end to end through identify() and analyze()."""

from __future__ import annotations

from dataclasses import replace

from reporter.analysis import RankState, Verdict, analyze
from reporter.analysis.ranks import failure_state, identify
from reporter.analysis.signature import make_signature
from reporter.model import (
    Bundle,
    Environment,
    EnvVar,
    Location,
    Manifest,
    ProcessDump,
    ProcessNote,
)

from .builders import ALL_REDUCE, bundle, dump, failure, scheduler_stack

SCHED = "sglang/srt/managers/scheduler.py"
RECV = f"Scheduler.recv_requests ({SCHED}:1012)"
ZMQ = "Socket.recv_pyobj (zmq/sugar/socket.py:1000)"
FORWARD = f"Scheduler.forward_batch ({SCHED}:1400)"
HICACHE = f"Scheduler.check_hicache_events ({SCHED}:900)"
ON_IDLE = f"Scheduler.on_idle ({SCHED}:950)"
RESULT = f"Scheduler.process_batch_result ({SCHED}:1500)"

STUCK = scheduler_stack(*ALL_REDUCE, HICACHE)
IDLE_A = scheduler_stack(ON_IDLE)
IDLE_B = scheduler_stack(ZMQ, RECV)
PHASES = [
    scheduler_stack(ZMQ, RECV),
    scheduler_stack(*ALL_REDUCE, FORWARD),
    scheduler_stack(RESULT),
]


def _server(
    base: int, stacks: list[list[list[str]]], *, parent: int | None = None, name: str = "srv"
) -> list[ProcessDump]:
    """stacks[snapshot][tp] -> loose per-PID dumps (`<pid>_s<k>.txt`) of one server."""
    out = []
    for s, row in enumerate(stacks):
        for tp, main in enumerate(row):
            d = dump(
                pid=base + tp,
                title=f"sglang::scheduler_TP{tp}",
                main=main,
                source=f"{name}/{base + tp}_s{s}.txt",
            )
            out.append(replace(d, parent_pid=parent) if parent is not None else d)
    return out


def _desynced(base: int, **kw: object) -> list[ProcessDump]:
    rows = [[STUCK, STUCK, IDLE_A, IDLE_B], [STUCK, STUCK, IDLE_B, IDLE_A]] * 2
    return _server(base, rows, **kw)  # type: ignore[arg-type]


def _healthy(base: int, **kw: object) -> list[ProcessDump]:
    rows = [[PHASES[(r + s) % 3] for r in range(4)] for s in range(4)]
    return _server(base, rows, **kw)  # type: ignore[arg-type]


def _no_mixing(analysis_classes: object, groups: list[set[int]]) -> bool:
    for stack in analysis_classes:  # type: ignore[attr-defined]
        pids = set(stack.pids)
        if not any(pids <= g for g in groups):
            return False
    return True


def test_two_servers_told_apart_by_their_launchers() -> None:
    dumps = _healthy(200, parent=150, name="a") + _desynced(300, parent=250, name="b")
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert [(i.id, i.verdict) for i in analysis.instances] == [
        ("1", Verdict.PROGRESSING),
        ("2", Verdict.COLLECTIVE_DESYNC),
    ]
    assert analysis.instances[1].pids == (300, 301, 302, 303)
    assert "launcher PID 250" in analysis.instances[1].label
    assert _no_mixing(analysis.classes, [set(range(200, 204)), set(range(300, 304))])
    assert {c.instance for c in analysis.classes if 300 in c.pids} == {"2"}
    # Each rank keeps its own snapshots: four per process, not eight per rank.
    assert {len(p.snapshots) for p in analysis.processes} == {4}
    assert analysis.laggards == (2, 3)
    assert {e.instance for e in analysis.waits_for} == {"2"}
    assert {r for e in analysis.waits_for for r in e.waited.ranks} == {2, 3}
    assert "Instance 2" in analysis.summary and "progressing" in analysis.summary


def test_two_servers_without_any_separating_signal_stay_apart_by_pid() -> None:
    dumps = _healthy(200, name="a") + _desynced(300, name="b")
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert len(analysis.instances) == 2
    assert _no_mixing(analysis.classes, [set(range(200, 204)), set(range(300, 304))])
    assert any("told apart" in n or "PID order" in n for n in analysis.confidence_notes)
    assert any("kept apart by PID" in w for w in analysis.warnings)
    # No rank label is shared by two processes within an instance.
    for inst in analysis.instances:
        assert len(inst.ranks) == len(inst.pids)


def test_two_servers_told_apart_by_rendezvous_environment() -> None:
    env = Environment(
        variables=tuple(
            EnvVar(name="MASTER_PORT", value=port, source=Location(path=f"env/pid{pid}.environ"))
            for base, port in ((200, "29500"), (300, "29611"))
            for pid in range(base, base + 4)
        )
    )
    b = bundle(*(_healthy(200) + _desynced(300)))
    analysis = analyze(replace(b, environment=env))
    assert len(analysis.instances) == 2
    assert "MASTER_PORT=29611" in analysis.instances[1].label
    assert not any("PID order" in n for n in analysis.confidence_notes)


def test_collect_process_tree_separates_instances() -> None:
    notes = (
        *tuple(
            ProcessNote(pid=pid, ppid=parent, title=f"sglang::scheduler_TP{pid % 100}")
            for base, parent in ((200, 150), (300, 250))
            for pid in range(base, base + 4)
        ),
        ProcessNote(pid=150, ppid=1, cmdline="python -m sglang.launch_server --port 30000"),
        ProcessNote(pid=250, ppid=1, cmdline="python -m sglang.launch_server --port 30001"),
    )
    b = bundle(*(_healthy(200) + _desynced(300)))
    analysis = analyze(replace(b, manifest=Manifest(processes=notes)))
    assert [i.verdict for i in analysis.instances] == [
        Verdict.PROGRESSING,
        Verdict.COLLECTIVE_DESYNC,
    ]
    assert "--port=30001" in analysis.instances[1].label


def test_one_server_is_one_instance() -> None:
    analysis = analyze(bundle(*_desynced(300, parent=250)))
    assert analysis.instances == ()
    assert {c.instance for c in analysis.classes} == {"1"}


def test_same_op_from_two_call_sites_is_a_desync_not_all_stuck() -> None:
    other = scheduler_stack(*ALL_REDUCE, FORWARD)
    rows = [[STUCK] * 4 + [other] * 4] * 3
    dumps = [
        dump(pid=100 + r, title=f"VllmWorker rank={r}", main=main, source=f"s{s}/{r}.txt")
        for s, row in enumerate(rows)
        for r, main in enumerate(row)
    ]
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    sites = {c.label: c.call_site for c in analysis.classes}
    assert sites["[0-3]"] is not None and sites["[0-3]"].startswith("check_hicache_events")
    assert sites["[4-7]"] is not None and sites["[4-7]"].startswith("forward_batch")
    # Each side waits for the other; neither is "the same main stack".
    assert {(e.waiting.ranks, e.waited.ranks) for e in analysis.waits_for} == {
        ((0, 1, 2, 3), (4, 5, 6, 7)),
        ((4, 5, 6, 7), (0, 1, 2, 3)),
    }
    assert "same main stack" not in analysis.summary


def test_pid_named_files_are_not_ranks() -> None:
    dumps = [dump(pid=pid, main=IDLE_A, source=f"rank_{pid}.json") for pid in (8251, 8252, 8253)]
    rank_map = identify(bundle(*dumps))
    assert rank_map.unit == "pid"
    assert any("is its PID" in w for w in rank_map.warnings)


def test_implausible_file_name_ranks_are_overruled() -> None:
    dumps = [dump(pid=None, main=IDLE_A, source=f"dump_rank{n}.txt") for n in (8251, 8300)]
    rank_map = identify(bundle(*dumps))
    assert rank_map.unit == "process"  # no PIDs either: numbered by position
    assert any("implausible" in w for w in rank_map.warnings)


def test_unrelated_files_do_not_change_ranks() -> None:
    base = _desynced(300, parent=250)
    alone = identify(bundle(*base))
    extra = dump(pid=999, title="sglang::scheduler_DP3_TP7", main=IDLE_A, source="other/x.txt")
    extra = replace(extra, parent_pid=990)
    mixed = identify(bundle(*base, extra))
    ranks_alone = {p.pid: p.identity.rank for p in alone.ranks}
    ranks_mixed = {p.pid: p.identity.rank for p in mixed.ranks if p.pid in ranks_alone}
    assert ranks_alone == ranks_mixed


def test_failure_states() -> None:
    assert (
        failure_state(failure(pid=1, reason="Error: No such file or directory (os error 2)"))
        == "gone"
    )
    assert (
        failure_state(
            failure(
                pid=1,
                reason="Failed to get process executable name. Check that the process is running.",
            )
        )
        == "gone"
    )
    assert failure_state(failure(pid=1, reason="Permission denied (os error 13)")) == "refused"
    assert failure_state(failure(pid=1, reason="py-spy timed out after 10 s")) == "timeout"
    assert failure_state(failure(pid=1, reason="Error: unknown python version")) == "error"


def test_group_waiting_on_a_gone_rank_says_so() -> None:
    barrier = scheduler_stack("barrier (torch/distributed/distributed_c10d.py:4000)", RESULT)
    dumps = [
        dump(pid=100 + r, title=f"sglang::scheduler_TP{r}", main=barrier, source=f"s{s}/r{r}.txt")
        for s in range(2)
        for r in range(3)
    ]
    fails = (
        failure(
            pid=None, reason="Error: No such file or directory (os error 2)", source="s0/rank3.txt"
        ),
    )
    b = Bundle(
        root=None,
        manifest=Manifest(world_size=4),
        dumps=tuple(dumps),
        failures=fails,
    )
    analysis = analyze(b)
    assert [f.state for f in analysis.failed] == ["gone"]
    gone = [e for e in analysis.waits_for if e.waited.state == "gone"]
    assert gone and gone[0].waited.ranks == (3,) and gone[0].waiting.ranks == (0, 1, 2)
    assert "rank 3 (gone" in analysis.summary


def test_idle_state_is_distinct() -> None:
    analysis = analyze(bundle(*_desynced(300)))
    states = {p.identity.rank: p.state for p in analysis.processes}
    assert states == {0: RankState.STUCK, 1: RankState.STUCK, 2: RankState.IDLE, 3: RankState.IDLE}


def test_signature_ignores_install_prefix() -> None:
    from reporter.analysis.classify import default_classifier

    def stacks(prefix: str) -> list[ProcessDump]:
        wrap = f"_wrap ({prefix}torch/multiprocessing/spawn.py:90)"
        return [
            dump(
                pid=100 + r,
                title=f"VllmWorker rank={r}",
                main=[
                    f"all_reduce ({prefix}torch/distributed/distributed_c10d.py:2501)",
                    "step (train.py:10)",
                    wrap,
                ]
                if r < 2
                else ["step2 (train.py:20)", wrap],
                source=f"r{r}.txt",
            )
            for r in range(4)
        ]

    a = analyze(bundle(*stacks("/usr/lib/python3/dist-packages/")))
    b = analyze(bundle(*stacks("/opt/venv/lib/python3.12/site-packages/")))
    assert a.signature == b.signature
    assert make_signature(a.verdict, a.classes, default_classifier()) == make_signature(
        b.verdict, b.classes, default_classifier()
    )


def test_same_op_and_call_site_on_two_groups_is_a_desync() -> None:
    def stack(group: str) -> list[str]:
        return scheduler_stack(
            f"all_reduce (torch/distributed/distributed_c10d.py:2501) [group={group}]", FORWARD
        )

    rows = [[stack("None")] * 2 + [stack('"cpu_group"')] * 2] * 2
    dumps = [
        dump(pid=100 + r, title=f"VllmWorker rank={r}", main=main, source=f"s{s}/{r}.txt")
        for s, row in enumerate(rows)
        for r, main in enumerate(row)
    ]
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    groups = {e.waiting.ranks: e.waiting.group for e in analysis.waits_for}
    assert groups == {(0, 1): "default", (2, 3): "cpu_group"}
    # Without the group arguments the same stacks agree: all-stuck.
    bare = scheduler_stack("all_reduce (torch/distributed/distributed_c10d.py:2501)", FORWARD)
    plain = [
        dump(pid=100 + r, title=f"VllmWorker rank={r}", main=bare, source=f"s{s}/{r}.txt")
        for s in range(2)
        for r in range(4)
    ]
    assert analyze(bundle(*plain)).verdict is Verdict.ALL_STUCK


def test_manifest_instance_is_the_strongest_signal() -> None:
    from reporter.model import RankHint

    dumps = _healthy(200, parent=150, name="a") + _desynced(300, parent=150, name="b")
    hints = tuple(
        (d.source.path, RankHint(instance="prefill" if d.pid and d.pid < 300 else "decode"))
        for d in dumps
    )
    b = replace(bundle(*dumps), rank_hints=hints)
    analysis = analyze(b)
    labels = {i.verdict: i.label for i in analysis.instances}
    assert labels[Verdict.COLLECTIVE_DESYNC].startswith("manifest decode")
    assert labels[Verdict.PROGRESSING].startswith("manifest prefill")


def test_a_rank_that_died_before_any_dump_is_named_by_its_recorded_title() -> None:
    barrier = scheduler_stack("barrier (torch/distributed/distributed_c10d.py:4000)", RESULT)
    dumps = [
        dump(pid=100 + r, title=f"sglang::scheduler_TP{r}", main=barrier, source=f"p{r}-s{s}.txt")
        for s in range(2)
        for r in range(3)
    ]
    notes = (
        *(ProcessNote(pid=100 + r, ppid=50, title=f"sglang::scheduler_TP{r}") for r in range(4)),
    )
    fails = (failure(pid=103, reason="Error: No such process", source="p3-s0.txt"),)
    b = Bundle(
        root=None,
        manifest=Manifest(processes=notes, world_size=4),
        dumps=tuple(dumps),
        failures=fails,
    )
    analysis = analyze(b)
    assert [(f.rank, f.state) for f in analysis.failed] == [(3, "gone")]
    assert any(e.waited.ranks == (3,) and e.waited.state == "gone" for e in analysis.waits_for)


def test_environ_rank_overrules_a_file_name_with_a_warning() -> None:
    env = Environment(
        variables=(EnvVar(name="RANK", value="5", source=Location(path="env/pid4711.environ")),)
    )
    b = replace(bundle(dump(pid=4711, main=IDLE_A, source="rank2.txt")), environment=env)
    rank_map = identify(b)
    (proc,) = rank_map.ranks
    assert proc.identity.rank == 5 and proc.identity.source.value == "environ"
    assert any("overrules rank 2" in w for w in rank_map.warnings)


def test_a_launcher_that_is_a_systemd_unit_is_named_by_it() -> None:
    from datetime import UTC, datetime

    from reporter.model import EventKind, TimelineEvent

    events = tuple(
        TimelineEvent(
            at=datetime(2026, 1, 1, tzinfo=UTC),
            kind=EventKind.SERVICE,
            text=f"{name}: main process started (PID {pid})",
            source=Location(path=f"systemd/{name}.txt", line=3),
        )
        for name, pid in (("sglang-prefill.service", 150), ("sglang-decode.service", 250))
    )
    dumps = _healthy(200, parent=150, name="a") + _desynced(300, parent=250, name="b")
    analysis = analyze(replace(bundle(*dumps), events=events))
    assert analysis.instances[1].label.startswith("launcher sglang-decode.service (PID 250)")
