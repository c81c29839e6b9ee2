"""Small text helpers shared by every layer: counted nouns, compact numbers, word wrapping,
version order."""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

_LEADING_VERSION = re.compile(r"\d+(?:\.\d+)*")

_SIBILANT_ENDINGS = ("s", "sh", "ch", "x", "z")


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 snapshot`, `3 snapshots`, `2 processes`; `many` for irregular plurals."""
    if count == 1:
        return f"1 {word}"
    if many is None:
        many = word + "es" if word.endswith(_SIBILANT_ENDINGS) else word + "s"
    return f"{count} {many}"


def number(value: float) -> str:
    """A measurement as a short figure: whole values without `.0`, others to 4 digits."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def wrap(text: str, width: int) -> list[str]:
    """`text`'s words in lines of at most `width` characters (a longer word gets its own line)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    if current:
        lines.append(current)
    return lines


def version_key(text: str) -> tuple[Version, str]:
    """Sort key putting version strings in release order (`3.9.1` < `3.10.0`, `3.13.0rc1` <
    `3.13.0`), by `packaging.version`; a string it cannot read sorts by its leading
    `N.N...` part (`3.12.0+` as 3.12.0), then by its text."""
    try:
        return Version(text), ""
    except InvalidVersion:
        match = _LEADING_VERSION.match(text.strip())
        return Version(match.group(0) if match else "0"), text
