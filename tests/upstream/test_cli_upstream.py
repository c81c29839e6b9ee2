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


# --- issue 33: known fix first, refusals upstream cannot act on, CLI conventions -------

WEDGE = Path(__file__).resolve().parents[2] / "fixtures" / "bundles" / "wedge_metrics"


@pytest.mark.usefixtures("known_fix_search")
def test_draft_with_a_known_fix_leads_with_the_upgrade_and_exits_1(bare_env: Path) -> None:
    forms = Path(__file__).resolve().parents[2] / "fixtures" / "forms" / "sglang"
    out = bare_env / "d.md"
    args = ["upstream", "draft", str(TP_DESYNC), "--offline", "--forms", str(forms), "-o", str(out)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(
        "known fix: upgrade to v0.5.3 or later: sgl-project/sglang#4388"
    )
    body = out.read_text(encoding="utf-8").split("### Describe the bug\n\n", 1)[1]
    assert body.startswith("**Known fix: upgrade to `v0.5.3` or later.**")
    # The search did answer it: "I have searched related issues but cannot get the
    # expected help" stays unticked.
    assert "- [ ] 1. I have searched related issues" in out.read_text(encoding="utf-8")
    forced = runner.invoke(cli, [*args, "--force-new", "--json", "title,known_fix"])
    assert forced.exit_code == 0, forced.output
    import json

    shown = json.loads(forced.stdout)
    assert list(shown) == ["title", "known_fix"]
    assert shown["known_fix"]["tag"] == "v0.5.3" and shown["known_fix"]["has_fix"] is False


def test_filing_what_upstream_cannot_act_on_is_refused_with_what_to_capture(
    bare_env: Path, ghserver: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", ghserver.url)
    ghserver.issues["acme/empty"] = []
    bundle = bare_env / "bundle"
    shutil.copytree(WEDGE, bundle)
    bundle.chmod(0o555)  # a read-only bundle works: nothing is written into it
    try:
        args = ["upstream", "file", str(bundle), "--repo", "acme/empty"]
        args += ["--base-url", ghserver.url, "--reports", str(bare_env / "reports")]
        result = runner.invoke(cli, args)
    finally:
        bundle.chmod(0o755)
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("refused: upstream cannot act on this yet: the evidence has no stack")
    assert "report collect --match PATTERN --snapshots 3" in first
    assert "--force files it as it is" in result.stderr
    assert ghserver.posts() == []


def test_draft_to_stdout_and_repo_from_the_environment(
    bare_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_REPO", "acme/inference")
    monkeypatch.chdir(bare_env)
    result = runner.invoke(cli, ["upstream", "draft", str(TP_DESYNC), "--offline", "-o", "-"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("---\nkind: upstream-draft\n")
    assert 'repo: "acme/inference"' in result.stdout
    assert not (bare_env / "-").exists() and "wrote -" in result.stderr
    monkeypatch.setenv("REPORTER_REPO", "acme/other")
    again = runner.invoke(cli, ["upstream", "draft", str(TP_DESYNC), "--offline", "-o", "-"])
    assert 'repo: "acme/other"' in again.stdout  # REPORTER_REPO before GH_REPO


def test_json_fields_select_like_gh(bare_env: Path) -> None:
    out = bare_env / "d.md"
    base = ["upstream", "draft", str(TP_DESYNC), "--offline", "-o", str(out)]
    import json

    for flag in (["--json", "title,related"], ["--json=title,related"]):
        result = runner.invoke(cli, [*base, *flag])
        assert result.exit_code == 0, result.output
        assert list(json.loads(result.stdout)) == ["title", "related"]
    whole = runner.invoke(cli, [*base, "--json"])
    assert {"path", "title", "known_fix", "related"} <= set(json.loads(whole.stdout))
    wrong = runner.invoke(cli, [*base, "--json", "title,nope"])
    assert wrong.exit_code == 2 and "unknown JSON field 'nope'" in wrong.stderr
    assert "available fields:" in wrong.stderr


def test_an_unreachable_github_tip_names_only_flags_upstream_file_has(bare_env: Path) -> None:
    bundle = bare_env / "bundle"
    shutil.copytree(TP_DESYNC, bundle)
    args = ["upstream", "file", str(bundle), "--repo", "acme/inference"]
    args += ["--db", str(bare_env / "i.sqlite3"), "--reports", str(bare_env / "reports")]
    result = runner.invoke(cli, args)  # GITHUB_API_URL: port 1, connection refused
    assert result.exit_code == 1, result.output
    tip = next(line for line in result.stderr.splitlines() if line.startswith("Tip:"))
    assert "--base-url" in tip and "`report upstream draft --offline`" in tip
    assert tip.replace("`report upstream draft --offline`", "").count("--offline") == 0
