"""The entry of `/proc/PID/status` copies (kind `proc-status`); the parser (and its
`looks_like`) is `reporter.evidence.procstatus`.

Sniffed by its `Name:`, `State:` and `Pid:` keys among the distinctive headers. Its
records merge in capture order (the last copy of a process is its latest). `report
collect` copies it for every target after every snapshot round (`procread.read_round`'s
`status`, with `/proc/PID/wchan` as its last line) and files it as
`proc/pidN-sK.status`; the manifest names the process's state, and a process gone says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from reporter.evidence import procstatus
from reporter.evidence.kinds.interface import (
    FieldMerge,
    KindEntry,
    RoundRead,
    SniffStep,
    in_round,
    sniffed,
)
from reporter.model import EvidenceKind


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusRead(RoundRead):
    """The status copy's capture: the manifest says the state it shows."""

    def missing(self, pid: int, k: int, on: str) -> tuple[str, str]:
        return f"/proc/{pid}/status{on} after snapshot {k + 1}", self.why_missing

    def described(self, text: str, *, pid: int, k: int, on: str, title: str) -> str:
        state = next(
            (
                line.split(":", 1)[1].strip()
                for line in text.splitlines()
                if line.startswith("State:")
            ),
            "?",
        )
        return (
            f"/proc/{pid}/status{on} after snapshot {k + 1} ({title}): State {state}; the "
            f"last line is /proc/{pid}/wchan when the process sleeps"
        )


ENTRY = KindEntry(
    kind=EvidenceKind.PROC_STATUS,
    parse=lambda text, read: procstatus.parse(text, source=read.source),
    sniffs=(sniffed(EvidenceKind.PROC_STATUS, SniffStep.DISTINCTIVE, procstatus.looks_like),),
    merges=(FieldMerge("proc_states", stamp=in_round, capture_order=True),),
    capture=StatusRead(
        name="status",
        says="the status and wchan (/proc/{pid}/status)",
        why_missing="the process is gone",
    ),
)
