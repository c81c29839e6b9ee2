"""Fixtures for the evidence parser tests: the real captures kept in fixtures/samples/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# Captured by fixtures/samples/capture.py from the demo programs beside it.
SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "samples"


@pytest.fixture(scope="session")
def pyspy_samples() -> Path:
    """`pyspy/`: real py-spy 0.4.3 and 0.4.1 captures (text, JSON, errors)."""
    return SAMPLES / "pyspy"


@pytest.fixture(scope="session")
def faulthandler_samples() -> Path:
    """`faulthandler/`: real faulthandler output (SIGUSR1, timeout, segfault)."""
    return SAMPLES / "faulthandler"


@pytest.fixture(scope="session")
def prometheus_samples() -> Path:
    """`prometheus/`: one scrape as prometheus_client writes it."""
    return SAMPLES / "prometheus"


def line_of(program: str, needle: str) -> int:
    """The 1-based line of `needle` in a demo program (`myapp/workers.py`), read from it.

    The tests take line numbers from the programs, so editing a program and capturing
    again needs no test edit.
    """
    lines = (SAMPLES / "programs" / program).read_text(encoding="utf-8").splitlines()
    (number,) = [n for n, line in enumerate(lines, 1) if needle in line]
    return number


@pytest.fixture(scope="session")
def facts() -> dict[str, Any]:
    """What each demo program said about itself when captured (PIDs, thread ids)."""
    data: dict[str, Any] = json.loads((SAMPLES / "facts.json").read_text(encoding="utf-8"))
    return data
