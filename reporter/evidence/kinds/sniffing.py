"""What several kinds' sniffing shares: markers found at a line start, and a head made mostly
of one kind of line.

A `Marker` is a needle found with `str.find`, then checked with a pattern matched at the
needle and bounded by the end of its line: a few C-level scans per file. A marker counts at
the start of a line or after a log prefix (the character before it is a space, `|` or
`]`), so `ValueError: ` is not py-spy's `Error: `.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# How much of a file sniffing reads, and the first part most files are told by.
SNIFF_CHARS = 64 * 1024
QUICK_CHARS = 4 * 1024


@dataclass(frozen=True, slots=True)
class Marker:
    """A line (or the start of one) that only one kind's files have."""

    needle: str
    pattern: re.Pattern[str]
    confirm: Callable[[str, int], bool] | None = None
    """A further test of the head at the marker's offset (`Process N:` needs a `Python v`)."""


def earliest(head: str, markers: tuple[Marker, ...], limit: int | None = None) -> int:
    """Offset of the earliest marker in `head` (starting at `limit` or before), or -1."""
    found = -1
    end = len(head) if limit is None else limit
    for marker in markers:
        at = _find(head, marker, found if found >= 0 else end)
        if at >= 0:
            found = at
    return found


def _find(head: str, marker: Marker, limit: int) -> int:
    """Offset of the first `marker` starting before `limit` (or at it), or -1."""
    needle = marker.needle
    start = 0
    while True:
        at = head.find(needle, start, limit + len(needle))
        if at < 0:
            return -1
        end = head.find("\n", at)
        if end < 0:
            end = len(head)
        before = head[at - 1] if at else "\n"
        if (
            before in "\n\r \t|]"
            and marker.pattern.match(head, at, end)
            and (marker.confirm is None or marker.confirm(head, at))
        ):
            return at
        # One try per line keeps a long line full of needles linear.
        start = end + 1


def mostly(head: str, is_frame: Callable[[str], bool]) -> bool:
    """Two or more non-blank lines are frames (`is_frame`), and at least two thirds of them."""
    frames = 0
    other = 0
    for line in head.split("\n"):
        if not line.strip():
            continue
        if is_frame(line):
            frames += 1
        else:
            other += 1
    return frames >= 2 and frames >= 2 * other
