"""Fold the files' `ParseResult`s into the bundle's `Evidence` fields, one `FieldMerge` each.

The loader (`reporter.load.bundle`) reads and parses every file; this module merges them
without knowing any kind: each field of `Evidence` (but `warnings`, which the loader keeps
in file order with its own) has one `FieldMerge`, either in `CORE_MERGES` below or in the
`merges` of the kind that brings it (`REGISTRY`). Pure: parsed files in, field values out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

from reporter.evidence import metrics
from reporter.evidence.kinds import REGISTRY
from reporter.evidence.kinds.interface import (
    FieldMerge,
    FileFacts,
    dated,
    dated_on_host,
    flat,
)
from reporter.model import Environment, Evidence, ParseResult, ParseWarning


def _environment(values: Sequence[Any]) -> tuple[Any, Sequence[ParseWarning]]:
    return Environment.combined(values), ()


def _series(values: Sequence[Any]) -> tuple[Any, Sequence[ParseWarning]]:
    # Counters become rates only once every file's samples are together.
    return metrics.finish([s for value in values for s in value])


# The fields several kinds fill (py-spy and faulthandler dumps, the metric kinds' series,
# systemd's and logs' events, the environment family, Flight Recorder dumps and logs).
CORE_MERGES: tuple[FieldMerge, ...] = (
    FieldMerge("dumps", stamp=dated_on_host),
    FieldMerge("series", finish=_series),
    # Manifest events come first (the loader passes them as the first file), then by time.
    FieldMerge(
        "events",
        finish=flat(key=lambda e: (e.at, e.source.path, e.source.line, e.kind.value, e.text)),
    ),
    FieldMerge("environment", finish=_environment),
    # Sorted by (trace set, rank): the dumps' traces and the NCCL watchdog's lines (logs).
    FieldMerge(
        "flight_recorder",
        stamp=dated,
        finish=flat(key=lambda t: (t.trace_set, t.rank is None, t.rank or 0, t.source.path)),
    ),
)
# Every field's merge: the core's, then each registered kind's.
MERGES: tuple[FieldMerge, ...] = (*CORE_MERGES, *(m for e in REGISTRY for m in e.merges))


@dataclass(frozen=True, slots=True)
class Parsed:
    """One file's parse, its facts and its place in capture order (asked only when a
    field merged in capture order has records from it: the place may cost a `stat`)."""

    result: ParseResult
    facts: FileFacts
    order: Callable[[], tuple[Any, ...]]


def fold(parsed: Sequence[Parsed]) -> tuple[dict[str, Any], list[ParseWarning]]:
    """Every merged `Evidence` field's bundle value, by field name, and the warnings that
    finishing them gave (metric cleaning's)."""
    places: dict[int, tuple[Any, ...]] = {}
    out: dict[str, Any] = {}
    warnings: list[ParseWarning] = []
    results = [one.result for one in parsed]
    for merge in MERGES:
        taken: list[tuple[int, Any]] = []
        # The files that fill the field, picked in one pass in C: a field is empty in most
        # files (16,384 dump files fill one of twenty).
        for index in compress(range(len(results)), map(attrgetter(merge.field), results)):
            one = parsed[index]
            value = getattr(one.result, merge.field)
            if isinstance(value, tuple):
                value = tuple(map(merge.stamp, value, repeat(one.facts)))
            taken.append((index, value))
        if merge.capture_order:
            for index, _ in taken:
                if index not in places:
                    places[index] = parsed[index].order()
            taken.sort(key=lambda pair: places[pair[0]])
        value, said = merge.finish([v for _, v in taken])
        out[merge.field] = value
        warnings.extend(said)
    return out, warnings


def unmerged() -> list[str]:
    """`Evidence` fields with no merge, or with more than one (for the registry's test)."""
    names = [m.field for m in MERGES]
    wanted = [f.name for f in fields(Evidence) if f.name != "warnings"]
    return sorted(
        {n for n in wanted if names.count(n) != 1} | {n for n in names if n not in wanted}
    )
