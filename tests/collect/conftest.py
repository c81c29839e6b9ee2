"""Fixtures for the collector tests: the shared py-spy samples (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"


@pytest.fixture(scope="session")
def pyspy_samples() -> Path:
    """`pyspy-samples/`: real py-spy captures, including its error texts."""
    folder = REFERENCE / "pyspy-samples"
    if not folder.is_dir():
        pytest.skip(f"reference samples not found at {folder} (expected beside the repo)")
    return folder.resolve()
