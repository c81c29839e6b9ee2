"""`reporter.model.document`: JSON data and JSON Schema generated from a document class."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

import jsonschema
import pytest

from reporter.model.document import (
    ABSENT,
    AS_OBJECT,
    EMPTY_IS_NULL,
    Count,
    FreeForm,
    Shape,
    data,
    document,
    jsonable,
    project,
    schema,
    spec,
)
from reporter.model.stacks import Frame, Location


@document
class Side:
    """One side."""

    ranks: tuple[int, ...]
    at: str = spec("file:line")


@document
class Edge:
    """An edge between two sides.

    More text that is not part of the description.
    """

    note: ClassVar[str] = "not a field"

    waiting: Side
    waited: Side = spec("the side waited for", name="for")
    kind: Literal["collective", "p2p"]
    maybe: str | None
    count: Count
    later: str = spec("present only sometimes", default=ABSENT)
    states: Mapping[str, int] = spec("state -> count: keys are data")
    sides: tuple[Side, ...]
    extra: FreeForm
    last: float


def _edge(**given: Any) -> Edge:
    values: dict[str, Any] = {
        "waiting": Side(ranks=(0, 1), at="a.py:1"),
        "waited": Side(ranks=(2,), at="b.py:2"),
        "kind": "p2p",
        "maybe": None,
        "count": 3,
        "states": {"stuck": 2},
        "sides": (Side(ranks=(), at=""),),
        "extra": {"a": [1, {"b": (2, 3)}]},
        "last": 0.5,
    }
    return Edge(**{**values, **given})


def test_data_keeps_field_order_renames_and_null_against_absent() -> None:
    out = data(_edge())
    assert list(out) == [
        "waiting", "for", "kind", "maybe", "count", "states", "sides", "extra", "last"
    ]  # fmt: skip
    assert out["maybe"] is None and "later" not in out
    assert out["for"] == {"ranks": [2], "at": "b.py:2"}
    # An optional key in the middle of the fields keeps its place when present.
    assert list(data(_edge(later="x")))[5:7] == ["later", "states"]


def test_data_is_fresh_plain_json() -> None:
    edge = _edge()
    out = data(edge)
    assert out["extra"] == {"a": [1, {"b": [2, 3]}]}  # tuples inside free-form data too
    out["states"]["stuck"] = 99
    out["extra"]["a"].append(4)
    assert edge.states == {"stuck": 2} and edge.extra == {"a": [1, {"b": (2, 3)}]}
    assert json.loads(json.dumps(out)) == out


def test_free_form_data_of_any_depth_is_copied_without_recursion() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(20_000):
        node["c"] = {}
        node = node["c"]
    out = data(_edge(extra=deep))
    depth = 0
    node = out["extra"]
    while node:
        node, depth = node["c"], depth + 1
    assert depth == 20_000


def test_schema_says_what_the_types_say() -> None:
    found = schema(Edge)
    assert found["description"] == "An edge between two sides."
    assert "later" not in found["required"] and "for" in found["required"]
    props = found["properties"]
    assert props["for"]["description"] == "the side waited for"
    assert props["waiting"]["description"] == "one side"  # the nested docstring, as a phrase
    assert props["kind"] == {"enum": ["collective", "p2p"]}
    assert props["maybe"] == {"type": ["string", "null"]}
    assert props["count"] == {"type": "integer", "minimum": 0}
    assert props["states"]["additionalProperties"] == {"type": "integer"}
    assert props["sides"]["items"]["properties"]["at"]["description"] == "file:line"
    assert props["extra"] == {"type": "object"}
    assert props["last"] == {"type": "number"}
    assert "note" not in props
    jsonschema.Draft202012Validator.check_schema(found)
    jsonschema.validate(data(_edge(later="x")), found)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data(_edge()), "count": -1}, found)


def test_a_shape_given_by_hand_is_the_schema() -> None:
    @document
    class Tree:
        """A tree."""

        root: Annotated[dict[str, Any], Shape({"type": "object", "required": ["x"]}, "why")]

    assert schema(Tree)["properties"]["root"] == {"type": "object", "required": ["x"]}


def test_project_fills_fields_from_attributes_with_conversions() -> None:
    @document
    class Row:
        """A row."""

        frame: str
        where: str
        frames: tuple[str, ...]
        label: str

    class Source:
        frame = Frame(function="f", file="a.py", line=3)
        where = Location(path="a.py", line=3)
        frames = (Frame(function="g", file="b.py", line=1),)
        label = "ignored"

    row = project(Row, Source(), label="given")
    assert row == Row(frame="f (a.py)", where="a.py:3", frames=("g (b.py)",), label="given")
    assert jsonable([1, (2,)]) == (1, (2,))


def test_an_unsupported_field_type_is_refused() -> None:
    @document
    class Bad:
        """Bad."""

        value: set[int]

    with pytest.raises(TypeError, match="unsupported field type"):
        schema(Bad)
    with pytest.raises(TypeError, match="unsupported field type"):
        data(Bad(value={1}))


class Tone(StrEnum):
    LOUD = "loud"


@document
class Record:
    """An analysis record that is its own document."""

    tone: Tone
    at: datetime | None
    source: Location
    frame: Frame
    states: Annotated[tuple[tuple[str, int], ...], AS_OBJECT] = spec("state -> count")


def test_a_record_writes_its_enums_times_places_and_frames_as_text() -> None:
    record = Record(
        tone=Tone.LOUD,
        at=datetime(2026, 12, 7, 15, 0, 1, 500000, tzinfo=UTC),
        source=Location(path="env/cmdline", line=3),
        frame=Frame(function="recv", file="zmq.py", line=9),
        states=(("stuck", 3), ("idle", 1)),
    )
    out = data(record)
    assert out == {
        "tone": "loud",
        "at": "2026-12-07T15:00:01.500Z",
        "source": "env/cmdline:3",
        "frame": "recv (zmq.py)",
        "states": {"stuck": 3, "idle": 1},
    }
    assert data(replace(record, at=None))["at"] is None
    found = schema(Record)["properties"]
    assert [found[k]["type"] for k in ("tone", "source", "frame")] == ["string"] * 3
    assert found["at"]["type"] == ["string", "null"]
    assert found["states"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "description": "state -> count",
    }
    jsonschema.validate(out, schema(Record))


@document
class Kept:
    """A record with a field only its other readers see."""

    shown: str
    kept: tuple[str, ...] = spec(default=(), written=False)


def test_a_field_not_written_is_in_neither_the_json_nor_the_schema() -> None:
    record = Kept(shown="x", kept=("secret detail",))
    assert record.kept == ("secret detail",)
    assert data(record) == {"shown": "x"}
    assert schema(Kept)["required"] == ["shown"]
    assert list(schema(Kept)["properties"]) == ["shown"]


@document
class Row:
    """A record whose "" means not known."""

    issue: Annotated[str, EMPTY_IS_NULL]


def test_an_empty_string_marked_empty_is_null_is_written_as_null() -> None:
    assert data(Row(issue="")) == {"issue": None}
    assert data(Row(issue="#7")) == {"issue": "#7"}
    assert schema(Row)["properties"]["issue"] == {"type": ["string", "null"]}
