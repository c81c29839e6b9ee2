"""Option values turned into their types without loading pydantic, where that is exact.

typer (0.29) turns every value of a parameter that is not a bare flag into its type
through a pydantic `TypeAdapter`, built on first use: the first command line that reads a
path, a word or a number imports pydantic and builds its schemas, about a fifth of
`report analyze --json` on a small bundle. Most values need no validation at all: a
missing option (None), a default (`6`, `"512M"`, an enum member), a word for a `str`, a
path. `install` gives typer's parameters a runtime value of our own that does those cases
itself, with typer's own helpers where typer has one (choices, path checks), and hands
any other value to the pydantic one typer would have built, so every result and every
error message is the one typer gives. A typer without these helpers keeps its own way
(`tests/test_startup.py` notices: `report analyze` would load pydantic again).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, cast, get_args, get_origin

from typer import _click as click

try:  # typer's internals as of 0.29
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - another typer: its own way, only slower
    RuntimeParam = object  # type: ignore[assignment,misc]
    _TyperParameter = None  # type: ignore[assignment,misc]

# A value the quick path leaves to typer's own (pydantic) path.
_SLOW = object()

# An `int` as pydantic reads it and as nobody could read it otherwise: plain digits.
_DIGITS = re.compile(r"0|[1-9][0-9]{0,17}")


@dataclass(frozen=True)
class _Quick(RuntimeParam):
    """A parameter's runtime value: the quick cases here, the rest through typer's."""

    def _coerce_value(self, value: Any, param: Any, ctx: click.Context) -> Any:
        done = self._quick(value, param, ctx)
        if done is not _SLOW:
            return done
        descriptor = param.type_descriptor
        return build_runtime_param(descriptor)._coerce_value(value, param=param, ctx=ctx)

    def _quick(self, value: Any, param: Any, ctx: click.Context) -> Any:
        annotation: Any = self.annotation
        if get_origin(annotation) is list:
            (item,) = get_args(annotation)
            values = value if isinstance(value, (list, tuple)) else [value]
            out = [self._leaf(item, v, param, ctx) for v in values]
            return _SLOW if any(v is _SLOW for v in out) else out
        return self._leaf(annotation, value, param, ctx)

    def _leaf(self, annotation: Any, value: Any, param: Any, ctx: click.Context) -> Any:
        info = self.parameter_info
        if info.parser is not None:
            return _SLOW
        if annotation is str:
            return value if type(value) is str else _SLOW
        if annotation is int:
            return _integer(value, info.min, info.max, clamp=bool(info.clamp))
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            try:
                return coerce_cli_choice(
                    value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx
                )
            except ValueError:
                return _SLOW  # typer's words for a wrong choice
        if annotation is Path and info.path_type is None and type(value) is str:
            return _path(value, info, param, ctx)
        return _SLOW


def _integer(value: Any, low: Any, high: Any, *, clamp: bool) -> Any:
    """An int default, or plain digits, inside the bounds; anything else is pydantic's."""
    if type(value) is str and _DIGITS.fullmatch(value):
        number = int(value)
    elif type(value) is int:
        number = value
    else:
        return _SLOW
    if clamp or (low is not None and number < low) or (high is not None and number > high):
        return _SLOW
    return number


def _path(value: str, info: Any, param: Any, ctx: click.Context) -> Any:
    """typer's checks on the text as given (its error messages quote that text), then a `Path`.

    pydantic makes the `Path` first and checks that; the two agree whenever the text is
    already in `Path`'s form or names something that exists. A missing `a//b/` is left to
    pydantic: `a//b` might exist where `a//b/` does not.
    """
    if info.exists or info.resolve_path:
        return _SLOW
    # The text as given: `Path(value).exists()` would drop a trailing slash.
    if str(Path(value)) != value and not os.path.exists(value):  # noqa: PTH110
        return _SLOW
    checked = coerce_cli_path(value, info, path_type=None, param=param, ctx=ctx)
    return Path(cast(str, checked))  # text in, text out: path_type is None


def install() -> None:
    """Make typer build our quick runtime value for each parameter (once per process)."""
    if _TyperParameter is not None and hasattr(_TyperParameter, "get_runtime_param"):
        _TyperParameter.get_runtime_param = _runtime_param  # type: ignore[method-assign,assignment]


def _runtime_param(param: Any) -> RuntimeParam:
    """`_TyperParameter.get_runtime_param`: ours, except for parameters that open files."""
    if param._runtime_param is None:
        descriptor = param.type_descriptor
        if descriptor.file_annotation is None:
            param._runtime_param = _Quick(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )
        else:
            param._runtime_param = build_runtime_param(descriptor)
    runtime: RuntimeParam = param._runtime_param
    return runtime
