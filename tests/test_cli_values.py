"""`reporter/cli/values.py`: option values made without pydantic are the ones typer makes.

Each case builds one throwaway command with typer, runs it once with our runtime values
and once with typer's own (pydantic), and compares what the command received, or the
error typer printed, byte for byte.
"""

from __future__ import annotations

import inspect
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer._coercion import build_runtime_param
from typer.core import _TyperParameter
from typer.testing import CliRunner

from reporter.cli import values


class Color(StrEnum):
    RED = "red"
    DARK_BLUE = "dark-blue"


def _app(annotation: Any, option: Any, default: Any) -> tuple[typer.Typer, list[Any]]:
    got: list[Any] = []
    app = typer.Typer()

    def command(**given: Any) -> None:
        got.append(given["value"])

    kind = inspect.Parameter.KEYWORD_ONLY
    param = inspect.Parameter(
        "value", kind, default=default, annotation=Annotated[annotation, option]
    )
    command.__signature__ = inspect.Signature([param])  # type: ignore[attr-defined]
    app.command()(command)
    return app, got


def _typers(param: Any) -> Any:
    """typer's own `get_runtime_param` (pydantic), whatever is installed in this process."""
    if param._runtime_param is None:
        param._runtime_param = build_runtime_param(param.type_descriptor)
    return param._runtime_param


def _run(quick: bool, annotation: Any, option: Any, default: Any, args: list[str]) -> Any:
    """What the command received (value and types), or typer's exit code and message."""
    app, got = _app(annotation, option, default)
    made: list[Any] = []

    def runtime_param(param: Any) -> Any:
        made.append((values._runtime_param if quick else _typers)(param))
        return made[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_TyperParameter, "get_runtime_param", runtime_param)
        result = CliRunner().invoke(app, args)
    assert made and all(isinstance(m, values._Quick) == quick for m in made)
    if got:
        value = got[0]
        kinds = [type(v) for v in value] if isinstance(value, list) else None
        return ("value", value, type(value), kinds)
    return ("error", result.exit_code, result.output)


CASES = [
    (str, typer.Option("--word"), "512M", []),
    (str, typer.Option("--word"), "512M", ["--word", "2G"]),
    (str, typer.Option("--word"), "512M", ["--word", ""]),
    (str | None, typer.Option("--word"), None, []),
    (int, typer.Option("--n", min=0), 6, []),
    (int, typer.Option("--n", min=0), 6, ["--n", "12"]),
    (int, typer.Option("--n", min=0), 6, ["--n", "0"]),
    (int, typer.Option("--n", min=0), 6, ["--n", "-3"]),
    (int, typer.Option("--n", min=0), 6, ["--n", "007"]),
    (int, typer.Option("--n", min=0), 6, ["--n", " 5 "]),
    (int, typer.Option("--n", min=0), 6, ["--n", "1_000"]),
    (int, typer.Option("--n", min=0), 6, ["--n", "five"]),
    (int, typer.Option("--n", min=0, max=9), 6, ["--n", "10"]),
    (int, typer.Option("--n", min=0, max=9, clamp=True), 6, ["--n", "10"]),
    (int, typer.Option("--n"), 6, ["--n", "99999999999999999999999"]),
    (Color, typer.Option("--color"), Color.RED, []),
    (Color, typer.Option("--color"), Color.RED, ["--color", "dark-blue"]),
    (Color, typer.Option("--color", case_sensitive=False), Color.RED, ["--color", "DARK-BLUE"]),
    (Color, typer.Option("--color"), Color.RED, ["--color", "green"]),
    (Path | None, typer.Option("--path"), None, []),
    (Path | None, typer.Option("--path"), None, ["--path", "a/b"]),
    (Path | None, typer.Option("--path"), None, ["--path", "a//b/"]),
    (Path | None, typer.Option("--path"), None, ["--path", "-"]),
    (Path | None, typer.Option("--path"), None, ["--path", ""]),
    (Path | None, typer.Option("--path", exists=True), None, ["--path", "missing"]),
    (Path | None, typer.Option("--path", dir_okay=False), None, ["--path", "."]),
    (Path | None, typer.Option("--path", file_okay=False), None, ["--path", "./"]),
    (Path | None, typer.Option("--path", resolve_path=True), None, ["--path", "."]),
    # `f/` does not exist, `Path("f/")` (that is `f`) does: typer checks `f`.
    (Path | None, typer.Option("--path"), None, ["--path", "f/"]),
    (Path | None, typer.Option("--path", dir_okay=False), None, ["--path", "b/"]),
    (list[Path], typer.Argument(), None, ["a", "b/", "./c//d"]),
    (list[Path] | None, typer.Option("--root"), None, ["--root", "x", "--root", "y"]),
    (list[int] | None, typer.Option("--pid"), None, ["--pid", "1", "--pid", "two"]),
    (list[str] | None, typer.Option("--repo"), None, ["--repo", "a/b", "--repo", "c/d"]),
    (float, typer.Option("--x"), 1.5, ["--x", "2"]),
    (bool, typer.Option("--flag/--no-flag"), False, ["--flag"]),
]


@pytest.mark.parametrize(("annotation", "option", "default", "args"), CASES)
def test_a_quick_value_is_the_value_typer_gives(
    annotation: Any,
    option: Any,
    default: Any,
    args: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b").mkdir()
    (tmp_path / "f").write_text("")
    ours = _run(True, annotation, option, default, args)
    theirs = _run(False, annotation, option, default, args)
    assert ours == theirs


def test_the_quick_cases_never_build_a_pydantic_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cases `report analyze` meets: defaults, None, words, plain numbers, paths.
    monkeypatch.chdir(tmp_path)
    built: list[Any] = []
    monkeypatch.setattr(values, "build_runtime_param", lambda d: built.append(d))
    for annotation, option, default, args in [
        (str, typer.Option("--word"), "512M", ["--word", "2G"]),
        (int, typer.Option("--n", min=0), 6, []),
        (int, typer.Option("--n", min=0), 6, ["--n", "12"]),
        (Color, typer.Option("--color"), Color.RED, ["--color", "dark-blue"]),
        (Path | None, typer.Option("--path"), None, ["--path", str(tmp_path) + "/"]),
        (list[Path], typer.Argument(), None, ["a", "b"]),
    ]:
        kind, value, *_ = _run(True, annotation, option, default, args)
        assert kind == "value", value
    assert built == []
