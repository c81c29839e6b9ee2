"""`systemctl show` and timestamped log parsers: events with their lines, and bad input."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reporter.evidence import logs, systemd
from reporter.model import EventKind, ParseResult

REF = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

SHOW = """\
Type=simple
MainPID=4242
NRestarts=2
ExecMainStartTimestamp=Sun 2026-11-29 14:39:58 UTC
ExecMainStartTimestampMonotonic=123
Id=sglang.service
InactiveExitTimestamp=Sun 2026-11-29 14:39:58 UTC
ActiveEnterTimestamp=Sun 2026-11-29 14:40:05.250000 UTC
ActiveExitTimestamp=
InactiveEnterTimestamp=n/a

Id=router.service
ExecMainStartTimestamp=@1764427100
ExecMainExitTimestamp=Sun 2026-11-29 14:41:00 +01:00
ExecMainStatus=1
ExecMainCode=1
"""


def _text(result: ParseResult) -> str:
    return "\n".join(str(w) for w in result.warnings)


def test_systemctl_show_events_per_unit() -> None:
    result = systemd.parse(SHOW, source="show.txt")
    assert not result.warnings, _text(result)
    got = [(e.at.isoformat(), e.text, e.source.line) for e in result.events]
    assert got == [
        (
            "2026-11-29T14:39:58+00:00",
            "sglang.service: start requested (left inactive); main process started (PID 4242)",
            7,
        ),
        (
            "2026-11-29T14:40:05.250000+00:00",
            "sglang.service: became active (restarted 2 times so far)",
            8,
        ),
        ("2025-11-29T14:38:20+00:00", "router.service: main process started", 13),
        ("2026-11-29T13:41:00+00:00", "router.service: main process exited (status 1, code 1)", 14),
    ]
    assert {e.kind for e in result.events} == {EventKind.SERVICE}


@pytest.mark.parametrize(
    ("text", "events", "warning"),
    [
        ("", 0, "no `systemctl show` keys"),
        ("garbage without equals\n", 0, "not a KEY=VALUE line"),
        ("Id=a.service\nMainPID=3\n", 0, "no start or stop timestamps"),
        (
            "Id=a.service\nActiveEnterTimestamp=someday\n",
            0,
            ":2: ActiveEnterTimestamp: time 'someday'",
        ),
        ("Id=a.service\nActiveEnterTimestamp=Sun 2026-11-29 14:39:58 CET\n", 1, "read as UTC"),
        ("Id=a.service\nActiveEnterTimestamp=Sun 2026-02-30 14:39:58 UTC\n", 0, "not understood"),
        ("Id=a.service\nActiveEnterTimestamp=@abc\n", 0, "not understood"),
    ],
)
def test_systemd_bad_input(text: str, events: int, warning: str) -> None:
    result = systemd.parse(text, source="show.txt")
    assert len(result.events) == events
    assert warning in _text(result)


LOG = """\
sglang-1  | [2026-11-29 14:40:00 TP0] Load weight end. Scheduler started
[2026-11-29 14:40:05] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK
Traceback (most recent call last):
  File "x.py", line 1, in <module>
2026-11-29T14:40:10.5Z WARNING watchdog: no progress for 30 s
2026-11-29T14:40:20.5Z WARNING watchdog: no progress for 40 s
2026-11-29 14:40:21,123 - root - ERROR - boom
Nov 29 14:40:30 host sglang[42]: Scheduler hit an exception
INFO 11-29 14:40:31 [api_server.py:1043] vLLM API server version 0.9 starting
2026-11-29T14:40:32+0100 ready
"""


def test_log_notable_lines_with_each_time_form() -> None:
    result = logs.parse(LOG, source="s.log", reference=REF)
    got = [(e.at.isoformat(), e.text, e.source.line) for e in result.events]
    assert got == [
        ("2026-11-29T14:40:00+00:00", "TP0: Load weight end. Scheduler started", 1),
        (
            "2026-11-29T14:40:10.500000+00:00",
            "WARNING watchdog: no progress for 30 s (and 1 more time to 14:40:20)",
            5,
        ),
        ("2026-11-29T14:40:21.123000+00:00", "root - ERROR - boom", 7),
        ("2026-11-29T14:40:30+00:00", "sglang[42]: Scheduler hit an exception", 8),
        (
            "2026-11-29T14:40:31+00:00",
            "INFO [api_server.py:1043] vLLM API server version 0.9 starting",
            9,
        ),
        ("2026-11-29T13:40:32+00:00", "ready", 10),
    ]
    assert "s.log:1: log times carry no zone; read as UTC" in _text(result)
    assert "time goes back" in _text(result)


@pytest.mark.parametrize(
    ("text", "reference", "events", "warning"),
    [
        ("", None, 0, "no line starts with a time"),
        ("just words\nand more\n", None, 0, "no line starts with a time"),
        ("\x00\x01 binary-ish \x7f\n", None, 0, "no line starts with a time"),
        ("Nov 29 14:40:30 host sglang[42]: error here\n", None, 0, "without a year"),
        ("[2026-13-45 99:99:99] ERROR impossible date\n", None, 0, "no line starts with a time"),
        (
            "2026-11-29T14:40:00Z ERROR a\n2026-11-29T12:00:00Z ERROR b\n",
            None,
            2,
            ":2: time goes back 9600 s",
        ),
        ("INFO 02-30 10:00:00 [x.py:1] starting\n", REF, 0, "no line starts with a time"),
    ],
)
def test_log_bad_input(text: str, reference: datetime | None, events: int, warning: str) -> None:
    result = logs.parse(text, source="s.log", reference=reference)
    assert len(result.events) == events
    assert warning in _text(result)


def test_log_year_comes_from_the_reference_and_wraps_at_new_year() -> None:
    text = "Dec 31 23:59:59 h p: error one\nJan  1 00:00:01 h p: error two\n"
    result = logs.parse(text, source="s.log", reference=datetime(2027, 1, 1, 0, 5, tzinfo=UTC))
    assert [e.at.year for e in result.events] == [2026, 2027]


def test_log_event_cap() -> None:
    text = "".join(
        f"2026-11-29T14:{i // 60:02d}:{i % 60:02d}Z ERROR distinct {chr(65 + i % 26) * (i // 26 + 1)}\n"
        for i in range(300)
    )
    result = logs.parse(text, source="s.log")
    assert len(result.events) == logs.MAX_EVENTS
    assert "100 more notable lines" in _text(result)


@pytest.mark.parametrize(
    ("line", "notable"),
    [
        ("INFO request served", False),
        ('INFO "GET /health HTTP/1.1" 200', False),
        ("WARNING low memory", True),
        ("INFO Uvicorn running on http://0.0.0.0:30000", True),
        ("INFO NCCL INFO Bootstrap : Using eth0", True),
        ("DEBUG Watchdog caught collective operation timeout", True),
    ],
)
def test_notable(line: str, notable: bool) -> None:
    assert logs.notable(line) is notable


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_never_raise(text: str) -> None:
    assert isinstance(systemd.parse(text, source="f"), ParseResult)
    assert isinstance(logs.parse(text, source="f", reference=REF), ParseResult)
    assert isinstance(logs.parse(text, source="f"), ParseResult)
