"""`analyze --json`: the `Analysis` as plain JSON-ready data.

Input: an `Analysis`. Output: a dict of str/int/list/dict/None only, in a
fixed key order, so `json.dumps(to_json(a))` is byte-stable. Frames are
`"function (file)"`, innermost first unless a key says otherwise; rank sets
are lists of ints (ranks, or PIDs when `rank_unit` is `"pid"`). Later
versions add keys and never rename these.
"""

from __future__ import annotations

from reporter.analysis.result import (
    Analysis,
    BranchPoint,
    IdleThread,
    RankProcess,
    StackClass,
    ThreadGroup,
    TreeNode,
)
from reporter.model import Frame

JSON = dict[str, object]


def _frames(frames: tuple[Frame, ...]) -> list[str]:
    return [f.display() for f in frames]


def class_json(stack: StackClass) -> JSON:
    """One stack class."""
    return {
        "ranks": list(stack.ranks),
        "label": stack.label,
        "collective": stack.collective,
        "wait": stack.wait,
        "state": stack.state.value,
        "frames": _frames(stack.frames),
        "pids": list(stack.pids),
    }


def branch_json(point: BranchPoint | None) -> JSON | None:
    """The branch point; `common` and branch `frames` run outermost first."""
    if point is None:
        return None
    return {
        "shared": point.shared.display() if point.shared is not None else None,
        "common": _frames(point.common),
        "branches": [
            {
                "label": b.label,
                "ranks": list(b.ranks),
                "collective": b.collective,
                "frames": _frames(b.frames),
            }
            for b in point.branches
        ],
    }


def tree_json(node: TreeNode) -> JSON:
    """The merged tree, root first; the root's `frame` is null."""
    return {
        "frame": node.frame.display() if node.frame is not None else None,
        "label": node.label,
        "children": [tree_json(child) for child in node.children],
    }


def process_json(process: RankProcess) -> JSON:
    """One rank or other process."""
    ident = process.identity
    return {
        "rank": ident.rank,
        "pid": ident.pid,
        "role": ident.role,
        "source": ident.source.value,
        "detail": ident.detail,
        "state": process.state.value,
        "title": ident.title,
        "key": ident.key,
        "dims": dict(ident.dims),
        "snapshots": len(process.snapshots),
    }


def idle_json(thread: IdleThread) -> JSON:
    """One set-aside idle thread."""
    return {
        "ranks": list(thread.ranks),
        "label": thread.label,
        "thread_name": thread.thread_name,
        "why": thread.why,
    }


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
        "verdict": analysis.verdict.value,
        "confidence": analysis.confidence.value,
        "confidence_notes": list(analysis.confidence_notes),
        "summary": analysis.summary,
        "snapshots": analysis.snapshots,
        "rank_unit": analysis.rank_unit,
        "classes": [class_json(c) for c in analysis.classes],
        "branch_point": branch_json(analysis.branch_point),
        "missing_ranks": list(analysis.missing_ranks),
        "laggards": list(analysis.laggards),
        "failed_dumps": [
            {
                "pid": f.failure.pid,
                "rank": f.rank,
                "reason": f.failure.reason,
                "source": str(f.failure.source),
            }
            for f in analysis.failed
        ],
        "ranks": [process_json(p) for p in analysis.processes],
        "others": [process_json(p) for p in analysis.others],
        "idle_threads": [idle_json(t) for t in analysis.idle_threads],
        "thread_groups": [group_json(g) for g in analysis.thread_groups],
        "tree": tree_json(analysis.tree),
        "signature": {"hash": analysis.signature.hash, "text": analysis.signature.text},
        "warnings": list(analysis.warnings),
    }
