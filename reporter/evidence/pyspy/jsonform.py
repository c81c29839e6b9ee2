"""`py-spy dump --json` (docs/formats.md 1.6): a JSON array of thread objects of one process.

Threads come out oldest first, like the text form (py-spy's JSON is newest first).
"""

from __future__ import annotations

import json
from typing import Any

from reporter.evidence._text import warning_at
from reporter.model import (
    EvidenceKind,
    Frame,
    Local,
    Location,
    ParseResult,
    ParseWarning,
    ProcessDump,
    ThreadStack,
    ThreadStatus,
)


def parse_json(text: str, *, source: str) -> ParseResult:
    """Parse `py-spy dump --json` output: a JSON array of thread objects of one process.

    Threads come out oldest first (py-spy's JSON is newest first, so it is reversed
    to match the text format). `thread_id` becomes the decimal string of the JSON
    `thread_id` (the pthread id, which is the hex id of faulthandler dumps), and the
    status is rebuilt from `active` and `owns_gil`. Several arrays one after the
    other give one dump each. Invalid JSON gives a warning naming line and column.
    """
    warnings: list[ParseWarning] = []
    dumps: list[ProcessDump] = []
    thread_lines = _json_object_lines(text)
    decoder = json.JSONDecoder()
    position = 0
    size = len(text)
    while True:
        position = _skip_space(text, position)
        if position >= size:
            break
        start_line = text.count("\n", 0, position) + 1
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as err:
            warnings.append(
                warning_at(source, err.lineno, f"invalid JSON: {err.msg} (column {err.colno})")
            )
            break
        except (RecursionError, ValueError) as err:
            warnings.append(warning_at(source, start_line, f"invalid JSON: {err}"))
            break
        if not isinstance(value, list):
            warnings.append(
                warning_at(
                    source,
                    start_line,
                    f"expected a JSON array of threads, found {type(value).__name__}",
                )
            )
            continue
        dumps.extend(_json_dump(value, source, start_line, thread_lines, warnings))
    if not dumps and not warnings:
        warnings.append(warning_at(source, 1, "no JSON found"))
    return ParseResult(dumps=tuple(dumps), warnings=tuple(warnings))


def _skip_space(text: str, position: int) -> int:
    size = len(text)
    while position < size and text[position] in " \t\r\n\ufeff":
        position += 1
    return position


def _json_object_lines(text: str) -> list[int]:
    """Line numbers of thread objects in py-spy's pretty-printed JSON (`  {` lines)."""
    return [number for number, line in enumerate(text.split("\n"), 1) if line.rstrip("\r") == "  {"]


def _json_dump(
    threads: list[Any],
    source: str,
    start_line: int,
    thread_lines: list[int],
    warnings: list[ParseWarning],
) -> list[ProcessDump]:
    """One array → one dump per PID found in it (one, for py-spy's output)."""
    if not threads:
        warnings.append(
            warning_at(source, start_line, "empty JSON array: the process has no threads")
        )
        return [
            ProcessDump(
                pid=None,
                kind=EvidenceKind.PYSPY_JSON,
                source=Location(path=source, line=start_line),
            )
        ]
    later = [n for n in thread_lines if n > start_line]
    lines = later[: len(threads)] if len(later) >= len(threads) else [start_line] * len(threads)
    by_pid: dict[int | None, list[ThreadStack]] = {}
    for index, item in enumerate(threads):
        line = lines[index]
        if not isinstance(item, dict):
            warnings.append(warning_at(source, line, f"thread {index}: expected an object"))
            continue
        stack = _json_thread(item, source, line, warnings)
        by_pid.setdefault(_int(item.get("pid")), []).append(stack)
    dumps = []
    for pid, stacks in by_pid.items():
        stacks.reverse()  # py-spy's JSON is newest first; the model is oldest first
        dumps.append(
            ProcessDump(
                pid=pid,
                kind=EvidenceKind.PYSPY_JSON,
                threads=tuple(stacks),
                source=Location(path=source, line=start_line),
            )
        )
    return dumps


def _json_thread(
    item: dict[str, Any], source: str, line: int, warnings: list[ParseWarning]
) -> ThreadStack:
    """One StackTrace object (docs/formats.md 1.6)."""
    active = item.get("active")
    owns_gil = item.get("owns_gil")
    if not isinstance(active, bool):
        status = ThreadStatus.UNKNOWN
    elif not active:
        status = ThreadStatus.IDLE
    else:
        status = ThreadStatus.ACTIVE_GIL if owns_gil is True else ThreadStatus.ACTIVE
    thread_id = _int(item.get("thread_id"))
    if thread_id is None:
        warnings.append(warning_at(source, line, "thread object without an integer thread_id"))
    name = item.get("thread_name")
    frames: list[Frame] = []
    raw_frames = item.get("frames")
    if isinstance(raw_frames, list):
        for raw in raw_frames:
            frame = _json_frame(raw)
            if frame is None:
                warnings.append(
                    warning_at(source, line, "frame without a name or filename skipped")
                )
            else:
                frames.append(frame)
    elif raw_frames is not None:
        warnings.append(warning_at(source, line, "thread 'frames' is not a list"))
    return ThreadStack(
        thread_id=str(thread_id) if thread_id is not None else "?",
        status=status,
        name=name if isinstance(name, str) else None,
        frames=tuple(frames),
        os_thread_id=_int(item.get("os_thread_id")),
        owns_gil=owns_gil if isinstance(owns_gil, bool) else None,
        source=Location(path=source, line=line),
    )


def _json_frame(raw: Any) -> Frame | None:
    """One Frame object: text mode's short filename where py-spy computed one."""
    if not isinstance(raw, dict):
        return None
    name = raw.get("name")
    short = raw.get("short_filename")
    full = raw.get("filename")
    file = short if isinstance(short, str) and short else full
    if not isinstance(name, str) or not isinstance(file, str):
        return None
    number = _int(raw.get("line"))
    module = raw.get("module")
    local_items: list[Local] = []
    raw_locals = raw.get("locals")
    if isinstance(raw_locals, list):
        for entry in raw_locals:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                value = entry.get("repr")
                local_items.append(
                    Local(
                        name=entry["name"],
                        # py-spy prints `?` when it could not read the value; JSON says null.
                        repr=value if isinstance(value, str) else "?",
                        is_arg=entry.get("arg") is True,
                    )
                )
    return Frame(
        function=name,
        file=file,
        line=number or None,
        native=isinstance(module, str) and bool(module),
        locals=tuple(local_items),
    )


def _int(value: Any) -> int | None:
    """JSON integers only (booleans are ints in Python; they are not ids)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
