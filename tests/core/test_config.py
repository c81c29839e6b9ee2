"""The settings file: where it is, what it may say, and that flags and env beat it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli
from reporter.core import config
from reporter.core.errors import UsageError

runner = CliRunner()


def test_missing_file_is_empty_settings(tmp_path: Path) -> None:
    settings = config.load({"REPORTER_CONFIG": str(tmp_path / "none.toml")})
    assert settings.exists is False and settings.repos == () and settings.host == ""


def test_platform_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config.config_path({}) == tmp_path / "reporter" / "config.toml"


def test_every_key(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        'repos = ["sgl-project/sglang"]\nindex = "~/i.sqlite3"\nforms = "/f"\nhost = "GHE.corp"\n'
    )
    settings = config.load({"REPORTER_CONFIG": str(path)})
    assert settings.repos == ("sgl-project/sglang",)
    assert settings.index == Path("~/i.sqlite3").expanduser()
    assert settings.forms == Path("/f") and settings.host == "ghe.corp"
    assert config.with_defaults({}, settings)["GH_HOST"] == "ghe.corp"
    assert config.with_defaults({"GH_HOST": "x"}, settings)["GH_HOST"] == "x"


@pytest.mark.parametrize(
    ("text", "message", "tip"),
    [
        ('repo = ["a/b"]\n', "unknown key `repo`", "did you mean `repos`?"),
        ("repos = 3\n", "`repos` must be a list", ""),
        ("host = [\n", "not valid TOML", "report config show"),
    ],
)
def test_bad_files_name_the_file(tmp_path: Path, text: str, message: str, tip: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        config.load({"REPORTER_CONFIG": str(path)})
    assert str(path) in caught.value.message and message in caught.value.message
    assert tip in caught.value.tip


def test_config_show_and_its_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'repos = ["a/b"]\nindex = "{tmp_path / "missing.sqlite3"}"\n')
    monkeypatch.setenv("REPORTER_CONFIG", str(path))
    shown = runner.invoke(cli, ["config", "show"])
    assert shown.exit_code == 0
    assert f"config file: {path}" in shown.stdout and 'repos = ["a/b"]' in shown.stdout
    assert "host = (unset)" in shown.stdout
    document = json.loads(runner.invoke(cli, ["config", "show", "--json"]).stdout)
    assert document["settings"]["repos"] == ["a/b"]
    # The configured index is the default --db: its absence is named.
    export = runner.invoke(cli, ["index", "export"])
    assert export.exit_code == 2 and str(tmp_path / "missing.sqlite3") in export.stderr
