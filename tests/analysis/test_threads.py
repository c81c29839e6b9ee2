"""Thread deadlocks: every thread of a process compared, lock cycles proven from the source.

Real captures: `fixtures/bundles/thread_deadlock*/` (`thread_deadlock.py`: two threads take
two locks in opposite order; `thread_deadlock/` and `thread_deadlock_behind/` are py-spy plain, `--locals` and
`--native` dumps with the program's source, `thread_deadlock_timeouts/` faulthandler's
`dump_traceback_later`). The rules are general: the synthetic programs below (module
globals, `acquire()`/`release()`, three threads, hand-over-hand locking, a third thread
holding the lock, a self-deadlock, `with open(...)`) are generated here with their source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reporter.analysis import Analysis, Confidence, Verdict, analyze, to_json
from reporter.analysis.excerpts import SourceFile
from reporter.load.bundle import load
from reporter.load.sources import SourceRoots
from reporter.model import ProcessDump

from .builders import bundle, dump

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"


def _doc(analysis: Analysis) -> dict[str, Any]:
    """`analyze --json` as a dict to index into."""
    return to_json(analysis)


def _analyze(folder: Path, files: Sequence[Path] | None = None, *, source: bool = True):  # type: ignore[no-untyped-def]
    bundle_ = load(list(files) if files is not None else [folder])
    roots = SourceRoots([folder / "source"]) if source else None
    return analyze(bundle_, sources=roots)


def test_real_deadlock_with_locals_is_proven_by_objects() -> None:
    analysis = _analyze(BUNDLES / "thread_deadlock")
    assert analysis.verdict is Verdict.THREAD_DEADLOCK
    assert analysis.confidence is Confidence.HIGH
    (lock,) = _doc(analysis)["thread_deadlocks"]
    assert lock["proof"] == "objects"
    source = (
        (BUNDLES / "thread_deadlock" / "source" / "thread_deadlock.py").read_text().splitlines()
    )

    def line_of(text: str, after: str) -> int:
        start = next(i for i, s in enumerate(source) if s.strip().startswith(after))
        return next(i for i in range(start, len(source)) if source[i].strip() == text) + 1

    threads = {t["name"]: t for t in lock["threads"]}
    assert set(threads) == {"cache-evictor", "metrics-exporter"}
    evictor, exporter = threads["cache-evictor"], threads["metrics-exporter"]
    # Each waits at its `with self.lock:` and holds the lock taken by its caller's `with`.
    assert (
        evictor["waits_at"]
        == f"thread_deadlock.py:{line_of('with self.lock:', 'def record_eviction')}"
    )
    assert (
        evictor["holding_from"] == f"thread_deadlock.py:{line_of('with self.lock:', 'def evict')}"
    )
    assert exporter["waits_at"] == f"thread_deadlock.py:{line_of('with self.lock:', 'def size')}"
    assert (
        exporter["holding_from"] == f"thread_deadlock.py:{line_of('with self.lock:', 'def export')}"
    )
    assert evictor["waits_for"].startswith("Stats.lock (Stats at 0x")
    assert exporter["holding"][0].split(" (")[1] == evictor["waits_for"].split(" (")[1]
    assert lock["behind"] == []


def test_the_main_thread_blocked_behind_the_cycle() -> None:
    analysis = _analyze(BUNDLES / "thread_deadlock_behind")
    (lock,) = _doc(analysis)["thread_deadlocks"]
    assert [t["name"] for t in lock["behind"]] == ["MainThread"]
    assert lock["behind"][0]["waits_for"].startswith("RadixCache.lock (RadixCache at 0x")
    assert "Blocked behind it: thread MainThread" in analysis.summary


def test_without_locals_locks_match_by_name() -> None:
    plain = sorted((BUNDLES / "thread_deadlock" / "snapshots").glob("*.txt"))
    analysis = _analyze(BUNDLES / "thread_deadlock", plain)
    assert analysis.verdict is Verdict.THREAD_DEADLOCK
    assert analysis.confidence is Confidence.MEDIUM
    assert analysis.thread_deadlocks[0].proof == "names"
    assert "py-spy dump --locals" in analysis.confidence_notes[0]


def test_faulthandler_timeouts_get_the_class_from_the_source() -> None:
    """faulthandler prints `record_eviction`, not `Stats.record_eviction`."""
    analysis = _analyze(BUNDLES / "thread_deadlock_timeouts")
    assert analysis.verdict is Verdict.THREAD_DEADLOCK
    waits = sorted(t.waits_for for t in analysis.thread_deadlocks[0].threads)
    assert waits == ["RadixCache.lock", "Stats.lock"]


def test_without_the_source_the_blocked_threads_are_named() -> None:
    plain = sorted((BUNDLES / "thread_deadlock" / "snapshots").glob("*.txt"))
    analysis = _analyze(BUNDLES / "thread_deadlock", plain, source=False)
    # One process judged on its own: the blocked threads are named, not the main thread's join.
    assert analysis.verdict is Verdict.STUCK
    assert analysis.headline.startswith("PID 7690 is stuck: cache-evictor and metrics-exporter")
    (blocked,) = _doc(analysis)["blocked_threads"]
    assert sorted(t["name"] for t in blocked["threads"]) == ["cache-evictor", "metrics-exporter"]
    assert "--source-root" in blocked["settle"] and "py-spy dump --locals" in blocked["settle"]
    assert "cache-evictor" in analysis.summary and "No lock cycle is proven" in analysis.summary


# --- Synthetic programs: source text generated here, stacks pointing into it.


class _Sources:
    """A SourceReader over in-memory files."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def find(self, frame_file: str) -> SourceFile | None:
        text = self.files.get(frame_file.rsplit("/", 1)[-1])
        if text is None:
            return None
        return SourceFile(
            path=frame_file,
            root="mem",
            lines=tuple(text.splitlines()),
            sha256=hashlib.sha256(text.encode()).hexdigest(),
        )


def _at(text: str, marker: str) -> int:
    """The 1-based line holding `# marker`."""
    return next(i for i, s in enumerate(text.splitlines(), 1) if s.endswith(f"# {marker}"))


def _process(
    pid: int,
    threads: dict[str, list[str]],
    *,
    snapshots: int = 2,
    main: Sequence[str] = ("main (app.py:1)",),
) -> list[ProcessDump]:
    return [
        dump(pid=pid, main=list(main), threads=threads, source=f"s{k}.txt")
        for k in range(snapshots)
    ]


GLOBALS = """\
import threading

LOCK_A = threading.Lock()
LOCK_B = threading.Lock()
LOCK_C = threading.Lock()


def one():
    with LOCK_A:  # one-holds
        with LOCK_B:  # one-waits
            pass


def two():
    with LOCK_B:  # two-holds
        take_c()  # two-calls


def take_c():
    with LOCK_C:  # two-waits
        pass


def three():
    LOCK_C.acquire()  # three-holds
    try:
        LOCK_A.acquire()  # three-waits
    finally:
        LOCK_C.release()
"""


def test_three_threads_on_module_globals() -> None:
    src = GLOBALS
    threads = {
        "one": [f"one (app.py:{_at(src, 'one-waits')})"],
        "two": [
            f"take_c (app.py:{_at(src, 'two-waits')})",
            f"two (app.py:{_at(src, 'two-calls')})",
        ],
        "three": [f"three (app.py:{_at(src, 'three-waits')})"],
    }
    plain = analyze(bundle(*_process(10, threads)), sources=_Sources({"app.py": src}))
    assert plain.verdict is Verdict.THREAD_DEADLOCK
    (lock,) = plain.thread_deadlocks
    assert sorted(t.name or "" for t in lock.threads) == ["one", "three", "two"]
    assert lock.proof == "names"  # a bare name may be a local: not known without --locals
    # With --locals (a frame showing its arguments), a name that is no local is a global.
    with_locals = {name: [f"{stack[0]} [unused=1]", *stack[1:]] for name, stack in threads.items()}
    proven = analyze(bundle(*_process(10, with_locals)), sources=_Sources({"app.py": src}))
    assert proven.thread_deadlocks[0].proof == "objects"
    held = {t.name: t.holding for t in proven.thread_deadlocks[0].threads}
    assert held["three"] == ("LOCK_C (module global)",)
    assert held["two"] == ("LOCK_B (module global)",)


HANDS = """\
import threading


class Node:
    def __init__(self):
        self.lock = threading.Lock()
        self.children = []

    def visit(self):
        with self.lock:  # holds
            for child in self.children:
                child.visit()  # recurse
"""


def test_hand_over_hand_locking_is_no_self_deadlock() -> None:
    """One thread holding `Node.lock` of a parent while waiting for a child's: same name,
    two objects. Without --locals it is not called a deadlock; with them, proven distinct."""
    visit = f"Node.visit (tree.py:{_at(HANDS, 'holds')})"
    recurse = f"Node.visit (tree.py:{_at(HANDS, 'recurse')})"
    sources = _Sources({"tree.py": HANDS})
    plain = analyze(bundle(*_process(11, {"walker": [visit, recurse]})), sources=sources)
    assert plain.verdict is not Verdict.THREAD_DEADLOCK
    objects = {"walker": [f"{visit} [self=<Node at 0x2000>]", f"{recurse} [self=<Node at 0x1000>]"]}
    proven = analyze(bundle(*_process(11, objects)), sources=sources)
    assert proven.verdict is not Verdict.THREAD_DEADLOCK
    same = {"walker": [f"{visit} [self=<Node at 0x1000>]", f"{recurse} [self=<Node at 0x1000>]"]}
    self_lock = analyze(bundle(*_process(11, same)), sources=sources)
    assert self_lock.verdict is Verdict.THREAD_DEADLOCK
    (lock,) = self_lock.thread_deadlocks
    assert len(lock.threads) == 1 and lock.proof == "objects"
    assert "Self-deadlock" in self_lock.summary


HOLDER = """\
import threading
import time

LOCK = threading.Lock()


def worker():
    with LOCK:  # wait
        pass


def holder():
    with LOCK:  # hold
        time.sleep(3600)  # sleeps
"""


def test_waiters_behind_a_holder_that_waits_for_nothing_are_no_cycle() -> None:
    src = HOLDER
    threads = {
        "w1": [f"worker (app.py:{_at(src, 'wait')})"],
        "w2": [f"worker (app.py:{_at(src, 'wait')})"],
        "holder": [f"holder (app.py:{_at(src, 'sleeps')})"],
    }
    analysis = analyze(bundle(*_process(12, threads)), sources=_Sources({"app.py": src}))
    assert analysis.verdict is not Verdict.THREAD_DEADLOCK
    (blocked,) = analysis.blocked_threads
    assert sorted(t.name or "" for t in blocked.threads) == ["w1", "w2"]
    assert [t.waits_for for t in blocked.threads] == ["LOCK", "LOCK"]


MIXED = """\
import threading


class Store:
    def __init__(self):
        self.lock = threading.Lock()
        self.cv = threading.Condition()

    def save(self, path):
        with open(path) as handle:  # open
            handle.read()

    def put(self):
        self.lock.acquire()  # taken
        self.lock.release()  # released
        with self.cv:  # cv
            pass
"""


def test_lines_that_take_no_lock_and_released_locks() -> None:
    src = MIXED
    threads = {
        "saver": [f"Store.save (store.py:{_at(src, 'open')})"],
        "putter": [f"Store.put (store.py:{_at(src, 'cv')})"],
    }
    analysis = analyze(bundle(*_process(13, threads)), sources=_Sources({"store.py": src}))
    assert analysis.verdict is not Verdict.THREAD_DEADLOCK
    blocked = [t for b in analysis.blocked_threads for t in b.threads]
    # `with open(...)` takes no lock: the saver is not a lock waiter.
    assert "saver" not in {t.name for t in blocked}
    (putter,) = [t for t in blocked if t.name == "putter"]
    assert putter.waits_for == "Store.cv"
    assert putter.holding == ()  # acquired, then released before the line


def test_a_thread_that_moves_is_not_blocked() -> None:
    src = GLOBALS
    moving = [
        dump(
            pid=14,
            main=["main (app.py:1)"],
            threads={"one": [f"one (app.py:{line})"]},
            source=f"s{k}.txt",
        )
        for k, line in enumerate((_at(src, "one-waits"), _at(src, "one-holds")))
    ]
    analysis = analyze(bundle(*moving), sources=_Sources({"app.py": src}))
    assert analysis.blocked_threads == () and analysis.thread_deadlocks == ()


def test_condition_waits_are_not_lock_waits() -> None:
    cond = ["Condition.wait (threading.py:331)", "Event.wait (threading.py:629)", "run (x.py:3)"]
    analysis = analyze(bundle(*_process(15, {"a": cond, "b": cond})))
    assert analysis.blocked_threads == () and analysis.thread_deadlocks == ()


@pytest.mark.parametrize("cell", ["<cell at 0x7f00>", "<Stats at 0x7f01>"])
def test_a_closure_cell_is_no_object(cell: str) -> None:
    """py-spy shows a closure's `self` as `<cell at 0x...>`: the object behind it is not
    known, so the lock is matched by name only."""
    real = (BUNDLES / "thread_deadlock" / "source" / "thread_deadlock.py").read_text()
    record = next(i for i, s in enumerate(real.splitlines(), 1) if "def record_eviction" in s) + 2
    evict = next(i for i, s in enumerate(real.splitlines(), 1) if "self.stats.record_eviction" in s)
    size = next(i for i, s in enumerate(real.splitlines(), 1) if "def size" in s) + 2
    export = next(i for i, s in enumerate(real.splitlines(), 1) if "cache.size()" in s)
    threads = {
        "evictor": [
            f"Stats.record_eviction (thread_deadlock.py:{record}) [self=<Stats at 0x7f01>]",
            f"RadixCache.evict (thread_deadlock.py:{evict}) [self=<RadixCache at 0x7f02>]",
        ],
        "exporter": [
            f"RadixCache.size (thread_deadlock.py:{size}) [self=<RadixCache at 0x7f02>]",
            f"Stats.export (thread_deadlock.py:{export}) [self={cell}]",
        ],
    }
    analysis = analyze(
        bundle(*_process(16, threads)), sources=_Sources({"thread_deadlock.py": real})
    )
    assert analysis.verdict is Verdict.THREAD_DEADLOCK
    proof = analysis.thread_deadlocks[0].proof
    assert proof == ("names" if "cell" in cell else "objects")


def test_an_aborted_process_with_a_lock_cycle_is_the_deadlock() -> None:
    """`kill -ABRT` of a hung process with PYTHONFAULTHANDLER=1 prints `Fatal Python error:
    Aborted` and every thread: the lock cycle is the story, not the abort. Made from the
    real Timeout dump by giving it the headline and current-thread marker of an abort."""
    real = (BUNDLES / "thread_deadlock_timeouts" / "stderr.txt").read_text(encoding="utf-8")
    first = real.split("Timeout (0:00:01)!\n")[1]
    *others, main = first.rstrip("\n").split("\n\n")
    aborted = "Fatal Python error: Aborted\n\n" + "\n\n".join(
        [*others, main.replace("Thread 0x", "Current thread 0x", 1)]
    )
    from reporter.evidence import faulthandler

    dumps = faulthandler.parse(aborted, source="stderr.txt").dumps
    assert len(dumps) == 1 and dumps[0].headline == "Fatal Python error: Aborted"
    sources = SourceRoots([BUNDLES / "thread_deadlock_timeouts" / "source"])
    analysis = analyze(bundle(*dumps), sources=sources)
    assert analysis.verdict is Verdict.THREAD_DEADLOCK
    assert "one snapshot" in " ".join(analysis.confidence_notes)
    assert analysis.summary.startswith("Lock-order deadlock between 2 threads")
    assert "or a SIGABRT sent to the process" in analysis.summary
