"""Issue forms: parse GitHub's schema, pick the bug form, give each field its role."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.app.filing import read_forms_dir
from reporter.errors import InputError
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


def test_sglang_style_form() -> None:
    forms, notes = parse_forms(read_forms_dir(FORMS / "sglang"))
    assert notes == ()
    assert [f.source for f in forms] == ["1-bug-report.yml", "2-feature-request.yml"]
    bug = pick_bug_form(forms)
    assert bug is not None and bug.source == "1-bug-report.yml"
    assert bug.title == "[Bug] " and bug.labels == ("bug",)
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
    assert bug.shown[2].render == "shell"
    assert sum(o.required for o in bug.shown[0].options) == 4


def test_vllm_style_form() -> None:
    forms, _ = parse_forms(read_forms_dir(FORMS / "vllm" / ".github" / "ISSUE_TEMPLATE"))
    bug = pick_bug_form(forms)
    assert bug is not None and bug.title == "[Bug]: "
    assert len(bug.fields) == 6 and len(bug.shown) == 4  # two markdown elements are not sent
    assert [role_of(f) for f in bug.shown] == [
        Role.ENVIRONMENT,
        Role.OTHER,
        Role.DESCRIPTION,
        Role.CHECKLIST,
    ]
    assert bug.shown[1].type is FieldType.DROPDOWN and not bug.shown[1].required
    assert "<summary>" in bug.shown[0].value


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
