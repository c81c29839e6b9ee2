"""What the process producers read: the captured processes and their latest `/proc` records.

`procs` gives every captured process once (`Proc`: its node key and latest stack), and
the helpers here answer what the producers of `waits_proc` and `waits_dist` ask of the
evidence: a process's latest records of a kind (`latest`), its family (`family_of`,
`children`), how it died (`death_of`, `failed_pids`), the node of another process
(`other_node`), where a stack waits (`match_wait`, `caller`, `where`) and the source
around a frame (`source_lines`, `function_body`). Reads shared by several producers are
made once per bundle (`_MEMO`). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import NamedTuple, TypeVar

from reporter.analysis.clues import main_thread
from reporter.analysis.graphproducers import unit_key
from reporter.analysis.result import RankProcess
from reporter.analysis.waitgraph import (
    GraphContext,
    Node,
    NodeKind,
    NodeState,
    process_key,
    thread_key,
)
from reporter.model import (
    Bundle,
    FdEntry,
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


class Proc(NamedTuple):
    """A captured process as the producers here see it: its node key and latest stack (a
    named tuple: one is made for every process, faster than a frozen dataclass)."""

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


def memo(name: str, of: object, build: Callable[[], T]) -> T:
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
    return memo("procs", ctx.analysis, lambda: _procs(ctx))


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
    groups: dict[tuple[str, int | None], tuple[R, ...]] = memo(
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


_NATIVE = attrgetter("native")
_FUNCTION = attrgetter("function")


def cite(dump: ProcessDump) -> str:
    return f"{dump.source.path}:{dump.source.line or 1}"


def python_frames(thread: ThreadStack) -> tuple[Frame, ...]:
    """The Python frames of a thread, innermost first (native frames dropped).

    A thread with no native frame gets its own `frames` back (the same tuple).
    """
    # map + attrgetter: asked for every thread by several producers, so no Python loop.
    if not any(map(_NATIVE, thread.frames)):
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
    top = frames[:depth]
    # Asked of every rank's main thread by several producers; most name no function of the
    # table, which a C-level scan tells.
    if files.keys().isdisjoint(map(_FUNCTION, top)):
        return None
    for frame in top:
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
    if not bundle.thread_states:
        return None  # asked of every rank; most bundles hold no kernel thread states
    states = thread_states_of(bundle, host, pid)
    tid = thread.os_thread_id
    if tid is None and thread.thread_id.isdigit():
        tid = int(thread.thread_id)
    if tid is None and thread.name == "MainThread":
        tid = pid
    return states.get(tid) if tid is not None else None


# --------------------------------------------------------------------------- how a process ended


DEAD_STATES = {"Z": NodeState.ZOMBIE, "X": NodeState.GONE}


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
    state = DEAD_STATES.get(state_letter)
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
    by_parent = memo("by_parent", known, lambda: _by_parent(bundle, known))
    return [
        (pid, "", "", cite(known[(parent.host, pid)].dump))
        for pid in sorted(by_parent.get((parent.host, parent.pid), ()))
        if pid != parent.pid
    ]


def pick_children(
    known: dict[tuple[str, int], Proc], host: str, kids: list[tuple[int, str, str, str]]
) -> list[tuple[int, str, str, str]]:
    """The children a wait is for: the dead ones first (a zombie is what a blocked wait
    never hears from), else the captured ones, else all."""
    dead = [k for k in kids if k[1] in DEAD_STATES]
    if dead:
        return dead
    captured = [k for k in kids if (host, k[0]) in known]
    return captured or kids


# --------------------------------------------------------------------------- waiting threads


def main_threads(
    bundle: Bundle, known: dict[tuple[str, int], Proc]
) -> list[tuple[Proc, tuple[Frame, ...], ThreadState | None]]:
    """Each process's latest main thread: its Python frames and its kernel state."""
    return memo("mains", known, lambda: _mains(bundle, known))


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


def places_of(known: dict[tuple[str, int], Proc], host: str, pids: Sequence[int]) -> str:
    out = []
    for pid in pids:
        proc = known.get((host, pid))
        thread = main_thread(proc.dump) if proc is not None else None
        if thread is not None and thread.frames:
            out.append(where(caller(python_frames(thread))))
    return ", ".join(dict.fromkeys(p for p in out if p))


def waiter_key(proc: Proc, thread: ThreadStack) -> str:
    """A process's main thread waits for the process; another thread is its own node."""
    main = main_thread(proc.dump)
    if main is None or thread is main:
        return proc.key
    return thread_key(proc.host, proc.pid, thread.thread_id)


def thread_node(proc: Proc, thread: ThreadStack, frames: Sequence[Frame], why: str) -> Node | None:
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


_DEF = re.compile(r"\s*(?:async\s+)?def\s")


def source_lines(ctx: GraphContext, frame: Frame) -> tuple[str, ...] | None:
    """The source of a frame's file when the bundle or `--source-root` gives it."""
    if ctx.sources is None or not frame.line or frame.file.startswith("<"):
        return None
    found = ctx.sources.find(frame.file)
    if found is None or frame.line > len(found.lines):
        return None
    return found.lines


def function_start(lines: Sequence[str], line: int) -> int:
    """The index (0-based) of the `def` line of the function around 1-based `line`."""
    start = line - 1
    while start > 0 and not _DEF.match(lines[start]):
        start -= 1
    return start


def function_body(lines: Sequence[str], line: int) -> Sequence[str]:
    """The lines of the function around `line` (from its `def` to the next one)."""
    end = line
    while end < len(lines) and not _DEF.match(lines[end]):
        end += 1
    return lines[function_start(lines, line) : end]
