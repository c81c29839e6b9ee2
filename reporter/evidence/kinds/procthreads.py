"""Per-thread kernel state of one process (kind `proc-threads`) into `ThreadState` records.

`report collect` writes one such file per target and round (`proc/pid4711-s0.threads`)
from `/proc/PID/task/TID/stat` and `wchan`::

    # report-proc: threads pid=4711 snapshot=0 at=2026-12-07T12:40:00.123456Z
    # tid	state	wchan	utime	stime	comm
    4711	S	do_wait	112	31	python3
    4713	S	pipe_write	4	1	worker

One tab-separated row per thread; `wchan` is empty for a running thread, `utime` and
`stime` are clock ticks. Rows that do not parse are skipped with a warning.
"""

from __future__ import annotations

from reporter.evidence import prochead
from reporter.evidence._text import excerpt, warning_at
from reporter.evidence.kinds.interface import round_read_entry
from reporter.model import EvidenceKind, Location, ParseResult, ThreadState

SNIFF = prochead.sniffer("threads")


def looks_like(head: str) -> bool:
    """True when `head` starts with the `threads` header."""
    return SNIFF.match(head) is not None


def parse(text: str, *, source: str) -> ParseResult:
    """Every thread row of `text`; never raises on malformed input."""
    head, rows, warnings = prochead.lines(text, source=source, kind="threads")
    if head is None:
        return ParseResult(warnings=tuple(warnings))
    states: list[ThreadState] = []
    for number, line in rows:
        parts = line.split("\t", 5)
        if len(parts) < 6 or not parts[0].isdigit() or len(parts[1]) != 1:
            warnings.append(warning_at(source, number, f"not a thread row: {excerpt(line)}"))
            continue
        states.append(
            ThreadState(
                pid=head.pid,
                tid=int(parts[0]),
                state=parts[1],
                wchan="" if parts[2] in ("", "0") else parts[2],
                utime=int(parts[3]) if parts[3].isdigit() else None,
                stime=int(parts[4]) if parts[4].isdigit() else None,
                comm=prochead.unescape(parts[5]),
                captured_at=head.at,
                snapshot=head.snapshot,
                source=Location(path=source, line=number),
            )
        )
    return ParseResult(thread_states=tuple(states), warnings=tuple(warnings))


ENTRY = round_read_entry(
    EvidenceKind.PROC_THREADS,
    name="threads",
    says="each thread's state and wchan (/proc/{pid}/task/*)",
    field="thread_states",
    parse=parse,
    looks_like=looks_like,
)
