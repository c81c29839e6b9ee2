"""Files reporter writes (reports, backups, previews, charts, filing records, the index) are
never read as evidence: a report saved inside the bundle must not change the next analysis."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.analysis import analyze
from reporter.analysis.export import to_json
from reporter.cli import cli
from reporter.load import bundle as bundle_io

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_a_report_saved_in_the_bundle_changes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "tp_desync", folder)
    before = bundle_io.load([folder])
    first = to_json(analyze(before))
    # Everything `draft`, `preview` and `upstream` leave behind, twice over (as .bak too).
    for args in (
        ["draft", str(folder), "-o", str(folder / "report.md")],
        ["preview", str(folder / "report.md")],
        [
            "upstream",
            "draft",
            str(folder),
            "--repo",
            "a/b",
            "--offline",
            "-o",
            str(folder / "up.md"),
        ],
    ):
        result = runner.invoke(cli, args, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
        assert result.exit_code == 0, result.output
    shutil.copy(folder / "report.md", folder / "report.md.bak")  # as a re-draft leaves it
    (folder / "report.txt").write_text((folder / "report.md").read_text())  # renamed copy
    (folder / "upstream.toml").write_text('[[filed]]\nurl = "https://github.com/a/b/issues/1"\n')
    (folder / "issues.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    written = {p.name for p in folder.iterdir()} - {
        p.name for p in (ROOT / "fixtures" / "bundles" / "tp_desync").iterdir()
    }
    assert {"report.md", "report.md.bak", "report.html", "up.md", "report.txt"} <= written
    after = bundle_io.load([folder])
    assert [f.path for f in after.files] == [f.path for f in before.files]
    assert after.warnings == before.warnings
    assert to_json(analyze(after)) == first


def test_a_report_named_on_the_command_line_is_refused_as_evidence(tmp_path: Path) -> None:
    report = ROOT / "tests" / "golden" / "tp_desync.md"
    copy = tmp_path / "notes.txt"
    copy.write_text(report.read_text())
    result = runner.invoke(cli, ["analyze", str(copy)])
    assert result.exit_code == 1
    assert "a report written by reporter, not evidence" in result.stderr
