"""`gate.any_of`: the masking gate's prefix tree finds a text exactly when a need is in it."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from reporter.secrets import gate, shapes

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "redaction"


def _gate_needs() -> set[str]:
    # The needs the gate searches, as `_prefilter` gathers them (all ASCII: lower case).
    entries = shapes.secret_patterns()
    return {n.lower() for e in entries if not shapes._common(e) for n in e.needs}


def _texts(needs: set[str]) -> list[str]:
    lines = [
        line.lower()
        for path in sorted(CORPUS.rglob("*"))
        if path.is_file()
        for line in path.read_text(errors="replace").splitlines()
    ]
    rng = random.Random(36)
    alphabet = "".join(sorted({c for n in needs for c in n})) + " :=_"
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    for need in sorted(needs):
        lines += [f"x {need} y", need[:-1], need[1:], f"{need[:-1]} {need[-1]}"]
    return lines


def test_the_gate_finds_a_text_exactly_when_it_holds_a_need() -> None:
    needs = _gate_needs()
    gate = shapes._prefilter().folded
    assert gate is not None and len(needs) > 50
    found = 0
    for text in _texts(needs):
        expected = any(need in text for need in needs)
        assert (gate.search(text) is not None) is expected, text
        found += expected
    assert found > 200  # both answers exercised


@pytest.mark.parametrize(
    ("words", "text", "expected"),
    [
        ({"ab", "abc"}, "xabx", True),  # the longer word left out: the shorter finds it
        ({"abc", "abd"}, "xabx", False),
        ({"a-b", "a.c"}, "a-c a+c", False),  # special characters escaped
        ({"a-b", "a.c"}, "xa.cx", True),
        ({"://"}, "https://h", True),
        ({"x", "xy", "zz"}, "z x", True),
        ({"", "q"}, "anything", True),
    ],
)
def test_small_sets(words: set[str], text: str, expected: bool) -> None:
    assert (re.search(gate.any_of(words), text) is not None) is expected
    # The tree, not a flat list: shared prefixes are written once.
    if words == {"abc", "abd"}:
        assert gate.any_of(words) == "ab(?:c|d)"
