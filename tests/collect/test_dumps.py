"""py-spy calls and what is saved for them; failed dumps read back as failures of their PID."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.collect.dumps import DumpResult, DumpStatus, evidence_text, outcome, pyspy_argv
from reporter.collect.runner import Finished
from reporter.evidence import pyspy, sniff
from reporter.model import EvidenceKind

AT = datetime(2026, 11, 29, 14, 43, 41, tzinfo=UTC)


def test_argv() -> None:
    assert pyspy_argv("py-spy", 7, blocking=False, with_locals=False) == (
        "py-spy",
        "dump",
        "--pid",
        "7",
        "--nonblocking",
    )
    assert pyspy_argv("/x/py-spy", 7, blocking=True, with_locals=True) == (
        "/x/py-spy",
        "dump",
        "--pid",
        "7",
        "--locals",
    )


@pytest.mark.parametrize(
    ("finished", "status", "reason"),
    [
        (
            Finished(argv=(), returncode=0, stdout='Thread 1 (idle): "MainThread"\n'),
            DumpStatus.OK,
            "",
        ),
        (
            Finished(argv=(), returncode=0, stdout="Process 1: x\n"),
            DumpStatus.FAILED,
            "printed no thread",
        ),
        (
            Finished(
                argv=(),
                returncode=1,
                stderr="\nError: Failed to find python version from target process\n",
            ),
            DumpStatus.FAILED,
            "Error: Failed to find python version from target process",
        ),
        (Finished(argv=(), returncode=None, timed_out=True), DumpStatus.TIMED_OUT, "within 10 s"),
        (Finished(argv=(), returncode=None, stopped=True), DumpStatus.INTERRUPTED, "interrupted"),
        (
            Finished(argv=(), returncode=None, launch_error="cannot run py-spy: No such file"),
            DumpStatus.NOT_RUN,
            "cannot run",
        ),
        (Finished(argv=(), returncode=101, stderr=""), DumpStatus.FAILED, "exited with status 101"),
    ],
)
def test_outcome(finished: Finished, status: DumpStatus, reason: str) -> None:
    got_status, got_reason = outcome(finished, timeout=10)
    assert got_status is status
    assert reason in got_reason
    assert (got_reason == "") is (status is DumpStatus.OK)


def _result(
    status: DumpStatus, *, stdout: str = "", stderr: str = "", rc: int | None = 1, reason: str = ""
) -> DumpResult:
    return DumpResult(
        pid=4711,
        snapshot=0,
        started_at=AT,
        seconds=0.1,
        status=status,
        returncode=rc,
        stdout=stdout,
        stderr=stderr,
        reason=reason,
    )


@pytest.mark.parametrize(
    "sample",
    ["pyspy-0.4.3_error_no-such-pid.txt", "pyspy-0.4.3_error_not-a-python-process.txt"],
)
def test_failed_dump_reads_back_as_a_failure_of_its_pid(pyspy_samples: Path, sample: str) -> None:
    stderr = (pyspy_samples / sample).read_text(encoding="utf-8")
    text = evidence_text(_result(DumpStatus.FAILED, stderr=stderr))
    assert text.startswith("Pyspy dump PID 4711: rc=1 timeout=False truncated=False\n")
    assert sniff.sniff(text) is EvidenceKind.PYSPY_TEXT
    parsed = pyspy.parse_text(text, source="pyspy/pid4711-s0.txt")
    assert [f.pid for f in parsed.failures] == [4711]
    assert parsed.failures[0].reason == stderr.splitlines()[0].removeprefix("Error: ")
    assert parsed.dumps == () and parsed.warnings == ()


def test_permission_and_timeout_texts() -> None:
    denied = "Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'\n"
    parsed = pyspy.parse_text(evidence_text(_result(DumpStatus.FAILED, stderr=denied)), source="f")
    assert parsed.failures[0].pid == 4711 and parsed.failures[0].reason.startswith(
        "Permission Denied"
    )
    timed = _result(
        DumpStatus.TIMED_OUT, rc=None, reason="py-spy gave no answer within 10 s and was stopped"
    )
    text = evidence_text(timed)
    assert text == (
        "Pyspy dump PID 4711: rc=None timeout=True truncated=False\n"
        "Error: report collect: py-spy gave no answer within 10 s and was stopped\n"
    )
    assert pyspy.parse_text(text, source="f").failures[0].pid == 4711


def test_ok_dump_is_saved_as_printed(pyspy_samples: Path) -> None:
    out = (pyspy_samples / "pyspy-0.4.3_multithread_nonblocking.txt").read_text(encoding="utf-8")
    assert evidence_text(_result(DumpStatus.OK, stdout=out, rc=0)) == out
