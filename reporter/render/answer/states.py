"""First-screen words for process state: crashes, stopped ranks, thread deadlocks, failed dumps.

Each function returns None when it has nothing to say, so `compose.build` keeps its own
title and lines. They speak about:

- a `crashed` verdict: the title and "What" name the fatal error, the crashing thread's
  place and the crash report (`stderr/rank1.log:1`);
- a `thread-deadlock` verdict: the threads, the lock each waits for and the one it holds;
- a wait for ranks that cannot answer (stopped, in the kernel, unresponsive, crashed):
  "What" counts the ranks still waiting and names the others with their evidence;
- no stacks at all but failed dumps: which process is gone (or refused, stopped, timed
  out) and the failure line, instead of "nothing here shows a hang";
- threads blocked in every snapshot with no proven cycle: a line of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from reporter.analysis.result import (
    Analysis,
    RankProcess,
    RankState,
    ThreadDeadlock,
    Verdict,
)
from reporter.core.text import plural
from reporter.render.answer.records import SummaryLine
from reporter.render.answer.waits import ranks_name

_FAILED_WORDS = {
    "gone": "gone: its dump failed because the process no longer exists",
    "refused": "not readable: py-spy was refused (ptrace rights)",
    "stopped": "stopped: py-spy could not suspend it",
    "timeout": "unresponsive: py-spy gave no answer in time",
    "error": "not dumped: py-spy failed",
}


def _conditioned(analysis: Analysis) -> list[RankProcess]:
    return [p for p in (*analysis.processes, *analysis.others) if p.condition is not None]


def _name(process: RankProcess, unit: str, *, host: bool = False) -> str:
    """`rank 2 (PID 4711)`; with `host`, where the PID lives: `rank 2 (PID 4711) on node-b`."""
    ident = process.identity
    on = f" on {ident.host}" if host and ident.host else ""
    if ident.rank is not None and unit == "rank":
        return f"rank {ident.rank}" + (f" (PID {ident.pid})" if ident.pid is not None else "") + on
    if ident.pid is not None:
        return f"PID {ident.pid}{on}"
    return "the process" + on


def _several_hosts(analysis: Analysis) -> bool:
    """Whether the processes ran on more than one host: then a PID needs its host."""
    return len({p.identity.host for p in (*analysis.processes, *analysis.others)} - {""}) > 1


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def crashed_ranks(analysis: Analysis) -> tuple[int, ...]:
    """Ranks with a crash report: their failed dumps say gone, and the report says why."""
    return tuple(
        sorted(
            p.identity.rank
            for p in _conditioned(analysis)
            if p.condition is not None
            and p.condition.crash is not None
            and p.identity.rank is not None
        )
    )


def title(analysis: Analysis) -> str | None:
    """The headline for a crash, a thread deadlock, or failed dumps without any stack."""
    unit = analysis.rank_unit
    if analysis.verdict is Verdict.CRASHED:
        crashed = [p for p in _conditioned(analysis) if p.condition and p.condition.crash]
        if crashed and crashed[0].condition is not None:
            crash = crashed[0].condition.crash
            assert crash is not None
            signal = f" ({crash.signal})" if crash.signal else ""
            where = f" in {crash.at.partition(' (')[0]}" if crash.at else ""
            more = f" and {plural(len(crashed) - 1, 'other')}" if len(crashed) > 1 else ""
            return f"{_cap(_name(crashed[0], unit))}{more} crashed: {crash.what}{signal}{where}"
    if analysis.verdict is Verdict.THREAD_DEADLOCK and analysis.thread_deadlocks:
        lock = analysis.thread_deadlocks[0]
        names = " and ".join(t.name or t.tid for t in lock.threads)
        locks = " and ".join(dict.fromkeys(t.waits_for.split(" (")[0] for t in lock.threads))
        who = f"PID {lock.pid}" if lock.pid is not None else "one process"
        return f"Thread deadlock in {who}: {names} wait for each other's locks ({locks})"
    if analysis.blocked_threads and analysis.verdict is Verdict.INCONCLUSIVE:
        blocked = analysis.blocked_threads[0]
        names = " and ".join(t.name or t.tid for t in blocked.threads[:3])
        who = f"PID {blocked.pid}" if blocked.pid is not None else "one process"
        return f"Threads {names} of {who} blocked in every snapshot; deadlock not proven"
    if not analysis.classes and analysis.failed:
        first = analysis.failed[0]
        who = (
            ranks_name((first.rank,), unit)
            if first.rank is not None and unit == "rank"
            else (f"PID {first.failure.pid}" if first.failure.pid is not None else "a process")
        )
        word = _FAILED_WORDS.get(first.state, _FAILED_WORDS["error"]).split(":")[0]
        return f"{_cap(who)} is {word}: its py-spy dump failed; no stacks"
    return None


def what_line(analysis: Analysis, sources: Sequence[str]) -> SummaryLine | None:
    """The "What" line for the cases above; None to keep the stack verdict's own."""
    unit = analysis.rank_unit
    if analysis.verdict is Verdict.CRASHED:
        crashed = [p for p in _conditioned(analysis) if p.condition and p.condition.crash]
        parts = []
        cited: list[str] = []
        for process in crashed:
            assert process.condition is not None and process.condition.crash is not None
            crash = process.condition.crash
            signal = f", {crash.signal}" if crash.signal else ""
            thread = f" in thread {crash.thread}" if crash.thread and crash.thread != "?" else ""
            at = f" at {crash.at}" if crash.at else ""
            parts.append(
                f"{_cap(_name(process, unit))} crashed (Fatal Python error: {crash.what}{signal})"
                f"{thread}{at}; a crash, not a hang"
            )
            cited.append(str(crash.source))
        return SummaryLine(topic="What", text="; ".join(parts) + ".", sources=tuple(cited))
    if analysis.verdict is Verdict.THREAD_DEADLOCK and analysis.thread_deadlocks:
        return SummaryLine(
            topic="What",
            text=" ".join(_deadlock_text(d) for d in analysis.thread_deadlocks),
            sources=tuple(s for d in analysis.thread_deadlocks for s in d.sources),
        )
    frozen = [p for p in analysis.processes if p.condition is not None]
    if frozen and analysis.verdict in (Verdict.ALL_STUCK, Verdict.COLLECTIVE_DESYNC):
        live = len(analysis.processes) - len(frozen)
        collectives = sorted({c.collective for c in analysis.classes if c.collective})
        inside = f" in {', '.join(collectives)}" if collectives else ""
        basis = plural(analysis.snapshots, "snapshot")
        who = "; ".join(f"{_name(p, unit)} {_state_words(p)}" for p in frozen)
        text = (
            f"{plural(live, 'rank' if unit == 'rank' else 'process')} stuck{inside} across "
            f"{basis}, waiting for {who}."
        )
        frozen_cites = tuple(dict.fromkeys([*sources, *(s for p in frozen for s in _cites(p))]))
        return SummaryLine(topic="What", text=_cap(text), sources=frozen_cites)
    if not analysis.classes and analysis.failed:
        parts = []
        for failed in analysis.failed[:3]:
            who = (
                ranks_name((failed.rank,), unit)
                if failed.rank is not None and unit == "rank"
                else (
                    f"PID {failed.failure.pid}" if failed.failure.pid is not None else "a process"
                )
            )
            parts.append(f"{who} is {_FAILED_WORDS.get(failed.state, _FAILED_WORDS['error'])}")
        more = len(analysis.failed) - len(parts)
        extra = f" ({plural(more, 'more failed dump')})" if more > 0 else ""
        return SummaryLine(
            topic="What",
            text=_cap("; ".join(parts)) + extra + ". No stack of any process to compare.",
            sources=tuple(str(f.failure.source) for f in analysis.failed[:3]),
        )
    return None


def _state_words(process: RankProcess) -> str:
    cond = process.condition
    assert cond is not None
    if cond.crash is not None:
        signal = f", {cond.crash.signal}" if cond.crash.signal else ""
        at = f" in {cond.crash.at}" if cond.crash.at else ""
        return f"which crashed ({cond.crash.what}{signal}){at}"
    word = {
        RankState.STOPPED: "which is stopped",
        RankState.UNINTERRUPTIBLE: "which sleeps uninterruptibly in the kernel (State D)",
        RankState.UNRESPONSIVE: "which py-spy could not attach to",
    }.get(cond.state, f"which is {cond.state.value}")
    at = f" in {cond.at}" if cond.at else ""
    return f"{word}{at}"


def _cites(process: RankProcess) -> tuple[str, ...]:
    return process.condition.sources if process.condition is not None else ()


def _deadlock_text(lock: ThreadDeadlock) -> str:
    who = f"PID {lock.pid}" if lock.pid is not None else "one process"
    parts = [
        f"{t.name or t.tid} waits for {t.waits_for.split(' (')[0]} at {t.waits_at}"
        + (f" holding {', '.join(h.split(' (')[0] for h in t.holding)}" if t.holding else "")
        + (f" (from {t.holding_from})" if t.holding_from else "")
        for t in lock.threads
    ]
    proof = "same objects in --locals" if lock.proof == "objects" else "locks matched by name"
    behind = "; ".join(
        f"{t.name or t.tid} waits behind it for {t.waits_for.split(' (')[0]} at {t.waits_at}"
        for t in lock.behind
    )
    return (
        f"Threads of {who} deadlocked on locks ({proof}), in every one of "
        f"{plural(lock.snapshots, 'snapshot')}: "
        + "; ".join(parts)
        + (f"; {behind}" if behind else "")
        + "."
    )


def condition_line(analysis: Analysis) -> SummaryLine | None:
    """Why the ranks waited for cannot answer: each one's state evidence, cited."""
    frozen = [p for p in analysis.processes if p.condition is not None]
    if not frozen or analysis.verdict is Verdict.CRASHED:
        return None
    unit = analysis.rank_unit
    text = " ".join(
        f"{_cap(_name(p, unit))}: {p.condition.why}." for p in frozen if p.condition is not None
    )
    return SummaryLine(
        topic="Why it does not answer",
        text=text,
        sources=tuple(dict.fromkeys(s for p in frozen for s in _cites(p))),
    )


def blocked_line(analysis: Analysis) -> SummaryLine | None:
    """Threads blocked in every snapshot, when no lock cycle is proven."""
    if not analysis.blocked_threads or analysis.verdict is Verdict.THREAD_DEADLOCK:
        return None
    parts = []
    for blocked in analysis.blocked_threads:
        who = f"PID {blocked.pid}" if blocked.pid is not None else "the process"
        places = "; ".join(
            f"{t.name or t.tid} at {t.waits_in} ({t.waits_at})"
            + (f" waiting for {t.waits_for}" if t.waits_for else "")
            for t in blocked.threads
        )
        parts.append(f"{who}: {places}. Not proven a deadlock: {blocked.settle}.")
    return SummaryLine(
        topic="Blocked threads",
        text=" ".join(parts),
        sources=tuple(t.source for b in analysis.blocked_threads for t in b.threads),
    )


def step_values(analysis: Analysis) -> dict[str, str]:
    """Placeholders of the next-steps rules: `{frozen}`, `{crash}`, `{threads}`, `{settle}`."""
    unit = analysis.rank_unit
    conditioned = _conditioned(analysis)
    crashed = [p for p in conditioned if p.condition is not None and p.condition.crash]
    frozen = [p for p in conditioned if p.condition is not None and not p.condition.crash]
    # A step that names PIDs on several hosts names the host of each.
    many = _several_hosts(analysis)
    crash = ""
    if crashed and crashed[0].condition is not None and crashed[0].condition.crash is not None:
        report = crashed[0].condition.crash
        signal = f" ({report.signal})" if report.signal else ""
        at = f" in {report.at}" if report.at else ""
        crash = (
            f"{_name(crashed[0], unit, host=many)}: {report.what}{signal}{at}, `{report.source}`"
        )
    threads = ""
    if analysis.thread_deadlocks:
        lock = analysis.thread_deadlocks[0]
        threads = " and ".join(
            f"{t.name or t.tid} ({t.waits_in} at {t.waits_at}, holding since {t.holding_from or '?'})"
            for t in lock.threads
        )
    settle = analysis.blocked_threads[0].settle if analysis.blocked_threads else ""
    pids = [p.identity.pid for p in frozen if p.identity.pid is not None]
    return {
        "frozen": ", ".join(_name(p, unit, host=many) for p in frozen),
        "frozen_pid": str(pids[0]) if pids else "PID",
        "crash": crash,
        "threads": threads,
        "settle": settle,
    }


def gone_unranked(analysis: Analysis) -> str:
    """A gone process no rank names, when no stack exists at all: `PID 4711` or `the
    process of snapshots/rank1_s0.txt:1` ("" otherwise), for the gone-rank next step."""
    if analysis.classes:
        return ""
    for failed in analysis.failed:
        if failed.state == "gone" and failed.rank is None:
            pid = failed.failure.pid
            return f"PID {pid}" if pid is not None else f"the process of {failed.failure.source}"
    return ""
