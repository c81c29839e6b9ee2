"""`parsed_thread` and `parsed_dump` build what the dataclass constructors build, field for
field, frozen."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields

import pytest

from reporter.model import EvidenceKind, Frame, Location, ProcessDump, ThreadStack, ThreadStatus
from reporter.model.stacks import _DUMP_FIELDS, _THREAD_FIELDS, parsed_dump, parsed_thread


def test_parsed_thread_equals_the_dataclass_constructor() -> None:
    frames = (Frame(function="recv", file="zmq/sugar/socket.py", line=802),)
    fast = parsed_thread(
        "8251", ThreadStatus.IDLE, "MainThread", frames, 8251, None, True, "r.txt", 4
    )
    slow = ThreadStack(
        thread_id="8251",
        status=ThreadStatus.IDLE,
        name="MainThread",
        frames=frames,
        os_thread_id=8251,
        owns_gil=None,
        truncated=True,
        source=Location(path="r.txt", line=4),
    )
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.source == Location(path="r.txt", line=4) and fast.is_current is False


def test_every_field_is_set() -> None:
    # A field added to ThreadStack must be added to the fast builder too.
    assert tuple(f.name for f in fields(ThreadStack)) == _THREAD_FIELDS


def test_the_fast_thread_is_frozen_and_of_its_class() -> None:
    fast = parsed_thread("1", ThreadStatus.IDLE, None, (), 1, None, False, "r.txt", 2)
    assert type(fast) is ThreadStack and type(fast.source) is Location
    with pytest.raises(FrozenInstanceError):
        fast.name = "other"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        fast.source.line = 3  # type: ignore[misc]


def test_parsed_dump_equals_the_dataclass_constructor() -> None:
    thread = parsed_thread("8251", ThreadStatus.IDLE, "MainThread", (), 8251, None, False, "r", 4)
    fast = parsed_dump(
        8251,
        EvidenceKind.PYSPY_TEXT,
        "python app.py",
        "3.11.7",
        "/usr/bin/python3",
        (thread,),
        True,
        "r.txt",
        1,
    )
    slow = ProcessDump(
        pid=8251,
        kind=EvidenceKind.PYSPY_TEXT,
        cmdline="python app.py",
        python_version="3.11.7",
        python_exe="/usr/bin/python3",
        threads=(thread,),
        truncated=True,
        source=Location(path="r.txt", line=1),
    )
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert type(fast) is ProcessDump
    with pytest.raises(FrozenInstanceError):
        fast.pid = 1  # type: ignore[misc]
    # A dump's memo slot is unset until asked, as on one the constructor made.
    assert not hasattr(fast, "main_memo") and not hasattr(slow, "main_memo")


def test_every_dump_field_is_set() -> None:
    assert tuple(f.name for f in fields(ProcessDump)) == _DUMP_FIELDS
