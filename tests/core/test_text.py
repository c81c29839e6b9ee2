"""reporter/core/text.py: counted nouns, compact numbers, word wrapping."""

from __future__ import annotations

import pytest

from reporter.core.text import number, plural, version_key, wrap


@pytest.mark.parametrize(
    ("count", "word", "many", "expected"),
    [
        (1, "snapshot", None, "1 snapshot"),
        (0, "snapshot", None, "0 snapshots"),
        (2, "process", None, "2 processes"),
        (3, "box", None, "3 boxes"),
        (2, "required box", "required boxes", "2 required boxes"),
        (1, "process", "processes", "1 process"),
    ],
)
def test_plural(count: int, word: str, many: str | None, expected: str) -> None:
    assert plural(count, word, many) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [(3.0, "3"), (0.25, "0.25"), (1234.5678, "1235"), (1e16, "1e+16")]
)
def test_number(value: float, expected: str) -> None:
    assert number(value) == expected


def test_wrap_keeps_words_whole() -> None:
    assert wrap("a bb ccc dddddddddd e", 6) == ["a bb", "ccc", "dddddddddd", "e"]
    assert wrap("   ", 5) == []


def test_versions_sort_in_release_order() -> None:
    versions = ["3.10.0", "3.9.18", "3.13.0rc1", "3.13.0", "3.12.0+", "3.12.0", "3.8"]
    assert sorted(versions, key=version_key) == [
        "3.8",
        "3.9.18",
        "3.10.0",
        "3.12.0",
        "3.12.0+",
        "3.13.0rc1",
        "3.13.0",
    ]


def test_an_unreadable_version_sorts_by_its_leading_numbers() -> None:
    assert version_key("3.11.4-custom") > version_key("3.11.3")
    assert version_key("garbage") < version_key("0.1")
