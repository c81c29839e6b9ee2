"""`parsed_thread` builds what `ThreadStack(...)` builds, field for field."""

from __future__ import annotations

from dataclasses import fields

from reporter.model import Frame, Location, ThreadStack, ThreadStatus
from reporter.model.stacks import _THREAD_FIELDS, parsed_thread


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
