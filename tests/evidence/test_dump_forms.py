"""Real-world dump forms (issue 10): condensed headers, fragments, shared stacks, glued frames,
several headerless processes, truncation notes and SGLang watchdog failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.evidence import faulthandler, pyspy
from reporter.evidence.sniff import sniff
from reporter.model import EvidenceKind, FailureState

CONDENSED = """\
Process 2317: sglang::scheduler_TP0   (Python 3.12.3)

Thread (idle) "MainThread"
    recv_requests (sglang/srt/managers/scheduler.py:1012)
    event_loop_normal (sglang/srt/managers/scheduler.py:950)
Thread (active) "Thread-1"
    wait (threading.py:355)
"""


def test_condensed_header_and_threads_without_ids() -> None:
    assert sniff(CONDENSED) is EvidenceKind.PYSPY_TEXT
    result = pyspy.parse_text(CONDENSED, source="c.txt")
    (dump,) = result.dumps
    assert (dump.pid, dump.cmdline, dump.python_version) == (
        2317,
        "sglang::scheduler_TP0",
        "3.12.3",
    )
    assert [(t.thread_id, t.name, t.status.value) for t in dump.threads] == [
        ("?", "MainThread", "idle"),
        ("?", "Thread-1", "active"),
    ]
    assert [f.function for f in dump.threads[0].frames] == ["recv_requests", "event_loop_normal"]
    assert not dump.truncated
    assert not result.warnings


@pytest.mark.parametrize("indent", ["    ", "  ", "\t".expandtabs(8)])
def test_two_frame_fragment_is_one_anonymous_thread(indent: str) -> None:
    text = (
        f"{indent}all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
        f"{indent}run_scheduler_process (sglang/srt/managers/scheduler.py:2710)\n"
    )
    assert sniff(text) is EvidenceKind.PYSPY_TEXT
    result = pyspy.parse_text(text, source="f.txt")
    (dump,) = result.dumps
    (thread,) = dump.threads
    assert dump.pid is None and thread.thread_id == "?"
    assert [f.line for f in thread.frames] == [2501, 2710]
    assert any("one anonymous thread" in w.message for w in result.warnings)


def test_prose_with_one_parenthesised_line_is_not_a_fragment() -> None:
    text = "we saw this:\n    see the docs (docs/index.md:3)\nand then it hung\nno idea why\n"
    assert sniff(text) is not EvidenceKind.PYSPY_TEXT


def test_thread_lines_sharing_one_stack_each_get_it() -> None:
    text = (
        "Process 40: python train.py\nPython v3.11.7 (/usr/bin/python3)\n\n"
        'Thread 40 (idle): "MainThread"\n'
        "    main (train.py:9)\n"
        'Thread 41 (idle): "worker-0"\n'
        'Thread 42 (idle): "worker-1"\n'
        'Thread 43 (idle): "worker-2"\n'
        "    wait (threading.py:355)\n"
        "    get (queue.py:171)\n"
        'Thread 44 (active): "other"\n'
        "    run (x.py:1)\n"
    )
    result = pyspy.parse_text(text, source="s.txt")
    (dump,) = result.dumps
    stacks = {t.thread_id: [f.function for f in t.frames] for t in dump.threads}
    assert stacks == {
        "40": ["main"],
        "41": ["wait", "get"],
        "42": ["wait", "get"],
        "43": ["wait", "get"],
        "44": ["run"],
    }
    assert sum("share" in w.message or "each is given" in w.message for w in result.warnings) == 1


def test_several_main_threads_without_header_are_several_processes() -> None:
    text = (
        'Thread (idle) "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
        'Thread (idle) "watchdog"\n'
        "    sleep (time.py:1)\n"
        'Thread (idle) "MainThread"\n'
        "    on_idle (sglang/srt/disaggregation/decode.py:812)\n"
    )
    result = pyspy.parse_text(text, source="m.txt")
    first, second = result.dumps
    assert (first.pid, first.slot, len(first.threads)) == (None, 1, 2)
    assert (second.pid, second.slot, len(second.threads)) == (None, 2, 1)
    assert second.source.line == 5


def test_headerless_main_thread_ids_give_pids() -> None:
    text = (
        'Thread 101 (idle): "MainThread"\n    f (a.py:1)\n'
        'Thread 201 (idle): "MainThread"\n    g (a.py:2)\n'
    )
    result = pyspy.parse_text(text, source="m.txt")
    assert [(d.pid, d.slot) for d in result.dumps] == [(101, 0), (201, 0)]


def test_glued_pyspy_frames_are_split() -> None:
    text = (
        "Process 5: python a.py\nPython v3.11.7 (/usr/bin/python3)\n\n"
        'Thread 5 (idle): "MainThread"\n'
        "    wait (threading.py:355)    get (queue.py:171)\n"
        "    main (a.py:9)\n"
    )
    result = pyspy.parse_text(text, source="g.txt")
    assert [f.function for f in result.dumps[0].threads[0].frames] == ["wait", "get", "main"]
    assert any("glued" in w.message for w in result.warnings)


def test_native_names_with_parentheses_are_not_split() -> None:
    line = "    std::function<void (int)>::operator() (libfoo.so)"
    text = f'Process 5: p\nPython v3.11.7 (/p)\n\nThread 5 (idle): "MainThread"\n{line}\n'
    frames = pyspy.parse_text(text, source="n.txt").dumps[0].threads[0].frames
    assert [f.function for f in frames] == ["std::function<void (int)>::operator()"]


def test_glued_faulthandler_frames_are_split() -> None:
    text = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/srv/c10d.py", line 2501 in all_reduce  File "/srv/train.py", line 10 in step\n'
        '  File "/srv/train.py", line 20 in main\n'
    )
    result = faulthandler.parse(text, source="fh.txt")
    frames = result.dumps[0].threads[0].frames
    assert [(f.function, f.line) for f in frames] == [
        ("all_reduce", 2501),
        ("step", 10),
        ("main", 20),
    ]
    assert any("glued" in w.message for w in result.warnings)


def test_faulthandler_frame_limit_is_a_truncation_with_a_warning() -> None:
    text = 'Stack (most recent call first):\n  File "/a.py", line 1 in f\n  ...\n'
    result = faulthandler.parse(text, source="fh.txt")
    assert result.dumps[0].truncated
    assert any("cut" in w.message for w in result.warnings)


WATCHDOG = """\
[2026-07-07 07:21:01] Pyspy dump for PID 163685 (py-spy dump --native --pid 163685):
Process 163685: sglang::scheduler_TP0
Python v3.12.3 (/usr/bin/python3.12)

Thread 163685 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)

[2026-07-07 07:21:06] Pyspy failed (py-spy dump --native --pid 163686). Error: Error: Failed to get stack traces

Caused by:
    0: UNW_EBADREG: bad register number

[2026-07-07 07:21:06] Pyspy failed (py-spy dump  --pid 163686). Error: Error: Failed to get process executable name. Check that the process is running.

Caused by:
    0: No such file or directory (os error 2)
    1: No such file or directory (os error 2)

[2026-07-07 07:21:06] All pyspy dump attempts failed for PID 163686.
"""


def test_watchdog_failures_go_to_the_pid_the_line_names() -> None:
    result = pyspy.parse_text(WATCHDOG, source="w.log")
    (dump,) = result.dumps
    assert dump.pid == 163685
    assert [(f.pid, f.state) for f in result.failures] == [
        (163686, FailureState.ERROR),
        (163686, FailureState.GONE),
    ]
    assert result.failures[0].reason == "Failed to get stack traces"
    assert "UNW_EBADREG" in result.failures[0].detail
    assert result.failures[1].source.line == 13


def test_summary_line_alone_is_a_failure_of_its_pid() -> None:
    text = "[TP0] All pyspy dump attempts failed for PID 20955.\n"
    assert sniff(text) is EvidenceKind.PYSPY_TEXT
    result = pyspy.parse_text(text, source="w.log")
    assert [(f.pid, f.state) for f in result.failures] == [(20955, FailureState.ERROR)]


def test_old_watchdog_form_names_its_pid() -> None:
    text = "[2025-08-02 06:06:21 TP2] Pyspy failed to dump PID 171. Error: /bin/dash: 1: py-spy: not found\n"
    result = pyspy.parse_text(text, source="w.log")
    assert [(f.pid, f.reason) for f in result.failures] == [
        (171, "/bin/dash: 1: py-spy: not found")
    ]


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("Failed to open process - check if it is running.\nNo such process (os error 3)", "gone"),
        ("Error: Operation not permitted (os error 1)", "refused"),
        ("Permission Denied: Try running again with elevated permissions", "refused"),
        ("py-spy timed out after 10s", "timeout"),
        ("Failed to copy Py_Version symbol", "error"),
        # A cause under py-spy's advice outranks the advice: the process is there.
        (
            "Failed to get process executable name. Check that the process is running.\n"
            "Caused by:\n    0: Permission denied (os error 13)",
            "refused",
        ),
        # The advice alone (the cause lines cut off) still says gone.
        ("Failed to get process executable name.", "gone"),
        ("process 4242 has exited", "gone"),
        # SGLang's watchdog without py-spy installed: the words, but the process is alive.
        ("[Errno 2] No such file or directory: 'py-spy'", "error"),
    ],
)
def test_failure_states(text: str, state: str) -> None:
    assert pyspy.classify_failure(text).value == state


def test_torch_spawn_keeps_its_package_in_short_names() -> None:
    from reporter.model import Frame

    torch = Frame(function="_wrap", file="/venv/site-packages/torch/multiprocessing/spawn.py")
    stdlib = Frame(function="_main", file="/usr/lib/python3.12/multiprocessing/spawn.py")
    assert torch.short_file == "torch/multiprocessing/spawn.py"
    assert stdlib.short_file == "multiprocessing/spawn.py"
    assert Frame(function="f", file="sglang/srt/managers/scheduler.py").short_file == (
        "managers/scheduler.py"
    )


def test_stacks_are_described_by_their_innermost_python_frame() -> None:
    from reporter.model import Frame, innermost_python

    libc = Frame(function="0x7f259f401d71", file="libc.so.6", native=True)
    lock = Frame(function="PyThread_acquire_lock_timed", file="python3.12", native=True)
    shutdown = Frame(function="_shutdown", file="threading.py", line=1622)
    assert innermost_python((libc, lock, shutdown)) == shutdown
    assert innermost_python((libc,)) == libc
    gloo = Frame(
        function="gloo::transport::tcp::UnboundBuffer::waitRecv",
        file="libtorch_cpu.so",
        native=True,
    )
    assert innermost_python((libc, gloo)) == gloo
    assert innermost_python(()) is None


def test_interpreter_frames_of_native_dumps_are_native() -> None:
    text = (
        "Process 187: sglang::scheduler_TP6\nPython v3.12.3 (/usr/bin/python3.12)\n\n"
        'Thread 187 (idle): "MainThread"\n'
        "    0x7f1398316d71 (libc.so.6)\n"
        "    PyThread_acquire_lock_timed (python3.12)\n"
        "    _shutdown (threading.py:1622)\n"
        "    <module> (<string>:1)\n"
    )
    frames = pyspy.parse_text(text, source="n.txt").dumps[0].threads[0].frames
    assert [f.native for f in frames] == [True, True, False, False]


def test_py_spy_frameless_threads_keep_no_frames() -> None:
    # py-spy prints threads without Python frames as bare, unnamed thread lines.
    text = (
        "Process 42: python train.py\nPython v3.10.12 (/usr/bin/python3)\n\n"
        'Thread 42 (idle): "MainThread"\n'
        "    backward (torch/_tensor.py:522)\n"
        "Thread 4076 (idle)\n"
        "Thread 4077 (idle)\n"
        "Thread 4079 (active)\n"
        "    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2709)\n"
    )
    result = pyspy.parse_text(text, source="s.txt")
    frames = [len(t.frames) for t in result.dumps[0].threads]
    assert frames == [1, 0, 0, 1]
    assert not any("each is given" in w.message for w in result.warnings)


def test_headerless_processes_are_not_given_invented_pids(tmp_path: Path) -> None:
    from reporter.analysis import analyze
    from reporter.load.bundle import load

    path = tmp_path / "pasted.txt"
    path.write_text(
        'Thread (idle) "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
        "    run_scheduler_process (sglang/srt/managers/scheduler.py:2710)\n"
        'Thread (idle) "MainThread"\n'
        "    on_idle (sglang/srt/disaggregation/decode.py:812)\n"
        "    run_scheduler_process (sglang/srt/managers/scheduler.py:2710)\n"
    )
    analysis = analyze(load([path]))
    assert analysis.rank_unit == "process"
    assert len(analysis.processes) == 2  # two processes, not two snapshots of one
    assert "PID" not in analysis.summary
    assert "process 0" in analysis.summary and "process 1" in analysis.summary
    keys = sorted(p.identity.key for p in analysis.processes)
    assert keys == [f"file:{path}#1", f"file:{path}#2"]
