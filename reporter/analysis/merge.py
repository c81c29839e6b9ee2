"""STAT-style merge of stacks across ranks: equivalence classes and a prefix tree.

Inputs: per rank (or PID) the interned stacks of its latest snapshot
(`Member`s). Outputs: `StackClass`es (ranks whose stacks are equal at a
`Similarity`), a `TreeNode` prefix tree (root = outermost frames, each node
labelled with the ranks passing through it), `ThreadGroup`s for non-main
threads grouped by normalised name, and `IdleThread`s set aside::

    [0-3] run_scheduler_process
    └── [0-3] event_loop_overlap
        ├── [0-1] check_hicache_events -> all_reduce
        └── [2-3] on_idle

Classes are built from distinct stack keys first, so the cost grows with
the number of distinct stacks, not with ranks x frames.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import chain
from typing import NamedTuple

from reporter.analysis.result import (
    IdleThread,
    RankState,
    Similarity,
    StackClass,
    ThreadGroup,
    TreeNode,
)
from reporter.analysis.stacks import StackInfo, StackTable
from reporter.model import Frame, ThreadStack


class Member(NamedTuple):
    """One rank's stack of one thread role, as merging sees it (a named tuple: one is made
    for every rank, and a tuple is built at twice the speed of a frozen dataclass)."""

    unit: int
    state: RankState
    pid: int | None
    info: StackInfo


_THREAD_ID = re.compile(r"[-_:#. ]?(?:0x[0-9a-fA-F]+|[0-9]+)(?=$|[-_:#. ()\[\]])")


@lru_cache(maxsize=4096)
def normalise_thread_name(name: str | None) -> str:
    """Thread name without numbers and ids: `Thread-3 (worker)` -> `Thread (worker)`,
    `ThreadPoolExecutor-0_1` -> `ThreadPoolExecutor`; unnamed threads -> `(unnamed)`."""
    if not name:
        return "(unnamed)"
    previous = None
    text = name
    while previous != text:
        previous = text
        text = _THREAD_ID.sub("", text).strip()
    return text or name


def combine_states(states: Iterable[RankState]) -> RankState:
    """One state when all agree, else `MIXED`."""
    distinct = set(states)
    if len(distinct) == 1:
        return distinct.pop()
    return RankState.MIXED if distinct else RankState.UNKNOWN


def _path(info: StackInfo, similarity: Similarity, table: StackTable) -> list[tuple[object, Frame]]:
    """(node key, frame) pairs outermost first, as the tree compares them."""
    if similarity is Similarity.EXACT:
        return [((f.function, f.file, f.line), f) for f in reversed(info.frames)]
    frames = info.informative if similarity is Similarity.LOOSE else info.frames
    return [(table.name_key(f), f) for f in reversed(frames)]


class _Node:
    __slots__ = ("children", "frame", "ranks")

    def __init__(self, frame: Frame | None) -> None:
        self.frame = frame
        self.ranks: list[tuple[int, ...]] = []
        self.children: dict[object, _Node] = {}

    def freeze(self) -> TreeNode:
        """The frozen subtree, built bottom-up without recursion (stacks can be 10,000 deep)."""
        order: list[_Node] = []
        pending = [self]
        while pending:
            node = pending.pop()
            order.append(node)
            pending.extend(node.children.values())
        frozen: dict[int, TreeNode] = {}
        # Children come after their parent in `order`, so reversed order is bottom-up.
        for node in reversed(order):
            ranks = tuple(sorted(set(chain.from_iterable(node.ranks))))
            kids = sorted(
                (frozen.pop(id(child)) for child in node.children.values()),
                key=_child_order,
            )
            frozen[id(node)] = TreeNode(frame=node.frame, ranks=ranks, children=tuple(kids))
        return frozen[id(self)]


def _child_order(node: TreeNode) -> tuple[int, str, int]:
    """Siblings by smallest rank, then frame text and line: byte-stable output."""
    return (
        node.ranks[0] if node.ranks else -1,
        node.frame.display() if node.frame else "",
        node.frame.line if node.frame and node.frame.line is not None else -1,
    )


def build_tree(
    classes: Sequence[tuple[StackInfo, tuple[int, ...]]],
    similarity: Similarity,
    table: StackTable,
) -> TreeNode:
    """Prefix tree of the classes' stacks (each: representative stack and its ranks).

    Pass classes sorted by smallest rank: a node keeps the frame of the first
    class through it, i.e. of the smallest rank.
    """
    root = _Node(None)
    for info, ranks in classes:
        root.ranks.append(ranks)
        node = root
        for key, frame in _path(info, similarity, table):
            child = node.children.get(key)
            if child is None:
                child = _Node(frame)
                node.children[key] = child
            child.ranks.append(ranks)
            node = child
    return root.freeze()


def group_classes(
    members: Sequence[Member], similarity: Similarity
) -> list[tuple[StackInfo, tuple[int, ...], list[Member]]]:
    """Members bucketed by stack key: (representative, ranks, members), by smallest rank."""
    buckets: dict[int, list[Member]] = {}
    for member in members:
        buckets.setdefault(member.info.key(similarity), []).append(member)
    out = []
    for bucket in buckets.values():
        bucket.sort(key=lambda m: m.unit)
        ranks = tuple(sorted({m.unit for m in bucket}))
        out.append((bucket[0].info, ranks, bucket))
    out.sort(key=lambda item: (item[1][0], item[0].exact_id))
    return out


def stack_classes(
    members: Sequence[Member], similarity: Similarity
) -> tuple[tuple[StackClass, ...], list[tuple[StackInfo, tuple[int, ...]]]]:
    """Equivalence classes sorted by smallest rank, and (representative, ranks) pairs for trees."""
    classes: list[StackClass] = []
    pairs: list[tuple[StackInfo, tuple[int, ...]]] = []
    for info, ranks, bucket in group_classes(members, similarity):
        facts = info.facts
        classes.append(
            StackClass(
                ranks=ranks,
                collective=facts.collective,
                wait=facts.wait,
                state=combine_states(m.state for m in bucket),
                frames=info.frames,
                pids=tuple(sorted({m.pid for m in bucket if m.pid is not None})),
                call_site=facts.site_text,
            )
        )
        pairs.append((info, ranks))
    return tuple(classes), pairs


class ThreadSample(NamedTuple):
    """A non-main thread of one rank's latest snapshot (a named tuple, like `Member`)."""

    unit: int
    state: RankState
    pid: int | None
    thread: ThreadStack
    info: StackInfo


def split_threads(
    samples: Sequence[ThreadSample], similarity: Similarity, table: StackTable
) -> tuple[tuple[ThreadGroup, ...], tuple[IdleThread, ...]]:
    """Generic idle threads set aside; the rest grouped by normalised thread name."""
    idle: dict[tuple[str, str], list[ThreadSample]] = {}
    named: dict[str, list[Member]] = {}
    names: dict[str | None, str] = {}  # thousands of ranks repeat a few thread names
    for sample in samples:
        raw = sample.thread.name
        name = names.get(raw)
        if name is None:
            name = names[raw] = normalise_thread_name(raw)
        match = sample.info.facts.idle
        if match is not None:
            idle.setdefault((match.label, name), []).append(sample)
            continue
        named.setdefault(name, []).append(
            Member(unit=sample.unit, state=sample.state, pid=sample.pid, info=sample.info)
        )
    idle_threads = []
    for (label, name), group in idle.items():
        first = min(group, key=lambda s: s.unit)
        assert first.info.facts.idle is not None
        frame = first.info.facts.idle.frame
        ranks = tuple(sorted({s.unit for s in group}))
        idle_threads.append(
            IdleThread(
                ranks=ranks,
                thread_name=name,
                why=f"{label}: idle in {frame.short_function} ({frame.short_file})",
            )
        )
    idle_threads.sort(key=lambda t: (t.ranks[0], t.thread_name, t.why))
    groups = []
    for name in sorted(named):
        classes, pairs = stack_classes(named[name], similarity)
        groups.append(
            ThreadGroup(name=name, tree=build_tree(pairs, similarity, table), classes=classes)
        )
    return tuple(groups), tuple(idle_threads)
