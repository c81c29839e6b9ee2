"""Bounds on the report's per-process parts, so a report stays readable at any rank count.

A bundle of thousands of ranks would draw thousands of dump blocks and table rows that
say, rank after rank, what the class tables already say. Past `MAX_SHOWN` processes (no
bundle in `fixtures/` comes near it), the report draws:

- the dumps of one process per stack class (its first rank), every laggard, every rank
  with a failed dump and every process that is not a rank (up to `MAX_SHOWN` in all);
  one line then names the ranks left out and says their files stay whole in the bundle;
- the environment table's rows for those same processes, then one row counting the rest;
- the evidence index grouped by kind and what the report does with the files, each group
  naming its first and last file and how many there are.

Pure: input the `Analysis` and rows already built, output what to draw.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reporter.analysis.ranks import format_ranks
from reporter.analysis.result import Analysis, RankProcess

# Processes (and table rows) a report draws one by one; past this the rest are counted.
MAX_SHOWN = 64
# The evidence index names every file up to this many (a bundle of a few dozen processes,
# each with its /proc rounds, stays fully reachable from the report); past it, runs of
# files alike share a row.
MAX_INDEX_ROWS = 256


def shown_processes(
    analysis: Analysis, processes: Sequence[RankProcess]
) -> tuple[list[RankProcess], list[RankProcess]]:
    """(drawn, left out) of `processes`, in their order; all drawn up to `MAX_SHOWN`."""
    if len(processes) <= MAX_SHOWN:
        return list(processes), []
    firsts = {(c.instance, c.ranks[0]) for c in analysis.classes if c.ranks}
    named = set(analysis.laggards) | {f.rank for f in analysis.failed if f.rank is not None}
    drawn: list[RankProcess] = []
    left: list[RankProcess] = []
    for process in processes:
        ident = process.identity
        keep = (
            (ident.instance, process.unit) in firsts
            or (ident.rank is not None and ident.rank in named)
            or process.unit is None
        )
        (drawn if keep and len(drawn) < MAX_SHOWN else left).append(process)
    return drawn, left


def left_out_line(left: Sequence[RankProcess], what: str) -> str:
    """One line naming the processes `left` out of `what`, and where their evidence is."""
    ranks = [p.identity.rank for p in left if p.identity.rank is not None]
    others = len(left) - len(ranks)
    parts = []
    if ranks:
        parts.append(f"rank{'s' if len(ranks) > 1 else ''} {format_ranks(sorted(ranks))}")
    if others:
        parts.append(f"{others} other process{'es' if others > 1 else ''}")
    files = sorted({d.source.path for p in left for d in p.snapshots})
    where = f"{files[0]} to {files[-1]}" if len(files) > 1 else files[0]
    return (
        f"{len(left)} more processes ({' and '.join(parts)}) are left out of {what}; "
        "Stacks by class names the class of every rank, and one process of each class is "
        f"shown. Their {len(files)} files ({where}) stay whole in the bundle, and "
        "report analyze --json lists every process."
    )


def grouped_index(
    rows: Sequence[tuple[str, str, str]],
) -> list[tuple[str, str, int, str, str]]:
    """(first path, last path, count, kind, shown) per run of files alike, past
    `MAX_INDEX_ROWS` rows; `rows` are (path, kind, shown). Files alike: the same kind, and the same `shown`
    once rank and PID numbers are set aside. The numbers set aside are listed when there
    are at most `LISTED` of them (`dumps of rank 0, 1, 2`), else their range and count
    (`dumps of rank 0 to 4095 (4,096 in all)`)."""
    groups: dict[tuple[str, str], list[str]] = {}
    shown_as: dict[tuple[str, str], list[str]] = {}
    for path, kind, shown in rows:
        key = (kind, _RANK_NUMBERS.sub(_SLOT, shown))
        groups.setdefault(key, []).append(path)
        shown_as.setdefault(key, []).append(shown)
    out = []
    for (kind, general), paths in groups.items():
        out.append(
            (paths[0], paths[-1], len(paths), kind, _merged(general, shown_as[(kind, general)]))
        )
    return out


# Where a number stood in a `shown` text (a character no text of ours holds).
_SLOT = "\x00"
LISTED = 8


def _merged(general: str, shown: Sequence[str]) -> str:
    """One `shown` text for files alike: the numbers of its one slot listed or ranged."""
    if len(set(shown)) == 1:
        return shown[0]
    if general.count(_SLOT) != 1:
        return general.replace(_SLOT, "N")
    numbers = sorted({int(_RANK_NUMBERS.findall(s)[0]) for s in shown})
    if len(numbers) <= LISTED:
        said = ", ".join(str(n) for n in numbers)
    else:
        said = f"{numbers[0]} to {numbers[-1]} ({len(numbers):,} in all)"
    return general.replace(_SLOT, said)


_RANK_NUMBERS = re.compile(r"\d+")


def command_lines(lines: Sequence[str]) -> list[str]:
    """Distinct command lines as drawn: all of them, or past `MAX_SHOWN` one per shape (lines
    that differ only in numbers, such as `scheduler_TP0` ... `scheduler_TP4095`) with a
    count, at most `MAX_SHOWN` shapes and a line counting the rest."""
    if len(lines) <= MAX_SHOWN:
        return list(lines)
    shapes: dict[str, list[str]] = {}
    for line in lines:
        shapes.setdefault(_RANK_NUMBERS.sub("N", line), []).append(line)
    out = []
    for alike in list(shapes.values())[:MAX_SHOWN]:
        out.append(alike[0])
        if len(alike) > 1:
            out.append(f"… and {len(alike) - 1} more differing only in numbers, to {alike[-1]}")
    if len(shapes) > MAX_SHOWN:
        out.append(f"… and {len(shapes) - MAX_SHOWN} more kinds of command line in the dumps")
    return out
