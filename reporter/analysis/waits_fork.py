"""A lock inherited locked across `fork()`: the `fork-lock` producer.

A thread of a forked child waits on a lock no thread of the child can release (fork
copies only the calling thread); the parent's threads that take that lock, read from the
source of their frames, are named. Registered in `waits_proc`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from operator import attrgetter

from reporter.analysis.procfacts import (
    Proc,
    function_body,
    match_wait,
    parent_of,
    procs,
    python_frames,
    source_lines,
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
    thread_key,
)
from reporter.model import Bundle, Frame, ThreadStack

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


def lock_taken_at(ctx: GraphContext, frame: Frame) -> str | None:
    """The lock the frame's line takes (`with X:` or `X.acquire(`), or None."""
    lines = source_lines(ctx, frame)
    if lines is None or frame.line is None:
        return None
    text = lines[frame.line - 1]
    match = _WITH_LOCK.match(text) or _ACQUIRE.search(text)
    return match.group(1) if match else None


def uses_lock(ctx: GraphContext, frames: Sequence[Frame], lock: str) -> Frame | None:
    """The first frame whose function takes `lock` (`with lock:` or `lock.acquire(`)."""
    word = re.compile(rf"(?:with\s+\(?\s*{re.escape(lock)}\b|{re.escape(lock)}\.acquire\()")
    for frame in frames:
        lines = source_lines(ctx, frame)
        if lines is None or frame.line is None:
            continue
        if any(word.search(text) for text in function_body(lines, frame.line)):
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


_FRAMES = attrgetter("frames")


def fork_lock(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A forked child's thread waits on a lock no thread of the child holds: it was locked
    when the parent forked, by a parent thread the child has no copy of."""
    known = procs(ctx)
    # Threads of thousands of processes share a few frames tuples, and the first tests read
    # nothing else: their answer is kept per tuple (alive in the dumps meanwhile).
    no_lock: set[int] = set()
    for child in known.values():
        if no_lock.issuperset(map(id, map(_FRAMES, child.dump.threads))):
            continue  # every thread's tuple already ruled out: one C-level test
        for thread in child.dump.threads:
            if id(thread.frames) in no_lock:
                continue
            frames = python_frames(thread)
            if not frames:
                no_lock.add(id(thread.frames))
                continue
            # The cheap tests first: a lock wait, then a forked stack, then no motion.
            lock = lock_taken_at(ctx, frames[0])
            # No native frame when python_frames gave back the thread's own tuple.
            if lock is None and (
                frames is thread.frames
                or not any(f.native and f.function in _NATIVE_LOCK for f in thread.frames)
            ):
                no_lock.add(id(thread.frames))
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
            waiter = waiter_key(child, thread)
            node = thread_node(child, thread, frames, f"waits on {name}")
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
