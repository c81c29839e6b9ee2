"""What the quick commands import: `report --help` and `report config show` (with `--json`
too) never load the analysis, nor the heavy libraries (issue 35).

Each command runs in a fresh interpreter under `-X importtime`, which names every module
imported; our own modules are imported at the top of each module, so this list is what a
command pays for before it does anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("jinja2", "httpx", "github", "sqlite3", "detect_secrets", "wordllama", "numpy", "rich")


def imported(args: list[str], tmp_path: Path) -> set[str]:
    """The modules `report ARGS` imports, read from `-X importtime`'s lines on stderr."""
    return run_reporter(args, tmp_path)[1]


def run_reporter(args: list[str], tmp_path: Path) -> tuple[str, set[str]]:
    """`report ARGS`'s stdout, and the modules it imports."""
    env = {**os.environ, "REPORTER_CONFIG": str(tmp_path / "config.toml")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "reporter", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # "import time:       361 |      40422 |       pydantic.warnings"
    return done.stdout, {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }


@pytest.mark.parametrize("args", [["--help"], ["config", "show"]])
def test_the_quick_commands_never_load_the_analysis(args: list[str], tmp_path: Path) -> None:
    modules = imported(args, tmp_path)
    assert "reporter.cli" in modules  # the list is real: the command line itself is in it
    assert sorted(m for m in modules if m.startswith(("reporter.analysis", "reporter.load"))) == []
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


def test_a_quick_commands_json_never_loads_the_analysis(tmp_path: Path) -> None:
    # `--json` goes through `console.emit`, which writes any command's document: it must
    # not bring in the documents of `analyze` (and with them the analysis and the renderer).
    modules = imported(["config", "show", "--json"], tmp_path)
    assert {"reporter.cli", "reporter.console.jsontext"} <= modules  # it did print JSON
    assert sorted(m for m in modules if m.startswith(("reporter.analysis", "reporter.load"))) == []
    assert sorted(m for m in modules if m.startswith("reporter.render")) == []
    # The document is masked, which may load detect-secrets; nothing else heavy loads.
    heavy = {m.split(".")[0] for m in modules} & set(HEAVY)
    assert sorted(heavy - {"detect_secrets"}) == []


def test_a_command_that_analyses_shows_up_as_such(tmp_path: Path) -> None:
    # The check above can fail: `report analyze` does import the analysis.
    modules = imported(["analyze", str(ROOT / "fixtures" / "bundles" / "tp_desync")], tmp_path)
    assert {"reporter.analysis", "reporter.analysis.analyze"} <= modules


# What `report analyze --json` must not load (issue 36): typer's pydantic (its option
# values are made by `cli/values.py`), and the libraries of the other report commands:
# markdown-it (lint, status, preview), yaml (reports' front matter: read only when a
# reports/ folder is there), tomlkit (writing bundle.toml), sqlite3 (the issue index).
# detect-secrets (with requests) loads only for a string its plugins could report on.
NOT_FOR_ANALYZE = (
    "pydantic",
    "pydantic_core",
    "markdown_it",
    "mdit_py_plugins",
    "mdurl",
    "yaml",
    "tomlkit",
    "sqlite3",
    "requests",
    "urllib3",
    "charset_normalizer",
    *HEAVY,
)


def test_analyze_json_loads_only_what_it_uses(tmp_path: Path) -> None:
    modules = imported(
        ["analyze", "--json", str(ROOT / "fixtures" / "bundles" / "tp_desync")], tmp_path
    )
    assert {"reporter.analysis.analyze", "reporter.console.jsontext"} <= modules  # it ran
    assert sorted(m for m in modules if m.split(".")[0] in NOT_FOR_ANALYZE) == []


def test_analyze_json_imports_detect_secrets_only_for_a_string_that_needs_it(
    tmp_path: Path,
) -> None:
    # tp_desync's document holds no line a detect-secrets plugin could report on: the gate
    # (`reporter.secrets.gate`) clears it, and detect-secrets and requests stay unloaded.
    clean = imported(
        ["analyze", "--json", str(ROOT / "fixtures" / "bundles" / "tp_desync")], tmp_path
    )
    assert {"reporter.secrets.gate", "reporter.console.jsontext"} <= clean
    assert sorted(m for m in clean if m.split(".")[0] in ("detect_secrets", "requests")) == []


def test_analyze_json_loads_detect_secrets_for_what_only_it_finds(tmp_path: Path) -> None:
    # The redaction bundle's log lines hold keys only detect-secrets' plugins know (Twilio,
    # Mailchimp, Telegram, Artifactory): it is imported, and they are masked.
    bundle = ROOT / "fixtures" / "redaction" / "bundle"
    stdout, modules = run_reporter(["analyze", "--json", str(bundle)], tmp_path)
    assert "detect_secrets.core.secrets_collection" in modules
    seeds = json.loads((ROOT / "fixtures" / "redaction" / "seeds.json").read_text())
    only_library = ("twilio-api-key", "mailchimp-key", "telegram-bot-token", "artifactory-token")
    values = [s["value"] for s in seeds if s["kind"] in only_library]
    assert len(values) == 4
    assert [v for v in values if v in stdout] == []
    assert "[redacted]" in stdout
