"""Tests for the py-spy text and JSON parsers: real captures, edge cases, fuzzing."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from reporter.analysis import ranks
from reporter.evidence import pyspy
from reporter.model import (
    EvidenceKind,
    FailureState,
    Frame,
    Local,
    ParseResult,
    ProcessDump,
    ThreadStack,
    ThreadStatus,
)

from .conftest import line_of


def _text(folder: Path, name: str) -> ParseResult:
    return pyspy.parse_text((folder / name).read_text(encoding="utf-8"), source=name)


def _json(folder: Path, name: str) -> ParseResult:
    return pyspy.parse_json((folder / name).read_text(encoding="utf-8"), source=name)


def _thread(dump: ProcessDump, name_or_id: str) -> ThreadStack:
    for thread in dump.threads:
        if name_or_id in (thread.name, thread.thread_id):
            return thread
    raise AssertionError(f"no thread {name_or_id!r} in {[t.thread_id for t in dump.threads]}")


def _only(result: ParseResult) -> ProcessDump:
    assert len(result.dumps) == 1, result
    return result.dumps[0]


# --------------------------------------------------------------------------- every sample


def test_every_sample_parses_without_exception(pyspy_samples: Path) -> None:
    files = sorted(p for p in pyspy_samples.iterdir() if p.suffix in (".txt", ".json"))
    assert len(files) >= 30
    for path in files:
        text = path.read_text(encoding="utf-8")
        result = (pyspy.parse_json if path.suffix == ".json" else pyspy.parse_text)(
            text, source=path.name
        )
        assert result.dumps or result.failures, path.name
        for dump in result.dumps:
            assert dump.source.path == path.name
            assert all(thread.frames for thread in dump.threads), path.name


# --------------------------------------------------------------------------- per-sample facts
# Each check gets the facts the demo program wrote about itself when it was captured
# (fixtures/samples/facts.json): PIDs and thread ids come from there, never from here.

Facts = dict[str, Any]
Check = Callable[[ParseResult, Facts], None]
WORKERS = "myapp/workers.py"
_IDLE_THREADS = ("MainThread", "sleeper", "event-waiter", "Thread-1 (wait_for_lock)", "sock-reader")


def _tid(facts: Facts, scenario: str, name: str) -> str:
    return str(facts[scenario]["threads"][name])


def _single_thread(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    pid = facts["single-thread"]["pid"]
    assert (dump.pid, dump.cmdline) == (pid, "/work/venv/bin/python simple.py")
    assert dump.python_version == facts["python"]
    assert dump.python_exe is not None and dump.python_exe.endswith("/bin/python3.11")
    (thread,) = dump.threads
    assert (thread.thread_id, thread.status, thread.name) == (
        str(pid),
        ThreadStatus.IDLE,
        "MainThread",
    )
    assert thread.os_thread_id == pid
    assert thread.frames[0] == Frame(
        function="inner", file="simple.py", line=line_of("simple.py", "time.sleep(3600)")
    )
    assert [f.function for f in thread.frames] == ["inner", "outer", "<module>"]
    assert not result.warnings


def _multithread(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    assert dump.pid == facts["multithread"]["pid"]
    assert [t.name for t in dump.threads] == [
        "MainThread",
        "cpu-worker-1",
        "cpu-worker-2",
        "sleeper",
        "event-waiter",
        "Thread-1 (wait_for_lock)",
        "sock-reader",
        None,
    ]
    for name in _IDLE_THREADS:
        thread = _thread(dump, _tid(facts, "multithread", name))
        assert (thread.name, thread.status) == (name, ThreadStatus.IDLE)
    # Two threads spin in pure Python: at most one holds the GIL, and this capture caught it.
    spinning = [_thread(dump, name) for name in ("cpu-worker-1", "cpu-worker-2")]
    assert sorted(t.status for t in spinning) == sorted(
        [ThreadStatus.ACTIVE_GIL, ThreadStatus.ACTIVE]
    )
    assert [t.owns_gil for t in dump.threads].count(True) == 1
    waiter = _thread(dump, "event-waiter")
    assert waiter.frames[0] == Frame(function="Condition.wait", file="threading.py", line=327)
    assert waiter.frames[2] == Frame(
        function="wait_for_event",
        file="myapp/workers.py",
        line=line_of(WORKERS, "def wait_for_event") + 1,
    )
    assert len(waiter.frames) == 6
    assert not result.warnings


def _multithread_041(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    waiter = _thread(dump, "event-waiter")
    # 0.4.1 prints co_name where 0.4.3 prints co_qualname; short_function makes them equal.
    assert waiter.frames[0].function == "wait"
    assert waiter.frames[3].function == "run"
    assert waiter.frames[3].short_function == "run"
    assert [t.name for t in dump.threads][:3] == ["MainThread", "cpu-worker-1", "cpu-worker-2"]


def _full_filenames(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    handler = dump.threads[0].frames[2]
    assert handler == Frame(
        function="handle_request",
        file="/tmp/reporter-demo/myapp/workers.py",
        line=line_of(WORKERS, "obj.wait()"),
    )
    assert handler.short_file == "myapp/workers.py"


def _locals_l(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    frames = _thread(dump, "MainThread").frames
    handle = next(f for f in frames if f.function == "handle_request")
    assert frames[-1].locals == ()
    by_name = {local.name: local for local in handle.locals}
    assert by_name["request_id"] == Local(name="request_id", repr='"req-123"', is_arg=True)
    assert by_name["retries"] == Local(name="retries", repr="5", is_arg=True)
    assert by_name["deadline"] == Local(name="deadline", repr="2.5", is_arg=True)
    # py-spy does not escape quotes inside strings: the repr is printed as it reads it.
    assert by_name["quote"].repr == '"it"s "quoted"\\nsecond line"'
    assert by_name["huge"] == Local(name="huge", repr="+bigint", is_arg=False)
    assert by_name["mapping"].repr == '{"rid": "req-123", "n": 42, "ok": True, "none": None}'
    assert by_name["items"].repr == '[1, 2.5, "three"]'
    assert by_name["pair"].repr == '("req-123", 5)'
    assert by_name["obj"].repr.startswith("<Event at 0x")
    assert [local.is_arg for local in handle.locals] == [True] * 3 + [False] * 7
    assert by_name["big_text"].repr.startswith('"lorem ipsum ')
    assert by_name["big_text"].repr.endswith('..."')


def _locals_ll(result: ParseResult, facts: Facts) -> None:
    frames = _thread(_only(result), "MainThread").frames
    handle = next(f for f in frames if f.function == "handle_request")
    big = next(local for local in handle.locals if local.name == "big_text")
    # -ll reads more of each string than -l; both cut it short with "...".
    assert len(big.repr) > 200
    assert big.repr.endswith('..."')


def _native(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    reader = _thread(dump, "sock-reader")
    assert reader.frames[0] == Frame(function="recv", file="libc.so.6", native=True)
    assert reader.frames[1] == Frame(
        function="sock_call_ex", file="socketmodule.c", line=921, native=True
    )
    assert reader.frames[6] == Frame(
        function="socket_reader", file="myapp/workers.py", line=line_of(WORKERS, "sock.recv(")
    )
    waiter = _thread(dump, "event-waiter")
    assert waiter.frames[0].function.startswith("0x") and waiter.frames[0].file == "libc.so.6"
    assert waiter.frames[0].native
    assert waiter.frames[2].file == "libpython3.11.so.1.0" and waiter.frames[2].native
    assert not any(f.native for f in waiter.frames if f.file.endswith(".py"))


def _nonblocking(result: ParseResult, facts: Facts) -> None:
    assert len(_only(result).threads) == 8


def _setproctitle(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    assert dump.cmdline == "sglang::scheduler_TP0"
    assert dump.pid == facts["setproctitle"]["pid"]
    watch = _thread(dump, "detokenizer-watch")
    assert watch.thread_id == _tid(facts, "setproctitle", "detokenizer-watch")


def _sglang_subprocesses(result: ParseResult, facts: Facts) -> None:
    sim = facts["sglang-sim"]
    launcher_pid = sim["launcher"]["pid"]
    launcher, *children = result.dumps
    assert launcher.pid == launcher_pid and launcher.parent_pid is None
    assert all(child.parent_pid == launcher_pid for child in children)
    # The schedulers, the detokenizer and multiprocessing's resource tracker.
    assert len(children) == 4
    assert {sim[r]["pid"] for r in ("tp0", "tp1", "detokenizer")} < {c.pid for c in children}
    assert children[0].parent_cmdline is not None
    assert children[0].parent_cmdline.startswith("/work/venv/bin/python launcher.py 2 ")
    tp1 = next(d for d in result.dumps if d.pid == sim["tp1"]["pid"])
    assert tp1.cmdline == "sglang::scheduler_TP1"
    assert [t.name for t in tp1.threads] == ["MainThread", "watchdog"]
    assert tp1.threads[0].frames[-1] == Frame(function="<module>", file="<string>", line=1)
    assert not result.warnings


def _sglang_locals(result: ParseResult, facts: Facts) -> None:
    tp1 = next(d for d in result.dumps if d.cmdline == "sglang::scheduler_TP1")
    run = next(f for f in tp1.threads[0].frames if f.function == "run_scheduler_process")
    assert run.locals == (
        Local(name="tp_rank", repr="1", is_arg=True),
        Local(name="ready_dir", repr='"/tmp/reporter-demo/roles"', is_arg=True),
    )
    assert len(result.dumps) == 5


def _fork_pids(facts: Facts) -> list[int]:
    tree = facts["fork-tree"]
    return sorted([tree["pid"], *tree["children"]])


def _fork_tree(result: ParseResult, facts: Facts) -> None:
    tree = facts["fork-tree"]
    # The forked children, the `python -c` child and the grandchild (child of a child).
    assert len(result.dumps) == 5
    assert result.dumps[0].pid == tree["pid"]
    assert set(_fork_pids(facts)) < {d.pid for d in result.dumps}
    assert [t.name for t in result.dumps[0].threads] == ["MainThread", "bg"]
    python_c = next(d for d in result.dumps if d.pid == tree["children"][1])
    assert python_c.cmdline == (
        "/work/venv/bin/python -c import time\ndef waiting():\n    time.sleep(3600)\nwaiting()"
    )
    assert python_c.python_version == facts["python"]
    grandchild = [d for d in result.dumps if d.parent_pid == tree["children"][2]]
    assert len(grandchild) == 1
    assert not result.warnings
    assert not any(d.truncated for d in result.dumps)


def _fork_tree_tty(result: ParseResult, facts: Facts) -> None:
    assert set(_fork_pids(facts)) < {d.pid or 0 for d in result.dumps}
    assert len(result.dumps) == 5
    python_c = next(d for d in result.dumps if d.pid == facts["fork-tree"]["children"][1])
    assert python_c.cmdline is not None and python_c.cmdline.count("\n") == 3
    assert not result.warnings


def _without_subprocesses(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    assert [t.thread_id for t in dump.threads] == [
        _tid(facts, "fork-tree", "MainThread"),
        _tid(facts, "fork-tree", "bg"),
    ]


def _interleaved_041(result: ParseResult, facts: Facts) -> None:
    # 0.4.1 prints the children again after every parent thread: 9 `Process` headers for
    # 5 processes here, the parent's "bg" thread after the last repeat of a child.
    tree = facts["fork-tree"]
    assert len(result.dumps) == 5
    parent = result.dumps[0]
    assert parent.pid == tree["pid"]
    assert [t.thread_id for t in parent.threads] == [
        _tid(facts, "fork-tree", "MainThread"),
        _tid(facts, "fork-tree", "bg"),
    ]
    assert _thread(parent, "bg").frames[0].function == "<lambda>"
    assert all(len(d.threads) == 1 for d in result.dumps[1:])
    assert any("merged by PID" in w.message for w in result.warnings)


def _non_python_child_stdout(result: ParseResult, facts: Facts) -> None:
    known = facts["non-python-child"]
    # py-spy visits the children in /proc order and stops at the first non-Python one
    # (`sleep`): the Python child is printed only when it came first.
    pids = [d.pid for d in result.dumps]
    assert pids[0] == known["pid"]
    assert set(pids[1:]) <= {known["children"][1]}
    assert result.dumps[0].truncated
    for child in result.dumps[1:]:
        assert child.cmdline == "/work/venv/bin/python -c import time\ntime.sleep(3600)"
    assert any("separator" in w.message for w in result.warnings)


def _deep_recursion(result: ParseResult, facts: Facts) -> None:
    (thread,) = _only(result).threads
    assert len(thread.frames) >= 4000
    assert thread.frames[-1].function == "<module>"


def _broken_pipe_stdout(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    assert dump.pid == facts["deep-4000"]["pid"]
    assert dump.threads[0].frames == (
        Frame(function="recurse", file="deep.py", line=line_of("deep.py", "time.sleep(3600)")),
    )


def _asyncio(result: ParseResult, facts: Facts) -> None:
    thread = _only(result).threads[0]
    assert thread.frames[0].function == "EpollSelector.select"
    assert thread.frames[1].short_function == "_run_once"


def _failure(reason: str, detail_part: str = "") -> Check:
    def check(result: ParseResult, facts: Facts) -> None:
        assert not result.dumps
        (failure,) = result.failures
        assert failure.reason == reason
        assert detail_part in failure.detail
        assert failure.pid is None
        assert failure.source.line == 1

    return check


TEXT_SAMPLES: list[tuple[str, Check]] = [
    ("pyspy-0.4.3_single-thread.txt", _single_thread),
    ("pyspy-0.4.3_single-thread_tty-ansi-raw.txt", _single_thread),
    ("pyspy-0.4.3_multithread.txt", _multithread),
    ("pyspy-0.4.1_multithread.txt", _multithread_041),
    ("pyspy-0.4.3_multithread_full-filenames.txt", _full_filenames),
    ("pyspy-0.4.3_multithread_locals-l.txt", _locals_l),
    ("pyspy-0.4.3_multithread_locals-ll.txt", _locals_ll),
    ("pyspy-0.4.3_multithread_native.txt", _native),
    ("pyspy-0.4.3_multithread_nonblocking.txt", _nonblocking),
    ("pyspy-0.4.3_setproctitle-single-process.txt", _setproctitle),
    ("pyspy-0.4.3_sglang-sim_subprocesses.txt", _sglang_subprocesses),
    ("pyspy-0.4.3_sglang-sim_subprocesses_locals.txt", _sglang_locals),
    ("pyspy-0.4.3_subprocesses_fork-tree.txt", _fork_tree),
    ("pyspy-0.4.3_subprocesses_fork-tree_tty-ansi-raw.txt", _fork_tree_tty),
    ("pyspy-0.4.3_fork-tree_without-subprocesses-flag.txt", _without_subprocesses),
    ("pyspy-0.4.1_subprocesses_fork-tree_interleaved-bug.txt", _interleaved_041),
    ("pyspy-0.4.3_subprocesses_non-python-child-aborts_stdout.txt", _non_python_child_stdout),
    ("pyspy-0.4.3_deep-recursion-4000-frames.txt", _deep_recursion),
    ("pyspy-0.4.3_broken-pipe_stdout-truncated.txt", _broken_pipe_stdout),
    ("pyspy-0.4.3_asyncio.txt", _asyncio),
    ("pyspy-0.4.3_broken-pipe_stderr.txt", _failure("Broken pipe (os error 32)")),
    (
        "pyspy-0.4.3_error_deep-recursion-5000-frames.txt",
        _failure("Failed to find a python interpreter in the .data section"),
    ),
    (
        "pyspy-0.4.3_error_no-such-pid.txt",
        _failure(
            "Failed to get process executable name. Check that the process is running.",
            "Caused by:\n    0: No such file or directory (os error 2)\n    1:",
        ),
    ),
    (
        "pyspy-0.4.3_error_no-such-pid_RUST_BACKTRACE-1.txt",
        _failure(
            "Failed to get process executable name. Check that the process is running.",
            "Stack backtrace:\n   0: <E as anyhow",
        ),
    ),
    (
        "pyspy-0.4.3_error_not-a-python-process.txt",
        _failure("Failed to find python version from target process"),
    ),
    (
        "pyspy-0.4.3_subprocesses_non-python-child-aborts_stderr.txt",
        _failure("Failed to find python version from target process"),
    ),
    (
        "pyspy-0.4.3_error_permission-denied_other-user.txt",
        _failure(
            "Permission Denied: Try running again with elevated permissions by going "
            "'sudo env \"PATH=$PATH\" !!'"
        ),
    ),
]

ERROR_STATES = [
    ("pyspy-0.4.3_broken-pipe_stderr.txt", FailureState.ERROR),
    ("pyspy-0.4.3_error_deep-recursion-5000-frames.txt", FailureState.ERROR),
    ("pyspy-0.4.3_error_no-such-pid.txt", FailureState.GONE),
    ("pyspy-0.4.3_error_no-such-pid_RUST_BACKTRACE-1.txt", FailureState.GONE),
    ("pyspy-0.4.3_error_not-a-python-process.txt", FailureState.ERROR),
    ("pyspy-0.4.3_error_permission-denied_other-user.txt", FailureState.REFUSED),
]


@pytest.mark.parametrize(("name", "state"), ERROR_STATES, ids=[n for n, _ in ERROR_STATES])
def test_real_error_text_is_classified(pyspy_samples: Path, name: str, state: FailureState) -> None:
    (failure,) = _text(pyspy_samples, name).failures
    assert failure.state is state
    # Analysis reads a failure the same way: one classifier, in the evidence layer.
    assert pyspy.failure_state(failure) is state
    assert ranks.failure_state(failure) == state.value


@pytest.mark.parametrize(("name", "check"), TEXT_SAMPLES, ids=[name for name, _ in TEXT_SAMPLES])
def test_text_sample(pyspy_samples: Path, facts: Facts, name: str, check: Check) -> None:
    result = _text(pyspy_samples, name)
    assert all(d.kind is EvidenceKind.PYSPY_TEXT for d in result.dumps)
    check(result, facts)


def test_ansi_capture_equals_plain_capture(pyspy_samples: Path) -> None:
    plain = _only(_text(pyspy_samples, "pyspy-0.4.3_single-thread.txt"))
    tty = _only(_text(pyspy_samples, "pyspy-0.4.3_single-thread_tty-ansi-raw.txt"))
    assert [(t.thread_id, t.status, t.name, t.frames) for t in tty.threads] == [
        (t.thread_id, t.status, t.name, t.frames) for t in plain.threads
    ]
    assert (tty.cmdline, tty.python_exe) == (plain.cmdline, plain.python_exe)


def _json_single(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    pid = facts["single-thread"]["pid"]
    assert dump.kind is EvidenceKind.PYSPY_JSON
    assert (dump.pid, dump.cmdline, dump.python_version) == (pid, None, None)
    (thread,) = dump.threads
    # The JSON thread_id is the pthread id; os_thread_id is the one text dumps print.
    assert int(thread.thread_id) > 1 << 32
    assert (thread.os_thread_id, thread.status, thread.owns_gil) == (pid, ThreadStatus.IDLE, False)
    assert thread.frames[0] == Frame(
        function="inner", file="simple.py", line=line_of("simple.py", "time.sleep(3600)")
    )


def _json_multithread(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    known = facts["multithread"]["threads"]
    # JSON is newest first; the parser reverses it so MainThread (oldest) leads, as in text.
    assert dump.threads[0].name == "MainThread"
    assert dump.threads[-1].name is None
    ids = [t.os_thread_id for t in dump.threads]
    assert ids[:-1] == [
        known[name]
        for name in (
            "MainThread",
            "cpu-worker-1",
            "cpu-worker-2",
            "sleeper",
            "event-waiter",
            "Thread-1 (wait_for_lock)",
            "sock-reader",
        )
    ]
    spinning = {_thread(dump, n).status for n in ("cpu-worker-1", "cpu-worker-2")}
    assert spinning <= {ThreadStatus.ACTIVE_GIL, ThreadStatus.ACTIVE, ThreadStatus.IDLE}
    assert _thread(dump, "sleeper").status is ThreadStatus.IDLE
    # Each thread points at its own object in the file.
    assert dump.threads[0].source.line > dump.threads[-1].source.line > 1


def _json_locals(result: ParseResult, facts: Facts) -> None:
    main = _thread(_only(result), "MainThread")
    handle = next(f for f in main.frames if f.function == "handle_request")
    assert handle.locals[0] == Local(name="request_id", repr='"req-123"', is_arg=True)
    assert handle.locals[-1].name == "obj"
    assert handle.locals[-1].repr.startswith("<Event at 0x")


def _json_tp1(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    tp1 = facts["sglang-sim"]["tp1"]
    assert dump.pid == tp1["pid"]
    watchdog = _thread(dump, "watchdog")
    assert watchdog.os_thread_id == tp1["threads"]["watchdog"]
    # The JSON thread_id is the pthread id that faulthandler prints in hex.
    assert int(watchdog.thread_id) > 1 << 32
    assert watchdog.frames[0] == Frame(
        function="watchdog", file="launcher.py", line=line_of("launcher.py", "time.sleep(3600)")
    )


def _json_fork_tree(result: ParseResult, facts: Facts) -> None:
    dump = _only(result)
    assert dump.pid == facts["fork-tree"]["pid"]
    assert [t.name for t in dump.threads] == ["MainThread", "bg"]


JSON_SAMPLES: list[tuple[str, Check]] = [
    ("pyspy-0.4.3_single-thread.json", _json_single),
    ("pyspy-0.4.3_multithread.json", _json_multithread),
    ("pyspy-0.4.3_multithread_locals.json", _json_locals),
    ("pyspy-0.4.3_sglang-sim_scheduler-TP1.json", _json_tp1),
    ("pyspy-0.4.3_subprocesses_fork-tree_json-ignores-subprocesses.json", _json_fork_tree),
]


@pytest.mark.parametrize(("name", "check"), JSON_SAMPLES, ids=[name for name, _ in JSON_SAMPLES])
def test_json_sample(pyspy_samples: Path, facts: Facts, name: str, check: Check) -> None:
    result = _json(pyspy_samples, name)
    assert not result.warnings
    check(result, facts)


def test_json_and_text_locals_agree(pyspy_samples: Path) -> None:
    from_json = _only(_json(pyspy_samples, "pyspy-0.4.3_multithread_locals.json"))
    from_text = _only(_text(pyspy_samples, "pyspy-0.4.3_multithread_locals-l.txt"))
    assert _thread(from_json, "event-waiter").frames == _thread(from_text, "event-waiter").frames


# --------------------------------------------------------------------------- edge cases (text)

_WRAPPED = """\
[2026-07-14 08:34:44 TP6] Pyspy dump for PID 187:
Process 187: sglang::scheduler_TP6
Python v3.11.7 (/usr/bin/python3.11)

Thread 187 (idle): "MainThread"
    recv_requests (srt/scheduler.py:10)
[2026-07-14 08:35:02 TP7] Pyspy dump PID 188: rc=0 timeout=False truncated=True
Process 188: sglang::scheduler_TP7
Python v3.11.7 (/usr/bin/python3.11)

Thread 188 (active): "MainThread"
    all_reduce (dist/c10d.py:20)
"""

_PER_LINE_PREFIX = """\
[2026-07-14 08:34:44 TP6] Process 187: sglang::scheduler_TP6
[2026-07-14 08:34:44 TP6] Python v3.11.7 (/usr/bin/python3.11)
[2026-07-14 08:34:44 TP6]
[2026-07-14 08:34:44 TP6] Thread 187 (idle): "MainThread"
[2026-07-14 08:34:45 TP6]     recv_requests (srt/scheduler.py:10)
[2026-07-14 08:34:45 TP6]     event_loop (srt/scheduler.py:30)
"""

_COMPOSE = """\
sglang-1  | [2026-07-14 08:34:44 TP0] Pyspy dump PID 41: rc=0 timeout=False truncated=False
sglang-1  | Process 41: sglang::scheduler_TP0
sglang-1  | Python v3.11.7 (/usr/bin/python3.11)
sglang-1  |
sglang-1  | Thread 41 (idle): "MainThread"
sglang-1  |     recv_requests (srt/scheduler.py:10)
sglang-1  |         Arguments:
sglang-1  |             self: <Scheduler at 0x7f00>
sglang-1  |     event_loop (srt/scheduler.py:30)
"""

_BLANK_INSIDE = """\
Process 5: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 5 (idle): "MainThread"
    wait (threading.py:327)

    main (app.py:9)


    <module> (app.py:12)
Thread 6 (active)

    spin (app.py:3)
"""

_TWO_SNAPSHOTS = """\
Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (idle): "MainThread"
    wait (app.py:1)

Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (active): "MainThread"
    work (app.py:2)
"""

_CUT_FRAME = """\
Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (idle): "MainThread"
    wait (app.py:1)
    main (app/ma"""

_TRAILING_SEPARATOR = """\
Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (idle): "MainThread"
    wait (app.py:1)

--------------------------------------------------------------------------------
"""

_SEPARATOR_THEN_NEW_DUMP = """\
Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (idle): "MainThread"
    wait (app.py:1)

--------------------------------------------------------------------------------
Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (idle): "MainThread"
    wait (app.py:1)
"""

_STDERR_INTERLEAVED = """\
Process 9: python app.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 9 (idle): "MainThread"
    wait (app.py:1)
Error: Broken pipe (os error 32)
"""

_CRLF_ANSI = (
    "Process \x1b[33m\x1b[1m9\x1b[0m: python app.py\r\n"
    "Python v\x1b[1m3.11.7\x1b[0m (\x1b[2m/usr/bin/python3.11\x1b[0m)\r\n"
    "\r\n"
    'Thread \x1b[33m\x1b[1m9\x1b[0m (idle): "MainThread"\r\n'
    "    \x1b[32mwait\x1b[0m (\x1b[36mapp.py\x1b[0m:\x1b[2m1\x1b[0m)\r\n"
)

_HEX_AND_CORE = """\
Signal 6: /var/crash/core.9
Process 9: python app.py
Python v3.11.7

Thread 0x7F4A737FE6C0 (gil): "MainThread"
    wait (app.py:1)
Thread 0x7F4A737FE700
    spin (app.py:3)
"""


def _wrapped(result: ParseResult) -> None:
    first, second = result.dumps
    assert (first.pid, first.label, first.truncated) == (187, "TP6", False)
    assert first.captured_at == datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)
    assert (second.pid, second.label, second.truncated) == (188, "TP7", True)
    assert second.captured_at == datetime(2026, 7, 14, 8, 35, 2, tzinfo=UTC)
    # Truncation is said once, for the dump SGLang marked.
    assert [(w.source.line, "was cut" in w.message) for w in result.warnings] == [(7, True)]


def _per_line_prefix(result: ParseResult) -> None:
    dump = _only(result)
    assert (dump.pid, dump.cmdline, dump.label) == (187, "sglang::scheduler_TP6", "TP6")
    assert dump.captured_at == datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)
    assert [f.function for f in dump.threads[0].frames] == ["recv_requests", "event_loop"]
    assert not result.warnings


def _compose(result: ParseResult) -> None:
    dump = _only(result)
    assert (dump.pid, dump.label) == (41, "TP0")
    frames = dump.threads[0].frames
    assert [f.function for f in frames] == ["recv_requests", "event_loop"]
    assert frames[0].locals == (Local(name="self", repr="<Scheduler at 0x7f00>", is_arg=True),)
    assert not result.warnings


def _blank_inside(result: ParseResult) -> None:
    main, other = _only(result).threads
    assert [f.function for f in main.frames] == ["wait", "main", "<module>"]
    assert [f.function for f in other.frames] == ["spin"]
    assert not result.warnings


def _two_snapshots(result: ParseResult) -> None:
    first, second = result.dumps
    assert first.pid == second.pid == 9
    assert first.threads[0].frames[0].function == "wait"
    assert second.threads[0].frames[0].function == "work"
    assert first.source.line < second.source.line


def _cut_frame(result: ParseResult) -> None:
    dump = _only(result)
    thread = dump.threads[0]
    assert thread.truncated and dump.truncated
    assert thread.frames[-1] == Frame(function="main", file="app/ma")
    assert any(w.source.line == 6 and "cut" in w.message for w in result.warnings)


def _trailing_separator(result: ParseResult) -> None:
    dump = _only(result)
    assert dump.truncated
    assert [w.source.line for w in result.warnings] == [7]


def _separator_then_new_dump(result: ParseResult) -> None:
    first, second = result.dumps
    assert first.pid == second.pid == 9
    assert (first.truncated, second.truncated) == (True, False)
    assert second.parent_pid is None
    assert [w.source.line for w in result.warnings] == [7]


def _stderr_interleaved(result: ParseResult) -> None:
    dump = _only(result)
    assert dump.threads[0].frames == (Frame(function="wait", file="app.py", line=1),)
    (failure,) = result.failures
    assert (failure.pid, failure.reason, failure.source.line) == (9, "Broken pipe (os error 32)", 6)


def _crlf_ansi(result: ParseResult) -> None:
    dump = _only(result)
    assert (dump.pid, dump.cmdline, dump.python_exe) == (9, "python app.py", "/usr/bin/python3.11")
    assert dump.threads[0].frames == (Frame(function="wait", file="app.py", line=1),)
    assert not result.warnings


def _hex_and_core(result: ParseResult) -> None:
    dump = _only(result)
    assert (dump.python_version, dump.python_exe) == ("3.11.7", None)
    assert dump.headline == "Signal 6: /var/crash/core.9"
    first, second = dump.threads
    assert (first.thread_id, first.status, first.os_thread_id) == (
        "0x7F4A737FE6C0",
        ThreadStatus.GIL,
        None,
    )
    assert (second.thread_id, second.status, second.name) == (
        "0x7F4A737FE700",
        ThreadStatus.UNKNOWN,
        None,
    )


EDGE_CASES: list[tuple[str, str, Callable[[ParseResult], None]]] = [
    ("sglang-dump-lines", _WRAPPED, _wrapped),
    ("log-prefix-every-line", _PER_LINE_PREFIX, _per_line_prefix),
    ("docker-compose-prefix", _COMPOSE, _compose),
    ("blank-lines-inside", _BLANK_INSIDE, _blank_inside),
    ("same-pid-twice", _TWO_SNAPSHOTS, _two_snapshots),
    ("cut-frame-line", _CUT_FRAME, _cut_frame),
    ("trailing-separator", _TRAILING_SEPARATOR, _trailing_separator),
    ("separator-then-new-dump", _SEPARATOR_THEN_NEW_DUMP, _separator_then_new_dump),
    ("stderr-interleaved", _STDERR_INTERLEAVED, _stderr_interleaved),
    ("crlf-and-ansi", _CRLF_ANSI, _crlf_ansi),
    ("hex-thread-ids-core", _HEX_AND_CORE, _hex_and_core),
]


@pytest.mark.parametrize(
    ("text", "check"), [c[1:] for c in EDGE_CASES], ids=[c[0] for c in EDGE_CASES]
)
def test_text_edge_case(text: str, check: Callable[[ParseResult], None]) -> None:
    check(pyspy.parse_text(text, source="edge.txt"))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("    f (a.py:12)", Frame(function="f", file="a.py", line=12)),
        ("    f (a.py)", Frame(function="f", file="a.py")),
        ("    <module> (<string>:1)", Frame(function="<module>", file="<string>", line=1)),
        (
            "    x (<frozen importlib._bootstrap>:241)",
            Frame(function="x", file="<frozen importlib._bootstrap>", line=241),
        ),
        ("    sym (libtorch.so)", Frame(function="sym", file="libtorch.so", native=True)),
        (
            "    sym (gloo/pair.cc:480)",
            Frame(function="sym", file="gloo/pair.cc", line=480, native=True),
        ),
        ("    sym (include/x.h:7)", Frame(function="sym", file="include/x.h", line=7, native=True)),
        ("    0x7f4a8b4a71f5 (?)", Frame(function="0x7f4a8b4a71f5", file="?", native=True)),
        (
            "    0x7f4a8b4a71f5 (unknown_module)",
            Frame(function="0x7f4a8b4a71f5", file="unknown_module", native=True),
        ),
        (
            "    std::function<void (int)>::operator() (libc10.so)",
            Frame(function="std::function<void (int)>::operator()", file="libc10.so", native=True),
        ),
        ("    f (C:\\app\\a.py:3)", Frame(function="f", file="C:\\app\\a.py", line=3)),
    ],
)
def test_frame_shapes(line: str, expected: Frame) -> None:
    text = f"Process 1: p\nPython v3.11.7 (/p)\n\nThread 1 (idle)\n{line}\n"
    assert _only(pyspy.parse_text(text, source="f.txt")).threads[0].frames == (expected,)


@pytest.mark.parametrize(
    ("line", "thread_id", "status", "name"),
    [
        ('Thread 12 (idle): "MainThread"', "12", ThreadStatus.IDLE, "MainThread"),
        ("Thread 12 (active+gil)", "12", ThreadStatus.ACTIVE_GIL, None),
        ('Thread 12: "named"', "12", ThreadStatus.UNKNOWN, "named"),
        ("Thread 12", "12", ThreadStatus.UNKNOWN, None),
        ('Thread 0xABC (gil): "a "quoted" name"', "0xABC", ThreadStatus.GIL, 'a "quoted" name'),
    ],
)
def test_thread_line_shapes(
    line: str, thread_id: str, status: ThreadStatus, name: str | None
) -> None:
    text = f"Process 1: p\nPython v3.11.7 (/p)\n\n{line}\n    f (a.py:1)\n"
    (thread,) = _only(pyspy.parse_text(text, source="t.txt")).threads
    assert (thread.thread_id, thread.status, thread.name) == (thread_id, status, name)


def test_wrapped_error_gets_pid_and_time_from_sglang_line() -> None:
    text = (
        "[2026-07-14 08:34:55 TP1] Pyspy dump PID 189: rc=1 timeout=False truncated=False\n"
        "Error: Failed to get process executable name. Check that the process is running.\n"
        "\n"
        "Caused by:\n"
        "    No such file or directory (os error 2)\n"
    )
    result = pyspy.parse_text(text, source="log.txt")
    (failure,) = result.failures
    assert failure.pid == 189
    assert failure.captured_at == datetime(2026, 7, 14, 8, 34, 55, tzinfo=UTC)
    assert failure.detail == "Caused by:\n    No such file or directory (os error 2)"
    assert not result.dumps and not result.warnings


@pytest.mark.parametrize(
    ("text", "reason", "detail_part"),
    [
        (
            "Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'\n",
            "Permission Denied: Try running again with elevated permissions by going 'sudo env \"PATH=$PATH\" !!'",
            "",
        ),
        (
            "Permission Denied\n\nIt looks like you are running in a docker container. Add SYS_PTRACE.\n",
            "Permission Denied",
            "SYS_PTRACE",
        ),
        (
            "thread 'main' panicked at src/main.rs:9:5:\nfailed printing to stdout: Broken pipe (os error 32)\n"
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
            "thread 'main' panicked at src/main.rs:9:5:",
            "failed printing to stdout",
        ),
    ],
)
def test_other_error_shapes(text: str, reason: str, detail_part: str) -> None:
    result = pyspy.parse_text(text, source="err.txt")
    (failure,) = result.failures
    assert failure.reason == reason
    assert detail_part in failure.detail
    assert not result.warnings


def test_unknown_lines_become_one_warning_per_run() -> None:
    text = (
        "hello\nworld\nProcess 1: p\nPython v3.11.7 (/p)\n\nThread 1 (idle)\n    f (a.py:1)\n??\n"
    )
    result = pyspy.parse_text(text, source="w.txt")
    assert [(str(w.source), w.message.split(" ")[0]) for w in result.warnings] == [
        ("w.txt:1", "2"),
        ("w.txt:8", "line"),
    ]
    assert _only(result).threads[0].frames[0].function == "f"


def test_threads_without_header_take_the_pid_of_their_main_thread() -> None:
    result = pyspy.parse_text('Thread 7 (idle): "MainThread"\n    f (a.py:1)\n', source="p.txt")
    dump = _only(result)
    # On Linux py-spy prints OS thread ids, and the main thread's id is the PID.
    assert dump.pid == 7
    assert dump.threads[0].frames[0].function == "f"
    assert len(result.warnings) == 2
    assert any("taken from the main thread" in w.message for w in result.warnings)


def test_threads_without_header_or_main_thread_id_keep_unknown_pid() -> None:
    result = pyspy.parse_text('Thread 0x7F (idle): "worker"\n    f (a.py:1)\n', source="p.txt")
    dump = _only(result)
    assert (dump.pid, dump.slot) == (None, 0)
    assert len(result.warnings) == 1


def test_header_without_threads_is_truncated() -> None:
    result = pyspy.parse_text("Process 3: app\nPython v3.11.7 (/p)\n", source="h.txt")
    dump = _only(result)
    assert dump.truncated and dump.threads == ()
    assert "without threads" in result.warnings[0].message


# --------------------------------------------------------------------------- edge cases (JSON)


def _json_doc(threads: list[dict[str, object]]) -> str:
    return json.dumps(threads, indent=2)


def _json_thread(
    tid: int, name: str | None, *, active: bool, gil: bool, frames: list[dict[str, object]]
) -> dict[str, object]:
    return {
        "pid": 42,
        "thread_id": tid,
        "thread_name": name,
        "os_thread_id": tid % 1000,
        "active": active,
        "owns_gil": gil,
        "frames": frames,
        "process_info": None,
    }


def test_json_with_locals_and_native_frames() -> None:
    frames: list[dict[str, object]] = [
        {
            "name": "recv",
            "filename": "/lib/libc.so.6",
            "module": "/lib/libc.so.6",
            "short_filename": None,
            "line": 0,
            "locals": None,
        },
        {
            "name": "Worker.step",
            "filename": "/srv/app/worker.py",
            "module": None,
            "short_filename": "app/worker.py",
            "line": 17,
            "locals": [
                {"name": "self", "addr": 1, "arg": True, "repr": "<Worker at 0x1>"},
                {"name": "n", "addr": 2, "arg": False, "repr": None},
            ],
        },
    ]
    text = _json_doc(
        [
            _json_thread(2002, "helper", active=True, gil=False, frames=[]),
            _json_thread(1001, "MainThread", active=True, gil=True, frames=frames),
        ]
    )
    dump = _only(pyspy.parse_json(text, source="j.json"))
    main, helper = dump.threads
    assert (main.name, main.status, main.thread_id, main.os_thread_id) == (
        "MainThread",
        ThreadStatus.ACTIVE_GIL,
        "1001",
        1,
    )
    assert helper.status is ThreadStatus.ACTIVE
    assert main.frames[0] == Frame(function="recv", file="/lib/libc.so.6", native=True)
    assert main.frames[1] == Frame(
        function="Worker.step",
        file="app/worker.py",
        line=17,
        locals=(Local(name="self", repr="<Worker at 0x1>", is_arg=True), Local(name="n", repr="?")),
    )


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('[\n  {"pid": 1,\n  ', 3, "invalid JSON"),
        ("[1, 2,]", 1, "column 7"),
        ('{"pid": 1}', 1, "expected a JSON array"),
        ("", 1, "no JSON"),
    ],
)
def test_json_invalid(text: str, line: int, fragment: str) -> None:
    result = pyspy.parse_json(text, source="bad.json")
    assert not result.dumps
    (warning,) = result.warnings
    assert warning.source.line == line
    assert fragment in warning.message


def test_json_empty_array_is_a_dump_without_threads() -> None:
    result = pyspy.parse_json("[]\n", source="e.json")
    dump = _only(result)
    assert (dump.pid, dump.threads) == (None, ())
    assert len(result.warnings) == 1


def test_json_concatenated_arrays_are_separate_dumps() -> None:
    one = _json_doc([_json_thread(1001, "MainThread", active=False, gil=False, frames=[])])
    result = pyspy.parse_json(one + "\n" + one, source="two.json")
    assert [d.pid for d in result.dumps] == [42, 42]
    assert result.dumps[1].source.line > result.dumps[0].source.line


# --------------------------------------------------------------------------- fuzzing

_ALPHABET = st.sampled_from(
    [
        *'Thread Process Python v (idle) active+gil 0x7F: "\n-    )(.:12Error\x1b[m\r',
        "\n    f (a.py:1)",
        "\nThread 5 (idle)",
        "\nProcess 9: x\nPython v3.11.7 (/p)\n",
        "\n" + "-" * 20,
    ]
)


# Inputs the fuzz tests found, kept so every run tries them (the suite's Hypothesis profile
# keeps no examples database). Issue 29: a line of exactly four spaces inside a thread made
# the plain-file fast path index past the line's end (IndexError in `report analyze`).
FOUND = (
    "Process 29604: python app.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
    'Thread 29604 (idle): "MainThread"\n    \n    wait (threading.py:320)\n',
)


def test_property_tests_are_deterministic() -> None:
    """The suite's profile (tests/conftest.py): the same inputs on every run and in CI."""
    current = settings.default
    assert current is not None and current.derandomize and current.database is None


def _found(test: Callable[[str], None]) -> Callable[[str], None]:
    for text in FOUND:
        test = example(text)(test)
    return test


@_found
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    result = pyspy.parse_text(text, source="fuzz.txt")
    assert isinstance(result, ParseResult)
    assert isinstance(pyspy.parse_json(text, source="fuzz.json"), ParseResult)


@_found
@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=80).map("".join))
def test_dump_like_text_never_raises(text: str) -> None:
    result = pyspy.parse_text(text, source="fuzz.txt")
    for warning in result.warnings:
        assert 1 <= warning.source.line <= text.count("\n") + 1


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_samples_never_raise(pyspy_samples: Path, data: st.DataObject) -> None:
    name = data.draw(
        st.sampled_from(
            [
                "pyspy-0.4.3_multithread_locals-l.txt",
                "pyspy-0.4.1_subprocesses_fork-tree_interleaved-bug.txt",
                "pyspy-0.4.3_subprocesses_fork-tree_tty-ansi-raw.txt",
                "pyspy-0.4.3_multithread_native.txt",
                "pyspy-0.4.3_error_no-such-pid_RUST_BACKTRACE-1.txt",
                "pyspy-0.4.3_multithread_locals.json",
            ]
        )
    )
    lines = (pyspy_samples / name).read_text(encoding="utf-8").split("\n")
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
        action = data.draw(st.sampled_from(["cut", "drop", "dup", "swap", "junk"]))
        if action == "cut":
            lines[index] = lines[index][
                : data.draw(st.integers(min_value=0, max_value=len(lines[index])))
            ]
        elif action == "drop":
            del lines[index]
        elif action == "dup":
            lines.insert(index, lines[index])
        elif action == "swap":
            other = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        else:
            lines.insert(index, data.draw(st.text(max_size=30)))
        if not lines:
            lines = [""]
    text = "\n".join(lines)
    assert isinstance(pyspy.parse_text(text, source=name), ParseResult)
    assert isinstance(pyspy.parse_json(text, source=name), ParseResult)
