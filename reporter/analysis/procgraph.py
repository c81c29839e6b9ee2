"""One process judged on its own snapshots: its threads, the GIL and its asyncio event loops.

Producer `threads` (for bundles of a few processes, `MAX_PROCESSES`): one node per thread with
its state across the moments (`moments.py`): moving, running (active at one line), idle (an
idle-by-design wait, an event loop in `select`), blocked; a `gil` edge from every other
thread to a thread that holds the GIL at one line in every moment; an `event-loop` node
per asyncio loop, and when its thread sits in a synchronous call under a loop callback in
every moment, an `event-loop` edge from the loop to that thread and, where `--locals` shows
the address it calls, an `http` edge to that remote peer.

`reading` says what the one process is doing, for the verdict table (`process` condition):

    gil           a thread holds the GIL at one line in every moment while the others wait
    loop-blocked  an event loop's thread in one synchronous call under a callback throughout
    moving        some thread's stack changes between moments
    busy          a thread active at one line in every moment, and nothing moves
    blocked       a thread (MainThread first) waits at one line in every moment
    idle          every thread waits for work by design
    one-moment    one moment only: stuck and slow look alike
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from reporter.analysis import moments
from reporter.analysis.classify import FrameKind, frame_at
from reporter.analysis.clues import main_thread
from reporter.analysis.graphproducers import process_node
from reporter.analysis.progress import snapshot_idle
from reporter.analysis.result import RankProcess
from reporter.analysis.stacks import StackTable
from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    GraphContext,
    Node,
    NodeKind,
    NodeState,
    loop_key,
    producer,
    remote_key,
    thread_key,
)
from reporter.core.text import plural
from reporter.model import Bundle, Frame, ProcessDump, ThreadStack, ThreadStatus

MAX_PROCESSES = 8
"""Thread nodes are made for bundles of at most this many processes: the one-process classes
need them, and a job of thousands of ranks is read through its ranks."""

_ACTIVE = frozenset({ThreadStatus.ACTIVE, ThreadStatus.ACTIVE_GIL})
_STDLIB = frozenset(sys.stdlib_module_names)
_INSTALL = re.compile(r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)")


def stdlib(frame: Frame) -> bool:
    """A frame of the standard library: a full path inside the interpreter's `lib/python3.N/`
    (not site-packages), or py-spy's short name whose first part is a stdlib module
    (`urllib/request.py`, `socket.py`)."""
    if frame.file.startswith("/"):
        return _INSTALL.search(frame.file) is not None
    head = frame.file.split("/", 1)[0].removesuffix(".py")
    return head in _STDLIB


def _own(frame: Frame, table: StackTable) -> bool:
    """The program's own code: an application frame outside the standard library."""
    return (
        not frame.native
        and not stdlib(frame)
        and (table.classifier.classify(frame).kind is FrameKind.APPLICATION)
    )


_URL = re.compile(r"\b(?:https?|wss?)://([\w.\-]+|\[[0-9a-fA-F:]+\])(?::(\d+))?[^\s'\"]*")
_ADDR = re.compile(r"\('(\d{1,3}(?:\.\d{1,3}){3}|[\w.\-]+)', (\d{1,5})\)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Track:
    """One thread across the moments of its process."""

    key: str
    name: str
    seen: tuple[ThreadStack, ...]
    """Its stack in each moment it was seen (the dump of that moment with the most to say)."""
    moments: int
    moving: bool
    active: bool
    """Active (on CPU) in every moment."""
    gil: bool
    """Holding the GIL (`active+gil`, `owns_gil`) in every moment."""
    idle: bool
    """Waiting for work by design in every moment."""
    loop: LoopPlace | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopPlace:
    """Where an asyncio event loop's thread is: idle in `select`, or in a callback."""

    idle: bool
    chain: tuple[Frame, ...]
    """Application frames inside the callback, outermost first."""
    call: Frame | None
    """The first frame the innermost application frame calls (the blocking call)."""


def _python(thread: ThreadStack) -> tuple[tuple[str, str, int | None], ...]:
    return tuple((f.function, f.file, f.line) for f in thread.frames if not f.native)


def _loop_place(thread: ThreadStack, table: StackTable) -> LoopPlace | None:
    frames = [f for f in thread.frames if not f.native]
    at = next(
        (
            i
            for i, f in enumerate(frames)
            if f.file.endswith("asyncio/base_events.py")
            and f.short_function in ("_run_once", "run_forever")
        ),
        None,
    )
    if at is None:
        return None
    inner = frames[:at]
    if not inner or inner[-1].file.endswith("selectors.py"):
        return LoopPlace(idle=True, chain=(), call=None)
    apps = [i for i, f in enumerate(inner) if _own(f, table)]
    chain = tuple(inner[i] for i in reversed(apps))
    call = inner[apps[0] - 1] if apps and apps[0] > 0 else None
    return LoopPlace(idle=False, chain=chain, call=call)


def _best(dumps: Sequence[ProcessDump], key: str) -> ThreadStack | None:
    """The thread `key` in one moment: a dump with `--locals` first, then text or JSON (their
    Python frames are whole), then `--native`."""
    found = [t for d in dumps for t in d.threads if moments.thread_key(t) == key]
    if not found:
        return None
    with_locals = [t for t in found if any(f.locals for f in t.frames)]
    plain = [t for t in found if not any(f.native for f in t.frames)]
    return (with_locals or plain or found)[0]


def _gil(dumps: Sequence[ProcessDump], key: str) -> bool | None:
    """Whether the thread holds the GIL in this moment (None: no dump of it says)."""
    says = [
        t.owns_gil if t.owns_gil is not None else t.status is ThreadStatus.ACTIVE_GIL
        for d in dumps
        for t in d.threads
        if moments.thread_key(t) == key
        and (t.owns_gil is not None or t.status is not ThreadStatus.UNKNOWN)
    ]
    return any(says) if says else None


def tracks(process: RankProcess, table: StackTable) -> tuple[tuple[Track, ...], int]:
    """Every thread of `process` across its moments, and the number of moments."""
    groups = moments.group([d for d in process.snapshots if d.threads])
    keys: dict[str, str] = {}
    last = groups[-1][0] if groups else None
    shown = main_thread(last) if last is not None else None
    for group in groups:
        for dump in group:
            for thread in dump.threads:
                key = moments.thread_key(thread)
                name = thread.name if thread.name and thread.name != "?" else ""
                if not name:
                    main = shown is not None and key == moments.thread_key(shown)
                    name = "the main thread" if main else f"thread {thread.thread_id}"
                keys.setdefault(key, name)
    out: list[Track] = []
    for key, name in keys.items():
        seen: list[ThreadStack] = []
        gil: list[bool | None] = []
        for group in groups:
            best = _best(group, key)
            if best is not None:
                seen.append(best)
                gil.append(_gil(group, key))
        if not seen or not seen[-1].frames:
            continue
        places = {_python(t) for t in seen}
        idle = all(snapshot_idle(table.intern(t.frames), t.status) for t in seen)
        loops = [_loop_place(t, table) for t in seen]
        loop = loops[-1]
        if loop is not None and all(p is not None and p.idle for p in loops):
            idle = True
        elif loop is not None:
            # A loop's thread in a callback waits for that call, not for work.
            idle = False
        out.append(
            Track(
                key=key,
                name=name,
                seen=tuple(seen),
                moments=len(seen),
                moving=len(places) > 1,
                active=all(t.status in _ACTIVE for t in seen),
                gil=all(g is True for g in gil),
                idle=idle,
                loop=loop,
            )
        )
    return tuple(out), len(groups)


def gil_holder(found: Sequence[Track], count: int) -> Track | None:
    """The one thread holding the GIL at one line in every moment while no thread moves."""
    holders = [t for t in found if t.gil and not t.moving and t.moments == count]
    if len(holders) != 1 or any(t.moving for t in found):
        return None
    return holders[0]


def gil_waiters(found: Sequence[Track], holder: Track) -> list[Track]:
    """The other threads that want the GIL: py-spy marks a thread trying to take it
    `active` (without `+gil`); a thread idle by design in every moment does not."""
    return [
        t
        for t in found
        if t is not holder and (not t.idle or any(s.status is ThreadStatus.ACTIVE for s in t.seen))
    ]


def _at(track: Track, table: StackTable) -> str:
    """Where the thread is: its innermost own frame, with the library call it is in
    (`check_rules (rules.py:100), in match`); an idle loop's wait."""
    thread = track.seen[-1]
    if track.loop is not None and track.loop.idle:
        return "select in its asyncio event loop"
    frames = [f for f in thread.frames if not f.native]
    facts = table.intern(thread.frames).facts
    if facts.idle_loop is not None:
        return frame_at(facts.idle_loop)
    if facts.collective is not None or facts.wait is not None:
        # The frame rules know the call: `barrier at f (x.py:9)`.
        site = f", called at {facts.site_text}" if facts.site is not None else ""
        return f"{facts.collective or facts.wait}{site}"
    own = next((i for i, f in enumerate(frames) if _own(f, table)), None)
    if own is None:
        return frame_at(frames[0]) if frames else "native code"
    inside = f", in {frames[own - 1].short_function}" if own > 0 else ""
    return frame_at(frames[own]) + inside


def _thread_name(track: Track) -> str:
    if track.name.startswith(("thread ", "the main thread")) or track.name == track.key:
        return track.name if track.name != track.key else f"thread {track.key}"
    return f"{track.name} ({track.key})"


def _of(pid: int | None) -> str:
    return f" of PID {pid}" if pid is not None else ""


def _peer(track: Track) -> tuple[str, int | None] | None:
    """The address a blocked thread calls, from `--locals` (a URL or a (host, port) pair)."""
    for thread in reversed(track.seen):
        for frame in thread.frames:
            for local in frame.locals:
                text = local.repr
                url = _URL.search(text)
                if url is not None:
                    return url.group(1), int(url.group(2)) if url.group(2) else None
                addr = _ADDR.search(text)
                if addr is not None:
                    return addr.group(1), int(addr.group(2))
    return None


def _state(track: Track, moments_seen: int) -> NodeState:
    if moments_seen < 2 or track.moments < 2:
        return NodeState.UNKNOWN
    if track.moving:
        return NodeState.MOVING
    if track.idle:
        return NodeState.IDLE
    if track.active:
        return NodeState.RUNNING
    return NodeState.BLOCKED


def _owner(ctx: GraphContext, process: RankProcess) -> str:
    return process_node(ctx, process).key


@producer("threads")
def threads(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """Threads, the GIL and event loops of the processes of a small bundle."""
    del bundle
    processes = [p for p in (*ctx.analysis.processes, *ctx.analysis.others) if p.snapshots]
    if len(processes) > MAX_PROCESSES:
        return
    for process in processes:
        ident = process.identity
        found, count = tracks(process, ctx.table)
        keys = {t.key: thread_key(ident.host, ident.pid, t.key) for t in found}
        for track in found:
            yield Node(
                key=keys[track.key],
                kind=NodeKind.THREAD,
                state=_state(track, count),
                label=f"{_thread_name(track)}{_of(ident.pid)}",
                host=ident.host,
                pid=ident.pid,
                tid=track.key,
                rank=ident.rank,
                instance=ident.instance,
                at=_at(track, ctx.table),
                evidence=(str(track.seen[-1].source),),
                seen=count,
            )
        if count < 2:
            continue
        holder = gil_holder(found, count)
        if holder is not None:
            waiting = gil_waiters(found, holder)
            if waiting:
                yield Edge(
                    waiters=tuple(keys[t.key] for t in waiting),
                    waited=(keys[holder.key],),
                    kind=EdgeKind.GIL,
                    what="the GIL",
                    waited_at=_at(holder, ctx.table),
                    evidence=tuple(dict.fromkeys(str(t.source) for t in holder.seen)),
                )
        for track in found:
            if track.loop is None:
                continue
            loop = loop_key(ident.host, ident.pid, track.key)
            blocked = not track.loop.idle and not track.moving and track.moments == count
            yield Node(
                key=loop,
                kind=NodeKind.EVENT_LOOP,
                state=NodeState.BLOCKED
                if blocked
                else NodeState.IDLE
                if track.loop.idle
                else NodeState.MOVING,
                label=f"the event loop of {_thread_name(track)}{_of(ident.pid)}",
                host=ident.host,
                pid=ident.pid,
                tid=track.key,
                at=_at(track, ctx.table),
                seen=count,
            )
            if not blocked:
                continue
            call = track.loop.call
            yield Edge(
                waiters=(loop,),
                waited=(keys[track.key],),
                kind=EdgeKind.EVENT_LOOP,
                what=call.short_function if call is not None else "a synchronous call",
                at=_at(track, ctx.table),
                evidence=tuple(dict.fromkeys(str(t.source) for t in track.seen)),
            )
            peer = _peer(track)
            if peer is not None:
                yield Edge(
                    waiters=(keys[track.key],),
                    waited=(remote_key(*peer),),
                    kind=EdgeKind.HTTP,
                    what=call.short_function if call is not None else "",
                    at=_at(track, ctx.table),
                    evidence=(str(track.seen[-1].source),),
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessReading:
    """What the one process of a bundle is doing, with the words the verdict table fills in."""

    kind: str
    who: str
    pid: int | None
    thread: str
    at: str
    call: str = ""
    handler: str = ""
    peer: str = ""
    others: str = ""
    moments: int
    sentence: str
    notes: tuple[str, ...] = ()
    signature_lines: tuple[str, ...] = ()

    def placeholders(self) -> dict[str, str]:
        """The values of verdicts.toml's placeholders."""
        return {
            "who": self.who,
            "pid": str(self.pid) if self.pid is not None else "PID",
            "thread": self.thread,
            "at": self.at,
            "call": self.call,
            "handler": self.handler,
            "peer": self.peer,
            "others": self.others,
            "snapshots": plural(self.moments, "snapshot"),
        }


def _names(found: Sequence[Track]) -> str:
    names = [t.name for t in found]
    if len(names) <= 3:
        return " and ".join(names) if len(names) < 3 else f"{names[0]}, {names[1]} and {names[2]}"
    return f"{names[0]}, {names[1]} and {len(names) - 2} other threads"


def _sig(kind: str, track: Track, table: StackTable) -> tuple[str, ...]:
    frames = [f for f in track.seen[-1].frames if not f.native]
    apps = [f for f in frames if _own(f, table)][:3]
    path = " > ".join(f"{f.short_function} ({f.file.rsplit('/', 1)[-1]})" for f in reversed(apps))
    return (f"{kind} {track.name.rstrip('0123456789-_') or 'thread'}: {path}",)


def reading(ctx: GraphContext) -> ProcessReading | None:
    """The one process's reading, when the bundle holds exactly one process with stacks and
    it waits for no other rank; else None."""
    analysis = ctx.analysis
    processes = [*analysis.processes, *analysis.others]
    if (
        len(processes) != 1
        or processes[0].condition is not None
        or not any(d.threads for d in processes[0].snapshots)
        or analysis.waits_for
        or analysis.failed
        or analysis.missing_ranks
    ):
        return None
    process = processes[0]
    ident = process.identity
    who = f"PID {ident.pid}" if ident.pid is not None else "the process"
    if ident.rank is not None and analysis.rank_unit == "rank":
        who = f"rank {ident.rank}" + (f" (PID {ident.pid})" if ident.pid is not None else "")
    if ident.host:
        who += f" on {ident.host}"
    table = ctx.table
    found, count = tracks(process, table)
    if not found:
        return None
    last = next((d for d in reversed(process.snapshots) if d.threads), None)
    shown = main_thread(last) if last is not None else None
    main = next(
        (t for t in found if shown is not None and t.key == moments.thread_key(shown)),
        next((t for t in found if t.name == "MainThread"), found[0]),
    )
    base = {"who": who, "pid": ident.pid, "moments": count}
    basis = plural(count, "snapshot")
    if count < 2:
        return ProcessReading(
            kind="one-moment",
            thread=main.name,
            at=_at(main, table),
            sentence=(
                f"One snapshot of {who} ({plural(len(found), 'thread')}): {main.name} is at "
                f"{_at(main, table)}. One moment shows where the threads are, not whether they move."
            ),
            notes=(
                "one snapshot cannot tell stuck from slow: capture two or three dumps a few "
                "seconds apart",
                "no decisive pattern: one moment of one process shows where it is, not "
                "whether it moves",
            ),
            signature_lines=_sig("one-moment", main, table),
            **base,  # type: ignore[arg-type]
        )
    holder = gil_holder(found, count)
    others = gil_waiters(found, holder) if holder is not None else []
    if holder is not None and others:
        at = _at(holder, table)
        return ProcessReading(
            kind="gil",
            thread=holder.name,
            at=at,
            others=_names(others),
            sentence=(
                f"{holder.name} of {who} holds the GIL at {at} in every one of {basis} "
                "(py-spy: active+gil at the same line), and no thread's stack moves: "
                f"{_names(others)} cannot run Python code until it lets go."
            ),
            signature_lines=_sig("gil", holder, table),
            **base,  # type: ignore[arg-type]
        )
    for track in found:
        loop = track.loop
        if loop is None or loop.idle or track.moving or track.moments != count:
            continue
        call = loop.call
        inner = loop.chain[-1] if loop.chain else None
        call_text = call.short_function if call is not None else "a synchronous call"
        handler = " > ".join(f.short_function for f in loop.chain) or "a loop callback"
        peer = _peer(track)
        peer_text = f" (waiting for {peer[0]}:{peer[1]})" if peer is not None else ""
        notes: tuple[str, ...] = ()
        if peer is None:
            notes = (
                "what the blocking call waits for is not in the evidence: `py-spy dump --locals` "
                "shows its arguments (the URL, the socket), `ss -tnp` the connection",
            )
        return ProcessReading(
            kind="loop-blocked",
            thread=track.name,
            at=frame_at(inner) if inner is not None else _at(track, table),
            call=call_text,
            handler=handler,
            peer=peer_text,
            sentence=(
                f"The asyncio event loop of {who} runs on {track.name}, and in every one of "
                f"{basis} that thread sits in {call_text}"
                + (f" at {frame_at(inner)}" if inner is not None else "")
                + f", a synchronous call made by a loop callback ({handler}){peer_text}: no "
                "other coroutine, timer or callback on that loop runs until it returns."
            ),
            notes=notes,
            signature_lines=_sig("loop-blocked", track, table),
            **base,  # type: ignore[arg-type]
        )
    moving = [t for t in found if t.moving]
    if moving:
        first = main if main.moving else moving[0]
        return ProcessReading(
            kind="moving",
            thread=first.name,
            at=_at(first, table),
            sentence=(
                f"{who} is progressing: the stacks of {_names(moving)} change across {basis} "
                f"({first.name} at {_at(first, table)} in the latest)."
            ),
            signature_lines=_sig("moving", first, table),
            **base,  # type: ignore[arg-type]
        )
    busy = [t for t in found if t.active and not t.idle]
    if busy:
        first = main if main in busy else busy[0]
        return ProcessReading(
            kind="busy",
            thread=first.name,
            at=_at(first, table),
            sentence=(
                f"{first.name} of {who} is active at {_at(first, table)} in every one of "
                f"{basis}, and no stack moves: it runs without getting past that line."
            ),
            signature_lines=_sig("busy", first, table),
            **base,  # type: ignore[arg-type]
        )
    if analysis.blocked_threads:
        # Threads blocked at one line with no proven lock cycle (threads.py): they, not the
        # main thread joining them, are the story; their own sentence says what would settle it.
        held = analysis.blocked_threads[0]
        names = [t.name or t.tid for t in held.threads]
        first_lock = held.threads[0]
        return ProcessReading(
            kind="blocked",
            thread=" and ".join(names[:3]),
            at=f"{first_lock.waits_in} ({first_lock.waits_at})",
            peer=f"not proven: {held.settle}",
            sentence="",
            notes=(f"no lock cycle is proven: {held.settle}",),
            signature_lines=tuple(
                f"blocked {t.waits_in} ({t.waits_at.split(':')[0]})" for t in held.threads
            ),
            **base,  # type: ignore[arg-type]
        )
    blocked = [t for t in found if not t.idle]
    if blocked:
        first = main if main in blocked else blocked[0]
        wait = table.intern(first.seen[-1].frames).facts.wait
        return ProcessReading(
            kind="blocked",
            thread=first.name,
            at=_at(first, table),
            call=f" in {wait}" if wait else "",
            peer=(
                "not in the evidence: `py-spy dump --locals` shows the objects it waits on, "
                "`ls -l /proc/PID/fd` and `ss -tnp` its pipes and sockets"
            ),
            sentence=(
                f"{first.name} of {who} waits" + (f" in {wait}" if wait else "") + f" at "
                f"{_at(first, table)} in every one of {basis}, and no thread of the process "
                "moves; nothing in the evidence shows what would release it."
            ),
            notes=(
                "what the thread waits for is not in the evidence: capture `py-spy dump "
                "--locals` and the process's fd table (`report collect`)",
            ),
            signature_lines=_sig("blocked", first, table),
            **base,  # type: ignore[arg-type]
        )
    return ProcessReading(
        kind="idle",
        thread=main.name,
        at=_at(main, table),
        sentence=(
            f"Every thread of {who} waits for work by design in every one of {basis} "
            f"({main.name} at {_at(main, table)}): idle, not blocked."
        ),
        signature_lines=_sig("idle", main, table),
        **base,  # type: ignore[arg-type]
    )
