"""Parse copies of `/proc/PID/status` (kind `proc-status`) into `ProcState` records.

Input is the file's text and the name to cite. A status file is `Key:<TAB>value` lines::

    Name:   python3.11
    Umask:  0022
    State:  T (stopped)
    Tgid:   4711
    Pid:    4711
    PPid:   4700
    TracerPid:      0
    ...
    Threads:        7

`report collect` appends one line of its own in the same form, `Wchan:<TAB>do_signal_stop`,
read from `/proc/PID/wchan` (the kernel function a blocked task sleeps in). A file may hold
several copies one after the other (`cat /proc/*/status`, or `grep -H` output is not
supported): each `Name:` line starts the next. Copies without a `State:` line are skipped
with a warning; nothing here reads files.
"""

from __future__ import annotations

import re

from reporter.evidence._text import clean_lines, warning_at
from reporter.model import Location, ParseResult, ParseWarning, ProcState

_KEY_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):\s*(.*)\Z")
_STATE_RE = re.compile(r"([A-Za-z])\b\s*(?:\(([^)]{0,40})\))?")
# The keys that make a head a status copy: all of them, at the start of a line.
_SNIFF_KEYS = ("Name:", "State:", "Pid:")


def looks_like(head: str) -> bool:
    """True when `head` reads like a copy of `/proc/PID/status` (Name, State and Pid lines)."""
    lines = [line.strip("\r") for line in head.split("\n")[:80]]
    first = next((line for line in lines if line.strip()), "")
    if not first.startswith("Name:"):
        return False
    found = {key for key in _SNIFF_KEYS for line in lines if line.startswith(key)}
    return len(found) == len(_SNIFF_KEYS)


def parse(text: str, *, source: str) -> ParseResult:
    """Every status copy in `text`; never raises on malformed input."""
    states: list[ProcState] = []
    warnings: list[ParseWarning] = []
    block: dict[str, tuple[str, int]] = {}
    start = 0

    def flush() -> None:
        if not block:
            return
        state = _state(block, source)
        if state is None:
            warnings.append(warning_at(source, start, "status copy without a State: line; skipped"))
        else:
            states.append(state)

    for number, line in enumerate(clean_lines(text), start=1):
        match = _KEY_RE.match(line.strip())
        if match is None:
            if line.strip():
                warnings.append(warning_at(source, number, f"not a status line: {line[:80]!r}"))
            continue
        key, value = match.group(1), match.group(2).strip()
        if key == "Name" and block:
            flush()
            block = {}
        if not block:
            start = number
        block.setdefault(key, (value, number))
    flush()
    return ParseResult(proc_states=tuple(states), warnings=tuple(warnings))


def _int(block: dict[str, tuple[str, int]], key: str) -> int | None:
    value = block.get(key, ("", 0))[0].split()
    return int(value[0]) if value and value[0].isdigit() else None


def _state(block: dict[str, tuple[str, int]], source: str) -> ProcState | None:
    raw = block.get("State")
    if raw is None:
        return None
    match = _STATE_RE.match(raw[0])
    if match is None:
        return None
    return ProcState(
        pid=_int(block, "Pid") if "Pid" in block else _int(block, "Tgid"),
        state=match.group(1),
        state_text=(match.group(2) or "").strip(),
        name=block.get("Name", ("", 0))[0],
        ppid=_int(block, "PPid"),
        tracer_pid=_int(block, "TracerPid"),
        threads=_int(block, "Threads"),
        wchan="" if block.get("Wchan", ("0", 0))[0] in ("", "0") else block["Wchan"][0],
        source=Location(path=source, line=raw[1]),
    )
