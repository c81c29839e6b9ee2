"""Threads of one process that block on each other's locks: lock-order deadlocks.

Input: every process's snapshots (all threads, not only the main one), the stack table
(for the frame rules) and, where given, the source of the frames (`--source-root`, or
the bundle's `source_root`). Output: `ThreadDeadlock`s (proven cycles) and
`BlockedThreads` (threads blocked in every snapshot that no proven cycle explains).

A thread is *blocked* when it shows the same Python stack in every snapshot of its
process. It is *acquiring a lock* when:

- the source line it stands at is a `with EXPR:` or an `EXPR.acquire(...)` (how: `source line`);
- native frames above its innermost Python frame acquire a lock (`lock_PyThread_acquire_lock`,
  `rlock_acquire`, ...: `--native` dumps; how: `native frames`);
- its innermost Python frame is `threading`'s `acquire` / `__enter__` (a Semaphore, a
  Condition's lock; how: `threading frames`).

The locks a thread *holds* are the `with EXPR:` blocks around the line of each of its
frames, and `EXPR.acquire()` calls earlier in the same block with no `release()` after
them, read from the source. A lock is named as the code names it, with the class of
`self` (`Stats.lock`, from py-spy's qualified names or the source's `class` line); where
`--locals` shows the object (`self: <Stats at 0x7fb7...>`) or shows that a bare name is
no local (a module global), the lock is also known as one object.

A cycle (each thread waits for a lock the next one holds) is a deadlock. Its `proof` is
`objects` when every lock in it is known as one object, else `names` (the same attribute
of the same class: two instances could share the name). Without the source, nothing
says which lock a thread waits for: such threads are listed as blocked, with what would
settle it. Pure: the source is read through the `SourceReader` the caller passes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING

from reporter.analysis import moments
from reporter.analysis.classify import frame_at
from reporter.analysis.clues import dump_has_locals, has_locals
from reporter.analysis.moments import thread_key
from reporter.analysis.result import (
    BlockedThreads,
    LockThread,
    RankProcess,
    ThreadDeadlock,
)
from reporter.analysis.stacks import StackTable
from reporter.model import Frame, ProcessDump, ThreadStack, ThreadStatus

if TYPE_CHECKING:
    from reporter.analysis.excerpts import SourceReader

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_NAME}(?:\.{_NAME})*"
_WITH_RE = re.compile(rf"(?:async\s+)?with\s+\(?\s*({_DOTTED})\s*\)?\s*(?:as\s+{_NAME}\s*)?:")
_WITH_ANY_RE = re.compile(r"(?:async\s+)?with\s")
_WITH_CALL_RE = re.compile(rf"(?:async\s+)?with\s+\(?\s*{_DOTTED}\s*\(")
_ACQUIRE_RE = re.compile(rf"(?:{_NAME}\s*=\s*)?({_DOTTED})\.acquire\(")
_RELEASE_RE = re.compile(rf"({_DOTTED})\.release\(")
_DEF_RE = re.compile(rf"(?:async\s+)?def\s+{_NAME}")
_CLASS_RE = re.compile(rf"class\s+({_NAME})")
_OBJECT_RE = re.compile(
    r"^<(?:locked |unlocked )?([\w.]+)(?: object)?(?: [^<>]*)? at (0x[0-9a-fA-F]+)>$"
)
_NATIVE_LOCK = (
    "lock_PyThread_acquire_lock",
    "rlock_acquire",
    "acquire_timed",
    "PyThread_acquire_lock",
    "PyMutex_Lock",
    "_PyMutex_LockTimed",
    "pthread_mutex_lock",
    "__lll_lock_wait",
)
_THREADING_ACQUIRE = frozenset({"acquire", "__enter__"})
# Threads py-spy marks busy are running, not blocked, even when their stack repeats.
_RUNNING = frozenset({ThreadStatus.ACTIVE, ThreadStatus.ACTIVE_GIL})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Lock:
    """A lock as one thread's code names it."""

    text: str
    name_key: str
    obj_key: str | None
    line: str = ""
    """`file:line` where it was taken (held locks) or is being taken (the wait)."""


@dataclass(slots=True, kw_only=True)
class _Blocked:
    thread: ThreadStack
    how: str
    wait: _Lock | None
    held: list[_Lock]
    at: Frame


def find(
    processes: Sequence[RankProcess],
    table: StackTable,
    sources: SourceReader | None,
) -> tuple[tuple[ThreadDeadlock, ...], tuple[BlockedThreads, ...]]:
    """Lock cycles and otherwise blocked threads, per process (see the module docstring)."""
    deadlocks: list[ThreadDeadlock] = []
    blocked_out: list[BlockedThreads] = []
    ruled_out: set[int] = set()
    kept: set[int] = set()
    for process in processes:
        dumps = [d for d in process.snapshots if d.threads]
        if not dumps or _none_blocked(dumps, table, ruled_out, kept):
            continue
        rank = process.identity.rank
        blocked = _blocked_threads(dumps, table, sources)
        cycles, behind = _cycles(blocked)
        for cycle in cycles:
            members = {id(b) for b in cycle}
            deadlocks.append(
                ThreadDeadlock(
                    pid=process.identity.pid,
                    rank=rank,
                    proof="objects" if _strong(cycle) else "names",
                    threads=tuple(_lock_thread(b) for b in cycle),
                    behind=tuple(_lock_thread(b) for b in behind if id(b) not in members),
                    snapshots=moments.count(dumps),
                    sources=tuple(dict.fromkeys(str(b.thread.source) for b in cycle)),
                )
            )
        if cycles:
            continue
        shown = _worth_showing(blocked, dumps, table)
        if shown:
            blocked_out.append(
                BlockedThreads(
                    pid=process.identity.pid,
                    rank=rank,
                    threads=tuple(_lock_thread(b) for b in shown),
                    snapshots=moments.count(dumps),
                    settle=_settle(shown, process),
                )
            )
    return tuple(deadlocks), tuple(blocked_out)


def _none_blocked(
    dumps: Sequence[ProcessDump], table: StackTable, ruled_out: set[int], kept: set[int]
) -> bool:
    """True when the frame rules alone rule out every thread of `dumps` (see
    `_blocked_threads`): most processes of a big job. The answer is kept per frames tuple
    (parsers share one per distinct thread block; the dumps keep them alive), in
    `ruled_out` or `kept`, so a process made of known tuples is one C-level subset test."""
    ids = set(map(id, map(_FRAMES, chain.from_iterable(map(_THREADS, dumps)))))
    if ids <= ruled_out:
        return True
    if not ids.isdisjoint(kept):
        return False
    for dump in dumps:
        for thread in dump.threads:
            frames = thread.frames
            if id(frames) in ruled_out:
                continue
            if frames:
                facts = table.intern(frames).facts
                if not (
                    facts.collective is not None
                    or facts.idle is not None
                    or (facts.wait is not None and facts.wait != "lock-acquire")
                ):
                    kept.add(id(frames))
                    return False
            ruled_out.add(id(frames))
    return True


_FRAMES = attrgetter("frames")
_THREADS = attrgetter("threads")


def _python_key(thread: ThreadStack) -> tuple[tuple[str, str, int | None], ...]:
    return tuple((f.function, f.file, f.line) for f in thread.frames if not f.native)


def _blocked_threads(
    dumps: Sequence[ProcessDump], table: StackTable, sources: SourceReader | None
) -> list[_Blocked]:
    """Threads with the same Python stack in every snapshot, with what they wait for."""
    by_id: dict[str, list[ThreadStack]] = {}
    for dump in dumps:
        for thread in dump.threads:
            by_id.setdefault(thread_key(thread), []).append(thread)
    # Snapshots with `--locals`, looked for only once a thread passes the frame rules.
    with_locals: list[ProcessDump] | None = None
    out: list[_Blocked] = []
    for tid, seen in by_id.items():
        if len(seen) != len(dumps) or not seen[-1].frames:
            continue
        # The frame rules first (cached per distinct stack): a thread in a collective, an
        # idle helper or a known wait other than a lock (sleep, poll, queue, Condition.wait,
        # join) is not waiting for a lock. Most threads of a big job end here.
        facts = table.intern(seen[-1].frames).facts
        if facts.collective is not None or facts.idle is not None:
            continue
        if facts.wait is not None and facts.wait != "lock-acquire":
            continue
        if any(t.status in _RUNNING for t in seen):
            continue
        if len({table.intern(t.frames).exact_id for t in seen}) != 1 and (
            len({_python_key(t) for t in seen}) != 1
        ):
            continue
        if with_locals is None:
            with_locals = [d for d in dumps if dump_has_locals(d)]
        # The snapshot with locals for this thread, if any: frames align with the others.
        local_view = next(
            (
                t
                for d in reversed(with_locals)
                for t in d.threads
                if thread_key(t) == tid and has_locals(t.frames)
            ),
            None,
        )
        found = _read_thread(seen, local_view, bool(with_locals), table, sources)
        if found is not None:
            out.append(found)
    return out


def _read_thread(
    seen: Sequence[ThreadStack],
    local_view: ThreadStack | None,
    locals_taken: bool,
    table: StackTable,
    sources: SourceReader | None,
) -> _Blocked | None:
    """What one blocked thread waits for and holds; None when it is not waiting on a lock
    and not a candidate (a known wait such as a sleep, a queue or a poll, or an idle helper)."""
    native_lock = any(
        any(f.native and f.function.startswith(_NATIVE_LOCK) for f in t.frames[: _innermost(t)])
        for t in seen
    )
    thread = seen[-1]
    python = [(i, f) for i, f in enumerate(thread.frames) if not f.native and f.line is not None]
    if not python:
        return None
    local_frames = (
        [f for f in local_view.frames if not f.native and f.line is not None]
        if local_view is not None
        else []
    )
    how = ""
    index = 0
    first = python[0][1]
    if _threading(first):
        if first.short_function not in _THREADING_ACQUIRE:
            return None  # Condition.wait, Event.wait, join: not a lock acquisition
        # The application line that asked for it.
        index = next((n for n, (_, f) in enumerate(python) if not _threading(f)), 0)
        how = "threading frames"
    elif native_lock:
        how = "native frames"
    at = python[index][1]
    held: list[_Lock] = []
    wait: _Lock | None = None
    for n, (_, frame) in enumerate(python):
        if _threading(frame):
            continue
        lines = _source(frame, sources)
        if lines is None:
            continue
        scope = _Scope(
            frame, lines, local_frames[n] if n < len(local_frames) else None, locals_taken
        )
        if n == index:
            expr = _lock_at(lines, frame.line or 0)
            if expr is not None:
                wait = scope.lock(expr, frame.line or 0)
                how = how or "source line"
            elif not how:
                # The source is known and the line takes no lock: not a lock wait.
                return None
        held.extend(scope.held())
    if not how:
        if table.intern(thread.frames).facts.wait is not None:
            return None  # `lock-acquire` from a frame rule the reads above did not confirm
        how = "unknown"
    return _Blocked(thread=thread, how=how, wait=wait, held=held, at=at)


def _innermost(thread: ThreadStack) -> int:
    """Index of the innermost Python frame (native frames before it are above it)."""
    return next((i for i, f in enumerate(thread.frames) if not f.native), len(thread.frames))


def _threading(frame: Frame) -> bool:
    return frame.file.rsplit("/", 1)[-1] == "threading.py"


def _source(frame: Frame, sources: SourceReader | None) -> tuple[str, ...] | None:
    if sources is None or frame.file.startswith("<"):
        return None
    found = sources.find(frame.file)
    if found is None or not frame.line or frame.line > len(found.lines):
        return None
    return found.lines


def _lock_at(lines: Sequence[str], line: int) -> str | None:
    """The lock a line takes: `with EXPR:` or `EXPR.acquire(`; "" for a `with` on something
    that is not a plain name (a call, several items); None for a line that takes no lock."""
    text = lines[line - 1].strip()
    match = _WITH_RE.match(text)
    if match is not None:
        return match.group(1)
    if _WITH_CALL_RE.match(text):
        return None  # `with open(...)`, `with torch.no_grad():`: a call makes the context
    if _WITH_ANY_RE.match(text):
        return ""
    match = _ACQUIRE_RE.search(text)
    if match is not None:
        return match.group(1)
    return None


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


class _Scope:
    """One frame's function as the source shows it: its class, locks around a line."""

    def __init__(
        self, frame: Frame, lines: Sequence[str], local: Frame | None, locals_taken: bool
    ) -> None:
        self.frame = frame
        self.lines = lines
        self.local = local
        self.locals_taken = locals_taken
        self.cls = _class_of(frame, lines)

    def lock(self, expr: str, line: int) -> _Lock:
        """`expr` as a lock, named with the class of `self` and, where `--locals` show it,
        the object."""
        where = f"{self.frame.file.rsplit('/', 1)[-1]}:{line}"
        if not expr:
            return _Lock(text="?", name_key=f"?{where}", obj_key=None, line=where)
        base, _, rest = expr.partition(".")
        tail = f".{rest}" if rest else ""
        name = f"{self.cls}{tail}" if base in ("self", "cls") and self.cls else expr
        file = self.frame.file.rsplit("/", 1)[-1]
        name_key = name if base in ("self", "cls") and self.cls else f"{file}:{expr}"
        obj_key: str | None = None
        shown = ""
        if self.local is not None:
            values = {v.name: v.repr for v in self.local.locals}
            if base in values:
                match = _OBJECT_RE.match(values[base].strip())
                if match is not None and match.group(1) != "cell":
                    obj_key = f"{match.group(2)}{tail}"
                    shown = f"{match.group(1)} at {match.group(2)}"
                    if base not in ("self", "cls"):
                        name = f"{match.group(1).rsplit('.', 1)[-1]}{tail}" if tail else expr
                        name_key = name if tail else name_key
            elif base not in ("self", "cls"):
                # No local of that name in a `--locals` dump: a module global, one object.
                obj_key = f"global:{file}:{expr}"
                shown = "module global"
        text = f"{name} ({shown})" if shown else name
        return _Lock(text=text, name_key=name_key, obj_key=obj_key, line=where)

    def held(self) -> list[_Lock]:
        """Locks taken around this frame's line: enclosing `with` blocks, and `acquire()`
        calls earlier in an enclosing block with no `release()` of the same name after."""
        line = self.frame.line or 0
        out: list[_Lock] = []
        current = _indent(self.lines[line - 1])
        released: set[str] = set()
        for number in range(line - 1, 0, -1):
            text = self.lines[number - 1]
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                continue
            indent = _indent(text)
            if indent <= current:
                release = _RELEASE_RE.search(stripped)
                if release is not None:
                    released.add(release.group(1))
                acquire = _ACQUIRE_RE.search(stripped)
                if acquire is not None and acquire.group(1) not in released:
                    out.append(self.lock(acquire.group(1), number))
            if indent < current:
                if _DEF_RE.match(stripped) or _CLASS_RE.match(stripped):
                    break
                match = _WITH_RE.match(stripped)
                if match is not None:
                    out.append(self.lock(match.group(1), number))
                current = indent
        return out


def _class_of(frame: Frame, lines: Sequence[str]) -> str:
    """The class of a method: from py-spy's qualified name (`Stats.export`), else the
    `class` line around its `def` in the source ("" for a plain function)."""
    qualified = frame.function.rsplit(".", 2)
    if len(qualified) >= 2 and qualified[-2] != "<locals>":
        return qualified[-2]
    line = frame.line or 0
    current = _indent(lines[line - 1]) if 0 < line <= len(lines) else 0
    seen_def = False
    for number in range(line - 1, 0, -1):
        text = lines[number - 1]
        stripped = text.strip()
        if not stripped or _indent(text) >= current:
            continue
        current = _indent(text)
        if _DEF_RE.match(stripped):
            if seen_def:
                return ""  # a function inside a function
            seen_def = True
            continue
        match = _CLASS_RE.match(stripped)
        if match is not None:
            return match.group(1) if seen_def else ""
    return ""


def _matches(wait: _Lock, held: _Lock) -> tuple[bool, bool]:
    """(same lock, proven as one object)."""
    if wait.obj_key is not None and held.obj_key is not None:
        same = wait.obj_key == held.obj_key
        return same, same
    return wait.name_key == held.name_key and not wait.name_key.startswith("?"), False


def _cycles(blocked: Sequence[_Blocked]) -> tuple[list[list[_Blocked]], list[_Blocked]]:
    """Simple cycles of waits-for (each waits for a lock the next holds), one per strongly
    connected group, and the other lock waiters held up by a cycle member."""
    waiters = [b for b in blocked if b.wait is not None]
    edges: dict[int, list[int]] = {i: [] for i in range(len(waiters))}
    for i, waiter in enumerate(waiters):
        assert waiter.wait is not None
        for j, holder in enumerate(waiters):
            if any(_matches(waiter.wait, lock)[0] for lock in holder.held):
                edges[i].append(j)
    cycles: list[list[int]] = []
    placed: set[int] = set()
    for start in range(len(waiters)):
        if start in placed:
            continue
        path: list[int] = []
        node = start
        while node not in path and edges[node]:
            path.append(node)
            # Prefer another thread: a wait on a lock the thread holds itself is a cycle
            # only when proven (below).
            node = next((j for j in edges[node] if j != node), edges[node][0])
        if node in path and not placed.intersection(path):
            cycle = path[path.index(node) :]
            if len(cycle) == 1 and not _strong([waiters[cycle[0]]]):
                # One thread waiting for a lock of the same name it holds: hand-over-hand
                # locking of two instances looks the same by name. Only one object proves it.
                continue
            cycles.append(cycle)
            placed.update(cycle)
    in_cycle = {i for c in cycles for i in c}
    behind = [
        waiters[i]
        for i in range(len(waiters))
        if i not in in_cycle and any(j in in_cycle for j in edges[i])
    ]
    return [[waiters[i] for i in c] for c in cycles], behind


def _strong(cycle: Sequence[_Blocked]) -> bool:
    """Every lock in the cycle proven as one object."""
    for i, member in enumerate(cycle):
        nxt = cycle[(i + 1) % len(cycle)]
        assert member.wait is not None
        if not any(_matches(member.wait, lock) == (True, True) for lock in nxt.held):
            return False
    return True


def _lock_thread(blocked: _Blocked) -> LockThread:
    wait = blocked.wait
    held = blocked.held
    return LockThread(
        tid=thread_key(blocked.thread),
        name=blocked.thread.name,
        waits_at=wait.line if wait is not None else _file_line(blocked.at),
        waits_in=blocked.at.function,
        waits_for=wait.text if wait is not None else "",
        holding=tuple(dict.fromkeys(lock.text for lock in held)),
        holding_from=held[0].line if held else "",
        how=blocked.how,
        source=str(blocked.thread.source),
    )


def _file_line(frame: Frame) -> str:
    return f"{frame.file.rsplit('/', 1)[-1]}:{frame.line}" if frame.line else frame_at(frame)


def _worth_showing(
    blocked: Sequence[_Blocked], dumps: Sequence[ProcessDump], table: StackTable
) -> list[_Blocked]:
    """Blocked threads worth a line when no cycle is proven: two or more threads known to
    wait for locks, or one while nothing in the process moves; threads blocked at an
    application line for no known reason (no source) only when two or more of them are
    and nothing in the process moves, across two or more snapshots."""
    known = [b for b in blocked if b.how != "unknown"]
    unknown = [b for b in blocked if b.how == "unknown"]
    if len(known) < 2 and not (known or len(unknown) >= 2):
        return []
    quiet = len(dumps) >= 2 and all(
        _quiet(tid, dumps, table) for tid in {thread_key(t) for d in dumps for t in d.threads}
    )
    if len(known) >= 2 or (known and quiet):
        return known + (unknown if quiet else [])
    if len(unknown) >= 2 and quiet:
        return unknown
    return []


def _quiet(tid: str, dumps: Sequence[ProcessDump], table: StackTable) -> bool:
    """True when a thread does not move either: the same stack in every snapshot."""
    keys = {_python_key(t) for d in dumps for t in d.threads if thread_key(t) == tid}
    return len(keys) <= 1 or all(
        table.intern(t.frames).facts.idle is not None
        for d in dumps
        for t in d.threads
        if thread_key(t) == tid
    )


def _settle(shown: Sequence[_Blocked], process: RankProcess) -> str:
    pid = process.identity.pid
    target = f"--pid {pid}" if pid is not None else "--pid PID"
    dump = f"`py-spy dump --locals {target}` twice, a few seconds apart,"
    if any(b.how == "unknown" for b in shown):
        return (
            "the source of the lines they block at (`--source-root` with the deployed code) "
            f"shows whether they take locks, and {dump} which objects"
        )
    return f"{dump} shows which lock objects they hold and wait for"
