"""Timeout, watchdog, OOM-killer, signal and exit lines of logs as `LogEvent`s.

The lines are the forms these programs print (gloo, ProcessGroupNCCL, the kernel, systemd,
torch's DataLoader, torch elastic and torch.multiprocessing), with their numbers changed.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporter.evidence import logevents, logs
from reporter.model import Location, LogEventKind

SRC = Location(path="x.log", line=1)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "[E gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 20000ms for recv "
            "operation to complete",
            (LogEventKind.TIMEOUT, None, None, "", None, 20000),
        ),
        (
            "[rank3]:[E1207 12:40:01.123 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=600000) ran for 600023 milliseconds before timing out.",
            (LogEventKind.TIMEOUT, None, 3, "", None, 600000),
        ),
        (
            "[rank0]:[E1207 ProcessGroupNCCL.cpp:1600] To avoid data inconsistency, we are "
            "taking the entire process down.",
            (LogEventKind.WATCHDOG_ABORT, None, None, "", None, None),
        ),
        (
            "kernel: Out of memory: Killed process 4711 (python3) total-vm:81236kB, "
            "anon-rss:60000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:200kB oom_score_adj:0",
            (LogEventKind.OOM_KILL, 4711, None, "SIGKILL", None, None),
        ),
        (
            "Memory cgroup out of memory: Killed process 4712 (python) total-vm:1kB",
            (LogEventKind.OOM_KILL, 4712, None, "SIGKILL", None, None),
        ),
        (
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.",
            (LogEventKind.SIGNAL, 4242, None, "SIGKILL", None, None),
        ),
        (
            "sglang.service: Main process exited, code=killed, status=9/KILL",
            (LogEventKind.SIGNAL, None, None, "SIGKILL", None, None),
        ),
        (
            "sglang.service: Main process exited, code=exited, status=1/FAILURE",
            (LogEventKind.EXIT, None, None, "", 1, None),
        ),
        (
            "E1207 12:00:00.000 torch/distributed/elastic/multiprocessing/api.py:869] failed "
            "(exitcode: -9) local_rank: 0 (pid: 5151) of binary: /usr/bin/python3",
            (LogEventKind.SIGNAL, 5151, None, "SIGKILL", -9, None),
        ),
        (
            "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with "
            "signal SIGKILL",
            (LogEventKind.SIGNAL, None, 1, "SIGKILL", None, None),
        ),
        (
            "worker 7 (pid=6000) exited with code 3",
            (LogEventKind.EXIT, 6000, None, "", 3, None),
        ),
        (
            "2026-12-07T12:40:00,123456+00:00 INFO: task python3:4711 blocked for more than "
            "120 seconds.",
            (LogEventKind.HUNG_TASK, 4711, None, "", None, 120000),
        ),
        (
            "torch.distributed.DistStoreError: Timed out after 300 seconds waiting for clients.",
            (LogEventKind.TIMEOUT, None, None, "", None, 300000),
        ),
    ],
)
def test_each_form(line: str, expected: tuple[object, ...]) -> None:
    """expected: (kind, pid, rank, signal, exit code, timeout in ms)."""
    event = logevents.read_line(line, at=None, source=SRC)
    assert event is not None
    got = (event.kind, event.pid, event.rank, event.signal, event.exit_code, event.timeout_ms)
    assert got == expected


@pytest.mark.parametrize(
    "line",
    [
        "INFO: model loaded in 12 s",
        "the exit sign is lit",
        "timeout=30 configured",
    ],
)
def test_ordinary_lines_say_nothing(line: str) -> None:
    assert logevents.read_line(line, at=None, source=SRC) is None


def test_log_parse_dates_events_and_continuation_lines() -> None:
    text = (
        "2026-12-07 12:00:00,100 INFO serving\n"
        "2026-12-07 12:00:05,000 ERROR worker failed\n"
        "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.\n"
        "2026-12-07T12:00:09Z Timed out waiting 20000ms for recv operation to complete\n"
    )
    result = logs.parse(text, source="app.log")
    first, second = result.log_events
    assert first.at == datetime(2026, 12, 7, 12, 0, 5, tzinfo=UTC)
    assert (first.pid, first.signal, first.source.line) == (4242, "SIGKILL", 3)
    assert second.kind is LogEventKind.TIMEOUT
    assert second.at == datetime(2026, 12, 7, 12, 0, 9, tzinfo=UTC)


def test_an_undated_log_gives_undated_events() -> None:
    result = logs.parse("Out of memory: Killed process 99 (python3)\n", source="dmesg.txt")
    (event,) = result.log_events
    assert event.at is None and event.pid == 99


def test_signal_names() -> None:
    assert logevents.signal_name("9") == "SIGKILL"
    assert logevents.signal_name("KILL") == "SIGKILL"
    assert logevents.signal_name("Segmentation fault") == "SIGSEGV"
    assert logevents.signal_name("nonsense") == ""


_WORDS = st.sampled_from(
    [
        "Timed out waiting ",
        "ms",
        "killed by signal: ",
        "exited with code ",
        "(pid ",
        "pid=",
        "code=killed, status=",
        "/",
        "failed (exitcode: ",
        ") ",
        "Out of memory: Killed process ",
        "[Rank ",
        "]",
        "Timeout(ms)=",
        "Watchdog caught collective operation timeout",
        "9",
        "-",
        "99999999999999999999",
        "KILL",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=12).map("".join))
def test_any_mix_of_the_markers_reads_without_raising(line: str) -> None:
    event = logevents.read_line(line, at=None, source=SRC)
    assert event is None or len(event.text) <= logevents.MAX_TEXT
