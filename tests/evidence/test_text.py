"""Tests for the shared text helpers of the dump parsers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from reporter.evidence._text import LinePrefix, Unrecognised, clean_lines, stamp_and_label


def test_clean_lines_keeps_line_numbers() -> None:
    text = "\ufeffa\r\n\x1b[33mb\x1b[0m\r\n\x0cc\n"
    assert clean_lines(text) == ["a", "b", "\x0cc"]
    assert clean_lines("") == []
    assert clean_lines("x\n\n") == ["x", ""]


@pytest.mark.parametrize(
    ("example", "line", "rest"),
    [
        ("sglang-1  | ", "sglang-1  |     f (a.py:1)", "    f (a.py:1)"),
        ("sglang-1  | ", "sglang-1  |", ""),
        ("sglang-1  | ", "sglang-2  | Thread 5", "Thread 5"),
        ("[2026-07-14 08:34:44 TP6] ", "[2026-07-14 08:35:59 TP7] x", "x"),
        ("[2026-07-14 08:34:44 TP6] ", "[2026-07-14 08:35:59 TP7]", ""),
        ("[2026-07-14 08:34:44 TP6] ", "[2026-07-14 08:35:59 DP0] x", None),
        ("router | ", "router | x", "x"),
        ("router | ", "sglang | x", None),
    ],
)
def test_line_prefix_shapes(example: str, line: str, rest: str | None) -> None:
    assert LinePrefix(example).strip(line) == rest


@pytest.mark.parametrize(
    ("text", "stamp", "label"),
    [
        ("[2026-07-14 08:34:44 TP6] ", datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC), "TP6"),
        (
            "sglang-1  | [2026-07-14 08:34:44,250 DP1 TP3] ",
            datetime(2026, 7, 14, 8, 34, 44, 250000, tzinfo=UTC),
            "DP1 TP3",
        ),
        (
            "2026-07-14T08:34:44.5+02:00 ",
            datetime(2026, 7, 14, 8, 34, 44, 500000, tzinfo=timezone(timedelta(hours=2))),
            None,
        ),
        ("2026-07-14T08:34:44Z host: ", datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC), None),
        ("[2026-02-30 08:34:44 TP1] ", None, "TP1"),
        ("no time here ", None, None),
    ],
)
def test_stamp_and_label(text: str, stamp: datetime | None, label: str | None) -> None:
    assert stamp_and_label(text) == (stamp, label)


def test_unrecognised_folds_runs() -> None:
    unknown = Unrecognised("f.txt", "things")
    for number in (3, 4, 5, 9):
        unknown.add(number, f"line {number}")
    unknown.warn(12, "special")
    unknown.flush()
    assert [str(w) for w in unknown.warnings] == [
        "f.txt:3: 3 lines (to line 5) not understood as things, starting 'line 3'",
        "f.txt:9: line not understood as things: 'line 9'",
        "f.txt:12: special",
    ]
