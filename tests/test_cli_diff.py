"""`report diff`, `--baseline`, `--source-root` and the new `analyze --json` keys, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]
ENVDIFF = ROOT / "fixtures" / "envdiff"
FULL = ROOT / "fixtures" / "bundles" / "full_incident"
KNOB = "SGLANG_SM120_MMA_TARGET_CTAS"

runner = CliRunner()


@pytest.mark.parametrize(
    "pair",
    [
        (ENVDIFF / "good", ENVDIFF / "bad"),
        (ENVDIFF / "good" / "proc" / "environ", ENVDIFF / "bad" / "proc" / "environ"),
    ],
)
def test_diff_json_puts_the_knob_first(pair: tuple[Path, Path]) -> None:
    result = runner.invoke(cli, ["diff", "--json", str(pair[0]), str(pair[1])])
    assert result.exit_code == 0, result.output
    changes = json.loads(result.stdout)["changes"]
    first = changes[0]
    assert (first["kind"], first["key"], first["before"], first["after"]) == (
        "env",
        KNOB,
        "256",
        "512",
    )
    assert first["score"] > max(c["score"] for c in changes[1:])
    assert set(first) == {"kind", "key", "status", "before", "after", "score", "why"}


def test_diff_text_and_limit() -> None:
    result = runner.invoke(
        cli, ["diff", "--limit", "2", str(ENVDIFF / "good"), str(ENVDIFF / "bad")]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].startswith(f"  1. [ 100] env      {KNOB}: 256 -> 512")
    assert "more (see --json or --limit)" in result.stdout
    assert "unchanged: 9 flag, 330 env, 130 package" in result.stdout


def test_diff_source_roots(tmp_path: Path) -> None:
    for name, body in (("good", "x = 1\n"), ("bad", "x = 2\n")):
        (tmp_path / name / "pkg").mkdir(parents=True)
        (tmp_path / name / "pkg" / "a.py").write_text(body)
    args = ["diff", "--json", str(ENVDIFF / "good"), str(ENVDIFF / "bad")]
    roots = ["--source-root", str(tmp_path / "good"), "--source-root", str(tmp_path / "bad")]
    result = runner.invoke(cli, [*args, *roots])
    assert result.exit_code == 0, result.output
    keys = [(c["kind"], c["key"]) for c in json.loads(result.stdout)["changes"]]
    assert ("source", "pkg/a.py") in keys
    one = runner.invoke(cli, [*args, "--source-root", str(tmp_path / "good")])
    assert one.exit_code == 2
    assert "give it twice" in one.output


def test_diff_bad_input_is_a_one_line_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    result = runner.invoke(cli, ["diff", str(empty), str(ENVDIFF / "bad")])
    assert result.exit_code == 1
    assert "the file is empty" in result.output
    assert "Traceback" not in result.output


def test_analyze_json_of_the_full_incident() -> None:
    result = runner.invoke(cli, ["analyze", "--json", str(FULL)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["verdict"] == "collective-desync"
    assert data["diff"]["changes"][0]["key"] == KNOB
    environment = data["environment"]
    assert environment["redacted_variables"] == 1
    assert all(v["name"] != "HOME" for v in environment["variables"])
    waiting = data["goroutines"]["waiting"][0]
    assert (waiting["count"], waiting["top"]["function"]) == (
        34,
        "net/http.(*persistConn).roundTrip",
    )
    excerpts = data["excerpts"]["excerpts"]
    assert excerpts[0]["origin"] == "excerpt file"
    assert any(
        e["permalink"] and "pytorch/pytorch/blob/v2.13.0" in e["permalink"] for e in excerpts
    )
    assert "Clients: 34 goroutines waiting" in data["summary"]
    kinds = [e["kind"] for e in data["timeline"]]
    assert kinds.count("goroutines") == 2


def test_analyze_with_baseline_and_source_root(tmp_path: Path) -> None:
    result = runner.invoke(
        cli,
        [
            "analyze",
            "--json",
            str(ROOT / "fixtures" / "bundles" / "tp_desync"),
            "--baseline",
            str(ENVDIFF / "good"),
            "--source-root",
            str(ROOT / "fixtures" / "scenarios"),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # tp_desync has no environment evidence: nothing to compare, and the note says so.
    assert data["diff"]["changes"] == []
    assert data["diff"]["notes"]
    assert data["excerpts"]["excerpts"][0]["lines"]
    missing = runner.invoke(cli, ["analyze", str(FULL), "--source-root", str(tmp_path / "nope")])
    assert missing.exit_code == 2


def test_draft_with_baseline_has_the_changes_section(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = runner.invoke(
        cli,
        ["draft", str(ENVDIFF / "bad"), "--baseline", str(ENVDIFF / "good"), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "## Changes since the last good run" in text
    assert "## Runtime environment" in text
    changes = text.split("## Changes since the last good run", 1)[1]
    first_row = next(line for line in changes.splitlines() if line.startswith("| 1 |"))
    assert KNOB in first_row
    # The allowlisted view: the raw environ (every variable) is never embedded.
    assert "INVOCATION_ID=" not in text


@pytest.mark.parametrize(
    # Both sides leave on_idle (lines 118 and 119), so the first excerpt reaches 120.
    ("context", "spans"),
    [(1, [(117, 120), (122, 124), (126, 128)]), (3, [(115, 130)])],
)
def test_context_sets_the_excerpt_size(context: int, spans: list[tuple[int, int]]) -> None:
    bundle_dir = ROOT / "fixtures" / "bundles" / "tp_desync"
    roots = ["--source-root", str(ROOT / "fixtures" / "scenarios")]
    result = runner.invoke(
        cli, ["analyze", "--json", str(bundle_dir), *roots, "--context", str(context)]
    )
    assert result.exit_code == 0, result.output
    excerpts = json.loads(result.stdout)["excerpts"]["excerpts"]
    assert [(e["start"], e["end"]) for e in excerpts if e["lines"]] == spans
