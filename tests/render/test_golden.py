"""Golden Markdown reports for every fixture bundle, plus a structure check of each golden file.

Rendered with a fixed clock from the repository root, so the output is byte-stable.
Rewrite on purpose with `pytest tests/render/test_golden.py --update-golden`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from reporter.app.report import Options, load_and_analyze, render_draft
from reporter.render.lint import REQUIRED_SECTIONS

_CELL_SPLIT = re.compile(r"(?<!\\)\|")

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
BUNDLES = sorted(p for p in (ROOT / "fixtures" / "bundles").iterdir() if p.is_dir())
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)
REQUIRED_H2 = list(REQUIRED_SECTIONS)


def _render(bundle_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([bundle_dir.relative_to(ROOT)], Options())
    return render_draft(bundle, analysis, now=NOW)


@pytest.mark.parametrize("bundle_dir", BUNDLES, ids=[p.name for p in BUNDLES])
def test_report_matches_golden(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch, update_golden: bool
) -> None:
    text = _render(bundle_dir, monkeypatch)
    golden = GOLDEN / f"{bundle_dir.name}.md"
    if update_golden:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden file; run pytest {__file__} --update-golden"
    assert text == golden.read_text(encoding="utf-8")


def _h2(tokens: list[Token]) -> list[str]:
    return [
        tokens[i + 1].content
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h2"
    ]


# Upstream issue drafts (`upstream_*.md`) have their own structure test in tests/upstream.
@pytest.mark.parametrize(
    "golden",
    sorted(p for p in GOLDEN.glob("*.md") if not p.name.startswith("upstream_")),
    ids=lambda p: p.stem,
)
def test_golden_structure(golden: Path) -> None:
    text = golden.read_text(encoding="utf-8")
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = md.parse(text)
    headings = _h2(tokens)
    assert [h for h in REQUIRED_H2 if h in headings] == REQUIRED_H2, headings
    assert [t for t in tokens if t.type == "heading_open" and t.tag == "h1"], "no title"
    # Closed fences: CommonMark runs an unclosed fence to the end of the document,
    # so the last fence would swallow the trailing sections; check each fence's
    # closing line exists in the source.
    lines = text.splitlines()
    for token in tokens:
        if token.type == "fence" and token.map:
            start, end = token.map
            opening = lines[start].strip()
            ticks = opening[: len(opening) - len(opening.lstrip("`"))]
            assert lines[end - 1].strip() == ticks, f"unclosed fence at line {start + 1}"
    # Tables: every source row has the header's number of cells (markdown-it pads short
    # rows and drops extra cells, so count unescaped pipes in the source instead).
    for token in tokens:
        if token.type == "table_open" and token.map:
            start, end = token.map
            widths = {
                len(_CELL_SPLIT.split(lines[n].strip().strip("|"))) for n in range(start, end)
            }
            assert len(widths) == 1, f"ragged table at line {start + 1}: {widths}"
    # Mermaid blocks start with a diagram type, after Mermaid's own front matter if any
    # (the charts' `config:` block that colours the wedge band).
    for token in tokens:
        if token.type == "fence" and token.info.strip() == "mermaid":
            body = token.content.split("\n")
            if body[0].strip() == "---":
                closing = body.index("---", 1)
                assert body[1].strip() == "config:", body[: closing + 1]
                body = body[closing + 1 :]
            assert body[0].strip() in {"flowchart TD", "xychart-beta"}
    # <details> blocks are balanced.
    assert text.count("<details>") == text.count("</details>")
