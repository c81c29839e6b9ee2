"""One way to turn frozen result records into `analyze --json` data.

`record(obj, "ranks label separated_by=how")` gives `{"ranks": [...], "label": ...,
"separated_by": ...}` in the order named (like `namedtuple`'s field list): `key=attr` renames. Values are made
JSON-ready by type: enums give their value, times ISO 8601 UTC (`times.iso`), frames
`function (file)`, places `file:line`, tuples lists; anything else passes as it is.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from functools import cache

from reporter.core.times import iso
from reporter.model import Frame, Location

JSON = dict[str, object]


# Values that pass as they are (their exact types: an enum member is not one of them).
_PLAIN = frozenset({str, int, float, bool, type(None)})


def jsonable(value: object) -> object:
    """`value` as JSON-ready data (see the module docstring)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, Frame):
        return value.display()
    if isinstance(value, Location):
        return str(value)
    if isinstance(value, tuple | list):
        return [jsonable(item) for item in value]
    return value


def record(obj: object, spec: str) -> JSON:
    """The attributes `spec` names (space-separated) of `obj`, JSON-ready, in that order."""
    return {key: jsonable(getattr(obj, attr)) for key, attr in _fields(spec)}


@cache
def _fields(spec: str) -> tuple[tuple[str, str], ...]:
    """(key, attribute) of each item of a `record` spec."""
    out = []
    for item in spec.split():
        key, _, attr = item.partition("=")
        out.append((key, attr or key))
    return tuple(out)
