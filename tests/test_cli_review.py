"""The review commands: `report lint`, `report status`, `report preview`, and the pre-commit hook."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reporter.cli import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "lint"
CLEAN = FIXTURES / "clean--incident-report.md"
DEFECT = FIXTURES / "table-columns--extra-cell.md"

runner = CliRunner()


def test_lint_clean_file_exits_0() -> None:
    result = runner.invoke(cli, ["lint", str(CLEAN)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "1 file clean"


def test_lint_findings_exit_1_with_location_rule_and_hint() -> None:
    result = runner.invoke(cli, ["lint", str(CLEAN), str(DEFECT)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == f"{DEFECT}:27: table-columns: row has 6 cells; the header has 5"
    assert lines[1].startswith("  fix: give every row the header's number of cells")
    assert lines[-1] == "1 finding in 1 of 2 files"


def test_lint_json() -> None:
    result = runner.invoke(cli, ["lint", "--json", str(FIXTURES)])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert len(data["files"]) == len(list(FIXTURES.glob("*.md")))
    rules = {f["rule"] for f in data["findings"]}
    assert {"secret", "unclosed-fence", "mermaid-quote", "region-marker"} <= rules
    assert set(data["findings"][0]) == {"path", "line", "rule", "message", "hint"}
    assert not any("clean--" in f["path"] for f in data["findings"])


def test_lint_checks_links_against_an_index(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    report.write_text(
        CLEAN.read_text().replace(
            "Decode stalled",
            "See https://github.com/sgl-project/sglang/issues/8094. Decode stalled",
        )
    )
    db = tmp_path / "index.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE issues (repo TEXT, number INTEGER)")
    missing = runner.invoke(cli, ["lint", "--index", str(db), str(report)])
    assert (
        missing.exit_code == 1
        and "sgl-project/sglang#8094 is not in the issue index" in missing.stdout
    )
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("INSERT INTO issues VALUES ('sgl-project/sglang', 8094)")
    found = runner.invoke(cli, ["lint", "--index", str(db), str(report)])
    assert found.exit_code == 0, found.output
    assert runner.invoke(cli, ["lint", str(report)]).exit_code == 0  # no index: not checked


@pytest.mark.parametrize(
    "args",
    [["lint"], ["lint", "/no/such/report.md"], ["lint", "--index", "/no/such.db", str(CLEAN)]],
)
def test_lint_usage_errors_exit_2(args: list[str]) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2


def test_lint_unreadable_file_is_a_finding(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\xff\xfe not utf-8")
    result = runner.invoke(cli, ["lint", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:1: unreadable: not UTF-8 text" in result.stdout


def test_status_lists_reports_with_their_state(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    (reports / "2026").mkdir(parents=True)
    shutil.copy(CLEAN, reports / "2026" / "b.md")
    shutil.copy(FIXTURES / "clean--draft-with-placeholders.md", reports / "a.md")
    (reports / "README.md").write_text("# Not a report\n")
    result = runner.invoke(cli, ["status", str(reports)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "path",
        "status",
        "owners",
        "todos",
        "signature",
        "title",
    ]
    # Sorted by path; README.md is not a report. Then the incident reports by signature.
    assert len(lines) == 6 and lines[3] == "" and lines[4] == "incident reports by signature:"
    assert lines[5].startswith("3f9c0a1b2c3d4e5f  2 reports")
    assert re.split(r"\s{2,}", lines[1])[:4] == [
        str(reports / "2026" / "b.md"),
        "in-review",
        "ana, bo",
        "0",
    ]
    assert re.split(r"\s{2,}", lines[2]) == [
        str(reports / "a.md"),
        "draft",
        "ana, bo",
        "1",
        "3f9c0a1b2c3d4e5f",
        "Hang: collective-desync in all_reduce",
    ]
    data = json.loads(runner.invoke(cli, ["status", "--json", str(reports)]).stdout)
    assert [(r["status"], r["todos"], r["upstream_issue"]) for r in data] == [
        ("in-review", 0, None),
        ("draft", 1, None),
    ]


def test_status_of_an_empty_folder_and_of_a_missing_one(tmp_path: Path) -> None:
    empty = runner.invoke(cli, ["status", str(tmp_path)])
    assert empty.exit_code == 0 and empty.stdout.strip() == f"no reports under {tmp_path}"
    assert runner.invoke(cli, ["status", str(tmp_path / "nope")]).exit_code == 2


def test_preview_writes_html_beside_the_report_or_where_asked(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    shutil.copy(CLEAN, report)
    result = runner.invoke(cli, ["preview", str(report)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wrote {tmp_path / 'r.html'}"
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    other = tmp_path / "site" / "page.html"
    assert runner.invoke(cli, ["preview", str(report), "--out", str(other)]).exit_code == 0
    assert 'class="mermaid-flowchart"' in other.read_text()
    assert runner.invoke(cli, ["preview", str(tmp_path / "missing.md")]).exit_code == 2
    assert runner.invoke(cli, ["preview", str(report), "--out", str(report)]).exit_code == 2


def test_pre_commit_hook_runs_report_lint_on_reports() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "report-lint"
    assert hook["entry"] == "report lint"
    assert hook["language"] == "python"
    pattern = re.compile(hook["files"])
    assert pattern.search("reports/2026-07-14-desync.md")
    assert pattern.search("ops/reports/x.md")
    assert not pattern.search("README.md")
    assert not pattern.search("reports/x.md.bak")
