"""tools/quickstart.py: the README Quickstart commands `.ci/run` runs, read from the README."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quickstart", ROOT / "tools" / "quickstart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


quickstart = _tool()


def test_readme_has_the_two_commands_ci_runs() -> None:
    found = quickstart.commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 2, found
    first, second = found
    assert "report draft" in first and quickstart.outputs(first) == ["reports/tp_desync.md"]
    assert second.endswith("python3 -m pytest"), second
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").count(
        "tools/quickstart.py README.md --expect 2"
    ) == 2


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("## Quickstart\n\n```bash\na --x\n\n# note\nb\n```\n", ["a --x", "b"]),
        (
            "## Quickstart\n```\n$ a \\\n    --out f \\\n    -v\nb\n```\n```\nc\n```\n",
            ["a --out f -v", "b"],
        ),
        ("## Other\n```\nz\n```\n## Quickstart\n~~~sh\na\n~~~\n", ["a"]),
    ],
)
def test_commands_of_the_first_block(text: str, want: list[str]) -> None:
    assert quickstart.commands(text) == want


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("# Title\n```\na\n```\n", "no '## Quickstart' heading"),
        ("## Quickstart\ntext\n## Next\n```\na\n```\n", "README.md:1: '## Quickstart' has no"),
        ("## Quickstart\n```\na\n", "README.md:2: the Quickstart's fenced block is not closed"),
        ("## Quickstart\n```\na \\\n```\n", "README.md:4: the block ends inside"),
    ],
)
def test_a_broken_quickstart_is_named(text: str, error: str) -> None:
    with pytest.raises(quickstart.QuickstartError, match=error):
        quickstart.commands(text)


def test_outputs_of_a_command() -> None:
    assert quickstart.outputs("x && report draft b --out 'r/a b.md' -o c --out=d") == [
        "r/a b.md",
        "c",
        "d",
    ]
    assert quickstart.outputs("python3 -m pytest") == []


def test_main_refuses_another_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("## Quickstart\n```\na\nb\nc\n```\n", encoding="utf-8")
    assert quickstart.main([str(readme)]) == 1
    assert "holds 3 command(s), CI expects exactly 2" in capsys.readouterr().err
    assert quickstart.main([str(readme), "--expect", "3"]) == 0
    assert capsys.readouterr().out == "a\nb\nc\n"
    assert quickstart.main([str(tmp_path / "missing.md")]) == 1
    assert "error:" in capsys.readouterr().err
