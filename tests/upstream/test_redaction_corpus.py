"""The seeded redaction corpus: all removed from evidence files and drafts; few false positives."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import ROOT

CORPUS = ROOT / "fixtures" / "redaction"


@pytest.fixture(scope="module")
def evaluation() -> Iterator[ModuleType]:
    """benchmarks/eval_redaction.py, importable for the length of the module."""
    folder = str(ROOT / "benchmarks")
    sys.path.insert(0, folder)
    try:
        import eval_redaction

        yield eval_redaction
    finally:
        sys.path.remove(folder)


def test_corpus_is_what_the_script_writes(tmp_path: Path) -> None:
    sys.path.insert(0, str(CORPUS))
    try:
        import make_corpus
    finally:
        sys.path.remove(str(CORPUS))
    make_corpus.main(tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert written
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (CORPUS / rel).read_bytes(), (
            f"{rel} is stale: run python3 fixtures/redaction/make_corpus.py"
        )


def test_every_seed_is_removed_and_few_clean_lines_change(
    evaluation: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A private cache: an example index another checkout built must not be reused.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    figures = evaluation.evaluate()
    assert figures.seeds >= 100 and figures.kinds_placed == figures.seeds
    assert figures.file_leaks == [] and figures.file_recall == 1.0
    assert figures.draft_leaks == []
    assert len(figures.exposed) >= 30, "the drafts must show most seeded kinds, redacted"
    assert all(total > 0 for total in figures.drafts.values())
    assert figures.false_positive_rate < 0.005
    assert figures.curated_lines > 50


@pytest.mark.parametrize(
    ("value", "text", "leaks"),
    [
        ("ghp_abcdefghijklmnop", "token ghp_abcdefg", False),
        ("ghp_abcdefghijklmnop", "token ghp_abcdefghijk", True),
        ("-----BEGIN X-----\nabcdefghijklmnopq", "v=-----BEGIN X-----\\nabcdefghijklmnopq", True),
        ("10.0.0.1", "peer <ip-1>", False),
    ],
)
def test_leak_check_catches_partial_tokens(
    evaluation: ModuleType, value: str, text: str, leaks: bool
) -> None:
    assert evaluation.leaked(value, text) is leaks
