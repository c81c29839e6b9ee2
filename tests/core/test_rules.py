"""reporter/core/rules.py: every shipped rules file has a declared shape and fits it; bad files
are refused with the file, the key and a fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.core import rules
from reporter.core.rules import Key, RulesError, Strings, Table, Tables

DATA = Path(rules.__file__).resolve().parents[1] / "data"


def test_every_data_file_has_a_shape_and_fits_it() -> None:
    shipped = sorted(p.name for p in DATA.glob("*.toml"))
    assert shipped == sorted(rules.SHAPES)
    for name in shipped:
        assert rules.load(name), name


SHAPE: rules.Shape = {
    "title": Key(str, required=True),
    "size": Key(int, low=1, high=10),
    "names": Key(Strings),
    "scores": Table(free=int),
    "inner": Table({"flag": Key(bool)}),
    "rule": Tables({"id": Key(str, required=True), "weight": Key(float)}),
}


@pytest.mark.parametrize(
    ("text", "message", "tip"),
    [
        ("title = 'x'\ntitel = 'y'\n", "unknown key `titel`", "did you mean `title`?"),
        ("size = 1\n", "the file needs `title`", 'add title = "text"'),
        ("title = 'x'\nsize = true\n", "`size` must be an integer, got True", "size = 3"),
        ("title = 'x'\nsize = 11\n", "`size` must be 1..10, got 11", "use a value 1..10"),
        ("title = 'x'\nnames = 'a'\n", "`names` must be a list of strings", '["a", "b"]'),
        ("title = 'x'\n[scores]\na = 'b'\n", "`scores.a` must be an integer", ""),
        ("title = 'x'\n[inner]\nflg = true\n", "unknown key `inner.flg`", "`inner.flag`"),
        ("title = 'x'\ninner = 3\n", "`inner` must be a table", "[inner]"),
        ("title = 'x'\n[[rule]]\nweight = 1\n", "[[rule]] #1 needs `id`", "add id ="),
        (
            "title = 'x'\n[[rule]]\nid = 'a'\nweight = 'w'\n",
            '`[[rule]] #1 (id "a") weight` must be a number',
            "weight = 0.5",
        ),
        ("title = 'x'\nrule = [1]\n", "`rule` must be an array of tables", "[[rule]]"),
        ("title = \n", "not valid TOML", ""),
    ],
)
def test_bad_files_name_file_key_and_fix(text: str, message: str, tip: str) -> None:
    with pytest.raises(RulesError) as caught:
        rules.parse(text, SHAPE, source="t.toml")
    assert caught.value.message.startswith("t.toml: ")
    assert message in caught.value.message
    assert tip in caught.value.tip


def test_a_good_file_comes_back_as_parsed() -> None:
    text = "title = 'x'\nsize = 3\nnames = ['a']\n[scores]\nq = 2\n[[rule]]\nid = 'r'\nweight = 1\n"
    data = rules.parse(text, SHAPE, source="t.toml")
    assert data == {
        "title": "x",
        "size": 3,
        "names": ["a"],
        "scores": {"q": 2},
        "rule": [{"id": "r", "weight": 1}],
    }


def test_unknown_file_is_refused() -> None:
    with pytest.raises(RulesError, match="no shape declared"):
        rules.load("nope.toml")
