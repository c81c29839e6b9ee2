"""Compact rank sets: `[0-3,7]` for the ranks 0, 1, 2, 3 and 7, and back.

`RankSet` is the base of every result record that holds a rank set with its label.

Every report, JSON document and CLI option that names several ranks uses this form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from reporter.core.errors import UsageError


def format_ranks(ranks: Iterable[int]) -> str:
    """Compact, sorted, de-duplicated rank set: `[0-3,7]`; `[]` when empty."""
    values = sorted(set(ranks))
    if not values:
        return "[]"
    first, last = values[0], values[-1]
    if last - first == len(values) - 1:  # one run (every rank, or a block of them)
        return f"[{first}]" if first == last else f"[{first}-{last}]"
    # Comprehensions over pairs, not an index loop: a 16,384-rank set is labelled many times.
    pairs = list(pairwise(values))
    starts = [first, *[b for a, b in pairs if b != a + 1]]
    ends = [*[a for a, b in pairs if b != a + 1], last]
    return (
        "["
        + ",".join(str(a) if a == b else f"{a}-{b}" for a, b in zip(starts, ends, strict=True))
        + "]"
    )


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
