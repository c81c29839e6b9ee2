"""One answer, four formats: `report analyze`'s text, `analyze --json`, the Markdown draft and its
HTML preview say the same verdict, headline, topics and counts, for every shipped bundle (one
host or several, one instance or several, stacks or metrics or Go clients only) and for the
good/bad folder."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.app.report import Options, load_and_analyze, render_draft
from reporter.console.documents import analysis_json
from reporter.console.report import analysis_text
from reporter.render.preview import to_html

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
FOLDERS = [
    *sorted(p for p in BUNDLES.iterdir() if p.is_dir()),
    ROOT / "fixtures" / "envdiff",
    ROOT / "fixtures" / "goroutines" / "agents",
]
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)


def _plain(text: str) -> str:
    """Text as a reader sees it: Markdown escapes, code ticks and HTML tags dropped."""
    text = re.sub(r"<[^>]+>", "", html.unescape(text))
    return re.sub(r"\s+", " ", text.replace("\\", "").replace("`", "")).strip()


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_text_json_markdown_and_html_agree(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([folder.relative_to(ROOT)], Options())
    text = analysis_text(bundle, analysis)
    doc = json.loads(analysis_json(analysis, bundle))
    markdown = render_draft(bundle, analysis, now=NOW)
    page = to_html(markdown)

    # The headline: the text's first line, the JSON's `headline`, the report's and page's title.
    headline = text.splitlines()[0]
    assert doc["headline"] == headline
    title = next(line for line in markdown.splitlines() if line.startswith("# "))[2:]
    assert _plain(title) == _plain(headline)
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
    assert h1 is not None and _plain(h1.group(1)) == _plain(headline)

    # The verdict, worded one way everywhere.
    label = doc["verdict_label"]
    assert text.splitlines()[1].startswith(f"verdict: {label} (")
    assert f"Verdict: **{label}**" in markdown
    assert f"Verdict: {label}," in _plain(page)

    # The summary block: the same topics in the same order, the same words.
    topics = [line["topic"] for line in doc["summary_lines"]]
    md_topics = re.findall(r"^- \*\*([^*]+):\*\* ", markdown.split("## Summary", 1)[1], re.M)
    assert md_topics[: len(topics)] == topics
    text_topics = [
        line.split(":", 1)[0].strip()
        for line in text.splitlines()[2 : 2 + len(topics)]
        if line.startswith("  ")
    ]
    assert text_topics == [t.lower() for t in topics]
    for line in doc["summary_lines"]:
        assert _plain(line["text"]) in _plain(markdown), line["topic"]
        assert _plain(line["text"]) in _plain(page), line["topic"]

    # The counts: snapshots, ranks or processes, as the JSON has them.
    snapshots = doc["snapshots"]
    assert f"{snapshots} snapshot" in text.splitlines()[1]
    if analysis.processes:
        processes = len(analysis.processes)
        assert re.search(
            rf"Based on {snapshots} snapshots? of {processes} (rank|process)", markdown
        )
    # The first step is the same everywhere.
    if doc["next_steps"]:
        first = doc["next_steps"][0]["action"]
        assert text.split("next steps:\n  1. ", 1)[1].startswith(first[:60])
        assert _plain(first) in _plain(markdown) and _plain(first) in _plain(page)
