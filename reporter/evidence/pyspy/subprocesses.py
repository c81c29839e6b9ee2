"""`--subprocesses` trees: undo py-spy <= 0.4.1's repeated children (docs/formats.md 1.5).

0.4.1 printed every descendant after *each* thread of the parent, so one tree shows
some PIDs several times. `merge_repeats` folds the blocks of one tree back into one
block per PID and puts every thread back in the process it belongs to.
"""

from __future__ import annotations

from collections import Counter

from reporter.evidence._text import Unrecognised
from reporter.evidence.pyspy.blocks import ProcBlock, ThreadBlock


def merge_repeats(members: list[ProcBlock], unknown: Unrecognised) -> list[ProcBlock]:
    """Undo py-spy <= 0.4.1's `--subprocesses` layout: merge blocks of one PID.

    0.4.1 printed every descendant after *each* thread of the parent, so one tree
    shows some PIDs several times, and a parent's later thread lands right after
    a child's frames (docs/formats.md 1.5). A thread found in every copy of its block
    belongs there; any other thread belongs to the nearest ancestor printed as
    many times as the thread was (the root is printed once).
    """
    pids = [proc.pid for proc in members]
    if len(set(pids)) == len(pids):
        return members
    copies: dict[int | None, list[ProcBlock]] = {}
    for proc in members:
        copies.setdefault(proc.pid, []).append(proc)
    seen_total: Counter[str] = Counter()
    seen_in_pid: dict[int | None, Counter[str]] = {pid: Counter() for pid in copies}
    for proc in members:
        tids = {thread.tid for thread in proc.threads}
        seen_in_pid[proc.pid].update(tids)
        seen_total.update(thread.tid for thread in proc.threads)
    parent_of = {pid: blocks[0].parent_pid for pid, blocks in copies.items()}
    root = members[0].pid
    owned: dict[int | None, list[ThreadBlock]] = {pid: [] for pid in copies}
    moved = 0
    for proc in members:
        for thread in proc.threads:
            owner = proc.pid
            if thread.tid != str(proc.pid) and seen_in_pid[proc.pid][thread.tid] < len(
                copies[proc.pid]
            ):
                owner = _stray_owner(thread.tid, proc, copies, parent_of, seen_total, root)
                moved += owner != proc.pid
            owned[owner].append(thread)
    merged: list[ProcBlock] = []
    for pid, blocks in copies.items():
        first = blocks[0]
        first.threads = _unique_threads(owned[pid])
        # One complete copy is enough; a copy cut at the end of the output does not count.
        first.truncated = all(block.truncated for block in blocks)
        merged.append(first)
    unknown.warn(
        members[0].line,
        f"{len(members)} process blocks for {len(copies)} PIDs: py-spy <= 0.4.1 repeats "
        f"subprocesses after every parent thread; merged by PID, {moved} thread(s) moved "
        "back to their process",
    )
    return merged


def _stray_owner(
    tid: str,
    proc: ProcBlock,
    copies: dict[int | None, list[ProcBlock]],
    parent_of: dict[int | None, int | None],
    seen_total: Counter[str],
    root: int | None,
) -> int | None:
    """Which process a thread found in only some copies of `proc` belongs to."""
    if tid.isdigit() and len(tid) < 19 and int(tid) in copies:
        return int(tid)  # a main thread's TID is its process's PID
    times = seen_total[tid]
    walk = proc.parent_pid
    visited: set[int | None] = set()
    while walk in copies and walk not in visited:
        if len(copies[walk]) == times:
            return walk
        visited.add(walk)
        walk = parent_of.get(walk)
    return root


def _unique_threads(threads: list[ThreadBlock]) -> list[ThreadBlock]:
    """One thread per id, in order of first appearance, preferring a complete copy."""
    chosen: dict[str, ThreadBlock] = {}
    for thread in sorted(threads, key=lambda t: t.line):
        kept = chosen.get(thread.tid)
        if kept is None or (kept.truncated and not thread.truncated):
            chosen[thread.tid] = thread
    return sorted(chosen.values(), key=lambda t: t.line)
