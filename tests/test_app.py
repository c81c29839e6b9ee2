"""Application-layer helpers that the CLI tests do not pin down."""

from __future__ import annotations

import json
from pathlib import Path

from reporter import app
from reporter.analysis import to_json

ROOT = Path(__file__).resolve().parents[1]


def test_analysis_json_is_the_same_document_one_item_per_line() -> None:
    _, analysis = app.load_and_analyze([ROOT / "fixtures" / "bundles" / "tp_desync"], app.Options())
    text = app.analysis_json(analysis)
    assert json.loads(text) == json.loads(json.dumps(to_json(analysis)))
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    # Each rank sits on a line of its own, so `grep` and diffs stay readable.
    assert sum(1 for line in lines if '"key": "rank:' in line) == 4
    assert text == app.analysis_json(analysis)
