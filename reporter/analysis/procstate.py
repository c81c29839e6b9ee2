"""Process state as evidence: stopped, in the kernel, unresponsive, or crashed.

Input: one rank's (or process's) snapshots and their interned main stacks, the failed
dumps of its PID, the `/proc/PID/status` copies of the bundle and the faulthandler
reports among its dumps. Output: a `Condition` when that evidence overrules what the
stacks alone would say, else None:

- `crashed`: one of its dumps is faulthandler's `Fatal Python error: ...` report (a
  fatal signal or an interpreter abort); the crashing (current) thread's stack is kept;
- `stopped`: its status says State `T` (stopped) or `t` (tracing stop), or py-spy could
  not suspend it ("Failed to suspend process": it was already stopped);
- `uninterruptible`: its status says State `D` and its stacks do not move;
- `unresponsive`: py-spy's dumps of it timed out and nothing else says why.

A stopped rank runs no code, so its last stack (a `--nonblocking` dump reads memory
without stopping it) is where it froze: such a rank is never `moving` and never `gone`,
and the ranks that wait in a collective wait for it. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from reporter.analysis.classify import FrameKind, default_classifier, frame_at
from reporter.analysis.progress import raw_state
from reporter.analysis.result import Condition, Crash, FailedRank, RankState
from reporter.analysis.stacks import StackInfo
from reporter.core.text import plural
from reporter.model import Frame, ProcessDump, ProcState

CRASH_PREFIX = "Fatal Python error: "
# faulthandler's words for the fatal signals it handles, and the signal each one is.
_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
    "Floating point exception": "SIGFPE",
    "Floating-point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}
# States in which a process takes no part in a collective, whatever its stack shows.
FROZEN = frozenset(
    {RankState.STOPPED, RankState.UNINTERRUPTIBLE, RankState.UNRESPONSIVE, RankState.CRASHED}
)
_EPOCH = datetime.min.replace(tzinfo=UTC)


def crash_of(dump: ProcessDump) -> Crash | None:
    """The fatal error a faulthandler dump reports, or None (a `Timeout (0:00:05)!` dump of
    `dump_traceback_later`, or a SIGUSR1 dump, is a snapshot of a live process)."""
    headline = dump.headline or ""
    if not headline.startswith(CRASH_PREFIX):
        return None
    what = headline[len(CRASH_PREFIX) :].strip()
    # faulthandler marks the crashing thread `Current thread`; an excerpt cut before that
    # block does not show it, and no other thread stands in for it.
    thread = next((t for t in dump.threads if t.is_current), None)
    frames = thread.frames if thread is not None else ()
    return Crash(
        what=what,
        signal=_SIGNALS.get(what, ""),
        thread=thread.thread_id if thread is not None else "",
        frames=frames,
        at=app_at(frames),
        source=dump.source,
        captured_at=dump.captured_at,
    )


def crash_text(crash: Crash) -> str:
    """`Segmentation fault (SIGSEGV) in copy_blocks_to_host (crashed_rank.py:99)`."""
    signal = f" ({crash.signal})" if crash.signal else ""
    where = f" in {crash.at}" if crash.at else ""
    return f"{crash.what}{signal}{where}"


_STDLIB_DIR = re.compile(r"/lib/(?:python|pypy)[0-9.]*/(?!site-packages/|dist-packages/)")


def app_at(frames: Sequence[Frame]) -> str:
    """The innermost application frame as `function (file:line)`, past the standard
    library (`ctypes.string_at` is where a bad pointer is read, not where it came from);
    else the innermost Python frame."""
    classifier = default_classifier()
    for frame in frames:
        if (
            not frame.native
            and frame.function != "???"
            and not _STDLIB_DIR.search(frame.file)
            and classifier.classify(frame).kind is FrameKind.APPLICATION
        ):
            return frame_at(frame)
    python = next((f for f in frames if not f.native and f.function != "???"), None)
    return frame_at(python) if python is not None else ""


def last_seen(history: Sequence[StackInfo]) -> StackInfo | None:
    """The latest stack with frames (a failed blocking dump leaves a header without any)."""
    return next((info for info in reversed(history) if info.frames), None)


def _status_text(status: ProcState) -> str:
    word = f" ({status.state_text})" if status.state_text else ""
    extra = []
    if status.wchan:
        extra.append(f"sleeping in {status.wchan}")
    if status.tracer_pid:
        extra.append(f"traced by PID {status.tracer_pid}")
    more = f", {', '.join(extra)}" if extra else ""
    return f"/proc status says State {status.state}{word}{more} ({status.source})"


def condition(
    snapshots: Sequence[ProcessDump],
    history: Sequence[StackInfo],
    failed: Sequence[FailedRank],
    states: Sequence[ProcState],
) -> Condition | None:
    """What the process state evidence says about one process (see the module docstring).

    `failed` and `states` must already be this process's (by PID, or by rank for failures
    that name no PID); `history` holds the interned main stack of each snapshot.
    """
    for dump in reversed(snapshots):
        crash = crash_of(dump)
        if crash is not None:
            return Condition(
                state=RankState.CRASHED,
                why=f"it crashed: {CRASH_PREFIX}{crash_text(crash)}, reported by faulthandler "
                f"({crash.source})",
                sources=(str(crash.source),),
                at=crash.at,
                crash=crash,
            )
    if not failed and not states:
        return None  # nothing below can name a state without a failure or a status copy
    seen = last_seen(history)
    at = _where(seen)
    live = [info for info in history if info.frames]
    motion = raw_state(live) if len(live) > 1 else RankState.UNKNOWN
    # The latest copy wins; among copies of one time (or none), the last in the bundle's
    # capture order (snapshot index, then mtime), which `max` over the reversed list gives.
    status = max(reversed(states), key=lambda s: s.captured_at or _EPOCH) if states else None
    stops = [f for f in failed if f.state == "stopped"]
    timeouts = [f for f in failed if f.state == "timeout"]
    parts: list[str] = []
    sources: list[str] = []
    state: RankState | None = None
    if (
        status is not None
        and status.state in ("T", "t")
        and (motion is not RankState.MOVING or stops)
    ):
        state = RankState.STOPPED
    elif status is not None and status.state == "D" and motion is not RankState.MOVING:
        state = RankState.UNINTERRUPTIBLE
    elif stops:
        state = RankState.STOPPED
    elif timeouts and motion is not RankState.MOVING and len(timeouts) == len(failed):
        state = RankState.UNRESPONSIVE
    if state is None:
        return None
    if status is not None and status.state in ("T", "t", "D"):
        parts.append(_status_text(status))
        sources.append(str(status.source))
    if stops:
        parts.append(
            f"py-spy could not suspend it ({plural(len(stops), 'dump')}: it was already "
            f"stopped; {stops[0].failure.source})"
        )
        sources.append(str(stops[0].failure.source))
    if timeouts and state is not RankState.STOPPED:
        parts.append(
            f"py-spy gave no answer in {plural(len(timeouts), 'dump')} ({timeouts[0].failure.source})"
        )
        sources.append(str(timeouts[0].failure.source))
    if state is RankState.UNRESPONSIVE:
        parts.append("nothing says why: a copy of /proc/PID/status (State D or T) would tell")
    if seen is not None:
        parts.append(f"last seen in {at}" if at else "")
    else:
        parts.append("no stack of it: a `py-spy dump --nonblocking` reads it without stopping it")
    return Condition(
        state=state,
        why="; ".join(p for p in parts if p),
        sources=tuple(sources),
        at=at,
        wchan=status.wchan if status is not None else "",
        tracer_pid=status.tracer_pid if status is not None and status.tracer_pid else None,
    )


def _where(info: StackInfo | None) -> str:
    if info is None:
        return ""
    facts = info.facts
    frame = (
        facts.site
        or next(iter(info.informative), None)
        or next((f for f in info.frames if not f.native), None)
    )
    if facts.collective is not None:
        site = f" from {facts.site_text}" if facts.site is not None else ""
        return f"{facts.collective}{site}"
    return frame_at(frame) if frame is not None else ""


def waited_at(cond: Condition) -> str:
    """How a waits-for edge names a frozen rank: `stopped (State T) in build_prefix_mask
    (stopped_rank.py:107)`, `crashed (Segmentation fault (SIGSEGV)) in ...`."""
    label = cond.state.value
    if cond.crash is not None:
        signal = f" ({cond.crash.signal})" if cond.crash.signal else ""
        label = f"crashed: {cond.crash.what}{signal}"
    elif cond.state is RankState.STOPPED:
        label = "stopped (SIGSTOP or a debugger)"
    elif cond.state is RankState.UNINTERRUPTIBLE:
        label = "uninterruptible (State D, in the kernel)"
    return f"{label} in {cond.at}" if cond.at else label
