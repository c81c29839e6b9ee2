"""Issue forms: parse GitHub's schema, pick the bug form, give each field its role."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.app.filing import read_forms_dir
from reporter.core.errors import InputError
from reporter.upstream.forms import (
    FieldType,
    Role,
    generic_form,
    parse_form,
    parse_forms,
    pick_bug_form,
    role_of,
)

ROOT = Path(__file__).resolve().parents[2]
FORMS = ROOT / "fixtures" / "forms"


def test_sglang_bug_form_as_upstream_has_it() -> None:
    """The real SGLang form (reporter/data/forms/SOURCES.toml names the commit): label
    `Bug`, a checklist of five boxes none of which is required, three required fields."""
    forms, notes = parse_forms(read_forms_dir(FORMS / "sglang"))
    assert notes == ()
    assert [f.source for f in forms] == ["1-bug-report.yml", "2-feature-request.yml"]
    bug = pick_bug_form(forms)
    assert bug is not None and bug.source == "1-bug-report.yml"
    assert bug.title == "[Bug] " and bug.labels == ("Bug",)
    assert [(f.type, f.label, f.required) for f in bug.shown] == [
        (FieldType.CHECKBOXES, "Checklist", False),
        (FieldType.TEXTAREA, "Describe the bug", True),
        (FieldType.TEXTAREA, "Reproduction", True),
        (FieldType.TEXTAREA, "Environment", True),
    ]
    assert [role_of(f) for f in bug.shown] == [
        Role.CHECKLIST,
        Role.DESCRIPTION,
        Role.REPRODUCTION,
        Role.ENVIRONMENT,
    ]
    assert len(bug.shown[0].options) == 5
    assert not any(o.required for o in bug.shown[0].options)
    assert "sglang.check_env" in bug.shown[3].description


def test_vllm_bug_form_as_upstream_has_it() -> None:
    forms, _ = parse_forms(read_forms_dir(FORMS / "vllm" / ".github" / "ISSUE_TEMPLATE"))
    bug = pick_bug_form(forms)
    assert bug is not None and bug.title == "[Bug]: " and bug.labels == ("bug",)
    assert len(bug.fields) == 5 and len(bug.shown) == 3  # two markdown elements are not sent
    assert [role_of(f) for f in bug.shown] == [Role.ENVIRONMENT, Role.DESCRIPTION, Role.CHECKLIST]
    assert "<summary>" in bug.shown[0].value
    assert [o.required for o in bug.shown[2].options] == [True]


SHIPPED = ROOT / "reporter" / "data" / "forms"
# GitHub's issue-form schema, as its documentation states it: top-level keys, element
# types, which keys each element type takes, and what an id may be.
_TOP = {"name", "description", "body", "assignees", "labels", "title", "projects", "type"}
_ELEMENTS = {
    "markdown": {"value"},
    "textarea": {"label", "description", "placeholder", "value", "render"},
    "input": {"label", "description", "placeholder", "value"},
    "dropdown": {"label", "description", "multiple", "options", "default"},
    "checkboxes": {"label", "description", "options"},
}


def _github_schema_problems(text: str) -> list[str]:
    """What GitHub's issue-form schema refuses in `text` (empty: GitHub accepts it)."""
    import re

    import yaml

    data = yaml.safe_load(text)
    out: list[str] = []
    if not isinstance(data, dict):
        return ["not a mapping"]
    out += [f"unknown top-level key {k!r}" for k in data if k not in _TOP]
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            out.append(f"{key} must be a non-empty string")
    body = data.get("body")
    if not isinstance(body, list) or not any(
        isinstance(e, dict) and e.get("type") != "markdown" for e in body
    ):
        return [*out, "body must hold at least one non-markdown element"]
    ids: list[str] = []
    labels: list[str] = []
    for n, element in enumerate(body):
        kind = element.get("type")
        attributes = element.get("attributes") or {}
        if kind not in _ELEMENTS:
            out.append(f"body[{n}]: unknown type {kind!r}")
            continue
        out += [
            f"body[{n}]: {kind} takes no attribute {k!r}"
            for k in attributes
            if k not in _ELEMENTS[kind]
        ]
        if kind == "markdown":
            if not isinstance(attributes.get("value"), str):
                out.append(f"body[{n}]: markdown needs a value")
            continue
        if not isinstance(attributes.get("label"), str) or not attributes["label"].strip():
            out.append(f"body[{n}]: a label is required")
        else:
            labels.append(attributes["label"])
        if "id" in element:
            ids.append(str(element["id"]))
            if not re.fullmatch(r"[A-Za-z0-9_-]+", str(element["id"])):
                out.append(f"body[{n}]: id {element['id']!r} has characters GitHub refuses")
        if kind == "checkboxes":
            for option in attributes.get("options") or []:
                if not isinstance(option, dict) or not isinstance(option.get("label"), str):
                    out.append(f"body[{n}]: every checkbox option needs a label")
    if len(set(ids)) != len(ids):
        out.append("ids must be unique")
    if len(set(labels)) != len(labels):
        out.append("labels must be unique")
    return out


def test_shipped_forms_are_the_fixtures_and_parse_as_github_does() -> None:
    import tomllib

    sources = tomllib.loads((SHIPPED / "SOURCES.toml").read_text(encoding="utf-8"))
    fixtures = {
        "sgl-project/sglang": FORMS / "sglang" / ".github" / "ISSUE_TEMPLATE",
        "vllm-project/vllm": FORMS / "vllm" / ".github" / "ISSUE_TEMPLATE",
    }
    assert set(sources) == set(fixtures)
    for repo, entries in sources.items():
        entry = entries[0]
        shipped = SHIPPED / entry["file"]
        assert entry["commit"] in entry["source"] and repo in entry["source"]
        assert len(entry["commit"]) == 40
        fixture = fixtures[repo] / shipped.name
        assert shipped.read_bytes() == fixture.read_bytes(), f"{fixture} differs from {shipped}"
        text = shipped.read_text(encoding="utf-8")
        assert _github_schema_problems(text) == [], shipped
        forms, notes = parse_forms([(shipped.name, text)])
        assert notes == () and pick_bug_form(forms) is not None


def test_the_schema_check_refuses_what_github_refuses() -> None:
    assert _github_schema_problems("name: x\ndescription: y\nbody: []") != []
    assert "unknown type 'text'" in " ".join(
        _github_schema_problems("name: x\ndescription: y\nbody: [{type: text}]")
    )
    bad = "name: x\ndescription: y\nbody: [{type: input, id: 'a b', attributes: {label: L}}]"
    assert any("characters GitHub refuses" in p for p in _github_schema_problems(bad))


def test_pick_bug_form_prefers_the_bug_label_then_the_name() -> None:
    named = parse_form(
        "name: Bug report\nbody: [{type: input, attributes: {label: X}}]", source="b.yml"
    )
    labelled = parse_form(
        "name: Problem\nlabels: bug, triage\nbody: [{type: input, attributes: {label: X}}]",
        source="z.yml",
    )
    other = parse_form("name: Idea\nbody: [{type: input, attributes: {label: X}}]", source="a.yml")
    assert labelled.labels == ("bug", "triage")
    assert pick_bug_form([other, named, labelled]) is labelled
    assert pick_bug_form([other]) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x", "no `body` list"),
        ("body: [{type: slider, attributes: {label: a}}]", "unknown type 'slider'"),
        ("body: [{type: textarea, attributes: {}}]", "has no label"),
        ("body: [oops", "not valid YAML"),
    ],
)
def test_malformed_forms_are_named(text: str, message: str) -> None:
    with pytest.raises(InputError, match=r"bad\.yml") as err:
        parse_form(text, source="bad.yml")
    assert message in err.value.message
    _, notes = parse_forms([("bad.yml", text), ("config.yml", "blank_issues_enabled: false")])
    assert len(notes) == 1 and "bad.yml" in notes[0]


def test_generic_form_has_the_three_sections() -> None:
    form = generic_form()
    assert form.generic and form.title == "" and form.labels == ()
    assert [role_of(f) for f in form.shown] == [
        Role.DESCRIPTION,
        Role.REPRODUCTION,
        Role.ENVIRONMENT,
    ]
