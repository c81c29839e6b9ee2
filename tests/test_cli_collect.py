"""`report collect` on the command line: usage errors exit 2 with one line, a run exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: nothing to collect"),
        (["--pid", "1", "--interval", "soon"], "error: --interval 'soon' is not a duration"),
        (["--pid", "1", "--snapshots", "0"], "error: --snapshots must be at least 1"),
        (["--match", "(unclosed"], "error: --match '(unclosed': not a regular expression"),
        (["--prometheus", "http://prom:9090"], "error: --prometheus needs at least one --query"),
        (["--metrics-url", "localhost:30000/metrics"], "is not an http(s) URL"),
        (["--pid", "999999999"], "error: no process with PID 999999999"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["collect", "--out", str(tmp_path / "b"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "b").exists()


def test_help_lists_the_options() -> None:
    result = runner.invoke(cli, ["collect", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in (
        "--match",
        "--children-of",
        "--nonblocking",
        "--metrics-url",
        "--prometheus",
        "--unit",
        "--raw-env",
        "--parallel",
    ):
        assert option in result.stdout


def test_a_run_as_a_subprocess(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = tmp_path / "b"
        done = subprocess.run(
            [sys.executable, "-m", "reporter", "collect", "--out", str(out), "--pid", str(child.pid), "--py-spy", "/nonexistent/py-spy", "--unit", "reporter-test-none.service"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        # Asked to dump a process and got no stack: `incomplete`, exit 1, the reason per target.
        assert done.returncode == 1, done.stderr
        assert done.stdout.startswith("incomplete: ")
        assert f"next: report analyze {out}" in done.stdout
        assert f"no stacks: PID {child.pid} (" in done.stderr
        assert "py-spy not found at /nonexistent/py-spy" in done.stderr
        assert (out / "bundle.toml").is_file()
    finally:
        child.kill()
        child.wait()


def test_the_summary_masks_a_token_in_a_skipped_url(tmp_path: Path) -> None:
    """The closing summary names each URL that gave nothing: masked at the terminal's edge
    like the progress lines (issue 35; it printed the token as given)."""
    token = "ghp_" + "a1B2c3D4" * 4 + "e5F6"
    url = f"http://127.0.0.1:9/metrics?access_token={token}"
    args = ["--metrics-url", url, "--scrape-for", "1s", "--scrape-every", "0.5s"]
    result = runner.invoke(cli, ["collect", "--out", str(tmp_path / "b"), *args])
    assert result.exit_code == 1, result.output
    assert "no scrape succeeded" in result.stderr
    assert "9/metrics?access_token=[redacted]" in result.stderr
    assert token not in result.output + result.stderr
