"""Fixtures for the evidence parser tests: the captured samples next to the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

# The reference captures live beside the repository, not in it: ../shared/reference.
REFERENCE = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"


@pytest.fixture(scope="session")
def reference() -> Path:
    """The shared reference folder, or skip when this checkout has none beside it."""
    if not REFERENCE.is_dir():
        pytest.skip(f"reference samples not found at {REFERENCE} (expected beside the repo)")
    return REFERENCE.resolve()


@pytest.fixture(scope="session")
def pyspy_samples(reference: Path) -> Path:
    """`pyspy-samples/`: real py-spy 0.4.1 and 0.4.3 captures."""
    return reference / "pyspy-samples"


@pytest.fixture(scope="session")
def other_samples(reference: Path) -> Path:
    """`other-dump-samples/`: faulthandler (and other) captures."""
    return reference / "other-dump-samples"
