"""Upstream drafts carry the minimal Flight Recorder excerpt that shows the first mismatch."""

from __future__ import annotations

from reporter.app import filing
from reporter.app.filing import DraftSource
from reporter.app.issues import GitHubAccess
from reporter.app.report import Options, load_and_analyze
from reporter.upstream.index import Index

from .conftest import ROOT

BUNDLES = ROOT / "fixtures" / "bundles"


def _draft(name: str, example_index: Index) -> str:
    bundle, analysis = load_and_analyze([BUNDLES / name], Options())
    run = filing.make_draft(
        DraftSource(
            bundle=bundle,
            analysis=analysis,
            repo="pytorch/pytorch",
            forms_dir=ROOT / "fixtures" / "forms" / "sglang",
            db=example_index.path,
        ),
        access=GitHubAccess(env={}),
    )
    return run.draft.document


def test_the_draft_shows_the_aligned_rows_around_the_mismatch(example_index: Index) -> None:
    text = _draft("fr_different_ops", example_index)

    assert "**Flight Recorder.**" in text
    block = text[text.index("**Flight Recorder.**") :]
    block = block[: block.index("```", block.index("```") + 3)]
    rows = [line for line in block.splitlines() if line.startswith("#")]
    assert rows[-1] == "#5 ! all_reduce [[4]] on [0-1]; broadcast [[4]] on [2-3]"
    assert all("!" not in row for row in rows[:-1])
    assert 2 <= len(rows) <= 5  # minimal: the mismatch and a few ids before it


def test_no_excerpt_without_a_mismatch(example_index: Index) -> None:
    assert "**Flight Recorder.**" not in _draft("fr_healthy", example_index)
    assert "**Flight Recorder.**" not in _draft("tp_desync", example_index)
