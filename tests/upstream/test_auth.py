"""Token and host discovery like gh's, against a stub `gh` on PATH and the local server.

The stub answers `gh auth token --hostname H` only for the hosts it was logged in to
(as gh does with tokens in the system keyring) and logs every call.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli
from reporter.upstream import auth
from reporter.upstream.auth import Token, api_url, find_token, host_of
from reporter.upstream.github import GitHubClient

from .ghserver import GitHubServer

runner = CliRunner()


def stub_gh(folder: Path, tokens: dict[str, str]) -> Path:
    """A `gh` that prints the keyring token of a logged-in host; the log of its calls."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "gh-calls.log"
    cases = "\n".join(f'    "{host}") echo "{token}" ;;' for host, token in tokens.items())
    script = folder / "gh"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{log}"\n'
        '[ "$1 $2 $3" = "auth token --hostname" ] || exit 2\n'
        'case "$4" in\n'
        f"{cases}\n"
        '    *) echo "no oauth token found for $4" >&2; exit 1 ;;\n'
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return log


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GH_HOST",
        "GITHUB_API_URL",
        "REPORTER_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GH_CONFIG_DIR", str(tmp_path / "gh-config"))  # no hosts.yml
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    return tmp_path


def test_the_keyring_token_is_used_for_its_own_host(
    clean_env: Path, ghserver: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = host_of(ghserver.url)
    log = stub_gh(clean_env / "bin", {host: "keyring-token-for-local"})
    monkeypatch.setenv("GITHUB_API_URL", ghserver.url)
    ghserver.add_issue("a/b", 1)
    result = runner.invoke(cli, ["sync", "a/b", "--db", str(clean_env / "i.sqlite3")])
    assert result.exit_code == 0, result.output
    assert "no GitHub token" not in result.stderr
    assert {r.headers.get("authorization") for r in ghserver.requests} == {
        "Bearer keyring-token-for-local"
    }
    assert log.read_text().splitlines() == [f"auth token --hostname {host}"]


def test_a_github_com_token_never_reaches_another_host(
    clean_env: Path, ghserver: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub_gh(clean_env / "bin", {"github.com": "gho-keyring-github"})
    monkeypatch.setenv("GH_TOKEN", "ghp-env-github")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-env-github-2")
    ghserver.add_issue("a/b", 1)
    monkeypatch.setenv("GITHUB_API_URL", ghserver.url)
    result = runner.invoke(cli, ["sync", "a/b", "--db", str(clean_env / "i.sqlite3")])
    assert result.exit_code == 0, result.output
    assert ghserver.requests, "the sync reached the local server"
    assert all("authorization" not in r.headers for r in ghserver.requests)
    assert f"no GitHub token for {host_of(ghserver.url)}" in result.stderr
    # Handed a github.com token anyway, the client drops it rather than send it elsewhere.
    wrong = Token(value="ghp-env-github", source="GH_TOKEN", host="github.com")
    with GitHubClient(base_url=ghserver.url, token=wrong) as client:
        client.rate_limit()
    assert "authorization" not in ghserver.requests[-1].headers


def test_auth_status_says_where_the_token_came_from_never_the_token(
    clean_env: Path, ghserver: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = host_of(ghserver.url)
    stub_gh(clean_env / "bin", {host: "keyring-secret-123"})
    result = runner.invoke(cli, ["auth", "status", "--base-url", ghserver.url])
    assert result.exit_code == 0, result.output
    assert f"token: from gh auth token --hostname {host} (keyring)" in result.stdout
    assert "rate limit: 5000 of 5000 requests left" in result.stdout
    assert "keyring-secret-123" not in result.output

    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "env-secret-456")
    document = json.loads(runner.invoke(cli, ["auth", "status", "--json"], env={
        "GITHUB_API_URL": ghserver.url}).stdout)  # fmt: skip
    assert document["token_source"] == "GH_ENTERPRISE_TOKEN"
    assert "env-secret-456" not in json.dumps(document)


def test_no_token_anywhere(clean_env: Path, ghserver: GitHubServer) -> None:
    result = runner.invoke(cli, ["auth", "status", "--base-url", ghserver.url])
    # As `gh auth status`: no token is exit 1, after saying what to set.
    assert result.exit_code == 1, result.output
    assert "token: none (set GH_ENTERPRISE_TOKEN or GITHUB_ENTERPRISE_TOKEN" in result.stdout
    assert "rate limit: 60 of 60 requests left" in result.stdout


@pytest.mark.parametrize(
    ("env", "base_url", "expected"),
    [
        ({}, None, "https://api.github.com"),
        ({"GH_HOST": "github.com"}, None, "https://api.github.com"),
        ({"GH_HOST": "ghe.corp.example"}, None, "https://ghe.corp.example/api/v3"),
        (
            {"GH_HOST": "ghe.corp.example", "GITHUB_API_URL": "https://x.test/api/v3/"},
            None,
            "https://x.test/api/v3",
        ),
        ({"GH_HOST": "ghe.corp.example"}, "http://127.0.0.1:9", "http://127.0.0.1:9"),
    ],
)
def test_api_url(env: dict[str, str], base_url: str | None, expected: str) -> None:
    assert api_url(env, base_url) == expected


@pytest.mark.parametrize(
    ("env", "base_url", "expected"),
    [
        ({"GH_TOKEN": "a", "GITHUB_TOKEN": "b"}, auth.API_URL, ("a", "GH_TOKEN")),
        ({"GITHUB_TOKEN": "b"}, auth.API_URL, ("b", "GITHUB_TOKEN")),
        ({"GH_ENTERPRISE_TOKEN": "e"}, auth.API_URL, None),
        ({"GH_TOKEN": "a"}, "https://ghe.corp.example/api/v3", None),
        (
            {"GH_TOKEN": "a", "GITHUB_ENTERPRISE_TOKEN": "e2"},
            "https://ghe.corp.example/api/v3",
            ("e2", "GITHUB_ENTERPRISE_TOKEN"),
        ),
        (
            {"GH_ENTERPRISE_TOKEN": "e1", "GITHUB_ENTERPRISE_TOKEN": "e2"},
            "https://ghe.corp.example/api/v3",
            ("e1", "GH_ENTERPRISE_TOKEN"),
        ),
    ],
)
def test_each_variable_belongs_to_its_host(
    tmp_path: Path, env: dict[str, str], base_url: str, expected: tuple[str, str] | None
) -> None:
    token = find_token({**env, "HOME": str(tmp_path)}, base_url=base_url, gh=None)
    assert (None if token is None else (token.value, token.source)) == expected
    if token is not None:
        assert token.host == host_of(base_url)


def test_gh_is_asked_only_after_the_environment_and_hosts_yml(tmp_path: Path) -> None:
    log = stub_gh(tmp_path / "bin", {"github.com": "from-keyring"})
    env = {"HOME": str(tmp_path), "PATH": str(tmp_path / "bin"), "GH_CONFIG_DIR": str(tmp_path)}
    assert find_token({**env, "GH_TOKEN": "t"}) == Token(value="t", source="GH_TOKEN")
    (tmp_path / "hosts.yml").write_text("github.com:\n    oauth_token: from-file\n")
    found = find_token(env)
    assert found is not None and found.value == "from-file"
    assert not log.exists(), "gh was not run while a cheaper source had the token"
    (tmp_path / "hosts.yml").write_text("github.com:\n    user: me\n")  # token in the keyring
    found = find_token(env)
    assert found is not None and found.value == "from-keyring"
    assert found.source == "gh auth token --hostname github.com (keyring)"
    assert find_token(env, base_url="https://ghe.corp.example/api/v3") is None


def test_auth_status_exits_1_when_the_host_cannot_be_asked(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "env-secret-456")
    # Port 1 on the loopback: refused at once, nothing leaves the machine.
    result = runner.invoke(cli, ["auth", "status", "--base-url", "http://127.0.0.1:1"])
    assert result.exit_code == 1, result.output
    assert "token: from GH_ENTERPRISE_TOKEN" in result.stdout
    assert "rate limit: not checked: GET /rate_limit: connection failed" in result.stdout
    offline = runner.invoke(
        cli, ["auth", "status", "--base-url", "http://127.0.0.1:1", "--offline"]
    )
    assert offline.exit_code == 0, offline.output
