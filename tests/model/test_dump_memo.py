"""The main-thread memo on ProcessDump: found once, invisible to equality, hashing and pickling."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

from reporter.analysis.clues import main_thread
from reporter.model import EvidenceKind, Frame, Location, ProcessDump, ThreadStack, ThreadStatus


def _dump() -> ProcessDump:
    def thread(tid: str, name: str) -> ThreadStack:
        frames = (Frame(function="wait", file="threading.py", line=320),)
        return ThreadStack(
            thread_id=tid,
            status=ThreadStatus.IDLE,
            name=name,
            frames=frames,
            source=Location(path="r.txt", line=1),
        )

    return ProcessDump(
        pid=7,
        kind=EvidenceKind.PYSPY_TEXT,
        threads=(thread("8", "Worker"), thread("7", "MainThread")),
        source=Location(path="r.txt", line=1),
    )


def test_memo_keeps_the_answer_and_is_not_a_field() -> None:
    dump, twin = _dump(), _dump()
    first = main_thread(dump)
    assert first is not None and first.name == "MainThread"
    assert main_thread(dump) is first and dump.main_memo is first
    # The twin has no memo yet: the dumps are still equal and hash the same.
    assert dump == twin and hash(dump) == hash(twin) and repr(dump) == repr(twin)


def test_memo_is_not_carried_by_copies() -> None:
    dump = _dump()
    main_thread(dump)
    for other in (pickle.loads(pickle.dumps(dump)), copy.copy(dump), replace(dump, threads=())):
        assert not hasattr(other, "main_memo")
    # A copy with other threads finds its own main thread.
    assert main_thread(replace(dump, threads=())) is None
