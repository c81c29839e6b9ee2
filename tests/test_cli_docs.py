"""docs/cli.md and the README's JSON section are current (tools/gen_cli_docs.py writes them)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_cli_docs", ROOT / "tools" / "gen_cli_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current() -> None:
    tool = _tool()
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == tool.cli_md(), (
        "docs/cli.md is stale: run PYTHONPATH=$PWD python tools/gen_cli_docs.py"
    )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == tool.readme(readme), "README's JSON section is stale: run the same tool"


def test_every_command_is_documented_with_an_example() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = text.split("\n## ")[1:]
    commands = [s for s in sections if s.startswith("`report ") and "COMMAND [ARGS]" not in s]
    assert len(commands) >= 16
    for section in commands:
        assert "Example: report " in section or "Example: " in section, section.splitlines()[0]
    assert "[wedge]" in text, "collect --help keeps `[wedge] window` as text"
    assert "<bool>" not in text and "<str>" not in text and "list[" not in text


def test_the_check_mode_reports_staleness(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_cli_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
