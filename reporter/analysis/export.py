"""`analyze --json`: the `Analysis` as plain JSON-ready data.

Input: an `Analysis`. Output: a dict of str/int/list/dict/None only, in a
fixed key order, so `json.dumps(to_json(a))` is byte-stable. Frames are
`"function (file)"`, innermost first unless a key says otherwise; rank sets
are lists of ints (ranks, or PIDs when `rank_unit` is `"pid"`, or positions in
the evidence when it is `"process"`: no dump named a PID). Later
versions add keys and never rename these. `wedge` (null without metrics) and
`timeline` (a list of `{at, kind, text, source}`) carry times as ISO 8601 UTC.
`environment` (allowlisted, redacted), `diff` (null without a baseline),
`excerpts` and `goroutines` (null without Go dumps) come from their modules'
`*_json` functions. `waits_for` lists who waits for whom (`{"waiting": {ranks, pids,
collective, at, process_group, group_ranks}, "for": {ranks, pids, state, at}, group, instance,
kind, peer_source}`, kind `collective` or `p2p`); `p2p_cycles` the cycles point-to-point
waits close (`{ranks, label, order, directions, sites, deadlock, name}`); `instances` is
empty for one server or job, else one entry per instance (`id`, `label`, `pids`,
`ranks`, `verdict`, ...); classes and ranks carry their `instance` id. `crashes` lists
faulthandler fatal errors, `thread_deadlocks` lock cycles between threads of one process
(`threads[]`: `tid`, `name`, `waits_at`, `holding_from`, ...), `blocked_threads` threads
blocked with no proven cycle; `ranks[].condition` says why process state evidence
(stopped, uninterruptible, unresponsive, crashed) decided a rank's `state`.
"""

from __future__ import annotations

import json
from datetime import datetime

from reporter.analysis import flight_recorder
from reporter.analysis.p2p import cycle_name
from reporter.analysis.records import JSON, record
from reporter.analysis.result import (
    Analysis,
    BlockedThreads,
    BranchPoint,
    Condition,
    HostRow,
    IdleThread,
    InstanceVerdict,
    LockThread,
    P2pCycle,
    RankProcess,
    StackClass,
    ThreadDeadlock,
    ThreadGroup,
    TreeNode,
    WaitsFor,
)
from reporter.analysis.wedge import WedgeReport
from reporter.core.times import iso
from reporter.model import TimelineEvent


def class_json(stack: StackClass) -> JSON:
    """One stack class."""
    return record(stack, "ranks label collective wait state frames pids instance call_site")


def branch_json(point: BranchPoint | None) -> JSON | None:
    """The branch point; `common` and branch `frames` run outermost first."""
    if point is None:
        return None
    return {
        **record(point, "shared common"),
        "branches": [record(b, "label ranks collective frames") for b in point.branches],
    }


def tree_json(node: TreeNode) -> JSON:
    """The merged tree, root first; the root's `frame` is null.

    Built without recursion: a tree is as deep as the deepest stack (10,000 frames
    in a runaway recursion).
    """
    out: JSON = {}
    pending: list[tuple[TreeNode, JSON]] = [(node, out)]
    while pending:
        current, target = pending.pop()
        children: list[JSON] = []
        target["frame"] = current.frame.display() if current.frame is not None else None
        target["label"] = current.label
        target["children"] = children
        for child in current.children:
            slot: JSON = {}
            children.append(slot)
            pending.append((child, slot))
    return out


class _Raw(str):
    """Output text queued between values while encoding (never a value itself)."""

    __slots__ = ()


def dumps_deep(value: object) -> str:
    """`json.dumps(value, ensure_ascii=False)` for nesting of any depth, without recursion.

    The C encoder recurses once per level and stops at the recursion limit; the
    merged tree of a deep stack nests that far. Scalars still go through `json.dumps`.
    """
    parts: list[str] = []
    # Work items: a value to encode, or a piece of output text (`_Raw`).
    pending: list[object] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, _Raw):
            parts.append(item)
        elif isinstance(item, dict):
            pieces: list[object] = [_Raw("{")]
            for index, (key, member) in enumerate(item.items()):
                separator = ", " if index else ""
                pieces.append(_Raw(separator + json.dumps(str(key), ensure_ascii=False) + ": "))
                pieces.append(member)
            pieces.append(_Raw("}"))
            pending.extend(reversed(pieces))
        elif isinstance(item, list):
            pieces = [_Raw("[")]
            for index, member in enumerate(item):
                if index:
                    pieces.append(_Raw(", "))
                pieces.append(member)
            pieces.append(_Raw("]"))
            pending.extend(reversed(pieces))
        else:
            parts.append(json.dumps(item, ensure_ascii=False))
    return "".join(parts)


def process_json(process: RankProcess) -> JSON:
    """One rank or other process; `condition` is null unless process state evidence
    (`/proc` status, py-spy's failures, a crash report) decided its `state`."""
    ident = process.identity
    return {
        **record(ident, "rank pid role source detail"),
        "state": process.state.value,
        **record(ident, "title key"),
        "dims": dict(ident.dims),
        "snapshots": len(process.snapshots),
        "instance": ident.instance,
        "host": ident.host or None,
        "condition": condition_json(process.condition),
    }


def condition_json(cond: Condition | None) -> JSON | None:
    """Why a process takes no part any more: `state`, `why`, `sources`, `at`, `wchan`,
    `tracer_pid`; null when the stacks alone decide."""
    if cond is None:
        return None
    return record(cond, "state why sources at wchan tracer_pid")


def crash_json(process: RankProcess) -> JSON:
    """One faulthandler fatal error: who, what (`Segmentation fault`), the signal, the
    crashing thread, its innermost application frame, its frames innermost first, where."""
    assert process.condition is not None and process.condition.crash is not None
    crash = process.condition.crash
    return {
        **record(process.identity, "rank pid"),
        **record(crash, "what signal thread at frames source captured_at"),
    }


def lock_thread_json(thread: LockThread) -> JSON:
    """One blocked thread: where it waits (`file:line`), for which lock, what it holds and
    where it took it."""
    return record(thread, "tid name waits_at waits_in waits_for holding holding_from how source")


def deadlock_json(lock: ThreadDeadlock) -> JSON:
    """One lock cycle: the process, the proof (`objects` or `names`), the threads in cycle
    order (each waits for a lock the next holds) and the threads blocked behind it."""
    return {
        **record(lock, "pid rank proof snapshots"),
        "threads": [lock_thread_json(t) for t in lock.threads],
        "behind": [lock_thread_json(t) for t in lock.behind],
        "sources": list(lock.sources),
    }


def blocked_json(blocked: BlockedThreads) -> JSON:
    """Threads blocked in every snapshot with no proven cycle, and what would settle it."""
    return {
        **record(blocked, "pid rank snapshots settle"),
        "threads": [lock_thread_json(t) for t in blocked.threads],
    }


def waits_json(edge: WaitsFor) -> JSON:
    """One waits-for edge: `waiting` ranks in a collective at a call site, and the ranks
    they wait `for`, with their state and where they are."""
    return {
        "waiting": record(edge.waiting, "ranks pids collective at process_group=group group_ranks"),
        "for": record(edge.waited, "ranks pids state at"),
        **record(edge, "group instance kind peer_source"),
    }


def cycle_json(cycle: P2pCycle) -> JSON:
    """One cycle of point-to-point waits."""
    return {
        **record(cycle, "ranks label order directions sites deadlock"),
        "name": cycle_name(cycle),
    }


def instance_json(inst: InstanceVerdict) -> JSON:
    """One instance (server, job) of a bundle that holds several."""
    return record(inst, "id label pids ranks verdict confidence separated_by=how summary")


def idle_json(thread: IdleThread) -> JSON:
    """One set-aside idle thread."""
    return record(thread, "ranks label thread_name why")


def group_json(group: ThreadGroup) -> JSON:
    """One non-main thread group."""
    return {"name": group.name, "classes": [class_json(c) for c in group.classes]}


def to_json(analysis: Analysis) -> JSON:
    """The analysis as JSON-ready data (see the module docstring)."""
    rank_of_pid: dict[int, int] = {}
    for process in analysis.processes:
        for dump in process.snapshots:
            if dump.pid is not None and process.identity.rank is not None:
                rank_of_pid.setdefault(dump.pid, process.identity.rank)
    return {
        **record(analysis, "verdict confidence confidence_notes summary snapshots rank_unit"),
        "classes": [class_json(c) for c in analysis.classes],
        "branch_point": branch_json(analysis.branch_point),
        **record(analysis, "missing_ranks laggards"),
        "failed_dumps": [
            {
                "pid": f.failure.pid,
                "rank": f.rank,
                "reason": f.failure.reason,
                "source": str(f.failure.source),
                "state": f.state,
            }
            for f in analysis.failed
        ],
        "waits_for": [waits_json(e) for e in analysis.waits_for],
        "p2p_cycles": [cycle_json(c) for c in analysis.p2p_cycles],
        "p2p_deadlock": analysis.p2p_deadlock or None,
        "instances": [instance_json(i) for i in analysis.instances],
        "ranks": [process_json(p) for p in analysis.processes],
        "others": [process_json(p) for p in analysis.others],
        "idle_threads": [idle_json(t) for t in analysis.idle_threads],
        "thread_groups": [group_json(g) for g in analysis.thread_groups],
        "tree": tree_json(analysis.tree),
        "signature": record(analysis.signature, "hash text"),
        "warnings": list(analysis.warnings),
        "wedge": wedge_json(analysis.wedge),
        "timeline": [event_json(e) for e in analysis.timeline],
        **_surroundings_json(analysis),
        "flight_recorder": flight_recorder.to_json(analysis.flight_recorder),
        "crashes": [
            crash_json(p)
            for p in (*analysis.processes, *analysis.others)
            if p.condition is not None and p.condition.crash is not None
        ],
        "thread_deadlocks": [deadlock_json(d) for d in analysis.thread_deadlocks],
        "blocked_threads": [blocked_json(b) for b in analysis.blocked_threads],
        "hosts": [host_json(h) for h in analysis.hosts],
    }


def host_json(row: HostRow) -> JSON:
    """One host: its ranks, their states, its failed dumps and how its capture went."""
    return {
        **record(row, "name status reason ranks label pids"),
        "states": dict(row.states),
        **record(row, "failed_dumps others"),
    }


def _surroundings_json(analysis: Analysis) -> JSON:
    """`environment`, `diff`, `excerpts`, `goroutines`: null when the bundle has none.

    Their modules are imported only when there is something to export.
    """
    out: JSON = {"environment": None, "diff": None, "excerpts": None, "goroutines": None}
    if analysis.environment:
        from reporter.analysis.environment import summary_json

        out["environment"] = summary_json(analysis.environment)
    if analysis.diff is not None:
        from reporter.analysis.diff import diff_json

        out["diff"] = diff_json(analysis.diff)
    if analysis.excerpts is not None:
        from reporter.analysis.excerpts import excerpts_json

        out["excerpts"] = excerpts_json(analysis.excerpts)
    if analysis.goroutines:
        from reporter.analysis.goroutines import goroutines_json

        out["goroutines"] = goroutines_json(analysis.goroutines)
    return out


def _round(value: float | None) -> float | None:
    """Six significant digits: enough for any signal, and no float noise in the JSON."""
    return float(f"{value:.6g}") if value is not None else None


def _time(moment: datetime | None) -> str | None:
    return iso(moment) if moment is not None else None


def wedge_json(wedge: WedgeReport | None) -> JSON | None:
    """The wedge: times in ISO 8601 UTC (`2026-11-29T14:43:41.973Z`) or null; null without metrics.

    `onset` is the first sample of the wedge, `onset_after` the last sample before
    it (the stop happened between the two); `end` is null while still wedged.
    """
    if wedge is None:
        return None
    episode = wedge.episode
    return {
        "found": episode is not None,
        "onset": _time(episode.onset) if episode else None,
        "onset_after": _time(episode.onset_after) if episode else None,
        "end": _time(episode.end) if episode else None,
        "end_reason": episode.end_reason or None if episode else None,
        "still_wedged": wedge.still_wedged,
        "duration_seconds": episode.duration if episode else None,
        "onset_source": str(episode.source) if episode else None,
        "window_seconds": wedge.window,
        "interval_seconds": wedge.interval,
        "first_sample": _time(wedge.first_sample),
        "last_sample": _time(wedge.last_sample),
        "summary": wedge.summary,
        "signals": [
            {
                "name": s.name,
                "role": s.role.value,
                "series": s.series,
                "rate": s.rate,
                "shows_wedge": s.shows_wedge,
                "before": _round(s.before),
                "at_onset": _round(s.at_onset),
                "last": _round(s.last),
                "min": _round(s.minimum),
                "max": _round(s.maximum),
                "text": s.text,
            }
            for s in wedge.signals
        ],
        "step_changes": [
            record(s, "signal kind at slope_per_second=slope text source") for s in wedge.steps
        ],
        "episodes": [
            record(e, "onset end duration_seconds=duration source") for e in wedge.episodes
        ],
        "gaps": [
            {
                "start": _time(g.start),
                "end": _time(g.end),
                "seconds": round((g.end - g.start).total_seconds(), 3),
                "source": str(g.source),
            }
            for g in wedge.gaps
        ],
        "notes": list(wedge.notes),
    }


def event_json(event: TimelineEvent) -> JSON:
    """One timeline entry: `at` (ISO 8601 UTC), `kind`, `text`, `source` (file:line)."""
    return record(event, "at kind text source")
