"""`console.emit` writes a large `--json` document as it is made, never joined whole:
the pieces are the document's text, one line each for the analysis' layout."""

from __future__ import annotations

import io
import json
from pathlib import Path

from reporter import console
from reporter.app.report import Options, load_and_analyze
from reporter.console import documents, jsontext

ROOT = Path(__file__).resolve().parents[1]


class _Writes(io.StringIO):
    """A stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def write(self, text: str) -> int:
        self.calls += 1
        return super().write(text)


def test_the_analysis_is_written_a_line_at_a_time_and_reads_back_whole() -> None:
    bundle, analysis = load_and_analyze([ROOT / "fixtures" / "bundles" / "tp8_desync"], Options())
    doc = documents.analysis_document(analysis, bundle, seen=())
    stream = _Writes()
    console.emit(doc, stream=stream)
    text = stream.getvalue()
    assert text == jsontext.render(doc)
    # One write per line: nothing held the whole text before it was written.
    assert stream.calls == text.count("\n") > 10
    assert json.loads(text)["verdict"] == analysis.verdict.value


def test_a_field_selection_is_written_from_the_whole_text() -> None:
    bundle, analysis = load_and_analyze([ROOT / "fixtures" / "bundles" / "tp_desync"], Options())
    doc = documents.analysis_document(analysis, bundle, seen=())
    stream = _Writes()
    console.JSON_FIELDS.append(("verdict",))
    try:
        console.emit(doc, stream=stream)
    finally:
        console.JSON_FIELDS.pop()
    assert json.loads(stream.getvalue()) == {"verdict": analysis.verdict.value}
    assert stream.calls == 1
