"""Verdicts, branch points, laggards, missing ranks and confidence, end to end through analyze()."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from reporter.analysis import Confidence, RankState, Verdict, analyze
from reporter.model import EvidenceKind, Location, ProcessDump, RankHint

from .builders import ALL_REDUCE, BROADCAST, bundle, dump, failure, scheduler_stack

SCHED = "sglang/srt/managers/scheduler.py"
RECV = f"Scheduler.recv_requests ({SCHED}:1012)"
ZMQ = "Socket.recv_pyobj (zmq/sugar/socket.py:1000)"
FORWARD = f"Scheduler.forward_batch ({SCHED}:1400)"
HICACHE = f"Scheduler.check_hicache_events ({SCHED}:900)"
ON_IDLE = f"Scheduler.on_idle ({SCHED}:950)"
RESULT = f"Scheduler.process_batch_result ({SCHED}:1500)"


def _tp(rank: int, main: Sequence[str], *, snapshot: int = 0, pid_base: int = 100) -> ProcessDump:
    return dump(
        pid=pid_base + rank,
        title=f"sglang::scheduler_TP{rank}",
        main=main,
        source=f"snap{snapshot}.txt",
    )


def _snapshots(stacks: Sequence[Sequence[Sequence[str]]]) -> list[ProcessDump]:
    """stacks[snapshot][rank] -> dumps, snapshot by snapshot."""
    return [
        _tp(rank, main, snapshot=s) for s, row in enumerate(stacks) for rank, main in enumerate(row)
    ]


def test_desync_with_branch_point() -> None:
    broadcast = scheduler_stack(*BROADCAST, RECV)
    all_reduce = scheduler_stack(*ALL_REDUCE, FORWARD)
    analysis = analyze(bundle(*_snapshots([[broadcast] * 4 + [all_reduce] * 4])))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert [(c.label, c.collective, c.state) for c in analysis.classes] == [
        ("[0-3]", "broadcast", RankState.UNKNOWN),
        ("[4-7]", "all_reduce", RankState.UNKNOWN),
    ]
    point = analysis.branch_point
    assert point is not None and point.shared is not None
    assert point.shared.short_function == "event_loop_overlap_disagg_decode"
    assert [
        (b.label, b.collective, [f.short_function for f in b.frames]) for b in point.branches
    ] == [
        ("[0-3]", "broadcast", ["recv_requests", "broadcast_pyobj", "broadcast"]),
        ("[4-7]", "all_reduce", ["forward_batch", "all_reduce"]),
    ]
    assert point.common[-1].short_function == "event_loop_overlap_disagg_decode"
    assert analysis.confidence is Confidence.MEDIUM
    assert analysis.confidence_notes == (
        "one snapshot cannot tell stuck from slow: capture two or three dumps a few seconds apart",
    )
    assert "ranks [0-3] are in broadcast (from recv_requests)" in analysis.summary
    assert "ranks [4-7] are in all_reduce (from forward_batch)" in analysis.summary
    assert "event_loop_overlap_disagg_decode" in analysis.summary
    assert analysis.laggards == ()


def test_hicache_incident_over_three_snapshots() -> None:
    # Ranks 0/1 sit in all_reduce; ranks 2/3 spin in their idle loop and never join.
    stuck = scheduler_stack(*ALL_REDUCE, HICACHE)
    idle_a = scheduler_stack(ON_IDLE)
    idle_b = scheduler_stack(ZMQ, RECV)
    rows = [
        [stuck, stuck, idle_a, idle_b],
        [stuck, stuck, idle_b, idle_a],
        [stuck, stuck, idle_a, idle_a],
    ]
    analysis = analyze(bundle(*_snapshots(rows)))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert analysis.snapshots == 3
    assert [(c.label, c.collective, c.state) for c in analysis.classes] == [
        ("[0-1]", "all_reduce", RankState.STUCK),
        ("[2-3]", None, RankState.IDLE),
    ]
    # The ranks everyone waits for are named, whatever the split size.
    assert analysis.laggards == (2, 3)
    (edge,) = analysis.waits_for
    assert edge.waiting.ranks == (0, 1) and edge.waiting.collective == "all_reduce"
    assert edge.waiting.at.startswith("check_hicache_events (")
    assert edge.waited.ranks == (2, 3) and edge.waited.state == "idle"
    assert edge.waited.at.startswith("idle in on_idle (")
    assert "Ranks [0-1] wait in all_reduce at check_hicache_events" in analysis.summary
    assert "stuck running on_idle" not in analysis.summary
    assert analysis.confidence is Confidence.HIGH
    point = analysis.branch_point
    assert point is not None
    assert [[f.short_function for f in b.frames] for b in point.branches] == [
        ["check_hicache_events", "all_reduce"],
        ["on_idle"],
    ]


def test_rank_never_entering_the_collective() -> None:
    stuck = scheduler_stack(*ALL_REDUCE, FORWARD)
    loop = [scheduler_stack(ZMQ, RECV), scheduler_stack(RESULT), scheduler_stack(ON_IDLE)]
    rows = [[stuck, stuck, stuck, loop[s]] for s in range(3)]
    analysis = analyze(bundle(*_snapshots(rows)))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert analysis.laggards == (3,)
    assert [p.state for p in analysis.processes] == [RankState.STUCK] * 3 + [RankState.MOVING]
    assert "Ranks [0-2] wait in all_reduce at forward_batch" in analysis.summary
    assert "for rank 3 (running" in analysis.summary


def test_single_snapshot_rank_outside_collective() -> None:
    stuck = scheduler_stack(*ALL_REDUCE, FORWARD)
    analysis = analyze(bundle(*_snapshots([[stuck, stuck, scheduler_stack(RESULT), stuck]])))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert analysis.laggards == (2,)


def test_all_stuck() -> None:
    stuck = scheduler_stack(*ALL_REDUCE, FORWARD)
    analysis = analyze(bundle(*_snapshots([[stuck] * 4] * 3)))
    assert analysis.verdict is Verdict.ALL_STUCK
    assert analysis.confidence is Confidence.HIGH
    assert analysis.confidence_notes == ()
    assert [(c.label, c.state) for c in analysis.classes] == [("[0-3]", RankState.STUCK)]
    assert analysis.branch_point is None
    assert "in all_reduce (from forward_batch)" in analysis.summary
    assert "3 snapshots" in analysis.summary


def test_all_stuck_in_waits_says_the_service_may_be_idle() -> None:
    idle = scheduler_stack(ZMQ, RECV)
    analysis = analyze(bundle(*_snapshots([[idle] * 2] * 2)))
    assert analysis.verdict is Verdict.ALL_STUCK
    assert analysis.classes[0].wait == "zmq-recv"
    assert "may simply be idle" in analysis.summary


def test_groups_each_stuck_in_its_own_collective_wait_for_each_other() -> None:
    # Two DP groups, each agreeing within itself, stuck in different collectives: neither
    # collective completes within its group, so each must span the other (stuck subsets).
    a = scheduler_stack(*ALL_REDUCE, FORWARD)
    b = scheduler_stack(*BROADCAST, RECV)
    dumps = [
        dump(
            pid=100 + i,
            title=f"sglang::scheduler_DP{dp}_TP{tp}",
            main=a if dp == 0 else b,
            source=f"s{s}/x{i}.txt",
        )
        for s in range(2)
        for i, (dp, tp) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)])
    ]
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    edges = {(e.waiting.ranks, e.waited.ranks) for e in analysis.waits_for}
    assert edges == {((0, 1), (2, 3)), ((2, 3), (0, 1))}
    assert analysis.confidence is not Confidence.HIGH
    assert any("all of group DP0" in n for n in analysis.confidence_notes)
    assert analysis.branch_point is not None
    assert [b.label for b in analysis.branch_point.branches] == ["[0-1]", "[2-3]"]


def test_healthy_loop_is_progressing_not_desync() -> None:
    # Every rank runs the same loop; three snapshots catch them at different points.
    phases = [
        scheduler_stack(ZMQ, RECV),
        scheduler_stack(*ALL_REDUCE, FORWARD),
        scheduler_stack(RESULT),
    ]
    rows = [[phases[(rank + s) % 3] for rank in range(4)] for s in range(3)]
    analysis = analyze(bundle(*_snapshots(rows)))
    assert analysis.verdict is Verdict.PROGRESSING
    assert analysis.laggards == ()
    assert all(p.state is RankState.MOVING for p in analysis.processes)
    assert analysis.branch_point is None
    assert analysis.signature.text.startswith("progressing\n")
    assert "process_batch_result" in analysis.signature.text
    assert "making progress" in analysis.summary


def test_rank_caught_in_collective_each_time_is_not_desync_when_others_pass_through_it() -> None:
    in_ar = scheduler_stack(*ALL_REDUCE, FORWARD)
    phases = [scheduler_stack(ZMQ, RECV), in_ar, scheduler_stack(RESULT)]
    rows = [[in_ar, phases[s % 3], phases[(s + 1) % 3], phases[(s + 2) % 3]] for s in range(3)]
    analysis = analyze(bundle(*_snapshots(rows)))
    assert analysis.verdict is Verdict.PROGRESSING
    # Rank 0 sits in the collective in every snapshot while the others compute: it is the
    # fastest (it waits for them), not a laggard.
    assert analysis.laggards == ()


def test_progressing_with_a_stuck_laggard() -> None:
    phases = [scheduler_stack(ZMQ, RECV), scheduler_stack(RESULT), scheduler_stack(ON_IDLE)]
    slow = scheduler_stack(f"load_weights ({SCHED}:77)")
    rows = [[phases[(r + s) % 3] for r in range(3)] + [slow] for s in range(3)]
    analysis = analyze(bundle(*_snapshots(rows)))
    assert analysis.verdict is Verdict.PROGRESSING
    assert analysis.laggards == (3,)
    assert "Rank 3 did not move while others did (running load_weights)" in analysis.summary
    assert "load_weights" in analysis.signature.text


def test_one_snapshot_in_agreement_is_inconclusive() -> None:
    analysis = analyze(bundle(*_snapshots([[scheduler_stack(ZMQ, RECV)] * 4])))
    assert analysis.verdict is Verdict.INCONCLUSIVE
    assert analysis.confidence is Confidence.LOW
    assert any("no decisive pattern" in n for n in analysis.confidence_notes)


@pytest.mark.parametrize(
    ("dumps", "reason"),
    [
        ([], "no rank stacks"),
        # One process is judged on its own snapshots, never "no other rank to compare".
        ([_tp(0, scheduler_stack(*ALL_REDUCE, FORWARD))], "One snapshot of rank 0 (PID 100)"),
    ],
)
def test_inconclusive_reasons(dumps: list[ProcessDump], reason: str) -> None:
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.INCONCLUSIVE
    assert reason in analysis.summary


def test_missing_rank() -> None:
    stuck = scheduler_stack(*ALL_REDUCE, FORWARD)
    dumps = [_tp(r, stuck, snapshot=s) for s in range(2) for r in (0, 1, 3)]
    analysis = analyze(bundle(*dumps, world_size=4))
    assert analysis.verdict is Verdict.ALL_STUCK
    assert analysis.missing_ranks == (2,)
    assert analysis.confidence is Confidence.MEDIUM
    assert analysis.confidence_notes == (
        "rank 2 missing from the evidence (world size 4, from the manifest)",
    )
    assert "Rank 2 is missing from the evidence." in analysis.summary


def test_missing_rank_from_tp_size_argument() -> None:
    main = [*scheduler_stack(*ALL_REDUCE, FORWARD)]
    main[-6] = f"run_scheduler_process ({SCHED}:2500) [tp_size=4]"
    dumps = [_tp(r, main, snapshot=s) for s in range(2) for r in range(3)]
    analysis = analyze(bundle(*dumps))
    assert analysis.missing_ranks == (3,)


def test_failed_dump() -> None:
    stuck = scheduler_stack(*ALL_REDUCE, FORWARD)
    dumps = [_tp(r, stuck, snapshot=s) for s in range(2) for r in range(3)]
    analysis = analyze(
        bundle(
            *dumps,
            failures=[
                failure(pid=103, reason="Error: Failed to find python version", source="rank3.txt")
            ],
            world_size=4,
        )
    )
    assert analysis.missing_ranks == (3,)
    assert [f.failure.pid for f in analysis.failed] == [103]
    assert analysis.confidence is Confidence.LOW
    assert analysis.confidence_notes[1] == (
        "1 dump failed: PID 103 (rank 3) in rank3.txt:1: Error: Failed to find python version"
    )


def test_repeated_failures_of_one_rank_are_one_note() -> None:
    stuck = scheduler_stack(*ALL_REDUCE, FORWARD)
    dumps = [_tp(r, stuck, snapshot=s) for s in range(2) for r in range(3)]
    failures = [failure(pid=None, reason="Error: gone", source=f"s{s}/rank3.txt") for s in range(2)]
    analysis = analyze(bundle(*dumps, failures=failures))
    assert analysis.missing_ranks == (3,)
    assert analysis.confidence_notes[-1] == (
        "2 dumps failed: rank 3 in 2 files (s0/rank3.txt:1, s1/rank3.txt:1): Error: gone"
    )


def test_pid_fallback_still_finds_desync() -> None:
    dumps = [
        dump(pid=501, main=scheduler_stack(*ALL_REDUCE, FORWARD), source="a.txt"),
        dump(pid=502, main=scheduler_stack(*ALL_REDUCE, FORWARD), source="b.txt"),
        dump(pid=503, main=scheduler_stack(ZMQ, RECV), source="c.txt"),
    ]
    analysis = analyze(bundle(*dumps))
    assert analysis.rank_unit == "pid"
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert [c.ranks for c in analysis.classes] == [(501, 502), (503,)]
    assert analysis.laggards == (503,)
    assert analysis.missing_ranks == ()
    assert any("PIDs stand in for ranks" in n for n in analysis.confidence_notes)
    # Two PIDs are two processes, listed, never a range ("every PID between").
    assert "PIDs 501, 502 are in all_reduce" in analysis.summary


def test_desync_is_checked_per_group() -> None:
    agree = scheduler_stack(*ALL_REDUCE, FORWARD)
    split = scheduler_stack(ZMQ, RECV)
    stacks = {(0, 0): agree, (0, 1): agree, (1, 0): agree, (1, 1): split}
    dumps = [
        dump(pid=100 + 2 * dp + tp, title=f"sglang::scheduler_DP{dp}_TP{tp}", main=stacks[(dp, tp)])
        for dp, tp in stacks
    ]
    analysis = analyze(bundle(*dumps))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert analysis.laggards == (3,)
    assert analysis.branch_point is not None
    assert [b.label for b in analysis.branch_point.branches] == ["[0-2]", "[3]"]
    assert analysis.summary.startswith("Collective desync in group DP1: ")


def test_two_ranks_in_two_collectives_have_no_laggard() -> None:
    a = scheduler_stack(*ALL_REDUCE, FORWARD)
    b = scheduler_stack(*BROADCAST, RECV)
    analysis = analyze(bundle(_tp(0, a), _tp(1, b)))
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert analysis.laggards == ()
    assert analysis.summary.startswith("Collective desync: rank 0 is in all_reduce")


def test_manifest_groups_split_the_check() -> None:
    # Each group agrees with itself: no desync, even though the groups differ.
    a = scheduler_stack(*ALL_REDUCE, FORWARD)
    b = scheduler_stack(ZMQ, RECV)
    dumps = [dump(pid=10 + r, main=a if r < 2 else b, source=f"rank{r}.txt") for r in range(4)]
    hints = [(f"rank{r}.txt", RankHint(rank=r, group="g0" if r < 2 else "g1")) for r in range(4)]
    analysis = analyze(bundle(*dumps, rank_hints=hints))
    assert analysis.verdict is Verdict.INCONCLUSIVE


def test_others_and_warnings_are_kept() -> None:
    dumps = [
        dump(
            pid=1,
            title="python -m sglang.launch_server --tp 2",
            main=["serve (launch_server.py:11)"],
        ),
        _tp(0, scheduler_stack(ZMQ, RECV)),
        _tp(1, scheduler_stack(ZMQ, RECV)),
        dump(pid=9, title="python stray.py", main=["main (stray.py:1)"]),
    ]
    analysis = analyze(bundle(*dumps))
    assert [p.identity.role for p in analysis.others] == ["launcher", None]
    assert analysis.warnings == (
        "PID 9 (python stray.py): no rank identity; left out of the rank analysis",
    )
    assert any("without a rank identity" in n for n in analysis.confidence_notes)


def test_dump_without_frames_is_neutral() -> None:
    empty = ProcessDump(
        pid=105,
        kind=EvidenceKind.PYSPY_JSON,
        cmdline="sglang::scheduler_TP1",
        source=Location(path="x.json"),
    )
    analysis = analyze(bundle(_tp(0, scheduler_stack(*ALL_REDUCE, FORWARD)), empty))
    assert analysis.verdict is Verdict.INCONCLUSIVE
    assert "rank 1 is without any stack frames" in analysis.summary
