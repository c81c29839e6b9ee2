"""Waits between processes on one host, as edges of the wait-for graph (`waitgraph.py`).

Producers (registered in this order):

- `child-process`: a parent in `waitpid` (`Popen.wait`, `subprocess.run`, `Process.join`,
  the kernel's `do_wait`) waits for its child; the child is named from the parent's
  `proc/*.family` children (zombies included) or the children's PPid, and its state is
  its own latest evidence (running, blocked, zombie, gone);
- `pipes`: a thread blocked writing a full pipe (`pipe_write`) waits for the processes
  holding the read end of that `pipe:[inode]`, one reading it waits for the writers; a
  thread blocked reading a socket waits for the peer of its connection (another captured
  process, or a remote `host:port` from the socket rows), as HTTP when `http.client` or
  `urllib` frames show it;
- `queue-workers`: a consumer blocked in `Queue.get`, `Connection.recv`, `Future.result`,
  a pool's `AsyncResult.get` or `multiprocessing.connection.wait` waits for its worker
  children; a dead worker (State Z, gone, crashed) is named with how it died when a log
  line or its exit says so (a signal, the OOM killer);
- `fork-lock`: a thread of a forked child (its stack starts in `os.fork` /
  `popen_fork.Popen._launch`) waits on a lock that no thread of the child can release
  (fork copies only the calling thread); the parent's threads that take that lock are named;
- `kernel`: a thread in State D, from the latest `/proc` status or thread copy (never the
  first), waits for the kernel: the wchan says which part (FUSE, NFS, block I/O, a driver).

Evidence comes from `bundle.process_relations`, `thread_states`, `fd_entries`,
`socket_rows`, `proc_states` and `log_events` (issue 30's captures), the stacks in the
analysis, and the source of the frames when given. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from reporter.analysis.clues import main_thread
from reporter.analysis.graphproducers import unit_key
from reporter.analysis.result import RankProcess
from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    GraphContext,
    Node,
    NodeKind,
    NodeState,
    process_key,
    producer,
    remote_key,
    thread_key,
)
from reporter.model import (
    Bundle,
    FdEntry,
    FdKind,
    Frame,
    LogEvent,
    LogEventKind,
    ProcessDump,
    ProcessRelation,
    ProcState,
    SocketRow,
    ThreadStack,
    ThreadState,
)
from reporter.model.stacks import FailureState

_EPOCH = datetime.min.replace(tzinfo=UTC)
# How many innermost Python frames a wait call may sit under (wrappers, retries).
_DEPTH = 8


# --------------------------------------------------------------------------- the processes


@dataclass(frozen=True, slots=True, kw_only=True)
class Proc:
    """A captured process as the producers here see it: its node key and latest stack."""

    host: str
    pid: int
    key: str
    process: RankProcess
    dump: ProcessDump
    """Its latest snapshot."""
    seen: int


# One-entry memos: every producer asks the same questions of the same analysis and bundle;
# answering them once keeps the graph linear in the bundle (4,096 ranks: see the tests).
_MEMO: dict[str, tuple[object, object]] = {}


T = TypeVar("T")


def _memo(name: str, of: object, build: Callable[[], T]) -> T:
    """`build()`, kept while `of` (the object it was built from) is the one asked about."""
    hit = _MEMO.get(name)
    if hit is not None and hit[0] is of:
        return hit[1]  # type: ignore[return-value]
    value = build()
    if len(_MEMO) > 32:
        _MEMO.clear()  # objects of earlier analyses: nothing asks about them any more
    _MEMO[name] = (of, value)
    return value


def procs(ctx: GraphContext) -> dict[tuple[str, int], Proc]:
    """Every process with stacks and a PID, by (host, PID)."""
    return _memo("procs", ctx.analysis, lambda: _procs(ctx))


def _procs(ctx: GraphContext) -> dict[tuple[str, int], Proc]:
    out: dict[tuple[str, int], Proc] = {}
    for process in (*ctx.analysis.processes, *ctx.analysis.others):
        pid = process.identity.pid
        if pid is None or not process.snapshots:
            continue
        ident = process.identity
        # The key `process_node` gives, without building the node.
        key = (
            unit_key(ctx, ident.instance, process.unit)
            if process.unit is not None
            else process_key(ident.host, pid)
        )
        out[(process.identity.host, pid)] = Proc(
            host=process.identity.host,
            pid=pid,
            key=key,
            process=process,
            dump=process.snapshots[-1],
            seen=len(process.snapshots),
        )
    return out


def key_of(known: dict[tuple[str, int], Proc], host: str, pid: int) -> str:
    """The node key of a process: its rank's when it is a captured rank."""
    found = known.get((host, pid))
    return found.key if found is not None else process_key(host, pid)


def _order(
    record: ThreadState | FdEntry | SocketRow | ProcessRelation | ProcState,
) -> tuple[int, datetime]:
    return (
        record.snapshot if record.snapshot is not None else -1,
        record.captured_at or _EPOCH,
    )


R = TypeVar("R", ThreadState, FdEntry, SocketRow, ProcessRelation, ProcState)


def latest(records: tuple[R, ...], host: str, pid: int) -> tuple[R, ...]:
    """The records of (host, pid) from its latest round only (never the first copy)."""
    if not records:
        return ()
    groups: dict[tuple[str, int | None], tuple[R, ...]] = _memo(
        f"latest:{id(records)}", records, lambda: _latest_groups(records)
    )
    return groups.get((host, pid), ())


def _latest_groups(records: tuple[R, ...]) -> dict[tuple[str, int | None], tuple[R, ...]]:
    mine: dict[tuple[str, int | None], list[R]] = {}
    for record in records:
        mine.setdefault((record.host, record.pid), []).append(record)
    out: dict[tuple[str, int | None], tuple[R, ...]] = {}
    for key, group in mine.items():
        last = max(_order(r) for r in group)
        out[key] = tuple(r for r in group if _order(r) == last)
    return out


def _by_parent(
    bundle: Bundle, known: dict[tuple[str, int], Proc]
) -> dict[tuple[str, int], list[int]]:
    """(host, PPid) -> the captured processes whose parent that is."""
    out: dict[tuple[str, int], list[int]] = {}
    for (host, pid), proc in known.items():
        for ppid in {parent_of(bundle, host, pid), proc.dump.parent_pid}:
            if ppid is not None:
                out.setdefault((host, ppid), []).append(pid)
    return out


def family_of(bundle: Bundle, host: str, pid: int) -> ProcessRelation | None:
    """The latest `proc/*.family` record of a process."""
    found = latest(bundle.process_relations, host, pid)
    return found[-1] if found else None


def parent_of(bundle: Bundle, host: str, pid: int) -> int | None:
    """PPid from the latest family record, else the latest status copy."""
    family = family_of(bundle, host, pid)
    if family is not None and family.ppid is not None:
        return family.ppid
    status = latest(bundle.proc_states, host, pid)
    return status[-1].ppid if status else None


def where(frame: Frame | None) -> str:
    """`f (x.py:9)`."""
    if frame is None:
        return ""
    line = f":{frame.line}" if frame.line else ""
    return f"{frame.function} ({frame.file}{line})"


def cite(dump: ProcessDump) -> str:
    return f"{dump.source.path}:{dump.source.line or 1}"


def python_frames(thread: ThreadStack) -> tuple[Frame, ...]:
    """The Python frames of a thread, innermost first (native frames dropped)."""
    if not any(f.native for f in thread.frames):
        return thread.frames
    return tuple(f for f in thread.frames if not f.native)


_LIB_RE = re.compile(
    r"(?:^|/)(?:subprocess|threading|queue|selectors|socket|ssl|asyncio|concurrent|"
    r"multiprocessing|http|urllib|json|logging|ray|torch|zmq|requests|urllib3)(?:/|\.py$)"
)


def _library(file: str) -> bool:
    return bool(_LIB_RE.search(file)) or "site-packages/" in file or "/lib/python" in file


def caller(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame that is the service's own code, not a library's."""
    for frame in frames:
        if not _library(frame.file):
            return frame
    return frames[0] if frames else None


def match_wait(
    frames: Sequence[Frame], table: Sequence[tuple[str, str]], depth: int = _DEPTH
) -> Frame | None:
    """The first of the innermost `depth` frames whose (function, file suffix) is in `table`."""
    files = _TABLES.get(id(table))
    if files is None:
        # The tables are module constants: their ids stay theirs.
        files = _TABLES[id(table)] = _by_function(table)
    for frame in frames[:depth]:
        suffixes = files.get(frame.function)
        if suffixes is not None and any(not s or frame.file.endswith(s) for s in suffixes):
            return frame
    return None


_TABLES: dict[int, dict[str, tuple[str, ...]]] = {}


def _by_function(table: Sequence[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for function, file in table:
        out[function] = (*out.get(function, ()), file)
    return out


def thread_states_of(bundle: Bundle, host: str, pid: int) -> dict[int, ThreadState]:
    return {t.tid: t for t in latest(bundle.thread_states, host, pid)}


def state_of_thread(bundle: Bundle, host: str, pid: int, thread: ThreadStack) -> ThreadState | None:
    """The latest kernel state of one py-spy thread (matched by its OS thread id)."""
    states = thread_states_of(bundle, host, pid)
    tid = thread.os_thread_id
    if tid is None and thread.thread_id.isdigit():
        tid = int(thread.thread_id)
    if tid is None and thread.name == "MainThread":
        tid = pid
    return states.get(tid) if tid is not None else None


# --------------------------------------------------------------------------- how a process ended


_DEAD_STATES = {"Z": NodeState.ZOMBIE, "X": NodeState.GONE}


def death_of(bundle: Bundle, host: str, pid: int) -> tuple[str, tuple[str, ...]]:
    """How a process died, from the log lines about it: (`killed by SIGKILL (the OOM
    killer) at 12:01:02 UTC`, citations); ("", ()) when no line names it."""
    lines = [e for e in bundle.log_events if e.pid == pid and (not e.host or e.host == host)]
    if not lines:
        return "", ()
    oom = [e for e in lines if e.kind is LogEventKind.OOM_KILL]
    signals = [e for e in lines if e.kind is LogEventKind.SIGNAL and e.signal]
    exits = [e for e in lines if e.kind is LogEventKind.EXIT and e.exit_code is not None]
    parts: list[str] = []
    used: list[LogEvent] = []
    if oom:
        parts.append("killed by the kernel's OOM killer" + _at(oom[0]))
        used.append(oom[0])
    elif signals:
        parts.append(f"killed by {signals[0].signal}" + _at(signals[0]))
        used.append(signals[0])
    elif exits:
        parts.append(f"exited with code {exits[0].exit_code}" + _at(exits[0]))
        used.append(exits[0])
    return "; ".join(parts), tuple(f"{e.source.path}:{e.source.line}" for e in used)


def _at(event: LogEvent) -> str:
    return f" at {event.at:%H:%M:%S} UTC" if event.at is not None else ""


def failed_pids(bundle: Bundle) -> dict[tuple[str, int], str]:
    """PIDs whose dumps failed because the process is gone, with the file that says so."""
    out: dict[tuple[str, int], str] = {}
    for failure in bundle.failures:
        if failure.pid is not None and failure.state is FailureState.GONE:
            out[(failure.host, failure.pid)] = f"{failure.source.path}:{failure.source.line or 1}"
    return out


def other_node(
    bundle: Bundle,
    known: dict[tuple[str, int], Proc],
    host: str,
    pid: int,
    *,
    state_letter: str = "",
    comm: str = "",
    family_source: str = "",
) -> Node | None:
    """A node for a process that has no stacks: a zombie or exited child, a worker whose
    dumps failed. None for a captured process (the `ranks` producer gives its node) unless
    later evidence says it died."""
    death, cites = death_of(bundle, host, pid)
    gone_at = failed_pids(bundle).get((host, pid))
    state = _DEAD_STATES.get(state_letter)
    if state is None and gone_at is not None:
        state = NodeState.GONE
    if (host, pid) in known and state is None:
        return None
    if state is None:
        state = NodeState.NOT_CAPTURED
    words = {
        NodeState.ZOMBIE: f"State Z (zombie): it exited and its parent has not reaped it ({family_source})",
        NodeState.GONE: f"gone: its dump failed, the process no longer exists ({gone_at})"
        if gone_at
        else "gone",
        NodeState.NOT_CAPTURED: f"not captured (State {state_letter or '?'} in {family_source})"
        if family_source
        else "not captured",
    }[state]
    if death:
        words += f"; {death}"
    evidence = tuple(c for c in (family_source, gone_at, *cites) if c)
    name = f" ({comm})" if comm else ""
    return Node(
        key=key_of(known, host, pid),
        kind=NodeKind.PROCESS,
        state=state,
        label=f"PID {pid}{name}" + (f" on {host}" if host else ""),
        host=host,
        pid=pid,
        why=words,
        evidence=evidence,
        seen=10_000 if state in (NodeState.ZOMBIE, NodeState.GONE) else 0,
    )


def children(
    bundle: Bundle, known: dict[tuple[str, int], Proc], parent: Proc
) -> list[tuple[int, str, str, str]]:
    """(pid, state letter, comm, citation) of a parent's children: from its latest family
    record, else the captured processes whose PPid is the parent."""
    family = family_of(bundle, parent.host, parent.pid)
    if family is not None and family.children:
        src = f"{family.source.path}:{family.source.line}"
        return [(c.pid, c.state, c.comm, src) for c in family.children]
    by_parent = _memo("by_parent", known, lambda: _by_parent(bundle, known))
    return [
        (pid, "", "", cite(known[(parent.host, pid)].dump))
        for pid in sorted(by_parent.get((parent.host, parent.pid), ()))
        if pid != parent.pid
    ]


def _pick_children(
    known: dict[tuple[str, int], Proc], host: str, kids: list[tuple[int, str, str, str]]
) -> list[tuple[int, str, str, str]]:
    """The children a wait is for: the dead ones first (a zombie is what a blocked wait
    never hears from), else the captured ones, else all."""
    dead = [k for k in kids if k[1] in _DEAD_STATES]
    if dead:
        return dead
    captured = [k for k in kids if (host, k[0]) in known]
    return captured or kids


# --------------------------------------------------------------------------- child-process

CHILD_WAITS: tuple[tuple[str, str], ...] = (
    ("Popen._try_wait", "subprocess.py"),
    ("Popen._wait", "subprocess.py"),
    ("Popen.wait", "subprocess.py"),
    ("Popen.wait", "multiprocessing/popen_fork.py"),
    ("Popen.poll", "multiprocessing/popen_fork.py"),
    ("Popen.wait", "multiprocessing/popen_spawn_posix.py"),
    ("BaseProcess.join", "multiprocessing/process.py"),
    ("waitpid", ""),
    ("wait", "os.py"),
)
"""(function, file suffix) of the calls that wait for a child to exit."""
_CHILD_ENTRY = (
    ("run", "subprocess.py"),
    ("call", "subprocess.py"),
    ("check_call", "subprocess.py"),
    ("check_output", "subprocess.py"),
    ("Popen.communicate", "subprocess.py"),
    ("BaseProcess.join", "multiprocessing/process.py"),
)
_DO_WAIT = frozenset({"do_wait", "kernel_wait4", "do_wait4"})


def child_wait(frames: Sequence[Frame], kstate: ThreadState | None) -> Frame | None:
    """The frame of a child wait, or None. The kernel's `do_wait` confirms it when read."""
    found = match_wait(frames, CHILD_WAITS)
    if found is None and kstate is not None and kstate.wchan in _DO_WAIT:
        return frames[0] if frames else None
    return found


def _main_threads(
    bundle: Bundle, known: dict[tuple[str, int], Proc]
) -> list[tuple[Proc, tuple[Frame, ...], ThreadState | None]]:
    """Each process's latest main thread: its Python frames and its kernel state."""
    return _memo("mains", known, lambda: _mains(bundle, known))


def _mains(
    bundle: Bundle, known: dict[tuple[str, int], Proc]
) -> list[tuple[Proc, tuple[Frame, ...], ThreadState | None]]:
    out = []
    for proc in known.values():
        thread = main_thread(proc.dump)
        if thread is not None:
            frames = python_frames(thread)
            out.append((proc, frames, state_of_thread(bundle, proc.host, proc.pid, thread)))
    return out


@producer("child-process")
def child_process(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A parent in a child wait waits for its child, whose own state is its latest evidence."""
    known = procs(ctx)
    for parent, frames, kstate in _main_threads(bundle, known):
        found = child_wait(frames, kstate)
        if found is None:
            continue
        # The outermost of the calls that wait (`run` over `communicate` over `wait`).
        entries = [f for f in frames[:12] if match_wait((f,), _CHILD_ENTRY, depth=1)]
        entry = entries[-1] if entries else found
        kids = _pick_children(known, parent.host, children(bundle, known, parent))
        if not kids:
            continue
        waited: list[str] = []
        for pid, letter, comm, src in kids:
            node = other_node(
                bundle, known, parent.host, pid, state_letter=letter, comm=comm, family_source=src
            )
            if node is not None:
                yield node
            waited.append(key_of(known, parent.host, pid))
        evidence = [cite(parent.dump)]
        if kstate is not None and kstate.wchan:
            evidence.append(f"{kstate.source.path}:{kstate.source.line}")
        yield Edge(
            waiters=(parent.key,),
            waited=tuple(waited),
            kind=EdgeKind.CHILD,
            what=entry.function,
            at=where(caller(frames)),
            waited_at=_places(known, parent.host, [k[0] for k in kids]),
            evidence=tuple(evidence),
        )


def _places(known: dict[tuple[str, int], Proc], host: str, pids: Sequence[int]) -> str:
    out = []
    for pid in pids:
        proc = known.get((host, pid))
        thread = main_thread(proc.dump) if proc is not None else None
        if thread is not None and thread.frames:
            out.append(where(caller(python_frames(thread))))
    return ", ".join(dict.fromkeys(p for p in out if p))


# --------------------------------------------------------------------------- pipes and sockets

# Kernels name the wait `pipe_write`, `anon_pipe_write` (6.x), `pipe_wait_writable`...
PIPE_WRITE = frozenset({"pipe_write", "anon_pipe_write", "pipe_wait_writable"})
PIPE_READ = frozenset({"pipe_read", "anon_pipe_read", "pipe_wait_readable", "pipe_wait"})
SOCKET_WAIT = frozenset(
    {
        "sk_wait_data",
        "wait_woken",
        "tcp_recvmsg",
        "unix_stream_read_generic",
        "sk_stream_wait_memory",
    }
)
_SOCKET_READS = (
    ("SocketIO.readinto", "socket.py"),
    ("socket.recv", ""),
    ("recv", "socket.py"),
    ("recv_into", ""),
    ("SSLSocket.recv_into", "ssl.py"),
    ("SSLSocket.read", "ssl.py"),
)
_HTTP_FILES = ("http/client.py", "urllib/request.py", "urllib3/", "requests/")


_READ_TO_END = (("Popen._communicate", "subprocess.py"),)
"""Calls that read a child's output pipes until they end (then reap the child)."""


def _read_to_end(
    bundle: Bundle, known: dict[tuple[str, int], Proc], proc: Proc, frames: Sequence[Frame]
) -> Iterator[Node | Edge]:
    """A parent reading its child's output to the end waits for every process holding the
    write end: after the child exits, a process it started can keep the pipe open."""
    kids = children(bundle, known, proc)
    for pid, letter, comm, src in kids:
        node = other_node(
            bundle, known, proc.host, pid, state_letter=letter, comm=comm, family_source=src
        )
        if node is not None:
            yield node
    dead = [str(k[0]) for k in kids if k[1] in _DEAD_STATES]
    for entry in latest(bundle.fd_entries, proc.host, proc.pid):
        if entry.kind is not FdKind.PIPE or entry.inode is None or entry.mode != "r":
            continue
        if _pipe_ends(bundle, proc.host, entry.inode, "r", proc.pid):
            continue  # shared read end: whom it waits for cannot be told
        writers = _pipe_ends(bundle, proc.host, entry.inode, "w", proc.pid)
        pids = sorted({w.pid for w in writers})
        if not pids:
            continue
        exited = f"its child PID {', '.join(dead)} exited (zombie) and " if dead else ""
        yield Edge(
            waiters=(proc.key,),
            waited=tuple(key_of(known, proc.host, pid) for pid in pids),
            kind=EdgeKind.PIPE,
            what=f"reads pipe:[{entry.inode}] (fd {entry.fd}) to its end; {exited}the write "
            f"end is held by PID {', '.join(map(str, pids))}",
            at=where(caller(frames)),
            waited_at=_places(known, proc.host, pids),
            evidence=(
                cite(proc.dump),
                f"{entry.source.path}:{entry.source.line}",
                *(f"{w.source.path}:{w.source.line}" for w in writers),
            ),
        )
        return


def _pipe_holders(entries: tuple[FdEntry, ...]) -> dict[tuple[str, int], set[int]]:
    out: dict[tuple[str, int], set[int]] = {}
    for entry in entries:
        if entry.inode is not None:
            out.setdefault((entry.host, entry.inode), set()).add(entry.pid)
    return out


def _pipe_ends(bundle: Bundle, host: str, inode: int, mode: str, not_pid: int) -> list[FdEntry]:
    """The latest fd entries of other processes holding pipe `inode` open with `mode`."""
    holders: dict[tuple[str, int], set[int]] = _memo(
        "pipe_holders", bundle.fd_entries, lambda: _pipe_holders(bundle.fd_entries)
    )
    pids = holders.get((host, inode), set()) - {not_pid}
    out: list[FdEntry] = []
    for pid in sorted(pids):
        out.extend(
            e
            for e in latest(bundle.fd_entries, host, pid)
            if e.kind is FdKind.PIPE and e.inode == inode and (not e.mode or mode in e.mode)
        )
    return out


@producer("pipes")
def pipes(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """Pipe writers blocked on a full pipe wait for its readers (and readers for writers);
    socket readers wait for the peer of their connection."""
    if not bundle.fd_entries and not bundle.socket_rows:
        return  # every edge here rests on the fd tables or the socket rows
    known = procs(ctx)
    for proc, frames, _ in _main_threads(bundle, known):
        if match_wait(frames, _READ_TO_END) is not None:
            yield from _read_to_end(bundle, known, proc, frames)
    for proc in known.values():
        for thread in proc.dump.threads:
            kstate = state_of_thread(bundle, proc.host, proc.pid, thread)
            frames = python_frames(thread)
            # Only a full pipe's writer: a reader's pipe is often shared (a multiprocessing
            # queue's read end is held by every process forked after it), so whom a reader
            # waits for is the queue-workers producer's to say.
            if kstate is not None and kstate.wchan in PIPE_WRITE:
                yield from _pipe_edge(bundle, known, proc, thread, frames, kstate)
            elif match_wait(frames, _SOCKET_READS, depth=3) is not None and (
                kstate is None or kstate.wchan in SOCKET_WAIT or kstate.state == "S"
            ):
                yield from _socket_edge(bundle, known, proc, thread, frames, kstate)


def _waiter_key(proc: Proc, thread: ThreadStack) -> str:
    """A process's main thread waits for the process; another thread is its own node."""
    main = main_thread(proc.dump)
    if main is None or thread is main:
        return proc.key
    return thread_key(proc.host, proc.pid, thread.thread_id)


def _thread_node(proc: Proc, thread: ThreadStack, frames: Sequence[Frame], why: str) -> Node | None:
    if thread is main_thread(proc.dump):
        return None
    return Node(
        key=thread_key(proc.host, proc.pid, thread.thread_id),
        kind=NodeKind.THREAD,
        state=NodeState.BLOCKED if proc.seen > 1 else NodeState.UNKNOWN,
        label=f"thread {thread.name or thread.thread_id} of PID {proc.pid}",
        host=proc.host,
        pid=proc.pid,
        tid=thread.thread_id,
        at=where(frames[0] if frames else None),
        why=why,
        evidence=(f"{thread.source.path}:{thread.source.line}",),
        seen=proc.seen,
    )


def _pipe_edge(
    bundle: Bundle,
    known: dict[tuple[str, int], Proc],
    proc: Proc,
    thread: ThreadStack,
    frames: Sequence[Frame],
    kstate: ThreadState,
) -> Iterator[Node | Edge]:
    writing = kstate.wchan in PIPE_WRITE
    mine = "w" if writing else "r"
    other = "r" if writing else "w"
    fds = [
        e
        for e in latest(bundle.fd_entries, proc.host, proc.pid)
        if e.kind is FdKind.PIPE and e.inode is not None and (not e.mode or mine in e.mode)
    ]
    # stdout and stderr first: the classic full pipe is a child's output nobody reads.
    fds.sort(key=lambda e: (e.fd not in (1, 2), e.fd))
    for entry in fds:
        assert entry.inode is not None
        ends = _pipe_ends(bundle, proc.host, entry.inode, other, proc.pid)
        if not ends:
            continue
        pids = sorted({e.pid for e in ends})
        for pid in pids:
            node = other_node(bundle, known, proc.host, pid)
            if node is not None:
                yield node
        node = _thread_node(proc, thread, frames, f"blocked in the kernel's {kstate.wchan}")
        if node is not None:
            yield node
        verb = "writes to" if writing else "reads from"
        full = ": the pipe is full and nobody reads it" if writing else ": nothing is written to it"
        yield Edge(
            waiters=(_waiter_key(proc, thread),),
            waited=tuple(key_of(known, proc.host, pid) for pid in pids),
            kind=EdgeKind.PIPE,
            what=f"{verb} pipe:[{entry.inode}] (fd {entry.fd}){full}",
            at=where(caller(frames)),
            waited_at=_places(known, proc.host, pids),
            evidence=(
                f"{kstate.source.path}:{kstate.source.line}",
                f"{entry.source.path}:{entry.source.line}",
                *(f"{e.source.path}:{e.source.line}" for e in ends),
            ),
        )
        return


def _socket_edge(
    bundle: Bundle,
    known: dict[tuple[str, int], Proc],
    proc: Proc,
    thread: ThreadStack,
    frames: Sequence[Frame],
    kstate: ThreadState | None,
) -> Iterator[Node | Edge]:
    rows = [
        r
        for r in latest(bundle.socket_rows, proc.host, proc.pid)
        if r.protocol.startswith("tcp") and r.state == "ESTABLISHED" and r.remote
    ]
    if not rows:
        return
    http = any(
        f.file.endswith(_HTTP_FILES) or any(h in f.file for h in _HTTP_FILES) for f in frames
    )
    # The peer is the captured process whose connection's local address is our remote one.
    waited: list[str] = []
    places: list[str] = []
    for row in rows:
        ends: dict[tuple[str, str, str], SocketRow] = _memo(
            "socket_ends",
            bundle.socket_rows,
            lambda: {(r.host, r.local, r.remote): r for r in bundle.socket_rows},
        )
        peer = ends.get((proc.host, row.remote, row.local))
        if peer is not None:
            waited.append(key_of(known, proc.host, peer.pid))
            places.append(_places(known, proc.host, [peer.pid]))
            continue
        host, _, port = row.remote.rpartition(":")
        key = remote_key(host.strip("[]"), int(port) if port.isdigit() else None)
        yield Node(
            key=key,
            kind=NodeKind.REMOTE,
            state=NodeState.NOT_CAPTURED,
            label=row.remote,
            host=host.strip("[]"),
            why=f"the other end of {proc.pid}'s connection {row.local} -> {row.remote}; no "
            "process of the bundle holds it",
            evidence=(f"{row.source.path}:{row.source.line}",),
        )
        waited.append(key)
    node = _thread_node(proc, thread, frames, "blocked reading a socket")
    if node is not None:
        yield node
    url = _local_value(frames, ("url", "fullurl", "host"))
    what = "the reply to an HTTP request" if http else "data on a TCP connection"
    if url:
        what += f" ({url})"
    evidence = [f"{r.source.path}:{r.source.line}" for r in rows]
    if kstate is not None:
        evidence.insert(0, f"{kstate.source.path}:{kstate.source.line}")
    yield Edge(
        waiters=(_waiter_key(proc, thread),),
        waited=tuple(dict.fromkeys(waited)),
        kind=EdgeKind.HTTP if http else EdgeKind.PIPE,
        what=what,
        at=where(caller(frames)),
        waited_at=", ".join(p for p in places if p),
        evidence=(f"{thread.source.path}:{thread.source.line}", *evidence),
    )


def _local_value(frames: Sequence[Frame], names: Sequence[str]) -> str:
    """The first `--locals` value of one of `names` in the frames, quotes stripped."""
    for frame in frames:
        for local in frame.locals:
            if local.name in names and local.repr not in ("None", ""):
                return local.repr.strip("\"'")
    return ""


# --------------------------------------------------------------------------- queue-workers

QUEUE_WAITS: tuple[tuple[str, str], ...] = (
    ("Queue.get", "queue.py"),
    ("Queue.get", "multiprocessing/queues.py"),
    ("SimpleQueue.get", "multiprocessing/queues.py"),
    ("Connection._recv", "multiprocessing/connection.py"),
    ("_ConnectionBase.recv", "multiprocessing/connection.py"),
    ("_ConnectionBase.recv_bytes", "multiprocessing/connection.py"),
    ("Future.result", "concurrent/futures/_base.py"),
    ("ApplyResult.get", "multiprocessing/pool.py"),
    ("ApplyResult.wait", "multiprocessing/pool.py"),
    ("wait", "multiprocessing/connection.py"),
    ("get_response", ""),
    ("collective_rpc", ""),
)
"""(function, file suffix) of a consumer's wait for a result from its workers."""
_HELPERS = ("resource_tracker", "forkserver", "semaphore_tracker")


def _helper(known: dict[tuple[str, int], Proc], host: str, pid: int, comm: str) -> bool:
    """multiprocessing's own helper processes are no workers."""
    proc = known.get((host, pid))
    if proc is not None:
        return any(h in f.file for t in proc.dump.threads for f in t.frames for h in _HELPERS)
    return any(h in comm for h in _HELPERS)


@producer("queue-workers")
def queue_workers(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A consumer blocked on a queue, pipe, future or pool result waits for its worker
    children; a dead one is named with how it died."""
    known = procs(ctx)
    for consumer, frames, kstate in _main_threads(bundle, known):
        if child_wait(frames, kstate) is not None:
            continue  # the child-process producer's
        found = match_wait(frames, QUEUE_WAITS)
        if found is None:
            continue
        kids = [
            k
            for k in children(bundle, known, consumer)
            if not _helper(known, consumer.host, k[0], k[2])
        ]
        # Workers whose dumps failed are gone: they are the ones the queue never hears from.
        gone = failed_pids(bundle)
        kids = _pick_children(known, consumer.host, kids)
        if not kids:
            continue
        waited: list[str] = []
        for pid, letter, comm, src in kids:
            letter = letter or ("X" if (consumer.host, pid) in gone else "")
            node = other_node(
                bundle, known, consumer.host, pid, state_letter=letter, comm=comm, family_source=src
            )
            if node is not None:
                yield node
            waited.append(key_of(known, consumer.host, pid))
        module = found.file.rsplit("/", 1)[-1].removesuffix(".py")
        yield Edge(
            waiters=(consumer.key,),
            waited=tuple(waited),
            kind=EdgeKind.QUEUE,
            what=found.function if "." in found.function else f"{module}.{found.function}",
            at=where(caller(frames)),
            waited_at=_places(known, consumer.host, [k[0] for k in kids]),
            evidence=(cite(consumer.dump), *(k[3] for k in kids if k[3])),
        )


# --------------------------------------------------------------------------- fork-lock

_FORK_FRAMES = (("Popen._launch", "multiprocessing/popen_fork.py"), ("_fork_exec", ""))
_NATIVE_LOCK = (
    "lock_PyThread_acquire_lock",
    "rlock_acquire",
    "acquire_timed",
    "PyThread_acquire_lock_timed",
)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_WITH_LOCK = re.compile(
    rf"\s*(?:async\s+)?with\s+\(?\s*({_NAME}(?:\.{_NAME})*)\s*\)?\s*(?:as\s+{_NAME}\s*)?:"
)
_ACQUIRE = re.compile(rf"({_NAME}(?:\.{_NAME})*)\.acquire\(")
_DEF = re.compile(r"\s*(?:async\s+)?def\s")


def source_lines(ctx: GraphContext, frame: Frame) -> tuple[str, ...] | None:
    """The source of a frame's file when the bundle or `--source-root` gives it."""
    if ctx.sources is None or not frame.line or frame.file.startswith("<"):
        return None
    found = ctx.sources.find(frame.file)
    if found is None or frame.line > len(found.lines):
        return None
    return found.lines


def lock_taken_at(ctx: GraphContext, frame: Frame) -> str | None:
    """The lock the frame's line takes (`with X:` or `X.acquire(`), or None."""
    lines = source_lines(ctx, frame)
    if lines is None or frame.line is None:
        return None
    text = lines[frame.line - 1]
    match = _WITH_LOCK.match(text) or _ACQUIRE.search(text)
    return match.group(1) if match else None


def function_start(lines: Sequence[str], line: int) -> int:
    """The index (0-based) of the `def` line of the function around 1-based `line`."""
    start = line - 1
    while start > 0 and not _DEF.match(lines[start]):
        start -= 1
    return start


def _function_body(lines: Sequence[str], line: int) -> Sequence[str]:
    """The lines of the function around `line` (from its `def` to the next one)."""
    end = line
    while end < len(lines) and not _DEF.match(lines[end]):
        end += 1
    return lines[function_start(lines, line) : end]


def uses_lock(ctx: GraphContext, frames: Sequence[Frame], lock: str) -> Frame | None:
    """The first frame whose function takes `lock` (`with lock:` or `lock.acquire(`)."""
    word = re.compile(rf"(?:with\s+\(?\s*{re.escape(lock)}\b|{re.escape(lock)}\.acquire\()")
    for frame in frames:
        lines = source_lines(ctx, frame)
        if lines is None or frame.line is None:
            continue
        if any(word.search(text) for text in _function_body(lines, frame.line)):
            return frame
    return None


def _forked(ctx: GraphContext, frames: Sequence[Frame]) -> Frame | None:
    """The frame that forked this process, when its stack shows one."""
    found = match_wait(frames, _FORK_FRAMES, depth=len(frames))
    if found is not None:
        return found
    for frame in frames:
        lines = source_lines(ctx, frame)
        if lines is not None and frame.line is not None and "os.fork(" in lines[frame.line - 1]:
            return frame
    return None


def same_thread(a: ThreadStack, b: ThreadStack) -> bool:
    """The same thread in two dumps (py-spy's `--json` gives pthread ids, text dumps the
    OS thread id; the name settles what the ids cannot)."""
    ids_a = {a.thread_id, str(a.os_thread_id)} - {"None"}
    ids_b = {b.thread_id, str(b.os_thread_id)} - {"None"}
    if ids_a & ids_b:
        return True
    return a.name is not None and a.name == b.name


def _same_stack(proc: Proc, thread: ThreadStack) -> bool:
    """The thread shows the same Python stack in every snapshot of its process that has it
    (at least two)."""
    key = tuple((f.function, f.file, f.line) for f in python_frames(thread))
    matched = 0
    for dump in proc.process.snapshots:
        match = next((t for t in dump.threads if same_thread(t, thread)), None)
        if match is None:
            continue
        if tuple((f.function, f.file, f.line) for f in python_frames(match)) != key:
            return False
        matched += 1
    return matched > 1


@producer("fork-lock")
def fork_lock(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A forked child's thread waits on a lock no thread of the child holds: it was locked
    when the parent forked, by a parent thread the child has no copy of."""
    known = procs(ctx)
    for child in known.values():
        for thread in child.dump.threads:
            frames = python_frames(thread)
            if not frames:
                continue
            # The cheap tests first: a lock wait, then a forked stack, then no motion.
            lock = lock_taken_at(ctx, frames[0])
            native = any(f.native and f.function in _NATIVE_LOCK for f in thread.frames)
            if lock is None and not native:
                continue
            fork = _forked(ctx, frames)
            if fork is None or not _same_stack(child, thread):
                continue
            name = lock or "a lock"
            # Held by a thread of the child? Then it is an ordinary lock wait, not this.
            others = [t for t in child.dump.threads if t is not thread]
            if lock and any(uses_lock(ctx, python_frames(t), lock) for t in others):
                continue
            if not lock and others:
                continue
            ppid = parent_of(bundle, child.host, child.pid) or child.dump.parent_pid
            parent = known.get((child.host, ppid)) if ppid is not None else None
            users: list[tuple[ThreadStack, Frame]] = []
            if parent is not None and lock:
                for t in parent.dump.threads:
                    used = uses_lock(ctx, python_frames(t), lock)
                    if used is not None:
                        users.append((t, used))
            holder = thread_key(child.host, child.pid, f"fork-holder:{name}")
            who = (
                ", ".join(f"thread {t.name or t.thread_id} ({where(f)})" for t, f in users)
                if users
                else "a thread of the parent"
            )
            parent_words = f"PID {ppid}" if ppid is not None else "the parent"
            yield Node(
                key=holder,
                kind=NodeKind.THREAD,
                state=NodeState.GONE,
                label=f"the holder of {name} at fork ({who} of {parent_words})",
                host=child.host,
                pid=child.pid,
                why=(
                    f"{name} was locked when {parent_words} forked at {where(fork)}; fork() "
                    "copies only the calling thread, so no thread of the child can release it"
                ),
                evidence=tuple(f"{t.source.path}:{t.source.line}" for t, _ in users),
                seen=child.seen,
            )
            waiter = _waiter_key(child, thread)
            node = _thread_node(child, thread, frames, f"waits on {name}")
            if node is not None:
                yield node
            yield Edge(
                waiters=(waiter,),
                waited=(holder,),
                kind=EdgeKind.LOCK,
                what=f"{name} (inherited locked across fork)",
                at=where(frames[0]),
                waited_at=", ".join(where(f) for _, f in users),
                evidence=(f"{thread.source.path}:{thread.source.line}",),
            )


# --------------------------------------------------------------------------- kernel

KERNEL_PARTS: tuple[tuple[str, str, str], ...] = (
    ("request_wait_answer", "FUSE", "the FUSE daemon serving the mount does not answer"),
    ("fuse_", "FUSE", "the FUSE daemon serving the mount does not answer"),
    ("nfs", "NFS", "the NFS server or the network to it does not answer"),
    ("rpc_wait", "NFS", "the NFS server or the network to it does not answer"),
    ("folio_wait", "storage", "block I/O to the disk does not complete"),
    ("wait_on_page", "storage", "block I/O to the disk does not complete"),
    ("io_schedule", "storage", "block I/O to the disk does not complete"),
    ("blk_", "storage", "block I/O to the disk does not complete"),
    ("bit_wait_io", "storage", "block I/O to the disk does not complete"),
    ("jbd2", "file system journal", "the file system's journal does not commit"),
    ("xfs_", "file system", "XFS does not complete the operation"),
    ("ext4_", "file system", "ext4 does not complete the operation"),
    ("nvidia", "GPU driver", "the GPU driver does not return"),
    ("uvm_", "GPU driver", "the GPU driver does not return"),
    ("os_", "GPU driver", "the GPU driver does not return"),
)
"""(wchan prefix or part, subsystem, what it means) for a task in State D."""


def kernel_part(wchan: str) -> tuple[str, str]:
    """(subsystem, meaning) of a wchan; ("the kernel", ...) when not known."""
    for part, subsystem, meaning in KERNEL_PARTS:
        if wchan.startswith(part) or (len(part) > 4 and part in wchan):
            return subsystem, meaning
    return "the kernel", f"a kernel wait ({wchan or 'wchan not captured'}) that does not end"


def _open_files(bundle: Bundle, host: str, pid: int) -> list[str]:
    skip = ("/dev/", "/proc/", "/sys/")
    return [
        e.target
        for e in latest(bundle.fd_entries, host, pid)
        if e.kind is FdKind.FILE
        and not e.target.startswith(skip)
        and not e.target.endswith((".log", ".so"))
        and "site-packages" not in e.target
    ]


@producer("kernel")
def kernel(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A process or thread in State D (the latest copy, or the kernel's hung-task warning
    about it) waits for the kernel."""
    known = procs(ctx)
    hung = {
        (e.host, e.pid): e
        for e in bundle.log_events
        if e.kind is LogEventKind.HUNG_TASK and e.pid is not None
    }
    for proc in known.values():
        status = latest(bundle.proc_states, proc.host, proc.pid)
        tstates = latest(bundle.thread_states, proc.host, proc.pid)
        d_threads = [t for t in tstates if t.state == "D"]
        main_d = next((s for s in status if s.state == "D"), None)
        warned = hung.get((proc.host, proc.pid)) or hung.get(("", proc.pid))
        if main_d is None and not d_threads and warned is None:
            continue
        main = main_thread(proc.dump)
        targets: list[tuple[ThreadStack | None, str, str]] = []
        if main_d is not None:
            targets.append((main, main_d.wchan, f"{main_d.source.path}:{main_d.source.line}"))
        elif warned is not None and not d_threads:
            # No status copy says D, but the kernel said the task was blocked that long.
            targets.append((main, "", f"{warned.source.path}:{warned.source.line}"))
        for t in d_threads:
            stack = next(
                (
                    s
                    for s in proc.dump.threads
                    if s.os_thread_id == t.tid or s.thread_id == str(t.tid)
                ),
                None,
            )
            if main_d is not None and (t.tid == proc.pid or stack is main):
                continue
            targets.append((stack, t.wchan, f"{t.source.path}:{t.source.line}"))
        for stack, wchan, src in targets:
            subsystem, meaning = kernel_part(wchan)
            key = f"kernel:{proc.host}:{proc.pid}:{wchan or '?'}"
            files = _open_files(bundle, proc.host, proc.pid)
            said = ""
            if warned is not None:
                when = f" at {warned.at:%H:%M:%S} UTC" if warned.at is not None else ""
                said = f"; the kernel's hung-task warning{when}: {warned.text[:120]}"
            yield Node(
                key=key,
                kind=NodeKind.REMOTE,
                state=NodeState.NOT_CAPTURED,
                label=subsystem,
                host=proc.host,
                why=meaning + (f"; open files: {', '.join(files[:3])}" if files else "") + said,
                evidence=(src,)
                + ((f"{warned.source.path}:{warned.source.line}",) if warned else ()),
            )
            frames = python_frames(stack) if stack is not None else ()
            waiter = proc.key if stack is None or stack is main else _waiter_key(proc, stack)
            if stack is not None and stack is not main:
                node = _thread_node(proc, stack, frames, f"State D in {wchan}")
                if node is not None:
                    yield node
            yield Edge(
                waiters=(waiter,),
                waited=(key,),
                kind=EdgeKind.KERNEL,
                what=f"State D in {wchan}" if wchan else "State D",
                at=where(caller(frames)) if frames else "",
                evidence=(src,),
            )
