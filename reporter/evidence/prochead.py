"""The first line `report collect` writes on each of its per-round `/proc` files, read back.

Every `proc-threads`, `proc-fds`, `proc-sockets` and `proc-family` file starts with one
line naming its kind, the process, the round and the moment it was read::

    # report-proc: fds pid=4711 snapshot=0 at=2026-12-07T12:40:00.123456Z

so a file found loose (renamed, copied out of its bundle) still says what it is and
when it was taken. Lines starting with `# truncated:` say the capture stopped early (a
size cap or the deadline); the parsers turn them into warnings. Pure: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from reporter.core.times import parse_iso
from reporter.evidence._text import clean_lines, warning_at
from reporter.model import ParseWarning

MARKER = "# report-proc: "
_HEAD_RE = re.compile(
    r"# report-proc: (?P<kind>[a-z]+)\s+pid=(?P<pid>\d+)"
    r"(?:\s+snapshot=(?P<snapshot>\d+))?(?:\s+at=(?P<at>\S+))?"
)
TRUNCATED = "# truncated:"


@dataclass(frozen=True, slots=True, kw_only=True)
class Head:
    """What the first line says: kind word, PID, round (None if absent) and time."""

    kind: str
    pid: int
    snapshot: int | None = None
    at: datetime | None = None


def read_head(text: str) -> Head | None:
    """The header of a per-round `/proc` file, or None when the first line is not one."""
    first = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    match = _HEAD_RE.match(first)
    if match is None:
        return None
    at, _zoned = parse_iso(match.group("at")) if match.group("at") else (None, False)
    snapshot = match.group("snapshot")
    return Head(
        kind=match.group("kind"),
        pid=int(match.group("pid")),
        snapshot=int(snapshot) if snapshot is not None else None,
        at=at,
    )


def lines(
    text: str, *, source: str, kind: str
) -> tuple[Head | None, list[tuple[int, str]], list[ParseWarning]]:
    """The header of a per-round file of `kind`, its data lines as (line number, line), and
    the warnings so far. Blank lines and comments are left out, except the socket tables'
    names (`# /proc/4711/net/tcp`); a `# truncated:` line becomes a warning. Without a
    header of `kind`: (None, [], [a warning saying so])."""
    head = read_head(text)
    if head is None or head.kind != kind:
        return None, [], [warning_at(source, 1, f"no `{MARKER}{kind} pid=N` header")]
    rows: list[tuple[int, str]] = []
    warnings: list[ParseWarning] = []
    for number, line in enumerate(clean_lines(text), start=1):
        stripped = line.strip()
        if number == 1 or not stripped:
            continue
        if stripped.startswith(TRUNCATED):
            warnings.append(warning_at(source, number, stripped[2:].strip()))
        elif not stripped.startswith("#") or stripped.startswith("# /"):
            rows.append((number, line))
    return head, rows, warnings


def sniffer(kind: str) -> re.Pattern[str]:
    """The pattern `sniff` uses for one kind word: the header at the start of the file."""
    return re.compile(rf"\A\ufeff?# report-proc: {kind}\s+pid=\d+")


def unescape(field: str) -> str:
    """A tab-separated field as written (`\\t`, `\\n` and `\\\\` escaped) back to its text."""
    if "\\" not in field:
        return field
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), field)
