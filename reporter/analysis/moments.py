"""Snapshots are moments, not dump files: dumps of one process taken back to back in
different forms (`py-spy dump`, `--json`, `--locals`, `--native`) are one moment.

Input: one process's dumps in capture order. Output: the number of moments, or the dumps
grouped by moment. Two consecutive dumps are one moment when both are dated, less than
`SAME_MOMENT_S` apart, and of different forms; undated dumps are a moment each (nothing says
when they were taken). Threads are matched across dumps by `thread_key`: py-spy's text
names a thread by its OS thread id, `--json` by its pthread id and the OS id beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from reporter.analysis.clues import dump_has_locals
from reporter.model import ProcessDump, ThreadStack

SAME_MOMENT_S = 1.0
"""py-spy takes a few hundred milliseconds per dump: two forms of one moment fit in this."""


def thread_key(thread: ThreadStack) -> str:
    """The thread's identity across dump forms: its OS thread id when the dump gives it."""
    return str(thread.os_thread_id) if thread.os_thread_id is not None else thread.thread_id


def _form(dump: ProcessDump) -> tuple[object, ...]:
    native = any(f.native for t in dump.threads[:4] for f in t.frames)
    return (dump.kind, dump_has_locals(dump), native)


def group(dumps: Sequence[ProcessDump]) -> list[list[ProcessDump]]:
    """`dumps` (capture order) grouped by moment."""
    out: list[list[ProcessDump]] = []
    for dump in dumps:
        if out:
            last = out[-1][-1]
            if (
                dump.captured_at is not None
                and last.captured_at is not None
                and abs((dump.captured_at - last.captured_at).total_seconds()) < SAME_MOMENT_S
                and _form(dump) != _form(last)
            ):
                out[-1].append(dump)
                continue
        out.append([dump])
    return out


def count(dumps: Sequence[ProcessDump]) -> int:
    """How many moments `dumps` show (dumps without any thread do not count)."""
    shown = [d for d in dumps if d.threads]
    if not shown:
        return 0
    # A C-level scan (asked of every rank): dates are datetimes, never false.
    if not any(map(_CAPTURED_AT, shown)):
        return len(shown)
    return len(group(shown))


_CAPTURED_AT = attrgetter("captured_at")
