"""Tests for the faulthandler parser: real captures, interleaved dumps, fuzzing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reporter.evidence import faulthandler
from reporter.model import EvidenceKind, Frame, ParseResult, ProcessDump, ThreadStatus

from .conftest import line_of


def _only(result: ParseResult) -> ProcessDump:
    assert len(result.dumps) == 1, result
    return result.dumps[0]


def _parse(folder: Path, name: str) -> ParseResult:
    return faulthandler.parse((folder / name).read_text(encoding="utf-8"), source=name)


# --------------------------------------------------------------------------- real captures


SIGUSR1 = "faulthandler_py3.11_sigusr1_register_all-threads_100-frame-limit.txt"
PY = "/root/.pyenv/versions/3.11.7/lib/python3.11"
FH_APP = "/tmp/reporter-demo/fh_app.py"


def _hex(ident: int) -> str:
    """A pthread id as faulthandler prints it."""
    return f"0x{ident:016x}"


def test_sigusr1_all_threads(faulthandler_samples: Path, facts: dict[str, Any]) -> None:
    result = _parse(faulthandler_samples, SIGUSR1)
    idents = facts["faulthandler-sigusr1"]["idents"]
    dump = _only(result)
    assert (dump.pid, dump.kind, dump.headline) == (None, EvidenceKind.FAULTHANDLER, None)
    # Printed newest first; kept oldest first, so the current (main) thread leads.
    main, waiter, deep = dump.threads
    assert (main.thread_id, main.is_current) == (_hex(idents["MainThread"]), True)
    assert main.frames == (
        Frame(function="wait", file=f"{PY}/threading.py", line=327),
        Frame(function="wait", file=f"{PY}/threading.py", line=629),
        Frame(function="main_wait", file=FH_APP, line=line_of("fh_app.py", "event.wait()")),
        Frame(function="<module>", file=FH_APP, line=line_of("fh_app.py", "main_wait(never)")),
    )
    assert waiter.thread_id == _hex(idents["waiter"])
    assert waiter.frames[0] == Frame(function="wait", file=f"{PY}/threading.py", line=327)
    assert not waiter.truncated and not waiter.is_current
    # 150 calls deep: faulthandler prints 100 frames and "...".
    assert (deep.thread_id, len(deep.frames), deep.truncated) == (_hex(idents["deep"]), 100, True)
    assert deep.frames[0] == Frame(
        function="deep", file=FH_APP, line=line_of("fh_app.py", "time.sleep(3600)")
    )
    assert dump.truncated
    assert all(t.status is ThreadStatus.UNKNOWN for t in dump.threads)
    # The frame limit is said once, for the thread it cut.
    assert [w.message for w in result.warnings] == [
        f"thread {deep.thread_id}: frames cut at faulthandler's limit ('...')"
    ]


def test_timeout_dump(faulthandler_samples: Path) -> None:
    result = _parse(faulthandler_samples, "faulthandler_py3.11_dump_traceback_later_timeout.txt")
    dump = _only(result)
    assert dump.headline == "Timeout (0:00:01)!"
    assert len(dump.threads) == 2
    assert all(t.thread_id.startswith("0x0000") for t in dump.threads)
    assert not any(t.is_current for t in dump.threads)
    assert dump.threads[0].frames[0] == Frame(
        function="stuck",
        file="/tmp/reporter-demo/fh_timeout.py",
        line=line_of("fh_timeout.py", "    time.sleep(3600)"),
    )
    assert not result.warnings


def test_fatal_segfault(faulthandler_samples: Path) -> None:
    result = _parse(faulthandler_samples, "faulthandler_py3.11_fatal_segfault.txt")
    dump = _only(result)
    assert dump.headline == "Fatal Python error: Segmentation fault"
    current = dump.threads[0]
    assert current.is_current and current.frames[0].function == "string_at"
    assert current.frames[1] == Frame(
        function="read_forbidden",
        file="/tmp/reporter-demo/fh_crash.py",
        line=line_of("fh_crash.py", "return ctypes.string_at"),
    )
    assert dump.source.line == 1
    assert current.source.line == 3
    assert not result.warnings


def test_every_faulthandler_sample_parses(faulthandler_samples: Path) -> None:
    files = sorted(faulthandler_samples.glob("faulthandler_*.txt"))
    assert len(files) == 3
    for path in files:
        result = faulthandler.parse(path.read_text(encoding="utf-8"), source=path.name)
        assert result.dumps and all(d.threads for d in result.dumps), path.name


# --------------------------------------------------------------------------- edge cases

_TWO_PROCESSES = """\
Thread 0x00000000000000a2 (most recent call first):
  File "/srv/a.py", line 3 in worker

Current thread 0x00000000000000a1 (most recent call first):
  File "/srv/a.py", line 9 in main
Thread 0x00000000000000b2 (most recent call first):
  File "/srv/b.py", line 4 in worker

Current thread 0x00000000000000b1 (most recent call first):
  File "/srv/b.py", line 8 in main
"""

_REPEATED_TIMEOUTS = """\
Timeout (0:00:05)!
Thread 0x00000000000000a1 (most recent call first):
  File "/srv/a.py", line 9 in main
Timeout (0:00:05)!
Thread 0x00000000000000a1 (most recent call first):
  File "/srv/a.py", line 10 in main
Timeout (0:00:05.500000)!
Thread 0x00000000000000a1 (most recent call first):
  File "/srv/a.py", line 11 in main
"""

_SAME_ID_AGAIN = """\
Thread 0x00000000000000a2 (most recent call first):
  File "/srv/a.py", line 3 in worker
Thread 0x00000000000000a1 (most recent call first):
  File "/srv/a.py", line 9 in main
Thread 0x00000000000000a2 (most recent call first):
  File "/srv/b.py", line 3 in worker
"""

_MIXED = """\
Fatal Python error: Segmentation fault
Fatal Python error: Aborted

Current thread 0x00000000000000a1 (most recent call first):
Current thread 0x00000000000000b1 (most recent call first):
  File "/srv/a.py", line 9 in main
  File "/srv/b.py", line 8 in main
"""

_PREFIXED = """\
sglang-1  | [2026-07-14 08:34:44 TP3] Fatal Python error: Segmentation fault
sglang-1  | [2026-07-14 08:34:44 TP3]
sglang-1  | [2026-07-14 08:34:44 TP3] Current thread 0x00000000000000a1 (most recent call first):
sglang-1  | [2026-07-14 08:34:44 TP3]   File "/srv/a.py", line 9 in main
sglang-1  | [2026-07-14 08:34:44 TP3]   File "/srv/a.py", line 12 in <module>
"""

_SHAPES = """\
Fatal Python error: Aborted

Thread 0x00000000000000a3 (most recent call first):
  <no Python frame>

Thread 0x00000000000000a2 (most recent call first):
  File "???", line ??? in ???

Current thread 0x00000000000000a1 (most recent call first):
  Garbage-collecting
  File "/srv/a.py", line 9 in main
...

Current thread's C stack trace (most recent call first):
  Binary file "/usr/bin/python3.14", at _Py_DumpStack+0x31 [0x5d1e]
  <truncated rest of calls>

Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)
"""

_STACK_ONLY = """\
Stack (most recent call first):
  File "/srv/a.py", line 9 in main
Stack (most recent call first):
  File "/srv/a.py", line 10 in main
"""


def _two_processes(result: ParseResult) -> None:
    first, second = result.dumps
    assert [t.thread_id for t in first.threads] == ["0x00000000000000a1", "0x00000000000000a2"]
    assert [t.thread_id for t in second.threads] == ["0x00000000000000b1", "0x00000000000000b2"]
    assert second.source.line == 6
    assert not result.warnings


def _repeated_timeouts(result: ParseResult) -> None:
    assert [d.threads[0].frames[0].line for d in result.dumps] == [9, 10, 11]
    assert [d.headline for d in result.dumps][-1] == "Timeout (0:00:05.500000)!"
    assert all(d.pid is None for d in result.dumps)
    assert not result.warnings


def _same_id_again(result: ParseResult) -> None:
    first, second = result.dumps
    assert len(first.threads) == 2
    assert second.threads[0].frames[0].file == "/srv/b.py"


def _mixed(result: ParseResult) -> None:
    assert result.dumps
    messages = [w.message for w in result.warnings]
    assert any("mixed line by line" in m for m in messages)
    assert sum(len(t.frames) for d in result.dumps for t in d.threads) == 2


def _prefixed(result: ParseResult) -> None:
    dump = _only(result)
    assert dump.headline == "Fatal Python error: Segmentation fault"
    assert (dump.captured_at, dump.label) == (datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC), "TP3")
    assert [f.function for f in dump.threads[0].frames] == ["main", "<module>"]
    assert not result.warnings


def _shapes(result: ParseResult) -> None:
    dump = _only(result)
    current, unknown, empty = dump.threads
    assert current.is_current and current.frames == (
        Frame(function="main", file="/srv/a.py", line=9),
    )
    assert unknown.frames == (Frame(function="???", file="???", line=None),)
    assert empty.frames == ()
    assert dump.truncated  # the `...` thread-limit line
    # C stack and extension modules are known, not warned about; the cut is said once.
    assert [w.message for w in result.warnings] == ["threads cut at faulthandler's limit ('...')"]


def _stack_only(result: ParseResult) -> None:
    assert [d.threads[0].frames[0].line for d in result.dumps] == [9, 10]
    assert all(d.threads[0].is_current for d in result.dumps)
    assert result.dumps[0].threads[0].thread_id == faulthandler.UNKNOWN_THREAD_ID


EDGE_CASES: list[tuple[str, str, Callable[[ParseResult], None]]] = [
    ("two-processes-one-stderr", _TWO_PROCESSES, _two_processes),
    ("repeated-dump-traceback-later", _REPEATED_TIMEOUTS, _repeated_timeouts),
    ("thread-id-seen-again", _SAME_ID_AGAIN, _same_id_again),
    ("mixed-line-by-line", _MIXED, _mixed),
    ("log-prefixed", _PREFIXED, _prefixed),
    ("notes-unknowns-limits", _SHAPES, _shapes),
    ("stack-only", _STACK_ONLY, _stack_only),
]


@pytest.mark.parametrize(
    ("text", "check"), [c[1:] for c in EDGE_CASES], ids=[c[0] for c in EDGE_CASES]
)
def test_edge_case(text: str, check: Callable[[ParseResult], None]) -> None:
    check(faulthandler.parse(text, source="fh.txt"))


def test_unknown_lines_warn_with_location() -> None:
    text = 'Thread 0x00000000000000a1 (most recent call first):\n  File "/a.py", line 1 in f\nnoise here\n'
    result = faulthandler.parse(text, source="fh.txt")
    assert [str(w.source) for w in result.warnings] == ["fh.txt:3"]
    assert _only(result).threads[0].frames[0].function == "f"


def test_cut_frame_line_keeps_file() -> None:
    text = 'Thread 0x00000000000000a1 (most recent call first):\n  File "/srv/app/wor'
    result = faulthandler.parse(text, source="fh.txt")
    thread = _only(result).threads[0]
    assert thread.truncated and thread.frames == (Frame(function="???", file="/srv/app/wor"),)
    assert result.warnings


# --------------------------------------------------------------------------- fuzzing


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    assert isinstance(faulthandler.parse(text, source="fuzz.txt"), ParseResult)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_samples_never_raise(faulthandler_samples: Path, data: st.DataObject) -> None:
    path = faulthandler_samples / SIGUSR1
    lines = path.read_text(encoding="utf-8").split("\n")
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
        action = data.draw(st.sampled_from(["cut", "drop", "dup", "junk"]))
        if action == "cut":
            lines[index] = lines[index][
                : data.draw(st.integers(min_value=0, max_value=len(lines[index])))
            ]
        elif action == "drop" and len(lines) > 1:
            del lines[index]
        elif action == "dup":
            lines.insert(index, lines[index])
        else:
            lines.insert(index, data.draw(st.text(max_size=30)))
    assert isinstance(faulthandler.parse("\n".join(lines), source=path.name), ParseResult)
