"""The `report` command line: exit codes, one-line errors, no tracebacks without --debug."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

DUMP = """\
Process 11: sglang::scheduler_TP0
Python v3.11.7 (/usr/local/bin/python3.11)

Thread 11 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)
    run_scheduler_process (sglang/srt/managers/scheduler.py:2710)
"""

runner = CliRunner()


def _dump(tmp_path: Path, name: str = "rank0.txt", text: str = DUMP) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_analyze_json_has_the_documented_keys(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["analyze", "--json", str(_dump(tmp_path))])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in (
        "verdict",
        "confidence",
        "snapshots",
        "classes",
        "branch_point",
        "missing_ranks",
        "signature",
        "warnings",
    ):
        assert key in data
    assert data["classes"][0]["ranks"] == [0]
    assert data["classes"][0]["collective"] == "all_reduce"


def test_analyze_human_output_names_the_verdict(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["analyze", str(_dump(tmp_path))])
    assert result.exit_code == 0
    # The answer first: a headline, then the verdict line and the summary.
    first, second = result.stdout.splitlines()[:2]
    assert first and not first.startswith("verdict: ")
    assert second.startswith("verdict: ")
    assert "  what: " in result.stdout
    assert "signature: " in result.stdout


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02", "binary"),
        (b"Process 12: x\nPython v3.11.7 (/usr/bin/python3)\n\n", "no usable dump"),
    ],
)
def test_bad_input_exits_1_with_one_line_and_a_tip(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    result = runner.invoke(cli, ["analyze", str(path)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: ") and str(path) in lines[0] and needle in lines[0]
    assert all(line.startswith(("error: ", "Tip: ")) for line in lines)
    assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"")
    result = runner.invoke(cli, ["--debug", "analyze", str(path)])
    assert result.exit_code != 0
    assert result.exception is not None


@pytest.mark.parametrize(
    "args",
    [[], ["analyze"], ["analyze", "/no/such/file"], ["analyze", "--similarity", "fuzzy", "x"]],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2


def test_bad_max_file_size_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["analyze", "--max-file-size", "lots", str(_dump(tmp_path))])
    assert result.exit_code == 2
    assert "not a size" in result.stderr


def test_max_file_size_limit_applies(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["analyze", "--max-file-size", "10b", str(_dump(tmp_path))])
    assert result.exit_code == 1
    assert "larger than the 10 bytes limit" in result.stderr


def test_draft_writes_then_merges_keeping_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1784018084")
    dump = _dump(tmp_path)
    out = tmp_path / "out" / "report.md"
    first = runner.invoke(cli, ["draft", str(dump), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert out.read_text().startswith("---\nkind: incident-report\nstatus: draft\n")
    assert "\n## Summary\n" in out.read_text()
    again = runner.invoke(cli, ["draft", str(dump), "--out", str(out)])
    assert again.exit_code == 0 and "up to date" in again.stdout
    # A re-draft on another day of the same evidence changes no byte (no date churn).
    before = out.read_bytes()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1784104484")
    newer = runner.invoke(cli, ["draft", str(dump), "--out", str(out)])
    assert newer.exit_code == 0 and "up to date" in newer.stdout
    assert out.read_bytes() == before
    # A reviewer edits a human section and a generated one; a new draft keeps both
    # byte for byte, refreshes the rest, and keeps the edited file as the backup.
    end = "<!-- reporter:end id=verdict -->\n"
    text = out.read_text().replace("_TODO(reviewer): who", "Everyone;  who\t")
    text = text.replace(end, "Reviewer: confirmed on the node.\n" + end)
    out.write_text(text)
    edited = out.read_text()
    verdict = edited[edited.index("<!-- reporter:begin id=verdict") : edited.index(end) + len(end)]
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1784190884")
    merged = runner.invoke(cli, ["draft", str(dump), "--out", str(out)])
    assert merged.exit_code == 0, merged.output
    assert "kept your edits: verdict" in merged.stdout
    result = out.read_text()
    assert verdict in result
    assert "Everyone;  who\t" in result
    # The evidence did not change, so nothing else did: the file is left as edited.
    assert result == edited
    # --force replaces the report (the merged one is the backup now).
    forced = runner.invoke(cli, ["draft", str(dump), "--out", str(out), "--force"])
    assert forced.exit_code == 0
    assert "Reviewer: confirmed" not in out.read_text()
    assert (out.parent / "report.md.bak").read_text() == result


def test_draft_refuses_to_merge_into_a_file_that_is_not_a_report(tmp_path: Path) -> None:
    out = tmp_path / "notes.md"
    out.write_text("# My notes\n")
    refused = runner.invoke(cli, ["draft", str(_dump(tmp_path)), "--out", str(out)])
    assert refused.exit_code == 1 and "not a reporter report" in refused.stderr
    assert out.read_text() == "# My notes\n"


def test_draft_default_path_uses_date_and_slug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1784018084")  # 2026-07-14
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(cli, ["draft", str(_dump(tmp_path))])
    assert result.exit_code == 0, result.output
    written = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert len(written) == 1 and written[0].startswith("2026-07-14-")


def test_init_writes_and_refuses_to_overwrite(tmp_path: Path) -> None:
    _dump(tmp_path, "rank2.txt")
    result = runner.invoke(cli, ["init", str(tmp_path)])
    assert result.exit_code == 0
    assert "# rank = 2" in (tmp_path / "bundle.toml").read_text()
    again = runner.invoke(cli, ["init", str(tmp_path)])
    assert again.exit_code == 1 and "already exists" in again.stderr
    missing = runner.invoke(cli, ["init", str(tmp_path / "nope")])
    assert missing.exit_code == 2


@pytest.mark.skipif(shutil.which("report") is None, reason="the console script is not installed")
def test_console_script_runs(tmp_path: Path) -> None:
    # The `report` installed beside the interpreter running the tests (a venv's bin), not
    # whichever `report` PATH finds first (a pyenv shim may point at another install).
    beside = Path(sys.executable).parent / "report"
    script = str(beside) if beside.exists() else (shutil.which("report") or "report")
    result = subprocess.run(
        [script, "analyze", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
