"""`/proc/PID/status` copies (kind `proc-status`) and py-spy's suspend failures.

Real copies come from `fixtures/bundles/stopped_rank/` (a rank frozen by a real SIGSTOP);
the state-D copy is synthetic, made here from a real one by changing its State line:
uninterruptible sleep cannot be produced on demand in this environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.evidence import procstatus
from reporter.evidence.pyspy import classify_failure
from reporter.evidence.sniff import sniff
from reporter.load.bundle import load
from reporter.model import EvidenceKind, FailureState

STOPPED = Path(__file__).resolve().parents[2] / "fixtures" / "bundles" / "stopped_rank"


def _real(rank: int) -> str:
    return (STOPPED / "pyspy" / "status" / f"rank{rank}.status").read_text(encoding="utf-8")


def test_real_copies_are_sniffed_and_read() -> None:
    stopped = _real(2)
    assert sniff(stopped) is EvidenceKind.PROC_STATUS
    (state,) = procstatus.parse(stopped, source="rank2.status").proc_states
    assert (state.state, state.state_text, state.tracer_pid) == ("T", "stopped", 0)
    assert state.name.startswith("sglang::")
    assert state.source.line == stopped.splitlines().index("State:\tT (stopped)") + 1
    pid_line = next(line for line in stopped.splitlines() if line.startswith("Pid:"))
    assert state.pid == int(pid_line.split()[1])
    (running,) = procstatus.parse(_real(0), source="rank0.status").proc_states
    assert running.state == "S" and running.wchan == ""


def test_collect_copies_carry_the_wchan() -> None:
    folder = STOPPED / "collect" / "proc"
    copies = sorted(folder.glob("*.status"))
    assert copies, "report collect saved no status copy"
    states = [procstatus.parse(p.read_text(encoding="utf-8"), source=p.name) for p in copies]
    stopped = [s for r in states for s in r.proc_states if s.state == "T"]
    assert stopped and all(s.wchan == "do_signal_stop" for s in stopped)
    assert all(not r.warnings for r in states)


def test_several_copies_in_one_file_and_a_synthetic_state_d() -> None:
    uninterruptible = _real(1).replace("State:\tS (sleeping)", "State:\tD (disk sleep)")
    text = _real(0) + uninterruptible + "Wchan:\tnfs_wait_bit_killable\n"
    result = procstatus.parse(text, source="ps.txt")
    assert [s.state for s in result.proc_states] == ["S", "D"]
    assert result.proc_states[1].wchan == "nfs_wait_bit_killable"
    assert result.proc_states[1].state_text == "disk sleep"


def test_copy_without_state_is_skipped_with_a_warning() -> None:
    result = procstatus.parse("Name:\tpython3\nPid:\t12\n", source="x.status")
    assert result.proc_states == ()
    assert [str(w) for w in result.warnings] == [
        "x.status:1: status copy without a State: line; skipped"
    ]


@pytest.mark.parametrize(
    "head",
    [
        "State:\tT (stopped)\nName:\tpython\nPid:\t3\n",  # does not start with Name
        "Name: a\nUmask: 0022\n",  # no State or Pid
        "Name=python3\nState=T\nPid=4\n",  # systemctl-like, not /proc
    ],
)
def test_other_texts_are_not_status_copies(head: str) -> None:
    assert not procstatus.looks_like(head)


def test_a_loose_status_file_loads_as_evidence(tmp_path: Path) -> None:
    path = tmp_path / "status"
    path.write_text(_real(2), encoding="utf-8")
    bundle = load([path])
    assert [f.kind for f in bundle.files] == [EvidenceKind.PROC_STATUS]
    assert [s.state for s in bundle.proc_states] == ["T"]


def test_suspend_failures() -> None:
    """Only a failure that names the stop signal says the process was stopped."""
    real = (STOPPED / "pyspy" / "snapshots" / "rank2_s0.txt").read_text(encoding="utf-8")
    assert "Failed to suspend process" in real
    assert classify_failure(real) is FailureState.STOPPED
    # Without the stop signal the same words say nothing about the process's state.
    assert classify_failure(real.replace("SIGSTOP", "SIGTRAP")) is FailureState.ERROR
    # py-spy #83: an old kernel refused the suspension.
    refused = "Failed to suspend process\nReason: EPERM: Operation not permitted"
    assert classify_failure(refused) is FailureState.REFUSED
    # A stopped process that exited meanwhile is gone.
    gone = real + "\nNo such process (os error 3)"
    assert classify_failure(gone) is FailureState.GONE
    for signal in ("SIGTSTP", "SIGTTIN", "SIGTTOU"):
        assert classify_failure(real.replace("SIGSTOP", signal)) is FailureState.STOPPED
