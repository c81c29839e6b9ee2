"""`report upstream draft|file` on the command line: offline with no token, dry runs, exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli

from .conftest import TP_DESYNC
from .ghserver import GitHubServer

runner = CliRunner()


@pytest.fixture
def bare_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No token anywhere, caches and config in tmp, and a GitHub URL nothing answers on."""
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GH_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # Port 1 on the loopback: connection refused at once, no traffic leaves the machine.
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:1")
    return tmp_path


@pytest.mark.parametrize("offline", [True, False])
def test_draft_works_with_no_network_and_no_token(bare_env: Path, offline: bool) -> None:
    out = bare_env / "draft.md"
    args = ["upstream", "draft", str(TP_DESYNC), "--out", str(out)] + (
        ["--offline"] if offline else []
    )
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stdout and "generic form" in result.stdout
    text = out.read_text(encoding="utf-8")
    assert text.startswith("---\nkind: upstream-draft\n") and "### Describe the bug" in text
    if not offline:
        assert "could not be read from GitHub" in result.stderr
    lint = runner.invoke(cli, ["lint", str(out)])
    assert lint.exit_code == 0, lint.output


def test_draft_with_a_form_folder_names_the_form_and_its_todos(bare_env: Path) -> None:
    forms = Path(__file__).resolve().parents[2] / "fixtures" / "forms" / "sglang"
    out = bare_env / "d.md"
    result = runner.invoke(
        cli,
        ["upstream", "draft", str(TP_DESYNC), "--offline", "--forms", str(forms), "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "form 1-bug-report.yml" in result.stdout
    assert "to fill before filing: 1 TODO(reviewer) line(s)" in result.stdout


def test_draft_without_a_repository_is_a_usage_error(bare_env: Path) -> None:
    loose = bare_env / "rank0.txt"
    shutil.copy(TP_DESYNC / "snapshots" / "rank0_s0.txt", loose)
    result = runner.invoke(cli, ["upstream", "draft", str(loose), "--offline"])
    assert result.exit_code == 2
    assert "no upstream repository" in result.stderr and "--repo" in result.stderr


def test_file_dry_run_prints_the_request_and_refuses_without_a_token(
    bare_env: Path, ghserver: GitHubServer
) -> None:
    ghserver.issues["acme/inference"] = []
    bundle = bare_env / "bundle"
    shutil.copytree(TP_DESYNC, bundle)
    result = runner.invoke(
        cli,
        [
            "upstream",
            "file",
            str(bundle),
            "--repo",
            "acme/inference",
            "--base-url",
            ghserver.url,
            "--db",
            str(bare_env / "index.sqlite3"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "action: new-issue" in result.stdout
    assert f"POST {ghserver.url}/repos/acme/inference/issues" in result.stdout
    # Refused: the refusal and its fix come first (stderr), the body only with --show-body.
    assert result.stderr.startswith("refused: no GitHub token for 127.0.0.1:")
    assert "GH_ENTERPRISE_TOKEN" in result.stderr
    assert "Tip: see `report auth status`" in result.stderr
    assert "-------- 8< --------" not in result.stdout
    assert "--show-body prints it" in result.stdout
    shown = runner.invoke(
        cli,
        [
            "upstream",
            "file",
            str(bundle),
            "--repo",
            "acme/inference",
            "--base-url",
            ghserver.url,
            "--db",
            str(bare_env / "index.sqlite3"),
            "--show-body",
        ],
    )
    assert shown.exit_code == 1 and "-------- 8< --------" in shown.stdout
    assert ghserver.posts() == []
