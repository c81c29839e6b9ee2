"""py-spy dumps of live processes: the command, one bounded run, and what to save.

`pyspy_argv` builds the call (non-blocking unless asked: the target keeps running
while py-spy reads it); `take_dump` runs it under a timeout (a stuck py-spy is
killed, never the target); `outcome` classifies the result; `evidence_text`
gives the file to save. A failed dump is saved as py-spy's error text after a
header naming the PID, the form SGLang itself logs (formats.md 4.5), so the
bundle loader turns it into a failed dump of that PID::

    Pyspy dump PID 4711: rc=1 timeout=False truncated=False
    Permission Denied: Try running again with elevated permissions by going 'sudo env "PATH=$PATH" !!'
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from reporter.collect.ptrace import is_permission_error
from reporter.collect.runner import DEFAULT_MAX_OUTPUT, Finished, helper_env, run_bounded
from reporter.core.fileio import human_size
from reporter.evidence.pyspy.failures import classify_failure
from reporter.model import FailureState

# Errors that come from reading a running process mid-change (--nonblocking); worth one retry.
_TRANSIENT = ("Failed to get stack traces", "Failed to copy", "Failed to find a python interpreter")
TRANSIENT = _TRANSIENT  # also sent to the remote probe (`remote.probe_options`)


class DumpStatus(StrEnum):
    """How one dump attempt ended."""

    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed-out"
    INTERRUPTED = "interrupted"
    NOT_RUN = "not-run"


@dataclass(frozen=True, slots=True, kw_only=True)
class DumpResult:
    """One py-spy run against one process for one snapshot."""

    pid: int
    snapshot: int
    started_at: datetime
    seconds: float
    status: DumpStatus
    returncode: int | None
    stdout: str
    stderr: str
    reason: str = ""
    """First line of the error (empty on success)."""
    permission: bool = False
    """py-spy was refused access to the process (ptrace rules)."""
    attempts: int = 1
    flooded: bool = False
    """py-spy printed more than the output cap and was stopped (its first part is kept)."""


def pyspy_argv(pyspy: str, pid: int, *, blocking: bool, with_locals: bool) -> tuple[str, ...]:
    """`py-spy dump --pid PID [--nonblocking] [--locals]`."""
    argv = [pyspy, "dump", "--pid", str(pid)]
    if not blocking:
        argv.append("--nonblocking")
    if with_locals:
        argv.append("--locals")
    return tuple(argv)


def first_error_line(stderr: str) -> str:
    """py-spy's first non-blank stderr line (`Error: ...`, `Permission Denied: ...`)."""
    return next((line.strip() for line in stderr.splitlines() if line.strip()), "")


def outcome(done: Finished, *, timeout: float) -> tuple[DumpStatus, str]:
    """The status of a finished run and, unless it succeeded, the reason in one line."""
    if done.launch_error:
        return DumpStatus.NOT_RUN, done.launch_error
    if done.stopped:
        return DumpStatus.INTERRUPTED, "interrupted by the user before py-spy finished"
    if done.timed_out:
        return DumpStatus.TIMED_OUT, f"py-spy gave no answer within {timeout:g} s and was stopped"
    if done.flooded:
        return DumpStatus.FAILED, (
            f"py-spy printed more than {human_size(done.flooded)} and was stopped "
            "(the first part is kept; raise the cap with --max-size)"
        )
    if done.returncode != 0:
        line = first_error_line(done.stderr) or f"py-spy exited with status {done.returncode}"
        return DumpStatus.FAILED, line
    if "Thread " not in done.stdout:
        return DumpStatus.FAILED, "py-spy printed no thread (the process may have exited)"
    return DumpStatus.OK, ""


def take_dump(
    argv: tuple[str, ...],
    *,
    pid: int,
    snapshot: int,
    timeout: float,
    stop: threading.Event | None,
    retry_transient: bool,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> DumpResult:
    """Run one py-spy dump; one retry when a non-blocking read raced the target."""
    started_at = datetime.now(tz=UTC)
    began = time.monotonic()
    # A Rust backtrace appended to py-spy's error text is not what an operator pastes.
    env = helper_env(drop=("RUST_BACKTRACE", "RUST_LIB_BACKTRACE"))
    attempts = 0
    while True:
        attempts += 1
        done = run_bounded(argv, timeout=timeout, stop=stop, env=env, max_output=max_output)
        status, reason = outcome(done, timeout=timeout)
        transient = status is DumpStatus.FAILED and any(t in done.stderr for t in _TRANSIENT)
        if not (retry_transient and transient and attempts == 1) or (stop and stop.is_set()):
            break
    return DumpResult(
        pid=pid,
        snapshot=snapshot,
        started_at=started_at,
        seconds=time.monotonic() - began,
        status=status,
        returncode=done.returncode,
        stdout=done.stdout,
        stderr=done.stderr,
        reason=reason,
        permission=status is DumpStatus.FAILED and is_permission_error(done.stderr),
        attempts=attempts,
        flooded=bool(done.flooded),
    )


def wants_nonblocking(result: DumpResult) -> bool:
    """True when a failed blocking dump should be followed by a `--nonblocking` one: py-spy
    could not suspend the process (it is already stopped) or gave no answer in time (a
    process in uninterruptible sleep cannot be suspended either). A non-blocking read
    needs no suspension, so it still shows where the process is."""
    if result.status not in (DumpStatus.FAILED, DumpStatus.TIMED_OUT) or result.permission:
        return False
    if result.status is DumpStatus.TIMED_OUT:
        return True
    state = classify_failure(f"{result.reason}\n{result.stderr}")
    return state in (FailureState.STOPPED, FailureState.TIMEOUT)


def evidence_text(result: DumpResult) -> str:
    """What to save for a dump: py-spy's output, or a PID header and py-spy's error text."""
    if result.status is DumpStatus.OK:
        return result.stdout
    timed_out = result.status is DumpStatus.TIMED_OUT
    header = (
        f"Pyspy dump PID {result.pid}: rc={result.returncode} timeout={timed_out} "
        f"truncated={(timed_out or result.flooded) and bool(result.stdout)}"
    )
    body = result.stdout
    error = result.stderr.rstrip("\n")
    if not error.strip():
        # py-spy said nothing (killed on timeout, or printed no thread): state why ourselves.
        error = f"Error: report collect: {result.reason}"
    parts = [header, body.rstrip("\n"), error] if body.strip() else [header, error]
    return "\n".join(parts) + "\n"
