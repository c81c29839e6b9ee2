"""A process's own environment: its variables (`/proc/PID/environ`) and command line.

`parse_environ` reads a NUL-separated `/proc` copy, `env` output or `KEY=VALUE` lines
(with `export ` / `declare -x ` and shell quotes); `parse_cmdline` a `/proc/PID/cmdline`
copy or one shell-quoted command per line, whose options become `CommandFlag`s.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from reporter.evidence._text import clean_lines, excerpt, warning_at
from reporter.evidence.env.grammar import ASSIGN_RE, PY_RE
from reporter.model import (
    CommandFlag,
    CommandLine,
    Environment,
    EnvVar,
    Location,
    ParseResult,
    ParseWarning,
)
from reporter.secrets import REDACTED
from reporter.secrets.names import is_secret_name

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Interpreter options that take the next token as their argument.
_PY_ARG_OPTIONS = frozenset(("-W", "-X", "-Q", "--check-hash-based-pycs"))
_NUMBER_RE = re.compile(r"-\d+(?:\.\d+)?(?:e-?\d+)?\Z")


def parse_environ(text: str, *, source: str) -> ParseResult:
    """Environment variables from a `/proc/PID/environ` copy or `KEY=VALUE` lines.

    A variable set twice keeps its first value (what `getenv` returns) and a warning.
    """
    if "\x00" in text:
        pairs, warnings = _environ_nul(text, source)
    else:
        pairs, warnings = _environ_lines(text, source)
    seen: dict[str, EnvVar] = {}
    for var in pairs:
        if var.name in seen:
            warnings.append(
                ParseWarning(
                    source=var.source,
                    message=f"{var.name} is set again; the first value "
                    f"(line {seen[var.name].source.line}) is the one getenv returns",
                )
            )
            continue
        seen[var.name] = var
    warnings.sort(key=lambda w: (w.source.line, w.message))
    return ParseResult(
        environment=Environment(variables=tuple(seen.values())), warnings=tuple(warnings)
    )


def _environ_nul(text: str, source: str) -> tuple[list[EnvVar], list[ParseWarning]]:
    pairs: list[EnvVar] = []
    warnings: list[ParseWarning] = []
    for number, entry in enumerate(text.split("\x00"), start=1):
        if not entry:
            continue
        name, sep, value = entry.partition("=")
        where = Location(path=source, line=number)
        if not sep or not _NAME_RE.match(name):
            warnings.append(
                ParseWarning(
                    source=where, message=f"entry {number} is not NAME=VALUE: {excerpt(entry)}"
                )
            )
            continue
        pairs.append(EnvVar(name=name, value=value, source=where))
    return pairs, warnings


def _environ_lines(text: str, source: str) -> tuple[list[EnvVar], list[ParseWarning]]:
    pairs: list[EnvVar] = []
    warnings: list[ParseWarning] = []
    for number, raw in enumerate(clean_lines(text), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = ASSIGN_RE.match(line)
        where = Location(path=source, line=number)
        if match is None or not _NAME_RE.match(match.group(1)):
            if pairs and raw and not raw[0].isspace() and "=" not in line.split(None, 1)[0]:
                # `env` prints a value with a newline over several lines.
                last = pairs[-1]
                pairs[-1] = EnvVar(name=last.name, value=f"{last.value}\n{raw}", source=last.source)
                warnings.append(
                    ParseWarning(
                        source=where,
                        message=f"not NAME=VALUE; kept as a continuation of {last.name}: "
                        + (REDACTED if is_secret_name(last.name) else excerpt(raw)),
                    )
                )
            else:
                warnings.append(
                    ParseWarning(source=where, message=f"not NAME=VALUE: {excerpt(raw)}")
                )
            continue
        value, problem = _unquote(match.group(2))
        if problem:
            warnings.append(ParseWarning(source=where, message=f"{match.group(1)}: {problem}"))
        pairs.append(EnvVar(name=match.group(1), value=value, source=where))
    return pairs, warnings


def _unquote(value: str) -> tuple[str, str]:
    """A value without the shell quotes `export -p` / `.env` files put around it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            inner = re.sub(r'\\([\\"$`])', r"\1", inner)
        return inner, ""
    if value[:1] in "\"'" and not value.endswith(value[0]):
        return value, "unbalanced quote; value kept as written"
    return value, ""


def parse_cmdline(text: str, *, source: str) -> ParseResult:
    """Command lines: a `/proc/PID/cmdline` copy (one), or one shell-quoted command per line."""
    warnings: list[ParseWarning] = []
    cmdlines: list[CommandLine] = []
    if "\x00" in text:
        argv = tuple(part for part in text.rstrip("\x00").split("\x00"))
        if argv and any(argv):
            cmdlines.append(split_command(argv, source=Location(path=source, line=1)))
        else:
            warnings.append(warning_at(source, 0, "empty cmdline"))
    else:
        for number, raw in enumerate(clean_lines(text), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = Location(path=source, line=number)
            try:
                argv = tuple(shlex.split(line))
            except ValueError as err:
                warnings.append(
                    ParseWarning(source=where, message=f"{err}; split on spaces instead")
                )
                argv = tuple(line.split())
            cmdlines.append(split_command(argv, source=where))
    if not cmdlines and not warnings:
        warnings.append(warning_at(source, 0, "no command line"))
    return ParseResult(environment=Environment(cmdlines=tuple(cmdlines)), warnings=tuple(warnings))


def split_command(argv: tuple[str, ...], *, source: Location) -> CommandLine:
    """Split argv into program, options and positional arguments.

    `env A=1 python3 -u -m sglang.launch_server --tp 4 --mem-fraction-static=0.8 --trust-remote-code`
    gives program `sglang.launch_server`, flags `--tp=4`, `--mem-fraction-static=0.8`,
    `--trust-remote-code` (no value). An option takes the tokens after it up to the
    next option as its value (`--cuda-graph-bs 1 2 4` -> `"1 2 4"`); a negative
    number is a value, not an option.
    """
    index = 0
    if argv and argv[0].rsplit("/", 1)[-1] == "env":
        index = 1
        while index < len(argv) and ASSIGN_RE.match(argv[index]) and "=" in argv[index]:
            index += 1
    if index >= len(argv):
        return CommandLine(argv=argv, program="", source=source)
    program = argv[index]
    index += 1
    if PY_RE.match(program):
        program, index = _python_program(argv, index, program)
    flags: list[CommandFlag] = []
    positional: list[str] = []
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            positional.extend(argv[index:])
            break
        if not _is_option(token):
            positional.append(token)
            continue
        name, sep, value = token.partition("=")
        if sep and name.startswith("--"):
            flags.append(CommandFlag(name=name, value=value))
            continue
        values: list[str] = []
        while index < len(argv) and not _is_option(argv[index]) and argv[index] != "--":
            values.append(argv[index])
            index += 1
        flags.append(CommandFlag(name=token, value=" ".join(values) if values else None))
    return CommandLine(
        argv=argv,
        program=program,
        flags=tuple(flags),
        positional=tuple(positional),
        source=source,
    )


def _is_option(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NUMBER_RE.match(token)


def _python_program(argv: tuple[str, ...], index: int, interpreter: str) -> tuple[str, int]:
    """Skip the interpreter's own options; the module, script or `-c` is the program."""
    while index < len(argv):
        token = argv[index]
        if token == "-m" and index + 1 < len(argv):
            return argv[index + 1], index + 2
        if token.startswith("-m") and len(token) > 2:
            return token[2:], index + 1
        if token == "-c":
            return "-c", min(index + 2, len(argv))
        if token in _PY_ARG_OPTIONS:
            index += 2
            continue
        if token.startswith("-") and token != "-":
            index += 1
            continue
        return token, index + 1
    return interpreter, index


def flag_map(cmdlines: Iterable[CommandLine]) -> dict[str, str]:
    """Options of the command lines as name -> value (`""` for a switch), program under `program`.

    A repeated option keeps its values joined by `, ` in the order given.
    """
    out: dict[str, str] = {}
    for cmd in cmdlines:
        if cmd.program:
            out.setdefault("program", cmd.program)
        for flag in cmd.flags:
            value = flag.value if flag.value is not None else ""
            if flag.name in out and out[flag.name] != value:
                out[flag.name] = f"{out[flag.name]}, {value}"
            else:
                out[flag.name] = value
    return out
