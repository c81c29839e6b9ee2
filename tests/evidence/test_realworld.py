"""The real-world corpus: dumps copied from public issue threads, each read as the thread reads.

`fixtures/realworld/SOURCES.toml` lists every file with its source address, what the
thread says happened and the expected reading (`[dump.expect]`, keys documented at the
top of that file). Each case runs the real loader and `analyze`, as `report analyze`
does, and checks every key given. Files that are not dumps must be refused with the
loader's one-line error.
"""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reporter.analysis import analyze, to_json
from reporter.app.report import render_draft
from reporter.core.errors import InputError
from reporter.load.bundle import load
from reporter.model import innermost_python

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "realworld"
SOURCES = tomllib.loads((CORPUS / "SOURCES.toml").read_text(encoding="utf-8"))["dump"]
KNOWN_KEYS = {
    "kind",
    "refused",
    "dumps",
    "pids",
    "threads",
    "blocked",
    "top",
    "failures",
    "truncated",
    "verdict",
    "warns",
}


def test_every_file_is_listed_once_with_a_source() -> None:
    listed = [entry["file"] for entry in SOURCES]
    on_disk = sorted(p.name for p in CORPUS.iterdir() if p.name != "SOURCES.toml")
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)
    assert len(listed) >= 40
    for entry in SOURCES:
        assert entry["source"].startswith("https://"), entry["file"]
        assert entry["project"] and entry["happened"], entry["file"]
        assert set(entry["expect"]) <= KNOWN_KEYS, entry["file"]
        assert "kind" in entry["expect"], entry["file"]


@pytest.mark.parametrize("entry", SOURCES, ids=[entry["file"] for entry in SOURCES])
def test_reading(entry: dict[str, Any]) -> None:
    expect = entry["expect"]
    path = CORPUS / entry["file"]
    if expect["kind"] == "refused":
        assert expect.get("refused"), "say why the file is refused"
        with pytest.raises(InputError, match="not a py-spy dump"):
            load([path])
        return
    bundle = load([path])
    analysis = analyze(bundle)
    to_json(analysis)  # the --json export must hold for every real input
    assert [f.kind.value for f in bundle.files] == [expect["kind"]]
    if "dumps" in expect:
        assert len(bundle.dumps) == expect["dumps"]
    if "pids" in expect:
        assert sorted(d.pid for d in bundle.dumps if d.pid is not None) == expect["pids"]
    if "threads" in expect:
        assert [len(d.threads) for d in bundle.dumps] == expect["threads"]
    if "blocked" in expect:
        blocked = {c.collective or c.wait for c in analysis.classes}
        assert expect["blocked"] in blocked, blocked
    if "top" in expect:
        tops = {top.function for c in analysis.classes if (top := innermost_python(c.frames))}
        assert expect["top"] in tops, tops
    if "failures" in expect:
        got = [(f.pid, f.state.value) for f in bundle.failures]
        wanted = [(item.get("pid"), item["state"]) for item in expect["failures"]]
        assert got == wanted
    if "truncated" in expect:
        assert any(d.truncated for d in bundle.dumps) == expect["truncated"]
    if "verdict" in expect:
        assert analysis.verdict.value == expect["verdict"]
    messages = [w.message for w in bundle.warnings]
    for needle in expect.get("warns", ()):
        assert any(needle in m for m in messages), (needle, messages)


PARSED = [e for e in SOURCES if e["expect"]["kind"] != "refused"]


@pytest.mark.parametrize("entry", PARSED, ids=[entry["file"] for entry in PARSED])
def test_report_drafts(entry: dict[str, Any]) -> None:
    """Every real dump that parses also renders as a report naming its verdict."""
    bundle = load([CORPUS / entry["file"]])
    analysis = analyze(bundle)
    text = render_draft(bundle, analysis, now=datetime(2026, 12, 1, tzinfo=UTC), chart_file="c.svg")
    assert f"**{analysis.verdict.value}**" in text


def test_counts_add_up() -> None:
    """Files, parsed and refused, as the closing note reports them."""
    refused = [e for e in SOURCES if e["expect"]["kind"] == "refused"]
    parsed = [e for e in SOURCES if e["expect"]["kind"] != "refused"]
    assert len(refused) + len(parsed) == len(SOURCES)
    assert len(parsed) >= 30
