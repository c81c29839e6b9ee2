"""The lines of a log that say a wait ended, timed out or a process died, as `LogEvent`s.

Read from every line of a log or journal (dated or not), whatever its prefix:

* timeouts: gloo's `Timed out waiting 20000ms for recv operation to complete`, NCCL's
  `[PG 0 Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5,
  OpType=ALLREDUCE, ..., Timeout(ms)=600000)`, the store's `Timed out after 300 seconds`;
* watchdog aborts: `... we are taking the entire process down`, `Watchdog thread
  terminated with exception`, `Heartbeat monitor timed out`;
* the OOM killer: `Out of memory: Killed process 4711 (python3) ...` (and the cgroup form);
* the kernel's hung-task warning: `INFO: task python3:4711 blocked for more than 120 seconds.`;
* signals: `DataLoader worker (pid 4711) is killed by signal: Killed.`, systemd's
  `Main process exited, code=killed, status=9/KILL`, torch elastic's `failed (exitcode:
  -9) local_rank: 0 (pid: 4711)`, `process 1 terminated with signal SIGKILL`;
* exits: `exited with code 1`, systemd's `code=exited, status=1/FAILURE`,
  `process 1 terminated with exit code 1`;
* torch elastic's `ChildFailedError` where the line gives no code.

A line without a time of its own (a traceback body, torch elastic's summary block) takes
the time of the nearest dated line above it; a file with no dated line gives undated
events. Pure: text in, records out.
"""

from __future__ import annotations

import re
import signal as signals
from datetime import datetime

from reporter.model import Location, LogEvent, LogEventKind

MAX_LOG_EVENTS = 500
MAX_TEXT = 300

# One cheap test per line before the patterns below.
_QUICK_RE = re.compile(
    r"timed out|timeout|watchdog|out of memory|killed|signal|exit|childfailederror|"
    r"process down|heartbeat|blocked for more than",
    re.IGNORECASE,
)
_GLOO_RE = re.compile(r"Timed out waiting (\d+)\s*ms")
_NCCL_RE = re.compile(
    r"Watchdog caught collective operation timeout(?:.*?Timeout\(ms\)=(\d+))?", re.IGNORECASE
)
_STORE_RE = re.compile(r"Timed out after (\d+) seconds", re.IGNORECASE)
_ABORT_RE = re.compile(
    r"taking the entire process down|Watchdog thread terminated|Heartbeat monitor timed out|"
    r"watchdog got stuck",
    re.IGNORECASE,
)
_HUNG_RE = re.compile(r"task \S+:(\d+) blocked for more than (\d+) seconds")
_OOM_RE = re.compile(
    r"(?:Out of memory|Memory cgroup out of memory): Kill(?:ed)? process (\d+) \(([^)]*)\)"
)
_KILLED_BY_RE = re.compile(
    r"(?:killed|terminated) by signal:?\s*(SIG[A-Z0-9]+|\d+|[A-Z][a-z]+(?: [a-z]+)*)"
)
_SYSTEMD_RE = re.compile(r"code=(killed|dumped|exited), status=(\d+)(?:/([A-Z0-9]+))?")
_ELASTIC_RE = re.compile(r"failed \(exitcode: (-?\d+)\)")
_SPAWN_SIGNAL_RE = re.compile(r"process (\d+) terminated with signal (SIG[A-Z0-9]+)")
_SPAWN_EXIT_RE = re.compile(r"process (\d+) terminated with exit code (-?\d+)")
_SIGNAL_PID_RE = re.compile(r"Signal (\d+) \((SIG[A-Z0-9]+)\) received by PID (\d+)")
_EXIT_RE = re.compile(r"exit(?:ed)? with (?:exit )?(?:code|status)[:= ]+(-?\d+)", re.IGNORECASE)
_CHILD_FAILED_RE = re.compile(r"ChildFailedError")
_PID_RE = re.compile(r"\(pid:? (\d+)\)|\bpid[=: ]+(\d+)|\bPID (\d+)", re.IGNORECASE)
_RANK_RE = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]|\bglobal_rank[=: ]+(\d+)|\brank[=: ]+(\d+)\b")
# strsignal(3) words as Python and the C library print them.
_SIGNAL_WORDS = {
    "killed": "SIGKILL",
    "terminated": "SIGTERM",
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "bus error": "SIGBUS",
    "interrupt": "SIGINT",
    "hangup": "SIGHUP",
    "illegal instruction": "SIGILL",
    "floating point exception": "SIGFPE",
}


def signal_name(value: str) -> str:
    """`9`, `KILL`, `SIGKILL` or `Killed` -> `SIGKILL`; "" when not a signal."""
    value = value.strip().rstrip(".")
    if value.isdigit():
        try:
            return signals.Signals(int(value)).name
        except ValueError:
            return ""
    if value.upper().startswith("SIG"):
        return value.upper()
    if value.isupper() and hasattr(signals, f"SIG{value}"):
        return f"SIG{value}"
    return _SIGNAL_WORDS.get(value.lower(), "")


def _first(pattern: re.Pattern[str], line: str) -> int | None:
    match = pattern.search(line)
    if match is None:
        return None
    return int(next(g for g in match.groups() if g is not None))


def _event(
    kind: LogEventKind,
    line: str,
    *,
    at: datetime | None,
    source: Location,
    pid: int | None = None,
    rank: int | None = None,
    signal: str = "",
    exit_code: int | None = None,
    timeout_ms: int | None = None,
) -> LogEvent:
    text = " ".join(line.split())
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT - 1] + "…"
    return LogEvent(
        kind=kind,
        at=at,
        text=text,
        pid=pid if pid is not None else _first(_PID_RE, line),
        rank=rank if rank is not None else _first(_RANK_RE, line),
        signal=signal,
        exit_code=exit_code,
        timeout_ms=timeout_ms,
        source=source,
    )


def read_line(line: str, *, at: datetime | None, source: Location) -> LogEvent | None:
    """The event one line tells, or None for an ordinary line."""
    if not _QUICK_RE.search(line):
        return None
    if match := _OOM_RE.search(line):
        return _event(
            LogEventKind.OOM_KILL,
            line,
            at=at,
            source=source,
            pid=int(match.group(1)),
            signal="SIGKILL",
        )
    if match := _HUNG_RE.search(line):
        return _event(
            LogEventKind.HUNG_TASK,
            line,
            at=at,
            source=source,
            pid=int(match.group(1)),
            timeout_ms=int(match.group(2)) * 1000,
        )
    if match := _NCCL_RE.search(line):
        limit = int(match.group(1)) if match.group(1) else None
        return _event(LogEventKind.TIMEOUT, line, at=at, source=source, timeout_ms=limit)
    if match := _GLOO_RE.search(line):
        return _event(
            LogEventKind.TIMEOUT, line, at=at, source=source, timeout_ms=int(match.group(1))
        )
    if _ABORT_RE.search(line):
        return _event(LogEventKind.WATCHDOG_ABORT, line, at=at, source=source)
    if match := _STORE_RE.search(line):
        seconds = int(match.group(1))
        return _event(LogEventKind.TIMEOUT, line, at=at, source=source, timeout_ms=seconds * 1000)
    if match := _SIGNAL_PID_RE.search(line):
        return _event(
            LogEventKind.SIGNAL,
            line,
            at=at,
            source=source,
            pid=int(match.group(3)),
            signal=match.group(2),
        )
    if match := _ELASTIC_RE.search(line):
        code = int(match.group(1))
        name = signal_name(str(-code)) if code < 0 else ""
        kind = LogEventKind.SIGNAL if name else LogEventKind.EXIT
        return _event(kind, line, at=at, source=source, signal=name, exit_code=code)
    if match := _SPAWN_SIGNAL_RE.search(line):
        return _event(
            LogEventKind.SIGNAL,
            line,
            at=at,
            source=source,
            rank=int(match.group(1)),
            signal=match.group(2),
        )
    if match := _SPAWN_EXIT_RE.search(line):
        return _event(
            LogEventKind.EXIT,
            line,
            at=at,
            source=source,
            rank=int(match.group(1)),
            exit_code=int(match.group(2)),
        )
    if match := _SYSTEMD_RE.search(line):
        how, status, word = match.groups()
        if how == "exited":
            return _event(LogEventKind.EXIT, line, at=at, source=source, exit_code=int(status))
        name = signal_name(word or status)
        return _event(LogEventKind.SIGNAL, line, at=at, source=source, signal=name)
    if match := _KILLED_BY_RE.search(line):
        return _event(
            LogEventKind.SIGNAL, line, at=at, source=source, signal=signal_name(match.group(1))
        )
    if match := _EXIT_RE.search(line):
        return _event(LogEventKind.EXIT, line, at=at, source=source, exit_code=int(match.group(1)))
    if _CHILD_FAILED_RE.search(line):
        return _event(LogEventKind.ELASTIC, line, at=at, source=source)
    return None
