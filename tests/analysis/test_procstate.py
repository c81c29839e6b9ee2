"""Process state as evidence: a stopped, uninterruptible or unresponsive rank is waited for.

Real captures: `fixtures/bundles/stopped_rank/` (rank 2 frozen by a real SIGSTOP; `pyspy/`
holds blocking dumps, a --nonblocking dump and `cat /proc/PID/status` of each rank,
`collect/` is `report collect --blocking`). Edge cases are built here: state D (which this
environment cannot produce on demand), a status copy that disagrees with moving stacks,
py-spy timeouts alone, and a job of two ranks.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.analysis import RankState, Verdict, analyze, to_json
from reporter.app.report import render_draft
from reporter.load.bundle import load
from reporter.model import FailureState, Location, ProcessDump, ProcState

from .builders import ALL_REDUCE, bundle, dump, failure, scheduler_stack

STOPPED = Path(__file__).resolve().parents[2] / "fixtures" / "bundles" / "stopped_rank"
COMPUTE = "Scheduler.prepare_for_extend (sglang/srt/managers/scheduler.py:700)"
FORWARD = "Scheduler.forward_batch (sglang/srt/managers/scheduler.py:1400)"
SUSPEND = (
    "Error: Failed to get stack traces\n\nCaused by:\n    0: Failed to suspend process\n"
    "    1: unexpected waitpid result PtraceEvent(Pid(102), SIGSTOP, 128) to 102"
)


def _edges(analysis: object) -> list[tuple[list[int], list[int], str, list[int]]]:
    data = to_json(analysis)  # type: ignore[arg-type]
    return [
        (e["waiting"]["ranks"], e["for"]["ranks"], e["for"]["state"], e["for"]["pids"])
        for e in data["waits_for"]
    ]


@pytest.mark.parametrize("folder", ["pyspy", "collect"])
def test_real_sigstop_rank_is_waited_for(folder: str) -> None:
    analysis = analyze(load([STOPPED / folder]))
    states = {p.identity.rank: p.state for p in analysis.processes}
    assert states == {
        0: RankState.STUCK,
        1: RankState.STUCK,
        2: RankState.STOPPED,
        3: RankState.STUCK,
    }
    assert analysis.verdict is Verdict.ALL_STUCK
    ((waiting, waited, state, pids),) = _edges(analysis)
    stopped = next(p for p in analysis.processes if p.identity.rank == 2)
    assert (waiting, waited, state, pids) == ([0, 1, 3], [2], "stopped", [stopped.identity.pid])
    assert 2 in analysis.laggards and analysis.missing_ranks == ()
    cond = stopped.condition
    assert cond is not None and "State T (stopped)" in cond.why
    assert "py-spy could not suspend it" in cond.why
    assert cond.at.startswith("build_prefix_mask (stopped_rank.py:")
    assert all(f.state == "stopped" for f in analysis.failed)
    assert "moving" not in analysis.summary and "gone" not in analysis.summary


def test_collect_records_the_wchan_and_a_nonblocking_dump() -> None:
    analysis = analyze(load([STOPPED / "collect"]))
    stopped = next(p for p in analysis.processes if p.identity.rank == 2)
    assert stopped.condition is not None and stopped.condition.wchan == "do_signal_stop"
    sources = {d.source.path for d in stopped.snapshots if d.threads}
    assert sources and all(path.endswith("-nonblocking.txt") for path in sources)


def test_blocking_dumps_alone_still_name_the_stopped_rank() -> None:
    """Without the status copies and the --nonblocking dump: py-spy's failures say it."""
    snapshots = sorted((STOPPED / "pyspy" / "snapshots").glob("*.txt"))
    analysis = analyze(load(snapshots))
    stopped = next(p for p in analysis.processes if p.identity.rank == 2)
    assert stopped.state is RankState.STOPPED
    assert stopped.condition is not None and stopped.condition.at == ""
    assert "py-spy dump --nonblocking" in stopped.condition.why
    assert [e[1:3] for e in _edges(analysis)] == [([2], "stopped")]


def _job(*, rank2: list[str], snapshots: int = 2) -> list[ProcessDump]:
    out: list[ProcessDump] = []
    for k in range(snapshots):
        for rank in range(4):
            main = rank2 if rank == 2 else scheduler_stack(*ALL_REDUCE, FORWARD)
            out.append(
                dump(
                    pid=100 + rank,
                    title=f"sglang::scheduler_TP{rank}",
                    main=main,
                    source=f"s{k}.txt",
                )
            )
    return out


def _status(pid: int, state: str, *, wchan: str = "") -> ProcState:
    return ProcState(pid=pid, state=state, wchan=wchan, source=Location(path="status", line=3))


def test_state_d_is_uninterruptible() -> None:
    frozen = _job(rank2=scheduler_stack(COMPUTE))
    analysis = analyze(
        replace(bundle(*frozen), proc_states=(_status(102, "D", wchan="nfs_wait_bit_killable"),))
    )
    rank2 = next(p for p in analysis.processes if p.identity.rank == 2)
    assert rank2.state is RankState.UNINTERRUPTIBLE
    assert "sleeping in nfs_wait_bit_killable" in (rank2.condition.why if rank2.condition else "")
    assert [e[1:3] for e in _edges(analysis)] == [([2], "uninterruptible")]


def test_state_d_of_a_moving_rank_is_ignored() -> None:
    """A process in D for a moment (disk I/O) whose stacks move is not frozen."""
    moving = [
        dump(pid=102, title="sglang::scheduler_TP2", main=scheduler_stack(COMPUTE), source="a.txt"),
        dump(pid=102, title="sglang::scheduler_TP2", main=scheduler_stack(FORWARD), source="b.txt"),
    ]
    analysis = analyze(replace(bundle(*moving), proc_states=(_status(102, "D"),)))
    assert analysis.processes[0].state is RankState.MOVING
    assert analysis.processes[0].condition is None


def test_stopped_status_with_moving_stacks_is_not_stopped() -> None:
    moving = [
        dump(pid=102, title="sglang::scheduler_TP2", main=scheduler_stack(COMPUTE), source="a.txt"),
        dump(pid=102, title="sglang::scheduler_TP2", main=scheduler_stack(FORWARD), source="b.txt"),
    ]
    analysis = analyze(replace(bundle(*moving), proc_states=(_status(102, "T"),)))
    assert analysis.processes[0].state is RankState.MOVING


def test_timeouts_alone_are_unresponsive() -> None:
    live = [d for d in _job(rank2=[]) if d.pid != 102]
    timed_out = [
        failure(
            pid=102, reason="py-spy gave no answer within 10 s and was stopped", source=f"t{k}.txt"
        )
        for k in range(2)
    ]
    header = dump(pid=102, title="sglang::scheduler_TP2", main=[], source="t0.txt")
    analysis = analyze(bundle(*live, header, failures=timed_out))
    rank2 = next(p for p in analysis.processes if p.identity.rank == 2)
    assert rank2.state is RankState.UNRESPONSIVE
    assert rank2.condition is not None and "State D or T" in rank2.condition.why
    assert [e[1:3] for e in _edges(analysis)] == [([2], "unresponsive")]


def test_two_ranks_one_stopped_is_all_stuck() -> None:
    """With one rank left to compare, a wait for a stopped rank is still a hang."""
    dumps = []
    for k in range(2):
        dumps.append(
            dump(
                pid=100,
                title="sglang::scheduler_TP0",
                main=scheduler_stack(*ALL_REDUCE, FORWARD),
                source=f"s{k}.txt",
            )
        )
        dumps.append(
            dump(
                pid=101,
                title="sglang::scheduler_TP1",
                main=scheduler_stack(COMPUTE),
                source=f"s{k}.txt",
            )
        )
    analysis = analyze(replace(bundle(*dumps), proc_states=(_status(101, "t"),)))
    assert analysis.verdict is Verdict.ALL_STUCK
    assert [e[1:3] for e in _edges(analysis)] == [([1], "stopped")]


def test_a_stopped_rank_without_any_stack() -> None:
    """Every dump of rank 3 failed with the stop signal: it is stopped, not missing."""
    dumps = [
        dump(
            pid=100 + r,
            title=f"sglang::scheduler_TP{r}",
            main=scheduler_stack(*ALL_REDUCE, FORWARD),
            source=f"s{k}.txt",
        )
        for k in range(2)
        for r in range(3)
    ]
    failures = [failure(pid=103, reason=SUSPEND.replace("102", "103"), source="rank3.txt")]
    analysis = analyze(
        replace(
            bundle(*dumps, failures=failures, world_size=4),
            failures=tuple(replace(f, state=FailureState.STOPPED) for f in failures),
        )
    )
    assert analysis.verdict is Verdict.ALL_STUCK
    assert [e[1:3] for e in _edges(analysis)] == [([3], "stopped")]


def test_first_screen_names_the_stopped_rank() -> None:
    bundle_ = load([STOPPED / "collect"])
    text = render_draft(bundle_, analyze(bundle_), now=datetime(2026, 12, 1, tzinfo=UTC))
    summary = text.split("## Summary", 1)[1]
    # The manifest written by `report collect` names the report, so the first line of the
    # block (What) is where the stopped rank must be named.
    what = next(line for line in summary.splitlines() if line.startswith("- **What:**"))
    assert "waiting for rank 2 (PID 31944) which is stopped in build_prefix_mask" in what
    assert "3 ranks stuck in all_reduce across 3 snapshots, waiting for rank 2" in summary
    assert "Find out who stopped rank 2" in summary
