"""Failed dumps: py-spy's own error text, and the one reading of what it says.

`classify_failure` is the project's single answer to "what does this failure say about
the process" (`FailureState`): the text parser stamps it on every `FailedDump` it makes,
and analysis asks `failure_state` for dumps whose parser left the default. Also the
error block the text parser collects (`Error: ...`, a Rust panic, `Permission Denied`,
`Caused by:` lines) and SGLang's watchdog lines (docs/formats.md 4.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from reporter.evidence._text import stamp_and_label
from reporter.evidence.pyspy.blocks import NONE, THREAD
from reporter.evidence.pyspy.grammar import structural
from reporter.model import FailedDump, FailureState, Location

# SGLang's watchdog: `Pyspy failed (py-spy dump --native --pid 82). Error: Error: ...`, the
# older `Pyspy failed to dump PID 171. Error: ...`, and the closing summary line.
_FAILED_RE = re.compile(
    r"Pyspy failed (?:\([^()\n]{0,200}?--pid (\d{1,18})\)|to dump PID (\d{1,18}))\.? ?"
    r"(?:Error: ?)*(.*)\Z"
)
_ALL_FAILED_RE = re.compile(r"All pyspy dump attempts failed for PID (\d{1,18})")

# What the error text says, strongest first; markers are matched in the lowered text.
# A concrete cause (the OS error under `Caused by:`, a refusal, a timeout) outranks
# py-spy's own advice on top of it: "Failed to get process executable name. Check that
# the process is running." is printed whatever went wrong reading /proc/PID/exe, so it
# means "gone" only when no cause says otherwise. `(os error 2)` and not a bare "No
# such file or directory": SGLang's watchdog reports a missing py-spy binary with those
# words, and that process is alive. Plain substrings: the text may be megabytes of
# detail, and a case-blind regex search over it is slow.
_READINGS: tuple[tuple[FailureState, tuple[str, ...]], ...] = (
    (FailureState.GONE, ("(os error 2)", "(os error 3)", "no such process")),
    (
        FailureState.REFUSED,
        (
            "permission denied",
            "operation not permitted",
            "(os error 1)",
            "(os error 13)",
            "ptrace",
            "access is denied",
            "requires root",
        ),
    ),
    # `report collect` words its own deadline "py-spy gave no answer within 10 s".
    (FailureState.TIMEOUT, ("timed out", "timedout", "timeout", "time out", "gave no answer")),
    (
        FailureState.GONE,
        (
            "check that the process is running",
            "failed to get process executable name",
            "is not running",
            "process not found",
            "process exited",
            "process has exited",
        ),
    ),
)
# `process 4242 exited`, `process 4242 has exited`: the advice with a PID in it.
_EXITED_RE = re.compile(r"process \d{1,18} (?:has )?exited")
# A process already stopped (SIGSTOP, ^Z, a debugger) cannot be suspended by py-spy: its
# own ptrace stop meets the pending group stop ("Failed to suspend process ... unexpected
# waitpid result PtraceEvent(Pid(N), SIGSTOP, 128)"). Only a failure that names the stop
# signal says so: "Failed to suspend process" alone is also printed for permission and
# Windows wait errors. `PtraceEvent` is py-spy's word for the stop, not a ptrace refusal.
_STOP_SIGNALS = ("sigstop", "sigtstp", "sigttin", "sigttou")


def classify_failure(text: str) -> FailureState:
    """What py-spy's error text (reason and detail) says about the process.

    >>> classify_failure("Failed to get process executable name. No such file or directory (os error 2)")
    <FailureState.GONE: 'gone'>
    """
    lowered = text.lower()
    if (
        "unexpected waitpid result" in lowered
        and any(s in lowered for s in _STOP_SIGNALS)
        and not any(marker in lowered for marker in _READINGS[0][1])
    ):
        return FailureState.STOPPED
    lowered = lowered.replace("ptraceevent", "")
    for state, markers in _READINGS:
        if any(marker in lowered for marker in markers):
            return state
    return FailureState.GONE if _EXITED_RE.search(lowered) else FailureState.ERROR


def failure_state(failure: FailedDump) -> FailureState:
    """The state of a failed dump: the parser's, or read from its text when it left `error`.

    `error` is also the field's default, so a `FailedDump` made elsewhere (a test, a
    summary line) is read again from its reason and detail.
    """
    if failure.state is not FailureState.ERROR:
        return failure.state
    return classify_failure(f"{failure.reason}\n{failure.detail}")


@dataclass(slots=True, eq=False)
class ErrorBlock:
    """py-spy's own error text (`Error: ...`, a Rust panic, `Permission Denied`), while parsing."""

    pid: int | None
    line: int
    reason: str
    captured_at: datetime | None
    resume: int  # the parser state to go back to after the block
    panic: bool = False
    free_text: bool = False
    causes: bool = False
    detail: list[str] = field(default_factory=list)

    def takes(self, line: str) -> bool:
        """Add `line` when it continues the block; False when it does not."""
        if not line.strip():
            self.detail.append("")
            return True
        if line[0] == " ":
            frame_like = line.startswith("    ") and line[4:5] != " " and line.endswith(")")
            if self.causes or self.panic or not frame_like or self.resume != THREAD:
                self.detail.append(line)
                return True
        elif line.startswith(("Caused by:", "Reason: ", "Stack backtrace:", "stack backtrace:")):
            self.causes = True
            self.detail.append(line)
            return True
        elif (self.panic or self.free_text) and not structural(line):
            self.detail.append(line)
            return True
        return False

    def failed_dump(self, source: str) -> FailedDump:
        """The finished block as a classified `FailedDump`, blank lines around it trimmed."""
        detail = self.detail
        while detail and not detail[-1].strip():
            detail.pop()
        while detail and not detail[0].strip():
            detail.pop(0)
        text = "\n".join(detail)
        return FailedDump(
            pid=self.pid,
            reason=self.reason,
            detail=text,
            captured_at=self.captured_at,
            state=classify_failure(self.reason + "\n" + text),
            source=Location(path=source, line=self.line),
        )


def watchdog_failure(raw: str, number: int, source: str) -> ErrorBlock | FailedDump | None:
    """SGLang's `Pyspy failed (... --pid N)` / `All pyspy dump attempts failed for PID N`.

    The first opens an error block (its `Caused by:` lines follow); the summary is a
    failure by itself. Either belongs to the PID the line names, never to the dump
    before it. None when the line is neither.
    """
    failed = _FAILED_RE.search(raw)
    if failed is not None:
        return ErrorBlock(
            pid=int(failed.group(1) or failed.group(2)),
            line=number,
            reason=failed.group(3).strip() or "py-spy failed",
            captured_at=stamp_and_label(raw[: failed.start()])[0],
            resume=NONE,
        )
    summary = _ALL_FAILED_RE.search(raw)
    if summary is None:
        return None
    return FailedDump(
        pid=int(summary.group(1)),
        reason="all py-spy dump attempts failed",
        captured_at=stamp_and_label(raw[: summary.start()])[0],
        source=Location(path=source, line=number),
    )
