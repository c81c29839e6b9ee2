"""Process-group set-up calls in source code and the `timeout=` they pass.

`dist.init_process_group(..., timeout=timedelta(seconds=900))` sets how long every
collective of that group waits before it raises: what "recovers on its own" rests on when
no command line or environment says. Read by the excerpts (which show such a call from the
source files of the frames) and by the report's timeout reading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# The same calls in source code: `dist.init_process_group(` up to its `timeout=` argument.
SETUP_CALL = re.compile(
    r"\b(init_process_group|new_group|new_subgroups\w*|init_distributed_environment"
    r"|monitored_barrier)\s*\("
)


def code_timeouts(lines: Sequence[str], start: int) -> list[tuple[str, str, int]]:
    """`(call, value, line)` for each process-group set-up call in `lines` (numbered from
    `start`) that passes `timeout=`: `("init_process_group", "timedelta(seconds=900)", 12)`.
    The call may span lines; its arguments are read up to its closing parenthesis."""
    return [(call, value, first) for call, value, first, _ in setup_calls(lines, start)]


def setup_calls(lines: Sequence[str], start: int) -> list[tuple[str, str, int, int]]:
    """`(call, value, first line, last line)` of each set-up call passing `timeout=`."""
    text = "\n".join(lines)
    out: list[tuple[str, str, int, int]] = []
    for match in SETUP_CALL.finditer(text):
        args = _balanced(text, match.end())
        value = _keyword(args, "timeout")
        if value and value != "None":
            first = start + text.count("\n", 0, match.start())
            last = first + text.count("\n", match.start(), match.end() + len(args))
            out.append((match.group(1), value, first, last))
    return out


def _balanced(text: str, at: int) -> str:
    """The text from `at` up to the parenthesis that closes the one just before it."""
    depth = 1
    for i in range(at, min(len(text), at + 2000)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[at:i]
    return text[at : at + 2000]


def _keyword(args: str, name: str) -> str:
    """The value of keyword argument `name` at the top level of `args`, or ""."""
    depth = 0
    parts: list[str] = []
    current: list[str] = []
    for char in args:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    for part in parts:
        key, eq, value = part.partition("=")
        if eq and key.strip() == name:
            return " ".join(value.split())
    return ""
