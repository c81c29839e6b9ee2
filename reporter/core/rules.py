"""The one loader of the rules files in `reporter/data/*.toml`, checked against declared shapes.

Every data file has a shape in `SHAPES`: which tables and keys it may hold, the type of
each value, which keys are required, and bounds where a number has them. `parse` reads
TOML text and checks it; `load` does so for a packaged file, once per process. A file
that does not fit raises `RulesError` naming the file, the key (`[[rule]] #3 (id
"x") weight`) and the fix, so a mistake in a rules edit is caught where it was made and
not as a crash deep in analysis. Unknown keys are errors too, with the nearest known
key suggested: these files are ours, and a misspelt key would otherwise do nothing.

Shapes are plain data::

    {"rule": Tables({"id": Key(str, required=True), "weight": Key(int, low=0)})}

The modules that use a file turn the checked data into their own compiled rules
(regexes, globs); only checks a shape cannot express (a regex that must compile,
ids that must be unique) stay with them.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from reporter.core.errors import ReporterError

DATA_PACKAGE = "reporter"
DATA_FOLDER = "data"


class RulesError(ReporterError):
    """A rules file that does not fit its shape: the message names file and key."""


class Strings:
    """The value type "a list of strings" (`names = ["A*", "B"]`)."""


@dataclass(frozen=True, slots=True)
class Key:
    """One key: its value type (`str`, `int`, `bool`, `float`, `Strings`), whether it
    must be there, and bounds for numbers."""

    kind: type
    required: bool = False
    low: int | None = None
    high: int | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """A `[table]` with known keys (`free`: any key, every value of type `free`)."""

    keys: Mapping[str, Key | Table] = field(default_factory=dict)
    free: type | None = None


@dataclass(frozen=True, slots=True)
class Tables:
    """An array of tables (`[[rule]]`), each with these keys (a key may itself be an array
    of tables: `[[rule.step]]`)."""

    keys: Mapping[str, Key | Table | Tables]


Shape = Mapping[str, Key | Table | Tables]

_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    int: "an integer",
    bool: "true or false",
    float: "a number",
    Strings: "a list of strings",
}
_EXAMPLES: dict[type, str] = {
    str: '"text"',
    int: "3",
    bool: "true",
    float: "0.5",
    Strings: '["a", "b"]',
}

_GLOBS = Key(Strings)
_REQUIRED_ID = Key(str, required=True)
# Positive weights rank a change up; negative ones mark per-run noise.
_WEIGHT = Key(int, required=True, low=-100, high=100)
# A verdict or wait rule's next steps (`[[rule.step]]`): the same record in both files.
_STEPS = Tables({"action": Key(str, required=True), "why": Key(str, required=True)})

VERDICT_FLAGS = (
    "flight_recorder",
    "fr_idle",
    "crash",
    "thread_deadlock",
    "one_process",
    "cycle",
    "dead_wait",
)
"""The yes/no conditions a verdicts.toml rule may set (`crash = true`), in the order the
verdict decision tests and records them."""

# The declared shape of every file in reporter/data/ (tests/core/test_rules.py checks that
# each shipped file has one and fits it).
SHAPES: dict[str, Shape] = {
    "diff.toml": {
        "kind": Table(free=int),
        "status": Table(free=int),
        "rule": Tables(
            {
                "id": _REQUIRED_ID,
                "kinds": Key(Strings),
                "keys": Key(Strings),
                "weight": _WEIGHT,
                "tie": Key(int),
                "why": Key(str, required=True),
            }
        ),
        "value_rule": Tables(
            {
                "id": _REQUIRED_ID,
                "pattern": Key(str, required=True),
                "keys": Key(Strings),
                "weight": _WEIGHT,
                "tie": Key(int),
                "why": Key(str, required=True),
            }
        ),
    },
    "env.toml": {
        "show": Table({"names": _GLOBS}),
        "hide": Table({"names": _GLOBS, "values": Key(Strings)}),
        "secret": Table(
            {"names": _GLOBS, "values": Key(Strings), "opaque_min_length": Key(int, low=8)}
        ),
        "packages": Table({"key": Key(Strings)}),
        "facts": Table({"key": _GLOBS}),
    },
    "forms.toml": {
        "role": Tables({"role": Key(str, required=True), "match": Key(str, required=True)}),
        "tick": Table({"searched": Key(str)}),
    },
    "frames.toml": {
        name: Tables(
            {
                "id": _REQUIRED_ID,
                "name": Key(str),
                "function": _GLOBS,
                "file": _GLOBS,
                "not_file": _GLOBS,
                "qualname": _GLOBS,
                "native": Key(bool),
                "specific": Key(bool),
            }
        )
        for name in ("collective", "wait", "generic", "idle", "gpu_sync", "idle_loop", "bootstrap")
    }
    | {
        "library": Table({"file": _GLOBS}),
        "states": Table({"idle_waits": Key(Strings)}),
        "p2p": Table({"recv": Key(Strings), "send": Key(Strings), "either": Key(Strings)}),
    },
    "goroutines.toml": {
        "plumbing": Table({"functions": _GLOBS}),
        "runtime": Table({"functions": _GLOBS}),
        "client_wait": Tables(
            {"id": _REQUIRED_ID, "functions": _GLOBS, "what": Key(str, required=True)}
        ),
    },
    "next_steps.toml": {
        "rule": Tables(
            {
                "id": _REQUIRED_ID,
                "action": Key(str, required=True),
                "why": Key(str, required=True),
                **{
                    name: Key(Strings)
                    for name in ("verdict", "waited", "collective", "wait", "frame", "diff_kind")
                },
                **{
                    name: Key(bool)
                    for name in (
                        "stacks",
                        "wedge",
                        "gone",
                        "missing",
                        "timeout",
                        "captured",
                        "one_collective",
                        "flight_recorder",
                        "p2p",
                        "peers",
                        "blocked_threads",
                    )
                },
            }
        ),
    },
    "verdicts.toml": {
        "rule": Tables(
            {
                "id": _REQUIRED_ID,
                "verdict": Key(str, required=True),
                "summary": Key(Strings, required=True),
                "confidence": Key(str, required=True),
                "signature": Key(str, required=True),
                "note": Key(str),
                "headline": Key(str),
                "who_waits": Key(str),
                "what": Key(str),
                "recovers": Key(str),
                "stacks": Key(Strings),
                "process": Key(Strings),
                "waits": Key(Strings),
                "edges": Key(Strings),
                **{name: Key(bool) for name in VERDICT_FLAGS},
                "step": _STEPS,
            }
        ),
    },
    "wait_rules.toml": {
        "rule": Tables(
            {
                "id": _REQUIRED_ID,
                "verdict": Key(str, required=True),
                "headline": Key(str, required=True),
                "what": Key(str, required=True),
                "who": Key(str, required=True),
                "recovers": Key(str),
                "step": _STEPS,
                "kind": Key(Strings),
                "producer": Key(Strings),
                "waited": Key(Strings),
                "cycle": Key(bool),
                "with_kind": Key(Strings),
                "ended": Key(bool),
                "peer": Key(bool),
                "what_prefix": Key(Strings),
            }
        ),
    },
    "redact.toml": {
        "public": Table({"hosts": _GLOBS, "emails": _GLOBS}),
        "generic": Table({"users": _GLOBS, "hosts": _GLOBS}),
        "context": Table(
            {
                "host_vars": _GLOBS,
                "user_vars": _GLOBS,
                "host_keys": _GLOBS,
                "user_keys": _GLOBS,
                "host_flags": _GLOBS,
            }
        ),
    },
    "secrets.toml": {
        "names": Table(
            {
                name: Key(Strings)
                for name in (
                    "words",
                    "suffixes",
                    "not_secret",
                    "vocabulary_token",
                    "data_key",
                    "meta_last",
                    "short_flags",
                    "user_password",
                    "last_words",
                    "inner",
                    "inner_not_secret",
                )
            }
        ),
        "normalize": Table({"from": Key(str, required=True), "to": Key(str, required=True)}),
        "values": Table(
            {
                name: Key(Strings, required=True)
                for name in ("inert", "blank", "not_a_value", "auth_schemes", "named_inert")
            }
        ),
        "library": Table({"plugins": Key(Strings, required=True), "gate": Key(Strings)}),
        "encoded": Table(
            {"min_length": Key(int, low=8, high=4096), "max_length": Key(int, low=8, high=1 << 20)}
        ),
        "shape": Tables(
            {
                "id": _REQUIRED_ID,
                "name": Key(str, required=True),
                "pattern": Key(Strings, required=True),
                "needs": Key(Strings),
                "gate": Key(Strings),
                "group": Key(int, low=0, high=9),
                "name_group": Key(int, low=0, high=9),
                "inside": Key(bool),
                "check": Key(str),
            }
        ),
    },
    "upstream.toml": {
        "package": Tables(
            {
                "module": Key(str, required=True),
                "dist": Key(str, required=True),
                "repo": Key(str, required=True),
                "tag": Key(str),
                "path_prefix": Key(str),
            }
        ),
    },
}


def parse(text: str, shape: Shape, *, source: str) -> dict[str, Any]:
    """TOML text checked against `shape`; raises `RulesError` naming `source` and the key."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RulesError(
            f"{source}: not valid TOML: {err}", tip="fix the syntax at the line named"
        ) from err
    _check_table(data, shape, source=source, where="")
    return data


def globs(patterns: Iterable[str], *, ignore_case: bool = False) -> re.Pattern[str]:
    """One regex matching any of these shell-style globs (`torch*`); none: matches nothing."""
    joined = "|".join(fnmatch.translate(p) for p in patterns) or r"(?!)"
    return re.compile(joined, re.IGNORECASE if ignore_case else 0)


@cache
def load(name: str) -> dict[str, Any]:
    """The packaged `reporter/data/<name>`, checked against `SHAPES[name]` (read once)."""
    if name not in SHAPES:
        raise RulesError(
            f"{DATA_FOLDER}/{name}: no shape declared for this rules file",
            tip="declare it in reporter.core.rules.SHAPES",
        )
    return parse(read_text(name), SHAPES[name], source=f"reporter/{DATA_FOLDER}/{name}")


def read_text(name: str) -> str:
    """The text of a packaged data file (`forms.toml`, `generic-bug-form.yml`)."""
    return resources.files(DATA_PACKAGE).joinpath(DATA_FOLDER, name).read_text(encoding="utf-8")


def _check_table(
    data: Mapping[str, Any], shape: Mapping[str, Key | Table | Tables], *, source: str, where: str
) -> None:
    for key, value in data.items():
        spec = shape.get(key)
        label = f"{where}{key}"
        if spec is None:
            close = difflib.get_close_matches(key, list(shape), n=1, cutoff=0.6)
            raise RulesError(
                f"{source}: unknown key `{label}`",
                tip=f"did you mean `{where}{close[0]}`?"
                if close
                else "known keys here: " + ", ".join(shape),
            )
        if isinstance(spec, Table):
            _check_subtable(value, spec, source=source, label=label)
        elif isinstance(spec, Tables):
            _check_tables(value, spec, source=source, label=label)
        else:
            _check_value(value, spec, source=source, label=label)
    for key, spec in shape.items():
        if isinstance(spec, Key) and spec.required and key not in data:
            place = where.rstrip(". ") or "the file"
            raise RulesError(
                f"{source}: {place} needs `{key}`",
                tip=f"add {key} = {_EXAMPLES[spec.kind]}",
            )


def _check_subtable(value: object, spec: Table, *, source: str, label: str) -> None:
    if not isinstance(value, dict):
        raise RulesError(f"{source}: `{label}` must be a table", tip=f"write it as [{label}]")
    if spec.free is not None:
        for key, item in value.items():
            _check_value(item, Key(spec.free), source=source, label=f"{label}.{key}")
        return
    _check_table(value, spec.keys, source=source, where=f"{label}.")


def _check_tables(value: object, spec: Tables, *, source: str, label: str) -> None:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise RulesError(
            f"{source}: `{label}` must be an array of tables", tip=f"write each as [[{label}]]"
        )
    for number, table in enumerate(value, 1):
        ident = table.get("id")
        named = f' (id "{ident}")' if isinstance(ident, str) else ""
        _check_table(table, spec.keys, source=source, where=f"[[{label}]] #{number}{named} ")


def _check_value(value: object, spec: Key, *, source: str, label: str) -> None:
    if spec.kind is Strings:
        fits = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif spec.kind is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    elif spec.kind is float:
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        fits = isinstance(value, spec.kind)
    if not fits:
        raise RulesError(
            f"{source}: `{label.strip()}` must be {_TYPE_NAMES[spec.kind]}, got {value!r:.40}",
            tip=f"write it like {label.split(' ')[-1].split('.')[-1]} = {_EXAMPLES[spec.kind]}",
        )
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    too_low = number is not None and spec.low is not None and number < spec.low
    too_high = number is not None and spec.high is not None and number > spec.high
    if too_low or too_high:
        bounds = f"at least {spec.low}" if spec.high is None else f"{spec.low}..{spec.high}"
        raise RulesError(
            f"{source}: `{label.strip()}` must be {bounds}, got {value}",
            tip=f"use a value {bounds}",
        )
