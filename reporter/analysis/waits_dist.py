"""Waits of distributed programs beyond a plain collective, as wait-for graph edges.

Producers (registered in this order):

- `work-wait`: a rank blocked in `Work.wait()` of an `isend`/`irecv` (the Python stack shows
  only the caller's line: `work.wait()` is C++) waits for its peer. The wait is recognised
  from `--native` frames (gloo's `RecvWork::wait`, `UnboundBuffer::waitRecv`, NCCL's
  `WorkNCCL::wait`), a `Work` object in `--locals`, or the source line; the peer and tag
  come from `--locals` (`src`, `dst`, `peer`, `tag`). Without a peer no edge is drawn: the
  verdict then asks for `--locals`.
- `ended`: a wait that is already over. A timeout or watchdog line in a log (gloo's `Timed
  out waiting 8000ms`, NCCL's watchdog) and later dumps that fail because the process is
  gone: the ranks that timed out are `gone`, with the line that ended them; the wait they
  were in when last seen still points at the ranks that never arrived.
- `ray-actors`: Ray processes titled `ray::Class.method` blocked in `ray.get` wait for the
  actor method their code called (`other.method.remote(...)`, read from the source); a
  method queued on an actor that runs another one waits for that one (a synchronous actor
  runs one method at a time). A cycle through actor methods is then a graph cycle; the
  driver waiting on one of them is a bystander.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from reporter.analysis.clues import main_thread
from reporter.analysis.graphproducers import unit_key
from reporter.analysis.procfacts import (
    Proc,
    caller,
    cite,
    function_start,
    procs,
    python_frames,
    source_lines,
    where,
)
from reporter.analysis.waitgraph import (
    Edge,
    EdgeKind,
    GraphContext,
    Node,
    NodeKind,
    NodeState,
    producer,
    task_key,
)
from reporter.model import Bundle, Frame, LogEvent, LogEventKind, ThreadStack

# --------------------------------------------------------------------------- work-wait

_NATIVE_WAIT = re.compile(r"(RecvWork|SendWork|WorkNCCL|Work)::wait|UnboundBuffer::wait(Recv|Send)")
_PEER_NAMES = ("src", "dst", "peer", "peer_rank", "source", "dest", "group_src", "group_dst")
_WAIT_LINE = re.compile(r"\.wait\(\s*\)")


def _int(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


def work_wait(ctx: GraphContext, thread: ThreadStack) -> tuple[str, str] | None:
    """(direction `recv`/`send`/"", how it was seen) when the thread waits in `Work.wait()`
    of a point-to-point call, else None."""
    frames = python_frames(thread)
    if not frames or "torch/distributed" in frames[0].file:
        return None  # a torch.distributed call on the stack: the collective producers' case
    for frame in thread.frames:
        if frame.native:
            match = _NATIVE_WAIT.search(frame.function)
            if match:
                text = match.group(0)
                direction = "recv" if "Recv" in text else "send" if "Send" in text else ""
                return direction, "native frames"
    top = frames[0]
    if any(
        "_distributed_c10d.Work" in local.repr or local.repr.startswith("<Work")
        for local in top.locals
    ):
        return _direction_from_source(ctx, top), "--locals"
    lines = source_lines(ctx, top)
    if lines is not None and top.line is not None and _WAIT_LINE.search(lines[top.line - 1]):
        direction = _direction_from_source(ctx, top)
        if direction:
            return direction, "source line"
    return None


def _direction_from_source(ctx: GraphContext, frame: Frame) -> str:
    lines = source_lines(ctx, frame)
    if lines is None or frame.line is None:
        return ""
    start = function_start(lines, frame.line)
    body = "\n".join(lines[start : frame.line])
    recv, send = "irecv(" in body, "isend(" in body
    return "recv" if recv and not send else "send" if send and not recv else ""


def peer_of(frames: Sequence[Frame]) -> tuple[int | None, int | None]:
    """(peer, tag) from `--locals` of the innermost frames that have them."""
    for frame in frames[:3]:
        values = {local.name: local.repr for local in frame.locals}
        for name in _PEER_NAMES:
            peer = _int(values.get(name, ""))
            if peer is not None:
                return peer, _int(values.get("tag", ""))
    return None, None


@producer("work-wait")
def work_waits(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """A rank in `Work.wait()` of an isend/irecv waits for its peer (from `--locals`)."""
    del bundle
    if ctx.analysis.rank_unit != "rank":
        return
    unknown: list[tuple[str, str, Frame | None, str]] = []
    ranked = [p for p in ctx.analysis.processes if p.identity.rank is not None and p.snapshots]
    for process in ranked:
        ident = process.identity
        if ident.rank is None or not process.snapshots:
            continue
        # --locals and --native dumps of the same moment may sit beside plain ones: read all.
        seen: tuple[str, str] | None = None
        peer: int | None = None
        tag: int | None = None
        top: Frame | None = None
        passed: tuple[Frame, ...] | None = None
        for dump in reversed(process.snapshots):
            thread = main_thread(dump)
            if thread is None or thread.frames is passed:
                continue  # a stuck rank's snapshots share one frames tuple: read it once
            found = work_wait(ctx, thread)
            if found is None:
                passed = thread.frames
                continue
            if seen is None or (not seen[0] and found[0]):
                seen = found
            frames = python_frames(thread)
            top = top or (frames[0] if frames else None)
            if peer is None:
                peer, tag = peer_of(frames)
        if seen is None:
            continue
        if peer is None:
            key = unit_key(
                ctx, ident.instance, process.unit if process.unit is not None else ident.rank
            )
            unknown.append((key, seen[0], top, cite(process.snapshots[-1])))
            continue
        direction = seen[0] or "a point-to-point call"
        verb = {"recv": f"irecv from {peer}", "send": f"isend to {peer}"}.get(
            direction, f"p2p with {peer}"
        )
        tag_text = f", tag {tag}" if tag is not None else ""
        yield Edge(
            waiters=(
                unit_key(
                    ctx, ident.instance, process.unit if process.unit is not None else ident.rank
                ),
            ),
            waited=(unit_key(ctx, ident.instance, peer),),
            kind=EdgeKind.P2P,
            what=f"Work.wait of {verb}{tag_text}",
            at=where(top),
            peer=peer,
            tag=tag,
            instance=ident.instance,
            evidence=(cite(process.snapshots[-1]),),
        )

    # Without peers, an edge is drawn only when every rank waits in a receive: then none
    # sends, whoever each one waits for (a deadlock with no peer to name). Its `waited` is
    # empty: the peers are not in the dumps, and are never guessed.
    every = len(unknown) == len(ranked) and not ctx.analysis.missing_ranks
    if unknown and every and all(d == "recv" for _, d, _, _ in unknown):
        for key, _, top, src in unknown:
            yield Edge(
                waiters=(key,),
                waited=(),
                kind=EdgeKind.P2P,
                what="Work.wait of an irecv (its peer is not in the dumps)",
                at=where(top),
                evidence=(src,),
            )


# --------------------------------------------------------------------------- ended

ENDING = frozenset({LogEventKind.TIMEOUT, LogEventKind.WATCHDOG_ABORT})
_RANK_IN_PATH = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def _event_rank(bundle: Bundle, path: str, rank: int | None) -> int | None:
    if rank is not None:
        return rank
    for record in bundle.files:
        if (
            record.path == path
            and record.rank_hint is not None
            and record.rank_hint.rank is not None
        ):
            return record.rank_hint.rank
    match = _RANK_IN_PATH.search(path.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


@producer("ended")
def ended(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """Ranks that a logged timeout or watchdog ended, whose later dumps fail: gone, with
    the line that ended them; their last wait still names who never arrived."""
    events = [e for e in bundle.log_events if e.kind in ENDING]
    if not events or ctx.analysis.rank_unit != "rank":
        return
    gone = {f.rank for f in ctx.analysis.failed if f.rank is not None and f.state == "gone"}
    by_rank: dict[int, LogEvent] = {}
    for event in sorted(events, key=lambda e: (e.at is None, e.at)):
        rank = _event_rank(bundle, event.source.path, event.rank)
        if rank is not None:
            by_rank.setdefault(rank, event)
    for process in ctx.analysis.processes:
        rank = process.identity.rank
        if rank is None or rank not in gone or rank not in by_rank:
            continue
        event = by_rank[rank]
        when = f" at {event.at:%H:%M:%S} UTC" if event.at is not None else ""
        limit = f" after {event.timeout_ms} ms" if event.timeout_ms else ""
        what = (
            "its watchdog aborted it"
            if event.kind is LogEventKind.WATCHDOG_ABORT
            else f"timed out{limit}"
        )
        yield Node(
            key=unit_key(
                ctx, process.identity.instance, process.unit if process.unit is not None else rank
            ),
            kind=NodeKind.RANK,
            state=NodeState.GONE,
            label=f"rank {rank}"
            + (f" (PID {process.identity.pid})" if process.identity.pid else ""),
            rank=rank,
            pid=process.identity.pid,
            instance=process.identity.instance,
            host=process.identity.host,
            why=f"the wait ended: {what}{when} ({event.source.path}:{event.source.line}: "
            f"{event.text[:120]}); the later dumps fail (the process is gone)",
            evidence=(f"{event.source.path}:{event.source.line}",),
            seen=10_000,
        )


# --------------------------------------------------------------------------- ray-actors

_RAY_GET = (("get", "ray/_private/worker.py"), ("Worker.get_objects", "ray/_private/worker.py"))
_REMOTE_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\.remote\(")
_CLASS = re.compile(r"class\s+([A-Za-z_][A-Za-z0-9_]*)")
_METHOD = re.compile(r"\s+(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)")
_CONCURRENCY = re.compile(r"max_concurrency\s*=\s*(\d+)")


def ray_title(proc: Proc) -> str:
    """`ray::Class.method` of a Ray worker process, "" for any other process."""
    # py-spy's --json dump carries no command line: any snapshot that has one says it.
    for dump in reversed(proc.process.snapshots):
        cmd = (dump.cmdline or "").strip()
        if cmd:
            return cmd.split()[0] if cmd.startswith("ray::") else ""
    return ""


def _in_ray_get(thread: ThreadStack) -> bool:
    return any(
        f.function == name and f.file.endswith(file)
        for f in python_frames(thread)[:6]
        for name, file in _RAY_GET
    )


def _callee(ctx: GraphContext, frame: Frame) -> tuple[str, str] | None:
    """(Class, method) of the actor method whose result `frame`'s `ray.get` waits for:
    the last `x.method.remote(` before the line, and the class of the file defining it."""
    lines = source_lines(ctx, frame)
    if lines is None or frame.line is None:
        return None
    start = function_start(lines, frame.line)
    calls = [m for text in lines[start : frame.line] for m in _REMOTE_CALL.finditer(text)]
    if not calls:
        return None
    method = calls[-1].group(2)
    owner = ""
    for text in lines:
        cls = _CLASS.match(text)
        if cls:
            owner = cls.group(1)
            continue
        defined = _METHOD.match(text)
        if defined and defined.group(1) == method and owner:
            return owner, method
    return None


def _one_at_a_time(ctx: GraphContext, frame: Frame, cls: str) -> bool:
    """A synchronous actor without `max_concurrency` > 1 runs one method at a time."""
    lines = source_lines(ctx, frame)
    if lines is None:
        return True
    for i, text in enumerate(lines):
        if _CLASS.match(text) and _CLASS.match(text).group(1) == cls:  # type: ignore[union-attr]
            above = " ".join(lines[max(0, i - 3) : i])
            found = _CONCURRENCY.search(above)
            body = "\n".join(lines[i : i + 80])
            if found and int(found.group(1)) > 1:
                return False
            return "async def" not in body
    return True


@producer("ray-actors")
def ray_actors(bundle: Bundle, ctx: GraphContext) -> Iterator[Node | Edge]:
    """Actor calls: who waits in `ray.get` for which actor method, and queued methods."""
    del bundle
    known = procs(ctx)
    running: dict[str, Proc] = {}
    busy: dict[str, tuple[str, Proc]] = {}
    for proc in known.values():
        title = ray_title(proc)
        if "." in title:
            method = title.removeprefix("ray::")
            running[method] = proc
            busy[method.split(".", 1)[0]] = (method, proc)
    if not running:
        return
    queued: set[str] = set()
    for proc in known.values():
        thread = main_thread(proc.dump)
        if thread is None or not _in_ray_get(thread):
            continue
        frames = python_frames(thread)
        site = caller(frames)
        if site is None:
            continue
        callee = _callee(ctx, site)
        if callee is None:
            if ray_title(proc) and source_lines(ctx, site) is None:
                # A Ray worker in ray.get, and no source to read the call from: say so,
                # never guess which actor it waits for.
                yield Edge(
                    waiters=(proc.key,),
                    waited=(),
                    kind=EdgeKind.ACTOR,
                    what=f"ray.get in {ray_title(proc)} (the call it waits for is in the "
                    "source, which the bundle does not hold)",
                    at=where(site),
                    evidence=(cite(proc.dump),),
                )
            continue
        cls, method = callee
        name = f"{cls}.{method}"
        title = ray_title(proc) or "the driver"
        if name in running:
            target = running[name]
            yield Edge(
                waiters=(proc.key,),
                waited=(target.key,),
                kind=EdgeKind.ACTOR,
                what=f"ray.get on {name}",
                at=where(site),
                waited_at=f"ray::{name} (PID {target.pid})",
                evidence=(cite(proc.dump), cite(target.dump)),
            )
            continue
        key = task_key(name)
        holder = busy.get(cls)
        if holder is not None and _one_at_a_time(ctx, site, cls):
            other, owner = holder
            if name not in queued:
                queued.add(name)
                yield Node(
                    key=key,
                    kind=NodeKind.TASK,
                    state=NodeState.BLOCKED,
                    label=f"{name} (queued)",
                    why=f"queued on actor {cls}, which runs {other} (PID {owner.pid}); a "
                    "synchronous actor runs one method at a time",
                    evidence=(cite(owner.dump),),
                    seen=proc.seen,
                )
                yield Edge(
                    waiters=(key,),
                    waited=(owner.key,),
                    kind=EdgeKind.ACTOR,
                    what=f"queued behind {other} on actor {cls}",
                    waited_at=f"ray::{other} (PID {owner.pid})",
                    evidence=(cite(owner.dump),),
                )
        yield Edge(
            waiters=(proc.key,),
            waited=(key,),
            kind=EdgeKind.ACTOR,
            what=f"ray.get on {name} (from {title})",
            at=where(site),
            evidence=(cite(proc.dump),),
        )
