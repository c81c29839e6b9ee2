"""Fixtures for the collector tests: the real py-spy captures in fixtures/samples/."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "samples"


@pytest.fixture(scope="session")
def pyspy_samples() -> Path:
    """`pyspy/`: real py-spy captures, including its error texts."""
    return SAMPLES / "pyspy"
