"""The fd table of one process as link targets (kind `proc-fds`) into `FdEntry` records.

`report collect` writes one such file per target and round (`proc/pid4711-s0.fds`) from
the links in `/proc/PID/fd/` and, for pipes, the access mode in `/proc/PID/fdinfo/FD`::

    # report-proc: fds pid=4711 snapshot=0 at=2026-12-07T12:40:00.123456Z
    # fd	mode	target
    0	r	/dev/null
    1	w	pipe:[91234]
    3		socket:[67890]

`mode` is `r`, `w`, `rw` or empty (not read). Targets are paths after the secret policy,
with tab, newline and backslash escaped. Nothing here follows a path.
"""

from __future__ import annotations

import re

from reporter.evidence import prochead
from reporter.evidence._text import excerpt, warning_at
from reporter.evidence.kinds.interface import round_read_entry
from reporter.model import EvidenceKind, FdEntry, FdKind, Location, ParseResult

SNIFF = prochead.sniffer("fds")
_INODE_RE = re.compile(r"(pipe|socket):\[(\d+)\]\Z")
_MODES = frozenset({"", "r", "w", "rw"})


def looks_like(head: str) -> bool:
    """True when `head` starts with the `fds` header."""
    return SNIFF.match(head) is not None


def fd_kind(target: str) -> tuple[FdKind, int | None]:
    """What a link target points at, and the inode of a pipe or socket."""
    match = _INODE_RE.match(target)
    if match:
        kind = FdKind.PIPE if match.group(1) == "pipe" else FdKind.SOCKET
        return kind, int(match.group(2))
    if target.startswith("anon_inode:"):
        return FdKind.ANON, None
    if target.startswith("/"):
        return FdKind.FILE, None
    return FdKind.OTHER, None


def parse(text: str, *, source: str) -> ParseResult:
    """Every fd row of `text`; never raises on malformed input."""
    head, rows, warnings = prochead.lines(text, source=source, kind="fds")
    if head is None:
        return ParseResult(warnings=tuple(warnings))
    entries: list[FdEntry] = []
    for number, line in rows:
        parts = line.split("\t", 2)
        if len(parts) < 3 or not parts[0].isdigit() or parts[1] not in _MODES:
            warnings.append(warning_at(source, number, f"not an fd row: {excerpt(line)}"))
            continue
        target = prochead.unescape(parts[2])
        kind, inode = fd_kind(target)
        entries.append(
            FdEntry(
                pid=head.pid,
                fd=int(parts[0]),
                target=target,
                kind=kind,
                inode=inode,
                mode=parts[1],
                captured_at=head.at,
                snapshot=head.snapshot,
                source=Location(path=source, line=number),
            )
        )
    return ParseResult(fd_entries=tuple(entries), warnings=tuple(warnings))


ENTRY = round_read_entry(
    EvidenceKind.PROC_FDS,
    name="fds",
    says="the fd table as link targets (/proc/{pid}/fd)",
    field="fd_entries",
    parse=parse,
    looks_like=looks_like,
)
