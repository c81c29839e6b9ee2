"""Goroutine buckets (panicparse-style similarity), waiting clients, and their timeline events."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.analysis import export_context
from reporter.analysis.goroutines import (
    analyze_goroutines,
    bucket_text,
    clients_line,
    goroutine_events,
    parse_rules,
)
from reporter.analysis.result import Similarity
from reporter.core.errors import ReporterError
from reporter.evidence.kinds import goroutines as parser
from reporter.model import EventKind, GoroutineDump
from reporter.model.document import data


def goroutines_json(value: object) -> dict[str, object]:
    """The `goroutines` record's JSON data."""
    out: dict[str, object] = data(export_context.goroutines(value))  # type: ignore[arg-type]
    return out


ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "fixtures" / "goroutines" / "agents"
# Real captures of fixtures/samples/go/main.go (capture_go.py).
GO_SAMPLES = ROOT / "fixtures" / "samples" / "go"
CAPTURED = datetime(2026, 11, 29, 15, 10, 43, tzinfo=UTC)
ROUND_TRIP = "net/http.(*persistConn).roundTrip"


def _dump(name: str, captured_at: datetime | None = CAPTURED) -> GoroutineDump:
    result = parser.parse((AGENTS / name).read_text(encoding="utf-8"), source=name)
    return replace(result.goroutine_dumps[0], captured_at=captured_at)


@pytest.mark.parametrize(
    ("name", "similarity", "buckets", "runtime"),
    [
        ("debug2.txt", Similarity.EXACT, 107, 0),
        ("debug2.txt", Similarity.LINES_IGNORED, 8, 0),
        ("debug2.txt", Similarity.LOOSE, 8, 0),
        ("sigquit.txt", Similarity.LINES_IGNORED, 6, 6),
        ("debug1.txt", Similarity.LINES_IGNORED, 8, 0),
    ],
)
def test_bucket_counts_on_real_dumps(
    name: str, similarity: Similarity, buckets: int, runtime: int
) -> None:
    (summary,) = analyze_goroutines([_dump(name)], similarity=similarity).dumps
    assert (len(summary.buckets), len(summary.runtime)) == (buckets, runtime)
    assert sum(b.count for b in (*summary.buckets, *summary.runtime)) == summary.total


def test_agents_bucket_reads_like_panicparse() -> None:
    analysis = analyze_goroutines([_dump("debug2.txt")])
    top = analysis.dumps[0].buckets[0]
    # Among the three buckets of 34, the clients waiting on the server come first.
    assert top.summary == (
        f"34 goroutines in `{ROUND_TRIP}` [select, 2\u20133 minutes], created by `main.startAgents`"
    )
    assert top.client_wait == "an HTTP response"
    assert (top.min_minutes, top.max_minutes, top.untimed) == (2, 3, 0)
    assert top.waiting_since == datetime(2026, 11, 29, 15, 7, 43, tzinfo=UTC)
    assert analysis.waiting == (top,)
    assert bucket_text(top, code=False).startswith(f"34 goroutines in {ROUND_TRIP} [select")


def test_clients_line_and_events() -> None:
    analysis = analyze_goroutines([_dump("debug2.txt")])
    onset = datetime(2026, 11, 29, 15, 7, 23, tzinfo=UTC)
    line = clients_line(analysis, onset)
    assert line.startswith("Clients: 34 goroutines waiting for an HTTP response in `")
    assert line.endswith(
        "waiting since at least 2026-11-29 15:07:43 UTC; server wedge onset 2026-11-29 15:07:23 UTC."
    )
    events = goroutine_events(analysis)
    assert [(e.at, e.kind) for e in events] == [
        (datetime(2026, 11, 29, 15, 7, 43, tzinfo=UTC), EventKind.GOROUTINES),
        (CAPTURED, EventKind.GOROUTINES),
    ]
    assert "`" not in events[0].text
    assert events[1].text == "Go goroutine dump (traceback): 107 goroutines, 34 waiting on a server"


def test_without_capture_time_there_is_no_since_and_no_event() -> None:
    analysis = analyze_goroutines([_dump("debug2.txt", captured_at=None)])
    assert analysis.waiting[0].waiting_since is None
    assert goroutine_events(analysis) == ()
    assert "since" not in clients_line(analysis)


def test_runtime_goroutines_are_set_aside() -> None:
    text = (GO_SAMPLES / "go1.19_sigquit_full-dump_with-registers.txt").read_text(encoding="utf-8")
    dump = parser.parse(text, source="q").goroutine_dumps[0]
    (summary,) = analyze_goroutines([dump]).dumps
    states = {b.state for b in summary.runtime}
    assert {"GC worker (idle)", "finalizer wait", "force gc (idle)", "idle"} <= states
    assert all(not b.runtime for b in summary.buckets)
    assert clients_line(analyze_goroutines([dump])) == ""


def test_json_is_plain_data() -> None:
    data = goroutines_json(analyze_goroutines([_dump("debug2.txt")]))
    assert data["similarity"] == "lines-ignored"
    dumps = data["dumps"]
    assert isinstance(dumps, list)
    first = dumps[0]["buckets"][0]
    assert first["top"]["function"] == ROUND_TRIP
    assert first["waiting_since"] == "2026-11-29T15:07:43Z"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[plumbing\n", "not valid TOML"),
        ("[plumbing]\nfunctions = 1\n", "must be a list of strings"),
        ("[[client_wait]]\nwhat = 'x'\nfunctions = []\n", "#1 needs `id`"),
        ("[[client_wait]]\nid = 'x'\nfunctions = []\n", "needs `what`"),
    ],
)
def test_bad_rules(text: str, message: str) -> None:
    with pytest.raises(ReporterError, match=message):
        parse_rules(text)


def test_the_clients_sentence_is_computed_once_and_read_by_every_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reporter.app.report import Options, load_and_analyze, render_draft

    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/full_incident")], Options())
    sentence = analysis.clients_sentence
    assert sentence.startswith("Clients: ") and sentence.endswith(".")
    assert analysis.summary.endswith(f" {sentence}")
    report = render_draft(bundle, analysis, now=CAPTURED)
    # Said once, heading the clients section; the summary block's "Clients affected" line
    # says it in its own words and the verdict paragraph no longer repeats it.
    assert report.count(sentence.removeprefix("Clients: ")) == 1
    assert "**Clients affected:** 34 client goroutines wait for an HTTP response" in report
