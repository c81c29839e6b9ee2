"""The per-round `/proc` reads of one target that the waits need, as the files' text.

`read_waits(pid, snapshot=k)` reads, for one process and one snapshot round:

* `threads`: each thread's state, wchan, CPU ticks and name (`/proc/PID/task/TID/stat`,
  `wchan`);
* `fds`: the fd table as link targets only (`/proc/PID/fd/*`), with the access mode of
  each pipe (`/proc/PID/fdinfo/FD`): which end of a pipe the process holds;
* `sockets`: the rows of `/proc/PID/net/{tcp,tcp6,unix}` (the process's own network
  namespace) whose inode is one of its sockets, verbatim;
* `family`: PPid, state, uid, thread count, start time, and the children (zombies too)
  with their states (`/proc/PID/task/*/children`, else a scan of every process's PPid).

and returns each as the text of one evidence file (formats in `docs/formats.md`; the
parsers are `reporter/evidence/kinds/proc{threads,fds,sockets,family}.py`). Nothing here stops,
signals or traces the target: these are the reads `ps`, `lsof` and `ss` make, each file
read with a size cap, and the whole read bounded by a deadline (what the deadline cut is
said on a `# truncated:` line). The text is raw: the caller applies the secret policy
(paths can hold secrets) before it writes anything.

Self-contained on purpose, like `probe.py`: the standard library only, Python 3.8+, so the
remote probe can run the very same reads on another host (send this file's text along).
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Dict, Tuple  # noqa: UP035 - Python 3.8

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

PROC = "/proc"
# The largest part of one /proc file read (stat, status, fdinfo, one children file).
FILE_CAP = 64 * 1024
# The most bytes of the socket tables read per round: a server's tcp table can hold
# hundreds of thousands of rows.
NET_CAP = 32 << 20
# The most fds and threads listed per round.
MAX_FDS = 8192
MAX_THREADS = 4096
DEFAULT_DEADLINE = 2.0
KINDS = ("threads", "fds", "sockets", "family")
_O_ACCMODE = 3
_MODES = {0: "r", 1: "w", 2: "rw"}


def _read(path: str, cap: int = FILE_CAP) -> str:
    """At most `cap` bytes of a file as text; OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, cap)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def _escape(text: str) -> str:
    """A field for a tab-separated row: backslash, tab, newline and CR escaped."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _stat_fields(stat: str) -> tuple[str, list[str]]:
    """`/proc/.../stat` -> (comm, the fields after it: state, ppid, ...)."""
    start = stat.index("(")
    end = stat.rindex(")")
    return stat[start + 1 : end], stat[end + 2 :].split()


def _iso(moment: datetime) -> str:
    utc = moment.astimezone(timezone.utc)  # noqa: UP017 - Python 3.8 has no datetime.UTC
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def header(kind: str, pid: int, snapshot: int, at: datetime) -> str:
    """The first line of every file: `# report-proc: KIND pid=N snapshot=K at=ISO`."""
    return f"# report-proc: {kind} pid={pid} snapshot={snapshot} at={_iso(at)}\n"


def boot_time(proc: str = PROC) -> float | None:
    """The boot time in seconds since the epoch (`btime` of `/proc/stat`), or None."""
    try:
        for line in _read(f"{proc}/stat", 1 << 20).splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def start_ticks(pid: int, proc: str = PROC) -> int | None:
    """Field 22 of `/proc/PID/stat`: when the process started, in clock ticks after boot."""
    try:
        return int(_stat_fields(_read(f"{proc}/{pid}/stat"))[1][19])
    except (OSError, ValueError, IndexError):
        return None


def started(ticks: int, btime: float) -> datetime:
    """The moment (UTC) a process started `ticks` clock ticks after the boot at `btime`."""
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return datetime.fromtimestamp(btime + ticks / hz, tz=timezone.utc)  # noqa: UP017


class _Clock:
    """The deadline of one round's reads of one process."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def over(self) -> bool:
        return time.monotonic() > self.end

    def cut(self, done: int, total: int, limit: int, what: str) -> str:
        """The `# truncated:` line when item `done` of `total` is past `limit` or the
        deadline, else ""."""
        if done < limit and not self.over():
            return ""
        why = f"{limit} {what} listed" if done >= limit else "deadline passed"
        return f"# truncated: {why}; {total - done} of {total} {what} not read\n"


def _entries(folder: str, clock: _Clock, limit: int, what: str, rows: list[str]) -> Iterator[int]:
    """The numbered entries of `folder` (a process's tids or fds) in order, until `limit` of
    them are read or the deadline passes: then the `# truncated:` line goes into `rows`."""
    numbers = sorted(int(n) for n in os.listdir(folder) if n.isdigit())  # noqa: PTH208
    for done, number in enumerate(numbers):
        cut = clock.cut(done, len(numbers), limit, what)
        if cut:
            rows.append(cut)
            return
        yield number


def read_threads(pid: int, clock: _Clock, proc: str = PROC) -> str:
    """The rows of the `threads` file (after the header)."""
    base = f"{proc}/{pid}/task"
    rows = ["# tid\tstate\twchan\tutime\tstime\tcomm\n"]
    for tid in _entries(base, clock, MAX_THREADS, "threads", rows):
        try:
            comm, fields = _stat_fields(_read(f"{base}/{tid}/stat"))
        except (OSError, ValueError):
            continue  # the thread ended while we looked
        try:
            wchan = _read(f"{base}/{tid}/wchan").strip()
        except OSError:
            wchan = ""
        utime = fields[11] if len(fields) > 12 else ""
        stime = fields[12] if len(fields) > 12 else ""
        rows.append(
            f"{tid}\t{fields[0]}\t{'' if wchan == '0' else _escape(wchan)}\t{utime}\t{stime}"
            f"\t{_escape(comm)}\n"
        )
    return "".join(rows)


def read_fds(pid: int, clock: _Clock, proc: str = PROC) -> tuple[str, set[int]]:
    """The rows of the `fds` file, and the inodes of the process's sockets."""
    base = f"{proc}/{pid}"
    rows = ["# fd\tmode\ttarget\n"]
    sockets: set[int] = set()
    for fd in _entries(f"{base}/fd", clock, MAX_FDS, "fds", rows):
        try:
            target = os.readlink(f"{base}/fd/{fd}")  # noqa: PTH115
        except OSError:
            continue  # closed while we looked
        mode = ""
        if target.startswith("pipe:["):
            mode = _fd_mode(f"{base}/fdinfo/{fd}")
        elif target.startswith("socket:[") and target.endswith("]"):
            inode = target[len("socket:[") : -1]
            if inode.isdigit():
                sockets.add(int(inode))
        rows.append(f"{fd}\t{mode}\t{_escape(target)}\n")
    return "".join(rows), sockets


def _fd_mode(path: str) -> str:
    """`r`, `w` or `rw` from the `flags:` line of an fdinfo file (octal), "" if unreadable."""
    try:
        for line in _read(path).splitlines():
            if line.startswith("flags:"):
                return _MODES.get(int(line.split()[1], 8) & _O_ACCMODE, "")
    except (OSError, ValueError, IndexError):
        return ""
    return ""


# One round's socket tables, shared by the targets of one network namespace:
# (namespace, table) -> (rows by inode, why the read stopped short or "").
# (typing's generics: a runtime alias must work on Python 3.8)
NetCache = Dict[Tuple[str, str], Tuple[Dict[int, str], str]]  # noqa: UP006


def _table(path: str, column: int, clock: _Clock) -> tuple[dict[int, str], str]:
    """The rows of one socket table by inode (streamed), and why it stopped short, or ""."""
    rows: dict[int, str] = {}
    budget = NET_CAP
    try:
        handle = open(path, "rb")  # noqa: PTH123, SIM115 - streamed: tables can be huge
    except OSError:
        return rows, f"{path} could not be read"
    with handle:
        for raw in handle:
            budget -= len(raw)
            if budget < 0 or clock.over():
                why = "deadline passed" if budget >= 0 else f"{NET_CAP} bytes of tables read"
                return rows, f"{why} in {path}"
            fields = raw.split()
            if len(fields) > column and fields[column].isdigit():
                rows[int(fields[column])] = raw.decode("utf-8", errors="replace").rstrip("\n")
    return rows, ""


def read_sockets(
    pid: int, inodes: set[int], clock: _Clock, proc: str = PROC, *, cache: NetCache | None = None
) -> str:
    """The rows of the `sockets` file: each table's rows for `inodes`, after its name.

    A table is read once per network namespace and round when the caller passes the
    same `cache` for every target of the round (the kernel walks every hash bucket to
    list a table: tens of milliseconds on a busy host)."""
    out: list[str] = []
    if not inodes:
        return ""
    try:
        namespace = os.readlink(f"{proc}/{pid}/ns/net")  # noqa: PTH115
    except OSError:
        namespace = f"pid {pid}"  # not readable: no sharing
    for table, column in (("tcp", 9), ("tcp6", 9), ("unix", 6)):
        path = f"{proc}/{pid}/net/{table}"
        out.append(f"# {path}\n")
        key = (namespace, table)
        if cache is not None and key in cache:
            rows, short = cache[key]
        else:
            rows, short = _table(path, column, clock)
            if cache is not None:
                cache[key] = (rows, short)
        out.extend(rows[inode] + "\n" for inode in sorted(inodes) if inode in rows)
        if short:
            out.append(f"# truncated: {short}\n")
    return "".join(out)


def read_family(
    pid: int,
    clock: _Clock,
    proc: str = PROC,
    *,
    btime: float | None = None,
    parents: dict[int, int] | None = None,
) -> str:
    """The lines of the `family` file: `Key:<TAB>value`, then one `Child:` line per child.

    `parents` (PID -> PPid of every process) is used when the kernel has no
    `task/*/children` files; None: such a scan is made here."""
    base = f"{proc}/{pid}"
    comm, fields = _stat_fields(_read(f"{base}/stat"))
    status = _read(f"{base}/status")
    values: dict[str, str] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Threads"):
            values[key] = value.split()[0] if value.split() else ""
    lines = [
        f"Pid:\t{pid}\n",
        f"PPid:\t{fields[1]}\n",
        f"State:\t{fields[0]}\n",
        f"Comm:\t{_escape(comm)}\n",
        f"Uid:\t{values.get('Uid', '')}\n",
        f"Threads:\t{values.get('Threads', '')}\n",
    ]
    if len(fields) > 19:
        ticks = int(fields[19])
        lines.append(f"StartTicks:\t{ticks}\n")
        if btime is not None:
            lines.append(f"Started:\t{_iso(started(ticks, btime))}\n")
    children = _children(pid, proc, parents)
    for child in children:
        if clock.over():
            lines.append(f"# truncated: deadline passed; children from PID {child} on not read\n")
            break
        try:
            child_comm, child_fields = _stat_fields(_read(f"{proc}/{child}/stat"))
        except (OSError, ValueError):
            continue  # reaped while we looked
        lines.append(f"Child:\t{child}\t{child_fields[0]}\t{_escape(child_comm)}\n")
    return "".join(lines)


def _children(pid: int, proc: str, parents: dict[int, int] | None) -> list[int]:
    """The PIDs whose parent is `pid`: from `task/*/children`, else from a PPid scan."""
    found: set[int] = set()
    tasks = f"{proc}/{pid}/task"
    try:
        for tid in os.listdir(tasks):  # noqa: PTH208
            found.update(int(c) for c in _read(f"{tasks}/{tid}/children").split() if c.isdigit())
        return sorted(found)
    except OSError:
        pass  # no CONFIG_PROC_CHILDREN, or the process ended
    if parents is None:
        parents = parent_map(proc)
    return sorted(child for child, parent in parents.items() if parent == pid)


def has_children_files(proc: str = PROC) -> bool:
    """True when the kernel lists children per task (`CONFIG_PROC_CHILDREN`)."""
    return os.path.exists(f"{proc}/self/task/{os.getpid()}/children")  # noqa: PTH110


def parent_map(proc: str = PROC) -> dict[int, int]:
    """PID -> PPid of every process readable now."""
    out: dict[int, int] = {}
    for name in os.listdir(proc):  # noqa: PTH208
        if name.isdigit():
            try:
                out[int(name)] = int(_stat_fields(_read(f"{proc}/{name}/stat"))[1][1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def read_waits(
    pid: int,
    *,
    snapshot: int,
    proc: str = PROC,
    deadline: float = DEFAULT_DEADLINE,
    now: datetime | None = None,
    btime: float | None = None,
    parents: dict[int, int] | None = None,
    cache: NetCache | None = None,
) -> dict[str, str]:
    """The four files of one process for round `snapshot`: kind word -> text.

    A kind whose reads failed (the process ended, no permission) is left out; an empty
    dict means the process is gone. `deadline` bounds the whole read in seconds. Pass one
    `btime`, `parents` and `cache` to every target of a round to read the shared files
    (boot time, the PPid scan, the socket tables) once."""
    clock = _Clock(deadline)
    at = now or datetime.now(tz=timezone.utc)  # noqa: UP017
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        out["threads"] = header("threads", pid, snapshot, at) + read_threads(pid, clock, proc)
    inodes: set[int] = set()
    try:
        rows, inodes = read_fds(pid, clock, proc)
        out["fds"] = header("fds", pid, snapshot, at) + rows
    except OSError:
        pass
    if "fds" in out:
        out["sockets"] = header("sockets", pid, snapshot, at) + read_sockets(
            pid, inodes, clock, proc, cache=cache
        )
    with contextlib.suppress(OSError, ValueError, IndexError):
        out["family"] = header("family", pid, snapshot, at) + read_family(
            pid, clock, proc, btime=btime if btime is not None else boot_time(proc), parents=parents
        )
    return out


# -- one round of every target: the status copy and the reads above ----------------------


def _whole(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:  # noqa: PTH123 - 3.8, path strings
        return handle.read()


def read_status(pid: int | str, root: str = "/proc") -> str:
    """`/proc/PID/status` text ("self" for this process); "" when unreadable."""
    try:
        return _whole(f"{root}/{pid}/status")
    except OSError:
        return ""


def read_wchan(pid: int, root: str = "/proc") -> str:
    """The kernel function a blocked process sleeps in (`/proc/PID/wchan`, `do_signal_stop`);
    "" when unreadable or when it is running (the kernel writes `0`)."""
    try:
        text = _whole(f"{root}/{pid}/wchan").strip()
    except OSError:
        return ""
    return "" if text in ("", "0") else text


def status_copy(pid: int, root: str = "/proc") -> str:
    """`/proc/PID/status` as evidence: the text as the kernel wrote it, then one line of
    our own in the same form, `Wchan:<TAB>do_signal_stop`, from `/proc/PID/wchan` when
    readable. "" when the process is gone. (`procfs.status_copy` for a local capture.)"""
    text = read_status(pid, root)
    if not text:
        return ""
    wchan = read_wchan(pid, root)
    end = "" if text.endswith("\n") else "\n"
    return f"{text}{end}Wchan:\t{wchan}\n" if wchan else text + end


# What is read from `/proc` for each target after each round, by name (the file's suffix:
# `proc/pidN-sK.status`, `.threads`, `.fds`, `.sockets`, `.family`): `read_round`, the one
# function a local capture (`capture.ProcessSteps.round_reads`) and the remote probe call. The
# collector turns each `round` record into evidence with the local code
# (`SessionState.keep_round_read`).
ROUND_READS = ("status", *KINDS)


def read_round(
    pids: Sequence[int],
    snapshot: int,
    *,
    names: Sequence[str] = ROUND_READS,
    timeout: float = DEFAULT_DEADLINE,
    deadline: float | None = None,
    root: str = "/proc",
) -> Iterator[tuple[int, str, str]]:
    """(pid, name, text) for each target and each read of `names` after round `snapshot`.

    A process that is gone gives one ("status", "") and nothing else; a read that failed
    gives "" under its name. The shared files of a round (boot time, the PPid scan where
    the kernel lists no children, the socket tables of each network namespace) are read
    once per round. Each process's `/proc` reads end at min(2 s, `timeout`), and at
    `deadline` (`time.monotonic()`) when given."""
    waits = [n for n in names if n in KINDS]
    btime = boot_time(root) if waits else None
    parents = None
    if waits and not has_children_files(root):
        parents = parent_map(root)
    tables: NetCache = {}
    for pid in pids:
        status = status_copy(pid, root)
        if not status:
            yield pid, "status", ""
            continue
        if "status" in names:
            yield pid, "status", status
        if not waits:
            continue
        seconds = min(DEFAULT_DEADLINE, timeout)
        if deadline is not None:
            seconds = max(0.05, min(seconds, deadline - time.monotonic()))
        read = read_waits(
            pid, snapshot=snapshot, proc=root, deadline=seconds, btime=btime, parents=parents,
            cache=tables,
        )  # fmt: skip
        for name in waits:
            yield pid, name, read.get(name, "")
