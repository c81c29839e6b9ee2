"""Compact rank sets: `[0-3,7]` for the ranks 0, 1, 2, 3 and 7, and back.

`RankSet` is the base of every result record that holds a rank set with its label.

Every report, JSON document and CLI option that names several ranks uses this form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from reporter.core.errors import UsageError


def format_ranks(ranks: Iterable[int]) -> str:
    """Compact, sorted, de-duplicated rank set: `[0-3,7]`; `[]` when empty."""
    values = sorted(set(ranks))
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return "[" + ",".join(parts) + "]"


def format_pids(pids: Iterable[int], *, most: int = 8) -> str:
    """PIDs listed, never as a range (`8261, 8262`): two PIDs are two processes, not every
    number between them. Past `most`, the first ones and how many more."""
    values = sorted(set(pids))
    shown = ", ".join(str(p) for p in values[:most])
    return f"{shown} and {len(values) - most} more" if len(values) > most else shown


_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def parse_ranks(text: str) -> tuple[int, ...]:
    """Inverse of `format_ranks`: `"[0-3,7]"` -> `(0, 1, 2, 3, 7)` (brackets optional)."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    if not body.strip():
        return ()
    out: set[int] = set()
    for part in body.split(","):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise UsageError(
                f"rank set {text!r}: cannot read {part.strip()!r}",
                tip="write ranks like [0-3,7]",
            )
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        if high < low:
            raise UsageError(f"rank set {text!r}: range {part.strip()!r} runs backwards")
        out.update(range(low, high + 1))
    return tuple(sorted(out))


@dataclass(frozen=True, slots=True, kw_only=True)
class RankSet:
    """A record holding a sorted rank set `ranks` and its compact `label` (`[0-3,7]`).

    The label is derived, never passed, so that the two cannot disagree.
    """

    ranks: tuple[int, ...]
    label: str = field(init=False, metadata={"description": "compact rank set, e.g. [0-3,7]"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", format_ranks(self.ranks))
