"""A process waiting for its children: the `child-process` and `queue-workers` producers.

A parent in `waitpid` (`Popen.wait`, `subprocess.run`, `Process.join`, the kernel's
`do_wait`) waits for its child; a consumer blocked in `Queue.get`, `Connection.recv`,
`Future.result`, a pool's `AsyncResult.get` or `multiprocessing.connection.wait` waits
for its worker children. Registered in `waits_proc`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from reporter.analysis.procfacts import (
    Proc,
    caller,
    children,
    cite,
    failed_pids,
    key_of,
    main_threads,
    match_wait,
    memo,
    other_node,
    pick_children,
    places_of,
    procs,
    where,
)
from reporter.analysis.waitgraph import Edge, EdgeKind, GraphContext, Node
from reporter.model import Bundle, Frame, ThreadState

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


def _child_waits(
    mains: list[tuple[Proc, tuple[Frame, ...], ThreadState | None]],
) -> list[Frame | None]:
    """`child_wait` of each main thread, asked by two producers: worked out once."""
    return memo("child-waits", mains, lambda: [child_wait(f, k) for _, f, k in mains])


def child_process(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A parent in a child wait waits for its child, whose own state is its latest evidence."""
    known = procs(ctx)
    mains = main_threads(bundle, known)
    for (parent, frames, kstate), found in zip(mains, _child_waits(mains), strict=True):
        if found is None:
            continue
        # The outermost of the calls that wait (`run` over `communicate` over `wait`).
        entries = [f for f in frames[:12] if match_wait((f,), _CHILD_ENTRY, depth=1)]
        entry = entries[-1] if entries else found
        kids = pick_children(known, parent.host, children(bundle, known, parent))
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
            waited_at=places_of(known, parent.host, [k[0] for k in kids]),
            evidence=tuple(evidence),
        )


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


def queue_workers(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A consumer blocked on a queue, pipe, future or pool result waits for its worker
    children; a dead one is named with how it died."""
    known = procs(ctx)
    mains = main_threads(bundle, known)
    for (consumer, frames, _), child in zip(mains, _child_waits(mains), strict=True):
        if child is not None:
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
        kids = pick_children(known, consumer.host, kids)
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
            waited_at=places_of(known, consumer.host, [k[0] for k in kids]),
            evidence=(cite(consumer.dump), *(k[3] for k in kids if k[3])),
        )
