"""Large Markdown parsed a piece at a time: the same findings, titles and lines (issue 21)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.render import blocks, lint, status

ROOT = Path(__file__).resolve().parents[2]


def _big(base: str) -> str:
    """`base` with about 200 KB of notes, a closed and an unclosed fence, and a TODO."""
    notes = "- rank 3 waited; see above\n\nA short note.\n\n" * 2_500
    return (
        base
        + "\n## Pasted\n\n"
        + notes
        + "```text\nTODO(reviewer) inside code\n\n\nstill code\n```\n\n"
        + notes
        + "TODO(reviewer) outside\n\n| a | b |\n|---|---|\n| 1 |\n\n"
        + "```text\n"
        + "[2026-11-29 14:43:10] pasted log line\n" * 1_000
        + "```\n\n"
        + "```mermaid\nflowchart XY\n```\n\n````\nnever closed\n\nat all\n"
    )


@pytest.fixture
def report(monkeypatch: pytest.MonkeyPatch) -> str:
    """A report cut in pieces as a 50 MB one would be: thresholds made small."""
    monkeypatch.setattr(blocks, "WHOLE", 64 << 10)
    monkeypatch.setattr(blocks, "PIECE", 16 << 10)
    return _big((ROOT / "tests" / "golden" / "tp_desync.md").read_text("utf-8"))


def test_pieces_join_to_the_text_and_never_cut_a_fence(report: str) -> None:
    pieces = list(blocks.pieces(report, piece=blocks.PIECE))
    assert len(pieces) > 3
    assert "".join(p for _line, p in pieces) == report
    offset = 0
    for number, (first_line, piece) in enumerate(pieces):
        assert report.count("\n", 0, offset) == first_line
        assert number == 0 or not piece.startswith("---")
        offset += len(piece)
    inside = next(p for _line, p in pieces if "TODO(reviewer) inside code" in p)
    # The pasted log is a piece of its own, turned into its fence token without parsing.
    log = next((n, p) for n, p in pieces if "pasted log line" in p)
    token = blocks.big_fence(log[1], log[0])
    assert token is not None and token.info == "text" and token.map == [log[0], log[0] + 1002]
    assert "still code\n```" in inside


def test_lint_in_pieces_finds_what_a_whole_parse_finds(
    report: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(list(blocks.pieces(report, piece=blocks.PIECE))) > 3
    chunked = lint.lint_text(report, path="r.md")
    monkeypatch.setattr(blocks, "WHOLE", 1 << 30)
    whole = lint.lint_text(report, path="r.md")
    assert [(f.line, f.rule) for f in chunked] == [(f.line, f.rule) for f in whole]
    rules = {f.rule for f in chunked}
    assert {lint.Rule.UNCLOSED_FENCE, lint.Rule.TABLE_COLUMNS, lint.Rule.MERMAID_TYPE} <= rules


def test_status_in_pieces_reads_the_title_and_the_open_todos(report: str) -> None:
    row = status.summarize(report, path="r.md")
    assert row is not None
    assert row.title.startswith("TP ranks")
    assert row.todos == len(lint.placeholders(report))
    assert row.todos >= 1


def test_preview_in_pieces_renders_the_big_fence_as_code(report: str) -> None:
    from reporter.render import preview

    page = preview.to_html(report, source="r.md")
    assert '<pre><code class="language-text">[2026-11-29 14:43:10] pasted log line' in page
    assert page.count("pasted log line") == 1_000
    assert "<title>TP ranks" in page
