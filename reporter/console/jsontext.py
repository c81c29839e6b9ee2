"""The text of a `--json` document: how `console.emit` writes any typed record.

A document class (`reporter.console.documents`, `documents_upstream`, `documents_watch`)
says how it is written: masked (`reporter.secrets.mask_data`) unless `masked = False` (a
data export, or findings that must show what they found); indented, or with one top-level
key per line for the analysis (`layout = "lines"`: the C encoder, five times faster at
4,096 ranks than `indent=`); and, with `root` set, as that one field (`status`: a bare
list, kept for compatibility).

This module imports no document and neither the analysis nor the loader, so that a small
command's `--json` (`report config show --json`) loads no more than the command itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from reporter.model.document import data
from reporter.secrets import mask_data


def json_value(doc: object) -> Any:
    """`doc` as JSON-like data, as every --json output shows it: its `root` field when
    it has one, every string masked (`[redacted]`) unless the class says `masked = False`.
    The one place a --json document is masked."""
    cls = type(doc)
    value: Any = data(doc)
    root = getattr(cls, "root", None)
    if root is not None:
        value = value[root]
    if getattr(cls, "masked", True):
        value = mask_data(value)
    return value


def render(doc: object) -> str:
    """The text `console.emit` prints for `doc`."""
    return "".join(pieces(doc))


def pieces(doc: object) -> Iterator[str]:
    """The text of `doc` in pieces (a line each for the analysis' layout), so that a large
    document is written as it is made: joined, the analysis of 4,096 ranks held its
    lines and their joined copy at once, about 8 MiB of the command's peak."""
    value = json_value(doc)
    if getattr(type(doc), "layout", "indent") == "lines":
        yield from _json_lines(value)
    else:
        yield json.dumps(value, indent=2, ensure_ascii=False) + "\n"


# `json.dumps(item, ensure_ascii=False)` with one encoder for every item: `dumps` builds
# a new one per call, a third of the cost of a rank's line.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode


def _json_lines(value: dict[str, object]) -> Iterator[str]:
    """`value` with one top-level key, and one item of a top-level list, per line (each
    piece ends with its newline)."""

    def dump(item: object) -> str:
        try:
            return _ENCODE(item)
        except RecursionError:
            # A value nested past the C encoder's limit (the tree of a 10,000-frame stack).
            return dumps_deep(item)

    yield "{\n"
    for index, (name, member) in enumerate(value.items()):
        comma = "," if index < len(value) - 1 else ""
        if isinstance(member, list) and member:
            yield f"  {dump(name)}: [\n"
            for item in member[:-1]:
                yield f"    {dump(item)},\n"
            yield f"    {dump(member[-1])}\n"
            yield f"  ]{comma}\n"
        else:
            yield f"  {dump(name)}: {dump(member)}{comma}\n"
    yield "}\n"


class _Raw(str):
    """Output text queued between values while encoding (never a value itself)."""

    __slots__ = ()


def dumps_deep(value: object) -> str:
    """`json.dumps(value, ensure_ascii=False)` for nesting of any depth, without recursion.

    The C encoder recurses once per level and stops at the recursion limit; the
    merged tree of a deep stack nests that far. Scalars still go through `json.dumps`.
    """
    parts: list[str] = []
    # Work items: a value to encode, or a piece of output text (`_Raw`).
    pending: list[object] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, _Raw):
            parts.append(item)
        elif isinstance(item, dict):
            queued: list[object] = [_Raw("{")]
            for index, (name, member) in enumerate(item.items()):
                separator = ", " if index else ""
                queued.append(_Raw(separator + json.dumps(str(name), ensure_ascii=False) + ": "))
                queued.append(member)
            queued.append(_Raw("}"))
            pending.extend(reversed(queued))
        elif isinstance(item, list):
            queued = [_Raw("[")]
            for index, member in enumerate(item):
                if index:
                    queued.append(_Raw(", "))
                queued.append(member)
            queued.append(_Raw("]"))
            pending.extend(reversed(queued))
        else:
            parts.append(json.dumps(item, ensure_ascii=False))
    return "".join(parts)
