"""Typed `--json` documents: a frozen dataclass is the document; its JSON and schema follow.

A document type is written once, as a class; `data` turns an instance into JSON-ready
data (dicts and lists, keys in field order) and `schema` gives the class's JSON Schema
(draft 2020-12). By example::

    @document
    class Preview:
        \"\"\"The HTML page written.\"\"\"

        path: str = spec("the page written")

    data(Preview(path="tp.html"))  # {"path": "tp.html"}
    schema(Preview)                # {"type": "object", "description": "The HTML page written.",
                                   #  "required": ["path"], "properties": {"path": {...}}}

Field types and what they become: `str`, `int`, `float`, `bool`, `None` in a union
(`str | None`: string or null), `Count` (an integer >= 0), a string for an enum (its
value), a `datetime` (ISO 8601 UTC), a `Location` (`file:line`) and a `Frame`
(`function (file)`), `tuple[X, ...]` (a list),
`Mapping[str, X]` (an object whose keys are data, not names: `dims`), (key, value) pairs
marked `AS_OBJECT` (the same object, from a record that keeps the pairs: `states`), a
`str` marked `EMPTY_IS_NULL` (a record's "" written as null), a
`Literal` of strings (an enum), another document (an object), and `FreeForm` (an object
whose shape the type does not fix: each use says why). A field whose value is `ABSENT`
is left out of the JSON, and its key is not required by the schema (`spec(default=ABSENT)`).
`spec(name="for")` gives a key that is not a Python name. Objects allow more keys than
the ones listed: later versions add keys and never rename these.

An analysis record is its own document (`reporter.analysis.result`): the conversions
above write its enums, times, places and frames. A document that is not a record holds
its values JSON-ready; `project` fills the fields of the same name from any object with
the same conversions.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any, Literal, TypeVar, get_args, get_origin

from reporter.core.times import iso
from reporter.model.stacks import Frame, Location

T = TypeVar("T")
JsonData = dict[str, Any]


class Minimum:
    """`Annotated[int, Minimum(0)]`: the schema says `"minimum": 0`."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value


class Shape:
    """`Annotated[X, Shape(schema, why)]`: a value whose JSON Schema is given by hand (a
    free-form object, or a shape the field types cannot say), and why."""

    __slots__ = ("schema", "why")

    def __init__(self, schema: Mapping[str, Any], why: str) -> None:
        self.schema = dict(schema)
        self.why = why


class AsObject:
    """`Annotated[tuple[tuple[str, X], ...], AS_OBJECT]`: (key, value) pairs a record keeps
    in order, written as one object whose keys are data (`{"stuck": 3, "idle": 1}`)."""

    __slots__ = ()


AS_OBJECT = AsObject()


class EmptyIsNull:
    """`Annotated[str, EMPTY_IS_NULL]`: a record's "" (not known) is written as null."""

    __slots__ = ()


EMPTY_IS_NULL = EmptyIsNull()

Count = typing.Annotated[int, Minimum(0)]
"""An integer that is never negative (a count, an index, a line number)."""

FreeForm = typing.Annotated[
    dict[str, Any],
    Shape({"type": "object"}, "an object whose keys and values come from the evidence"),
]
"""An object whose shape the type does not fix; prefer a `Mapping[str, X]` or a document."""


class _Absent:
    """The value of a field left out of the JSON (not the same as null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()
"""A field with this value is not written (its key is absent, not null)."""


def spec(
    description: str = "",
    *,
    name: str | None = None,
    default: Any = dataclasses.MISSING,
    written: bool = True,
) -> Any:
    """A document field: its `description` (shown in the docs), its JSON key when that is
    not the field's name, and a default (`ABSENT`: the key may be left out). `written=False`:
    a field a record keeps for its other readers, never in its JSON nor its schema."""
    metadata = {"description": description, "name": name, "written": written}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@typing.dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(spec,))
def document(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True, slots=True, kw_only=True)`: the form every document takes."""
    return dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)


# --- data ---------------------------------------------------------------------------

Convert = Callable[[Any], Any] | None
"""How one field's value becomes data; None: it already is (a str, int, float, bool or None)."""

_PLANS: dict[type, tuple[tuple[str, str, Convert, bool], ...]] = {}


def data(doc: object) -> Any:
    """The document as JSON-ready data: dicts in field order, lists, str, int, float, bool, None.

    Every list and dict is new, so the result can be changed in place (masking does).
    """
    return _convert_of(type(doc))(doc)


def _plan(cls: type) -> tuple[tuple[str, str, Convert, bool], ...]:
    """(attribute, JSON key, converter, may be absent) per field, worked out once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        plan = tuple(
            (
                f.name,
                f.metadata.get("name") or f.name,
                _converter(hints[f.name]),
                f.default is ABSENT,
            )
            for f in dataclasses.fields(cls)
            if f.metadata.get("written", True)
        )
        _PLANS[cls] = plan
    return plan


def _compile(cls: type) -> Callable[[Any], JsonData]:
    """A function written for `cls` that returns its dict in one expression, the way
    `dataclasses` writes `__init__`: at 16,384 ranks a loop over the fields per record
    cost more than the rest of the conversion. Compiled on first use (after every class
    is defined, so a class may name classes defined after it); nested documents first."""
    names: dict[str, Any] = {"ABSENT": ABSENT}
    fields: list[tuple[str, str, str, bool]] = []  # (attribute, key, value expression, optional)
    for index, (attr, name, conv, optional) in enumerate(_plan(cls)):
        value = f"doc.{attr}"
        if conv is not None:
            names[f"c{index}"] = conv
            value = f"c{index}({value})"
        fields.append((attr, name, value, optional))
    if not any(optional for *_rest, optional in fields):
        items = ", ".join(f"{name!r}: {value}" for _attr, name, value, _o in fields)
        lines = [f"    return {{{items}}}"]
    else:
        # Field by field, in order, so a key that may be absent keeps its place.
        lines = ["    out = {}"]
        for attr, name, value, optional in fields:
            if optional:
                lines += [f"    if doc.{attr} is not ABSENT:", f"        out[{name!r}] = {value}"]
            else:
                lines.append(f"    out[{name!r}] = {value}")
        lines.append("    return out")
    # The source is made from field names and repr()'d keys only, never from data.
    exec("\n".join(["def convert(doc):", *lines, ""]), names)
    made: Callable[[Any], JsonData] = names["convert"]
    return made


_CONVERTERS: dict[type, Callable[[Any], JsonData]] = {}


def _convert_of(cls: type) -> Callable[[Any], JsonData]:
    """The converter of `cls`, compiled once."""
    conv = _CONVERTERS.get(cls)
    if conv is None:
        conv = _CONVERTERS[cls] = _compile(cls)
    return conv


def _converter(hint: Any) -> Convert:
    """How a value of type `hint` becomes data (None: as it is)."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, *extras = get_args(hint)
        if any(isinstance(e, Shape) for e in extras):
            return _copy_data
        if any(isinstance(e, AsObject) for e in extras):
            return dict
        if any(isinstance(e, EmptyIsNull) for e in extras):
            return _none_if_empty
        return _converter(base)
    if origin in (types.UnionType, typing.Union):
        members = [a for a in get_args(hint) if a not in (type(None), _Absent)]
        if len(members) == 1:
            found = _converter(members[0])
            if found is None:
                return None
            one: Callable[[Any], Any] = found
            return lambda v: v if v is None or v is ABSENT else one(v)
        if all(_converter(m) is None for m in members):
            return None
        # A value of one of several shapes (a string or a list): copied as data.
        return _copy_data
    if origin is tuple or origin is list:
        (item, *_rest) = get_args(hint)
        found = _converter(item)
        if found is None:
            return list
        each: Callable[[Any], Any] = found
        return lambda v: [each(x) for x in v]
    if origin is Mapping or origin is dict:
        _k, item = get_args(hint)
        found = _converter(item)
        if found is None:
            return dict
        value: Callable[[Any], Any] = found
        return lambda v: {k: value(x) for k, x in v.items()}
    if origin is Literal or hint in (str, int, float, bool, type(None), Any):
        return None
    written = _written_as_text(hint)
    if written is not None:
        return written
    if dataclasses.is_dataclass(hint):
        return _convert_of(hint)  # type: ignore[arg-type]
    raise TypeError(f"unsupported field type {hint}")


def _none_if_empty(value: str) -> str | None:
    return value or None


def _enum_value(value: Enum) -> Any:
    return value.value


def _frame_text(value: Frame) -> str:
    return value.display()


def _written_as_text(hint: Any) -> Callable[[Any], Any] | None:
    """How a record's value that JSON writes as a string becomes one: an enum its value, a
    time ISO 8601 UTC (`times.iso`), a place `file:line`, a frame `function (file)`;
    None when `hint` is none of these. So an analysis record is its own document."""
    if not isinstance(hint, type):
        return None
    if issubclass(hint, Enum):
        return _enum_value
    if issubclass(hint, datetime):
        return iso
    if issubclass(hint, Location):
        return str
    if issubclass(hint, Frame):
        return _frame_text
    return None


def _copy_data(value: Any) -> Any:
    """A JSON value with fresh lists and dicts (tuples become lists), without recursion."""
    root: list[Any] = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, index = pending.pop()
        item = holder[index]
        if isinstance(item, dict):
            fresh: Any = dict(item)
            pending.extend((fresh, k) for k in fresh)
        elif isinstance(item, list | tuple):
            fresh = list(item)
            pending.extend((fresh, i) for i in range(len(fresh)))
        else:
            continue
        holder[index] = fresh
    return root[0]


# --- building -----------------------------------------------------------------------


_PLAIN = frozenset((str, int, float, bool, type(None)))


def jsonable(value: object) -> Any:
    """`value` JSON-ready: enums give their value, times ISO 8601 UTC (`times.iso`), frames
    `function (file)`, places `file:line`, lists and tuples a tuple of the same; anything
    else as it is."""
    if type(value) in _PLAIN:
        return value  # most values: one set lookup instead of five isinstance calls
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, Frame):
        return value.display()
    if isinstance(value, Location):
        return str(value)
    if isinstance(value, tuple | list):
        return tuple(jsonable(item) for item in value)
    return value


_FIELDS: dict[type, tuple[str, ...]] = {}


def project(cls: Callable[..., T], obj: object, /, **given: Any) -> T:
    """A `cls` document whose fields are `obj`'s attributes of the same name (`jsonable`),
    except those `given`."""
    names = _FIELDS.get(cls)  # type: ignore[call-overload]
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[index, arg-type]
    values = {n: jsonable(getattr(obj, n)) for n in names if n not in given}
    return cls(**values, **given)


# --- schema -------------------------------------------------------------------------


def schema(cls: type) -> JsonData:
    """The JSON Schema (draft 2020-12) of a document class; its docstring's first
    paragraph is the description."""
    return _object_schema(cls, _first_paragraph(cls.__doc__ or ""))


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n", 1)[0].split())


def _object_schema(cls: type, description: str) -> JsonData:
    hints = typing.get_type_hints(cls, include_extras=True)
    required: list[str] = []
    properties: JsonData = {}
    for f in dataclasses.fields(cls):
        if not f.metadata.get("written", True):
            continue
        name = f.metadata.get("name") or f.name
        if f.default is not ABSENT:
            required.append(name)
        sub = _schema_of(hints[f.name])
        if f.metadata.get("description"):
            sub = {**sub, "description": f.metadata["description"]}
        properties[name] = sub
    return {
        "type": "object",
        "description": description,
        "required": required,
        "properties": properties,
    }


def _schema_of(hint: Any) -> JsonData:
    origin = get_origin(hint)
    if origin is typing.Annotated:
        base, *extras = get_args(hint)
        for extra in extras:
            if isinstance(extra, Shape):
                return dict(extra.schema)
            if isinstance(extra, AsObject):
                (pair,) = get_args(base)[:1]
                return {"type": "object", "additionalProperties": _schema_of(get_args(pair)[1])}
            if isinstance(extra, EmptyIsNull):
                return {"type": ["string", "null"]}
        out = _schema_of(base)
        for extra in extras:
            if isinstance(extra, Minimum):
                out["minimum"] = extra.value
        return out
    if origin in (types.UnionType, typing.Union):
        members = [a for a in get_args(hint) if a is not _Absent]
        nullable = type(None) in members
        members = [m for m in members if m is not type(None)]
        parts = [_schema_of(m) for m in members]
        kinds: list[str] = []
        for part in parts:
            kind = part.get("type")
            kinds.extend(kind if isinstance(kind, list) else [kind] if kind else [])
        if nullable:
            kinds.append("null")
        if len(parts) == 1:
            out = dict(parts[0])
            if "enum" in out and nullable:
                out["enum"] = [*out["enum"], None]
            elif kinds:
                out["type"] = kinds if len(kinds) > 1 else kinds[0]
            return out
        return {"type": kinds}
    if origin is tuple or origin is list:
        return {"type": "array", "items": _schema_of(get_args(hint)[0])}
    if origin is Mapping or origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(get_args(hint)[1])}
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is Any:
        return {}
    if _written_as_text(hint) is not None:
        return {"type": "string"}
    if dataclasses.is_dataclass(hint):
        return _object_schema(hint, _phrase(_first_paragraph(hint.__doc__ or "")))  # type: ignore[arg-type]
    raise TypeError(f"unsupported field type {hint}")


def _phrase(sentence: str) -> str:
    """A nested record's docstring as a field description: "One edge." -> "one edge"
    (the docs' tables describe keys in lower-case phrases)."""
    if sentence[:2].istitle():
        sentence = sentence[0].lower() + sentence[1:]
    return sentence.removesuffix(".")
