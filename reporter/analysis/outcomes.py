"""What process state, crashes and thread deadlocks change in a verdict.

`analyze` calls in here at three points (none of them decides the verdict: the table of
`reporter/data/verdicts.toml` does, in `decide.py`):

- per rank, `condition_of` reads the process state evidence (`procstate.condition`): a
  stopped, uninterruptible, unresponsive or crashed rank takes no part in the verdict's
  comparison of stacks; it is listed with the absent ranks under its state, and
  `with_unavailable` / `name_frozen` make the ranks that wait in a collective wait for it
  (`waits_for[].for.state` = `stopped`, `at` = where it froze; `verdict.with_unavailable`);
- per non-rank process, `other_process` does the same for launchers and helpers;
- once per bundle, `read` compares every thread of every process (`threads.find`) and
  gathers the facts of the bundle-level verdicts: a crash (a faulthandler fatal error) and
  a lock cycle between threads, with the sentences that name them and the signature
  resting on the crash or the cycle (`crash_lock_signature`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from reporter.analysis import procstate, threads
from reporter.analysis.classify import Classifier, frame_at
from reporter.analysis.progress import UnitView, rank_state
from reporter.analysis.ranks import RankedProcess
from reporter.analysis.result import (
    Analysis,
    BlockedThreads,
    Condition,
    Confidence,
    FailedRank,
    LockThread,
    RankProcess,
    Signature,
    ThreadDeadlock,
    Verdict,
    WaitsFor,
)
from reporter.analysis.signature import make_signature, signature_frames
from reporter.analysis.stacks import StackInfo, StackTable
from reporter.core.text import plural
from reporter.model import ProcState

if TYPE_CHECKING:
    from reporter.analysis.excerpts import SourceReader

_FROZEN_VALUES = frozenset(s.value for s in procstate.FROZEN)


def _own_failures(
    pids: set[int], rank: int | None, failed: Sequence[FailedRank]
) -> list[FailedRank]:
    return [
        f
        for f in failed
        if (f.failure.pid is not None and f.failure.pid in pids)
        or (f.failure.pid is None and rank is not None and f.rank == rank)
    ]


def condition_of(
    process: RankedProcess,
    history: Sequence[StackInfo],
    failed: Sequence[FailedRank],
    states: Sequence[ProcState],
) -> Condition | None:
    """The process state evidence of one rank (its PIDs' failures and status copies)."""
    if not failed and not states:
        return procstate.condition(process.snapshots, history, (), ())
    pids = {d.pid for d in process.snapshots if d.pid is not None}
    if process.pid is not None:
        pids.add(process.pid)
    own = _own_failures(pids, process.identity.rank, failed)
    return procstate.condition(
        process.snapshots, history, own, [s for s in states if s.pid in pids]
    )


def other_process(
    process: RankedProcess,
    history: Sequence[StackInfo],
    failed: Sequence[FailedRank],
    states: Sequence[ProcState],
) -> RankProcess:
    """A process that is not a rank (launcher, helper), with its state evidence."""
    cond = condition_of(process, history, failed, states)
    return RankProcess(
        identity=process.identity,
        snapshots=process.snapshots,
        state=cond.state if cond is not None else rank_state(history),
        condition=cond,
    )


def name_frozen(
    edges: Sequence[WaitsFor], frozen: Sequence[tuple[UnitView, Condition]]
) -> tuple[WaitsFor, ...]:
    """Waits-for edges to frozen ranks, with their PIDs and where they froze."""
    by_unit = {view.unit: (view, cond) for view, cond in frozen}
    out = []
    for edge in edges:
        found = [by_unit[r] for r in edge.waited.ranks if r in by_unit]
        if not found or edge.waited.state not in _FROZEN_VALUES:
            out.append(edge)
            continue
        pids = tuple(sorted(v.pid for v, _ in found if v.pid is not None))
        at = procstate.waited_at(found[0][1]) if len(found) == 1 else edge.waited.state
        out.append(replace(edge, waited=replace(edge.waited, pids=pids, at=at)))
    return tuple(out)


def _who(process: RankProcess, unit: str, *, start: bool = True) -> str:
    ident = process.identity
    if ident.rank is not None and unit == "rank":
        pid = f" (PID {ident.pid})" if ident.pid is not None else ""
        return f"{'Rank' if start else 'rank'} {ident.rank}{pid}"
    if ident.pid is not None:
        return f"PID {ident.pid}"
    where = f" in {process.snapshots[-1].source.path}" if process.snapshots else ""
    return f"{'The' if start else 'the'} process{where}"


def _crash_sentence(process: RankProcess, unit: str) -> str:
    cond = process.condition
    assert cond is not None and cond.crash is not None
    crash = cond.crash
    signal = f" ({crash.signal})" if crash.signal else ""
    if crash.signal == "SIGABRT":
        # abort() in native code (a failed assert, std::terminate, NCCL's watchdog), or a
        # `kill -ABRT` from outside: runbooks send it to get these stacks from a hung process.
        signal = " (SIGABRT: abort() in native code, or a SIGABRT sent to the process)"
    thread = f" in thread {crash.thread}" if crash.thread and crash.thread != "?" else ""
    at = f" at {crash.at}" if crash.at else ""
    frames = " < ".join(frame_at(f) for f in [f for f in crash.frames if not f.native][:6])
    if frames:
        stack = f" Its stack, innermost first: {frames}."
    else:
        others = "; ".join(
            f"{t.thread_id} at {procstate.app_at(t.frames)}"
            for d in process.snapshots[-1:]
            for t in reversed(d.threads)
            if t.frames
        )
        stack = (
            " faulthandler marks no thread `Current thread` in this report (cut before that "
            "block, or the crash happened in a thread Python does not run): which thread "
            "crashed is not known" + (f"; threads in the report: {others}." if others else ".")
        )
    return (
        f"{_who(process, unit)} crashed: Fatal Python error: {crash.what}{signal}{thread}{at} "
        f"({crash.source}).{stack}"
    )


def _frozen_sentence(process: RankProcess, unit: str) -> str:
    cond = process.condition
    assert cond is not None
    return f"{_who(process, unit)} is {cond.state.value}: {cond.why}."


def _thread_name(thread: LockThread) -> str:
    return f"{thread.name} ({thread.tid})" if thread.name else thread.tid


def _deadlock_sentence(lock: ThreadDeadlock, processes: Sequence[RankProcess], unit: str) -> str:
    who = next(
        (
            _who(p, unit, start=False)
            for p in processes
            if p.identity.pid == lock.pid and p.identity.rank == lock.rank
        ),
        f"PID {lock.pid}" if lock.pid is not None else "the process",
    )
    parts = []
    for thread in lock.threads:
        held = ", ".join(thread.holding) or "a lock"
        taken = f" (taken at {thread.holding_from})" if thread.holding_from else ""
        parts.append(
            f"thread {_thread_name(thread)} waits for {thread.waits_for} at "
            f"{thread.waits_in} ({thread.waits_at}) holding {held}{taken}"
        )
    if len(lock.threads) == 1:
        head = f"Self-deadlock in {who}: "
        tail = "; it waits for a lock it already holds, which is not reentrant"
    else:
        head = f"Lock-order deadlock between {len(lock.threads)} threads of {who}: "
        tail = "; each holds the lock the next one waits for"
    proof = (
        " (the same lock objects in `--locals`)"
        if lock.proof == "objects"
        else " (locks matched by their names in the code; `py-spy dump --locals` twice would "
        "show whether they are the same objects)"
    )
    text = head + "; ".join(parts) + tail + proof + "."
    if lock.behind:
        behind = "; ".join(
            f"thread {_thread_name(t)} waits for {t.waits_for} at {t.waits_in} ({t.waits_at})"
            for t in lock.behind
        )
        text += f" Blocked behind it: {behind}."
    return text


def _blocked_sentence(blocked: BlockedThreads) -> str:
    who = f"PID {blocked.pid}" if blocked.pid is not None else "the process"
    places = "; ".join(
        f"{_thread_name(t)} at {t.waits_in} ({t.waits_at})"
        + (f" waiting for {t.waits_for}" if t.waits_for else "")
        for t in blocked.threads
    )
    return (
        f"Threads of {who} blocked at the same line in every one of "
        f"{plural(blocked.snapshots, 'snapshot')}: {places}. No lock cycle is proven: "
        f"{blocked.settle}."
    )


def _lock_name(text: str) -> str:
    """A lock's name without the object (`Stats.lock (Stats at 0x7f..)` -> `Stats.lock`)."""
    return text.split(" (", 1)[0]


def _signature(
    verdict: Verdict,
    crashed: Sequence[RankProcess],
    deadlocks: Sequence[ThreadDeadlock],
    classifier: Classifier,
) -> Signature:
    lines: list[str] = []
    for process in crashed:
        crash = process.condition.crash if process.condition else None
        if crash is None:
            continue
        frames = signature_frames(crash.frames, classifier)
        path = " > ".join(
            f"{f.short_function} ({f.file.rsplit('/', 1)[-1]})" for f in reversed(frames)
        )
        lines.append(f"crash {crash.what}: {path}")
    for lock in deadlocks:
        for thread in lock.threads:
            held = ", ".join(sorted({_lock_name(h) for h in thread.holding}))
            function = thread.waits_in.rpartition(".")[2]
            lines.append(
                f"lock {function} ({thread.waits_at.split(':')[0]}) waits "
                f"{_lock_name(thread.waits_for)} holding {held}"
            )
    return make_signature(verdict, (), classifier, lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What crashes, stopped processes and lock cycles add, before any verdict: the facts
    the verdict table reads and the sentences and levels its rules pick from."""

    deadlocks: tuple[ThreadDeadlock, ...]
    blocked: tuple[BlockedThreads, ...]
    crash: bool
    """A crash the verdict may be about: not an abort of a process whose lock cycle is proven."""
    live: bool
    """Some rank takes part (no process state condition)."""
    crashes: str
    """One sentence per crashed process."""
    deadlock_lines: str
    frozen: str
    blocked_text: str
    crash_level: Confidence
    crash_notes: tuple[str, ...]
    deadlock_level: Confidence
    deadlock_notes: tuple[str, ...]
    crashed: tuple[RankProcess, ...]


def read(
    analysis: Analysis,
    table: StackTable,
    classifier: Classifier,
    sources: SourceReader | None,
) -> Outcome:
    """The bundle-level facts (crashes, lock cycles, frozen and blocked processes) and their
    sentences; the verdict table (`decide.py`) decides what they make of the verdict."""
    del classifier
    processes = (*analysis.processes, *analysis.others)
    deadlocks, blocked = threads.find(processes, table, sources)
    unit = analysis.rank_unit
    crashed = tuple(p for p in processes if p.condition is not None and p.condition.crash)
    frozen = [p for p in processes if p.condition is not None and p.condition.crash is None]
    live = any(p.condition is None for p in analysis.processes)
    # SIGABRT is also what an operator sends to make faulthandler print a hung process's
    # stacks: a lock cycle proven in an aborted process is the story, not the abort.
    locked = {d.pid for d in deadlocks}
    crashed_alone = [
        p
        for p in crashed
        if not (p.condition and p.condition.crash and p.condition.crash.signal == "SIGABRT")
        or p.identity.pid not in locked
    ]
    crash_notes: tuple[str, ...] = ()
    if any(d.truncated for p in crashed for d in p.snapshots[-1:]):
        crash_notes += ("the crash report is cut short",)
    if any(p.condition and p.condition.crash and not p.condition.crash.thread for p in crashed):
        crash_notes += ("the report marks no crashing thread",)
    lock_notes: tuple[str, ...] = ()
    if any(d.proof == "names" for d in deadlocks):
        lock_notes += ("locks matched by name, not by object: take `py-spy dump --locals` twice",)
    if any(d.snapshots < 2 for d in deadlocks):
        lock_notes += ("one snapshot: a second one would show the threads still blocked",)
    return Outcome(
        deadlocks=deadlocks,
        blocked=blocked,
        crash=bool(crashed_alone),
        live=live,
        crashes=" ".join(_crash_sentence(p, unit) for p in crashed),
        deadlock_lines=" ".join(_deadlock_sentence(d, processes, unit) for d in deadlocks),
        frozen=" ".join(_frozen_sentence(p, unit) for p in frozen),
        blocked_text=" ".join(_blocked_sentence(b) for b in blocked),
        crash_level=Confidence.MEDIUM if crash_notes else Confidence.HIGH,
        crash_notes=crash_notes,
        deadlock_level=(Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW)[
            min(len(lock_notes), 2)
        ],
        deadlock_notes=lock_notes,
        crashed=crashed,
    )


def crash_lock_signature(outcome: Outcome, verdict: Verdict, classifier: Classifier) -> Signature:
    """The signature of a crash or a lock cycle: it rests on the crash or the cycle."""
    return _signature(verdict, outcome.crashed, outcome.deadlocks, classifier)
