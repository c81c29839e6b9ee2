"""Merging stacks across ranks: classes at each similarity, the prefix tree, thread groups."""

from __future__ import annotations

import pytest

from reporter.analysis import Similarity, TreeNode, analyze
from reporter.analysis.merge import normalise_thread_name
from reporter.analysis.ranks import main_thread
from reporter.model import EvidenceKind, Location, ProcessDump

from .builders import ALL_REDUCE, bundle, dump, scheduler_stack, thread

FORWARD = "forward_batch (sglang/srt/managers/scheduler.py:{line})"
CALL = "Module._call_impl (torch/nn/modules/module.py:1527)"


def _three_ranks() -> list[ProcessDump]:
    return [
        dump(
            pid=10,
            title="sglang::scheduler_TP0",
            main=scheduler_stack(*ALL_REDUCE, FORWARD.format(line=10)),
        ),
        dump(
            pid=11,
            title="sglang::scheduler_TP1",
            main=scheduler_stack(*ALL_REDUCE, FORWARD.format(line=11)),
        ),
        dump(
            pid=12,
            title="sglang::scheduler_TP2",
            main=scheduler_stack(*ALL_REDUCE, CALL, FORWARD.format(line=10)),
        ),
    ]


@pytest.mark.parametrize(
    ("similarity", "labels"),
    [
        (Similarity.EXACT, ["[0]", "[1]", "[2]"]),
        (Similarity.LINES_IGNORED, ["[0-1]", "[2]"]),
        (Similarity.LOOSE, ["[0-2]"]),
    ],
)
def test_classes_by_similarity(similarity: Similarity, labels: list[str]) -> None:
    analysis = analyze(bundle(*_three_ranks()), similarity=similarity)
    assert [c.label for c in analysis.classes] == labels
    assert all(c.collective == "all_reduce" for c in analysis.classes)


def test_class_representative_is_the_smallest_rank() -> None:
    analysis = analyze(bundle(*reversed(_three_ranks())))
    first = analysis.classes[0]
    assert first.ranks == (0, 1)
    assert first.pids == (10, 11)
    assert first.frames[2].line == 10


def _walk(node: TreeNode, depth: int = 0) -> list[str]:
    name = node.frame.short_function if node.frame else "<root>"
    out = [f"{'  ' * depth}{node.label} {name}"]
    for child in node.children:
        out.extend(_walk(child, depth + 1))
    return out


def test_tree_merges_common_prefix() -> None:
    dumps = [
        dump(
            pid=10 + r,
            title=f"sglang::scheduler_TP{r}",
            main=scheduler_stack(
                *ALL_REDUCE, "check_hicache_events (sglang/srt/managers/scheduler.py:900)"
            ),
        )
        for r in (0, 1)
    ] + [
        dump(
            pid=10 + r,
            title=f"sglang::scheduler_TP{r}",
            main=scheduler_stack("on_idle (sglang/srt/managers/scheduler.py:950)"),
        )
        for r in (3, 2)
    ]
    tree = analyze(bundle(*dumps)).tree
    lines = _walk(tree)
    assert lines[0] == "[0-3] <root>"
    # Bootstrap frames, entry and loop are shared by all; the split is below the loop.
    assert "[0-3] event_loop_overlap_disagg_decode" in [line.strip() for line in lines]
    loop = tree
    while len(loop.children) == 1:
        loop = loop.children[0]
    assert (
        loop.frame is not None and loop.frame.short_function == "event_loop_overlap_disagg_decode"
    )
    assert [(c.label, c.frame.short_function if c.frame else "") for c in loop.children] == [
        ("[0-1]", "check_hicache_events"),
        ("[2-3]", "on_idle"),
    ]


def test_empty_bundle_tree() -> None:
    tree = analyze(bundle()).tree
    assert (tree.frame, tree.ranks, tree.label, tree.children) == (None, (), "[]", ())


@pytest.mark.parametrize(
    ("name", "normalised"),
    [
        ("Thread-3 (worker)", "Thread (worker)"),
        ("ThreadPoolExecutor-0_1", "ThreadPoolExecutor"),
        ("cpu-worker-12", "cpu-worker"),
        ("pt_autograd_0", "pt_autograd"),
        ("MainThread", "MainThread"),
        ("watchdog", "watchdog"),
        ("42", "42"),
        (None, "(unnamed)"),
        ("", "(unnamed)"),
    ],
)
def test_normalise_thread_name(name: str | None, normalised: str) -> None:
    assert normalise_thread_name(name) == normalised


def test_thread_groups_and_idle_threads() -> None:
    worker = [
        "Queue.get (queue.py:171)",
        "work (myapp/pool.py:20)",
        "Thread.run (threading.py:982)",
    ]
    busy = ["crunch (myapp/pool.py:30)", "work (myapp/pool.py:21)", "Thread.run (threading.py:982)"]
    tqdm = [
        "Condition.wait (threading.py:331)",
        "Event.wait (threading.py:629)",
        "TMonitor.run (tqdm/_monitor.py:60)",
    ]
    dumps = [
        dump(
            pid=10 + r,
            title=f"sglang::scheduler_TP{r}",
            main=scheduler_stack("on_idle (sglang/srt/managers/scheduler.py:950)"),
            threads=[
                (f"Thread-{r + 3} (work)", busy if r == 1 else worker),
                ("tqdm-monitor", tqdm),
                ("watchdog", ["watchdog_thread (sglang/srt/managers/scheduler.py:77)"]),
            ],
        )
        for r in range(2)
    ]
    analysis = analyze(bundle(*dumps))
    (group,) = analysis.thread_groups
    assert group.name == "Thread (work)"
    assert [(c.label, c.wait) for c in group.classes] == [("[0]", "queue-get"), ("[1]", None)]
    assert group.tree.label == "[0-1]"
    assert [(t.thread_name, t.label, t.why) for t in analysis.idle_threads] == [
        ("tqdm-monitor", "[0-1]", "tqdm monitor: idle in run (tqdm/_monitor.py)"),
        ("watchdog", "[0-1]", "watchdog: idle in watchdog_thread (managers/scheduler.py)"),
    ]


def _process(*threads: tuple[str, str | None]) -> ProcessDump:
    return ProcessDump(
        pid=7,
        kind=EvidenceKind.PYSPY_TEXT,
        threads=tuple(
            thread([f"f{i} (a.py:1)"], name=name, thread_id=tid)
            for i, (tid, name) in enumerate(threads)
        ),
        source=Location(path="x.txt"),
    )


@pytest.mark.parametrize(
    ("threads", "expected"),
    [
        ((("8", "worker"), ("9", "MainThread")), "9"),
        ((("8", "worker"), ("7", None)), "7"),
        ((("8", "worker"), ("9", None)), "8"),
    ],
)
def test_main_thread(threads: tuple[tuple[str, str | None], ...], expected: str) -> None:
    found = main_thread(_process(*threads))
    assert found is not None and found.thread_id == expected


def test_main_thread_by_module_frame() -> None:
    # faulthandler has no names and no PID; the main thread starts at `<module>`.
    dump_ = ProcessDump(
        pid=None,
        kind=EvidenceKind.FAULTHANDLER,
        threads=(
            thread(
                ["work (a.py:3)", "Thread._bootstrap (threading.py:1002)"],
                name=None,
                thread_id="0x1",
            ),
            thread(
                ["stuck (a.py:4)", "<module> (a.py:6)", "0x7f00 (libc.so.6)"],
                name=None,
                thread_id="0x2",
            ),
        ),
        source=Location(path="fh.txt"),
    )
    found = main_thread(dump_)
    assert found is not None and found.thread_id == "0x2"


def test_main_thread_of_empty_dump() -> None:
    assert main_thread(_process()) is None
