"""One job, many hosts: a process is (host, PID); ranks and instances span hosts; dumps that
share a PID but not their title, interpreter or threads are different processes."""

from __future__ import annotations

from dataclasses import replace

from reporter.analysis import RankState, Verdict, analyze
from reporter.analysis.clues import same_process
from reporter.analysis.ranks import identify
from reporter.model import (
    Environment,
    EnvVar,
    EvidenceFile,
    EvidenceKind,
    Location,
    ProcessDump,
    ThreadStack,
)

from .builders import ALL_REDUCE, bundle, dump, failure, scheduler_stack

SCHED = "sglang/srt/managers/scheduler.py"
STUCK = scheduler_stack(*ALL_REDUCE, f"Scheduler.check_hicache_events ({SCHED}:900)")
IDLE = scheduler_stack(f"Scheduler.on_idle ({SCHED}:950)")
RECV = scheduler_stack(f"Scheduler.recv_requests ({SCHED}:1012)")


def _on(host: str, d: ProcessDump) -> ProcessDump:
    return replace(d, host=host)


def _node(
    host: str, ranks: range, stacks: list[list[str]], *, pid0: int = 100
) -> list[ProcessDump]:
    """Two snapshots of `ranks` on `host`, PIDs from `pid0` (the same on every host)."""
    out = []
    for snap in range(2):
        for i, rank in enumerate(ranks):
            main = stacks[i] if snap == 0 else stacks[i][:]
            if main is IDLE or main is RECV:
                main = IDLE if snap else RECV
            out.append(
                _on(
                    host,
                    dump(
                        pid=pid0 + i,
                        title=f"sglang::scheduler_TP{rank}",
                        main=main,
                        source=f"{host}/pyspy/pid{pid0 + i}-s{snap}.txt",
                    ),
                )
            )
    return out


def test_a_tp_desync_spread_over_two_hosts_is_one_job() -> None:
    # TP4 over two nodes: ranks 0-1 on node-a wait in all_reduce, ranks 2-3 on node-b idle.
    # Both nodes number their processes alike (PIDs 100, 101): four processes, not two.
    dumps = _node("node-a", range(2), [STUCK, STUCK]) + _node("node-b", range(2, 4), [RECV, RECV])
    analysis = analyze(bundle(*dumps))
    assert len(analysis.processes) == 4
    assert [(p.identity.rank, p.identity.host) for p in analysis.processes] == [
        (0, "node-a"),
        (1, "node-a"),
        (2, "node-b"),
        (3, "node-b"),
    ]
    assert analysis.instances == ()  # one job across both hosts
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    (edge,) = analysis.waits_for
    assert edge.waiting.ranks == (0, 1)
    assert edge.waited.ranks == (2, 3)
    assert analysis.laggards == (2, 3)
    assert {len(p.snapshots) for p in analysis.processes} == {2}


def test_two_four_rank_servers_on_two_hosts_stay_two_instances() -> None:
    dumps = _node("node-a", range(4), [STUCK, STUCK, RECV, RECV]) + _node(
        "node-b", range(4), [RECV, RECV, RECV, RECV]
    )
    analysis = analyze(bundle(*dumps))
    assert len(analysis.processes) == 8
    assert [(i.label.split(";")[0], i.pids) for i in analysis.instances] == [
        ("host node-a", (100, 101, 102, 103)),
        ("host node-b", (100, 101, 102, 103)),
    ]
    assert analysis.instances[0].verdict is Verdict.COLLECTIVE_DESYNC
    assert analysis.instances[1].verdict is not Verdict.COLLECTIVE_DESYNC
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert {e.instance for e in analysis.waits_for} == {"1"}


def test_hosts_with_different_rendezvous_are_not_joined() -> None:
    dumps = _node("node-a", range(2), [STUCK, STUCK]) + _node("node-b", range(2, 4), [RECV, RECV])
    env = Environment(
        variables=tuple(
            EnvVar(
                name="MASTER_PORT", value=port, source=Location(path=f"{host}/env/pid{pid}.environ")
            )
            for host, port in (("node-a", "29500"), ("node-b", "29611"))
            for pid in (100, 101)
        )
    )
    files = tuple(
        EvidenceFile(
            path=f"{host}/env/pid{pid}.environ",
            kind=EvidenceKind.ENVIRON,
            sniffed=False,
            size=1,
            host=host,
        )
        for host in ("node-a", "node-b")
        for pid in (100, 101)
    )
    analysis = analyze(replace(bundle(*dumps), environment=env, files=files))
    assert len(analysis.instances) == 2
    assert "node-b" in analysis.instances[1].label


def test_rank_env_on_each_host_gives_global_ranks() -> None:
    # No titles: RANK in each process's environ evidence, files on two hosts with equal PIDs.
    dumps = [
        replace(d, cmdline="python train.py")
        for d in _node("a", range(2), [STUCK, STUCK]) + _node("b", range(2), [RECV, RECV])
    ]
    env = Environment(
        variables=tuple(
            EnvVar(
                name="RANK", value=str(rank), source=Location(path=f"{host}/env/pid{pid}.environ")
            )
            for host, base in (("a", 0), ("b", 2))
            for pid, rank in ((100, base), (101, base + 1))
        )
    )
    files = tuple(
        EvidenceFile(
            path=f"{host}/env/pid{pid}.environ",
            kind=EvidenceKind.ENVIRON,
            sniffed=False,
            size=1,
            host=host,
        )
        for host in ("a", "b")
        for pid in (100, 101)
    )
    rank_map = identify(replace(bundle(*dumps), environment=env, files=files))
    assert [(p.identity.rank, p.identity.host, p.pid) for p in rank_map.ranks] == [
        (0, "a", 100),
        (1, "a", 101),
        (2, "b", 100),
        (3, "b", 101),
    ]
    assert len(rank_map.instances) == 1


def test_a_failed_dump_belongs_to_the_process_on_its_own_host() -> None:
    dumps = _node("node-a", range(2), [STUCK, STUCK]) + _node("node-b", range(2, 3), [RECV])
    gone = replace(failure(pid=101, source="node-b/pyspy/pid101-s0.txt"), host="node-b")
    analysis = analyze(bundle(*dumps, failures=[gone], world_size=4))
    (failed,) = analysis.failed
    assert failed.failure.host == "node-b"
    # PID 101 on node-a is rank 1 and alive: the failure is not pinned on it.
    assert failed.rank != 1
    assert analysis.processes[1].state is RankState.STUCK


def test_without_hosts_pid_only_processes_sharing_a_pid_are_numbered_by_place() -> None:
    a = dump(pid=1, title="python worker.py --rank 0", main=STUCK, source="a.txt")
    b = dump(pid=1, title="python worker.py --rank 1", main=RECV, source="b.txt")
    rank_map = identify(bundle(a, b))
    assert rank_map.unit == "process"
    assert [len(p.snapshots) for p in rank_map.ranks] == [1, 1]
    assert len({p.identity.key for p in rank_map.ranks}) == 2


def _with_tids(d: ProcessDump, tids: list[int]) -> ProcessDump:
    threads = [replace(d.threads[0], os_thread_id=d.pid)]
    threads += [
        ThreadStack(thread_id=str(t), os_thread_id=t, name=f"t{t}", source=d.source) for t in tids
    ]
    return replace(d, threads=tuple(threads))


def test_same_process_reads_title_interpreter_and_helper_threads() -> None:
    base = replace(
        dump(pid=1, title="sglang::scheduler_TP0", main=STUCK), python_exe="/usr/bin/python3.11"
    )
    assert same_process(base, base)
    assert not same_process(base, replace(base, cmdline="sglang::scheduler_TP1"))
    assert not same_process(base, replace(base, python_exe="/opt/venv/bin/python"))
    assert same_process(base, replace(base, cmdline=None))  # unknown is no conflict
    # Helper threads: one in common is enough; none in common on both sides is two processes.
    assert same_process(_with_tids(base, [7, 8]), _with_tids(base, [8, 9]))
    assert not same_process(_with_tids(base, [7, 8]), _with_tids(base, [20, 21]))
    # The main thread's id is the PID on both sides: no evidence either way.
    assert same_process(_with_tids(base, []), _with_tids(base, [20]))


def test_a_pid_reused_on_one_host_splits_into_two_processes_there() -> None:
    first = _with_tids(
        dump(pid=50, title="sglang::scheduler_TP0", main=STUCK, source="s0.txt"), [51]
    )
    again = _with_tids(
        dump(pid=50, title="sglang::scheduler_TP0", main=RECV, source="s1.txt"), [90]
    )
    other = dump(pid=60, title="sglang::scheduler_TP1", main=RECV, source="s0.txt")
    rank_map = identify(bundle(first, other, again))
    # Rank 0 is claimed twice by PID 50 (two incarnations): kept apart, never one moving rank.
    assert sum(len(p.snapshots) for p in rank_map.ranks) == 3
    assert all(len(p.snapshots) == 1 for p in rank_map.ranks)
