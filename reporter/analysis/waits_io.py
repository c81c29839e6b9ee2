"""A thread waiting on I/O: the `pipes` and `kernel` producers.

A thread blocked writing a full pipe waits for the processes holding its read end, one
reading it for the writers; a thread blocked reading a socket waits for the peer of its
connection (another captured process, or a remote `host:port`), as HTTP when the frames
show it; a thread in State D waits for the kernel, and the wchan says which part
(`kernel_part`). Registered in `waits_proc`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from reporter.analysis.clues import main_thread
from reporter.analysis.procfacts import (
    DEAD_STATES,
    Proc,
    caller,
    children,
    cite,
    key_of,
    latest,
    main_threads,
    match_wait,
    memo,
    other_node,
    places_of,
    procs,
    python_frames,
    state_of_thread,
    thread_node,
    waiter_key,
    where,
)
from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    GraphContext,
    Node,
    NodeKind,
    NodeState,
    remote_key,
)
from reporter.model import (
    Bundle,
    FdEntry,
    FdKind,
    Frame,
    LogEventKind,
    SocketRow,
    ThreadStack,
    ThreadState,
)

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
    dead = [str(k[0]) for k in kids if k[1] in DEAD_STATES]
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
            waited_at=places_of(known, proc.host, pids),
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
    holders: dict[tuple[str, int], set[int]] = memo(
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


def pipes(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """Pipe writers blocked on a full pipe wait for its readers (and readers for writers);
    socket readers wait for the peer of their connection."""
    if not bundle.fd_entries and not bundle.socket_rows:
        return  # every edge here rests on the fd tables or the socket rows
    known = procs(ctx)
    for proc, frames, _ in main_threads(bundle, known):
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
        node = thread_node(proc, thread, frames, f"blocked in the kernel's {kstate.wchan}")
        if node is not None:
            yield node
        verb = "writes to" if writing else "reads from"
        full = ": the pipe is full and nobody reads it" if writing else ": nothing is written to it"
        yield Edge(
            waiters=(waiter_key(proc, thread),),
            waited=tuple(key_of(known, proc.host, pid) for pid in pids),
            kind=EdgeKind.PIPE,
            what=f"{verb} pipe:[{entry.inode}] (fd {entry.fd}){full}",
            at=where(caller(frames)),
            waited_at=places_of(known, proc.host, pids),
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
        ends: dict[tuple[str, str, str], SocketRow] = memo(
            "socket_ends",
            bundle.socket_rows,
            lambda: {(r.host, r.local, r.remote): r for r in bundle.socket_rows},
        )
        peer = ends.get((proc.host, row.remote, row.local))
        if peer is not None:
            waited.append(key_of(known, proc.host, peer.pid))
            places.append(places_of(known, proc.host, [peer.pid]))
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
    node = thread_node(proc, thread, frames, "blocked reading a socket")
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
        waiters=(waiter_key(proc, thread),),
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
            waiter = proc.key if stack is None or stack is main else waiter_key(proc, stack)
            if stack is not None and stack is not main:
                node = thread_node(proc, stack, frames, f"State D in {wchan}")
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
