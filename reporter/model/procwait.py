"""What the waits between processes need: per-thread kernel state, fd tables, socket rows,
the process family (parent, children, start time, uid) and the dated events of logs.

`report collect` reads these from `/proc` in every snapshot round (`proc/pid4711-s0.threads`,
`.fds`, `.sockets`, `.family`; see `docs/formats.md`); the parsers in `reporter/evidence/`
turn the files into these records, and the loader stamps each with its host and capture
time. A process is (host, PID): records from two hosts never mix.

Every record carries `snapshot` (the round it was read in, 0-based; None when the file
does not say) and `captured_at`, so that a reader can take the latest copy of a process.
Example (a parent blocked reading its child's stdout, the child writing it)::

    FdEntry(pid=4700, fd=5, target="pipe:[91234]", kind=FdKind.PIPE, inode=91234, mode="r")
    FdEntry(pid=4711, fd=1, target="pipe:[91234]", kind=FdKind.PIPE, inode=91234, mode="w")
    ThreadState(pid=4711, tid=4711, state="S", wchan="pipe_write", comm="python3")
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from reporter.model.stacks import Location


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadState:
    """One thread's kernel state from `/proc/PID/task/TID/stat` and `wchan` (kind `proc-threads`).

    `state` is the kernel's letter (`R`, `S`, `D`, `T`, `t`, `Z`, `X`, `I`); `wchan` the
    kernel function it sleeps in (`pipe_write`, `futex_wait_queue`, `do_wait`), "" when
    running or not readable; `utime`/`stime` its CPU time in clock ticks (a thread whose
    ticks grow between rounds ran), None when the file does not give them.
    """

    pid: int
    tid: int
    state: str
    wchan: str = ""
    comm: str = ""
    utime: int | None = None
    stime: int | None = None
    captured_at: datetime | None = None
    snapshot: int | None = None
    host: str = ""
    source: Location


class FdKind(StrEnum):
    """What an open file descriptor points at, from its link text."""

    PIPE = "pipe"
    """`pipe:[91234]`: an anonymous pipe (or a FIFO's path, which reads as a file)."""
    SOCKET = "socket"
    """`socket:[67890]`: its row is in the socket tables (`SocketRow.inode`)."""
    ANON = "anon"
    """`anon_inode:[eventfd]`, `[eventpoll]`, `[timerfd]`..."""
    FILE = "file"
    """A path: a regular file, a FIFO, a device (`/dev/null`), a deleted file."""
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class FdEntry:
    """One open file descriptor of a process, as its link target only (kind `proc-fds`).

    `inode` is the number of `pipe:[N]` and `socket:[N]` (two processes holding the same
    pipe inode share that pipe); `mode` is `r`, `w` or `rw` from `/proc/PID/fdinfo/FD`'s
    flags ("" when not read): which end of a pipe a process holds. `target` went through
    the secret policy (paths can hold secrets).
    """

    pid: int
    fd: int
    target: str
    kind: FdKind
    inode: int | None = None
    mode: str = ""
    captured_at: datetime | None = None
    snapshot: int | None = None
    host: str = ""
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class SocketRow:
    """One row of `/proc/PID/net/{tcp,tcp6,unix}` for a socket the process holds (kind
    `proc-sockets`).

    `protocol` is `tcp`, `tcp6` or `unix`; `local` and `remote` are `host:port`
    (`127.0.0.1:29500`, `[::1]:8000`) for TCP, and the bound path (or "" for an unnamed
    socket, `@name` for an abstract one) and "" for unix; `state` is the TCP state word
    (`ESTABLISHED`, `LISTEN`, `SYN_SENT`) or the unix one (`CONNECTED`, `UNCONNECTED`,
    `LISTEN`); `tx_queue`/`rx_queue` are bytes queued (TCP; None for unix). A TCP
    connection's peer is the row, on either host, whose `local` is this one's `remote`.
    """

    pid: int
    inode: int
    protocol: str
    local: str = ""
    remote: str = ""
    state: str = ""
    tx_queue: int | None = None
    rx_queue: int | None = None
    uid: int | None = None
    captured_at: datetime | None = None
    snapshot: int | None = None
    host: str = ""
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildProcess:
    """A child of a process as seen in one round: PID, kernel state letter (`Z` for a zombie
    nobody reaped) and command name."""

    pid: int
    state: str = ""
    comm: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessRelation:
    """A process's place in the tree, from `/proc/PID/stat` and `status` (kind `proc-family`).

    `start_ticks` is field 22 of `stat` (clock ticks after boot): with `pid` it tells a
    process from a later one that reused the PID. `started_at` is that moment in UTC when
    the capture could read the boot time, else None. `children` are the processes whose
    PPid is this one, zombies included, with their states in the same round.
    """

    pid: int
    ppid: int | None = None
    state: str = ""
    comm: str = ""
    uid: int | None = None
    start_ticks: int | None = None
    started_at: datetime | None = None
    threads: int | None = None
    children: tuple[ChildProcess, ...] = ()
    captured_at: datetime | None = None
    snapshot: int | None = None
    host: str = ""
    source: Location


class LogEventKind(StrEnum):
    """What a log line says ended or broke something (`LogEvent.kind`)."""

    TIMEOUT = "timeout"
    """A collective or transport gave up waiting: gloo's `Timed out waiting 20000ms`,
    NCCL's `Watchdog caught collective operation timeout`, a store timeout."""
    WATCHDOG_ABORT = "watchdog-abort"
    """NCCL's watchdog took the process down (`taking the entire process down`,
    `Watchdog thread terminated`)."""
    OOM_KILL = "oom-kill"
    """The kernel's OOM killer: `Out of memory: Killed process 4711 (python3)`."""
    SIGNAL = "signal"
    """A process died of a signal: `killed by signal 9`, `code=killed, status=9/KILL`,
    torch elastic's `exitcode: -9`."""
    EXIT = "exit"
    """A process exited with a code: `exited with code 1`, `code=exited, status=1`."""
    HUNG_TASK = "hung-task"
    """The kernel's hung-task warning: `task python3:4711 blocked for more than 120
    seconds` (a task in State D that long: storage, FUSE, NFS, a driver)."""
    ELASTIC = "elastic"
    """torch elastic's failure report (`ChildFailedError`, `failed (exitcode: 1)`) where
    it gives neither a signal nor a code on that line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEvent:
    """One line of a log (or journal) that says a wait ended, timed out or a process died.

    `at` is the line's time (None when it has none: a dmesg line in seconds since boot);
    `pid` the process the line is about (the killed or exited one), not the writer of the
    log, None when the line names none; `rank` when the line names one (`[Rank 3]`);
    `signal` as `SIGKILL` when known; `exit_code` as the line gives it (torch elastic's
    `-9` stays -9); `timeout_ms` the limit that passed. `text` is the line's message,
    cut to 300 characters.
    """

    kind: LogEventKind
    at: datetime | None = None
    text: str
    pid: int | None = None
    rank: int | None = None
    signal: str = ""
    exit_code: int | None = None
    timeout_ms: int | None = None
    host: str = ""
    source: Location
