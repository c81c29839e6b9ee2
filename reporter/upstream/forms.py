"""GitHub issue forms: parse `.github/ISSUE_TEMPLATE/*.yml`, pick the bug form, give fields roles.

Input: the text of each form file (read by the use-case layer: from the contents API,
its cache, or `--forms DIR`). Output: frozen `IssueForm`s, the chosen bug form, and a
`Role` per field saying what the draft puts there (rules in `reporter/data/forms.toml`).
No I/O here besides the packaged rule files.

A form, in GitHub's schema (https://docs.github.com: "Syntax for issue forms")::

    name: Bug report
    title: "[Bug] "             # title prefix
    labels: ["bug"]             # or "bug, triage"
    body:
      - type: checkboxes        # markdown | input | textarea | dropdown | checkboxes
        id: checklist
        attributes: {label: Checklist, options: [{label: "I searched ...", required: true}]}
      - type: textarea
        id: reproduction
        attributes: {label: Reproduction, render: shell}
        validations: {required: true}

A submitted form becomes an issue body of `### <label>` sections in form order (markdown
elements are not part of it); `render:` fields are wrapped in a code fence of that
language; empty optional fields read `_No response_`; checkboxes become `- [X]` / `- [ ]`
task list items. The draft follows that shape so it reads as if filed through the form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

import yaml

from reporter.core import rules as data_files
from reporter.core.errors import InputError, ReporterError

GENERIC_SOURCE = "generic"
_BUG_RE = re.compile(r"\bbug", re.IGNORECASE)


class FieldType(StrEnum):
    """The element types of GitHub's issue-form schema."""

    MARKDOWN = "markdown"
    INPUT = "input"
    TEXTAREA = "textarea"
    DROPDOWN = "dropdown"
    CHECKBOXES = "checkboxes"


class Role(StrEnum):
    """What the draft fills a field with."""

    CHECKLIST = "checklist"
    DESCRIPTION = "description"
    REPRODUCTION = "reproduction"
    ENVIRONMENT = "environment"
    LOGS = "logs"
    EXPECTED = "expected"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class FormOption:
    """One checkbox (or dropdown entry); `required` only applies to checkboxes."""

    label: str
    required: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FormField:
    """One element of a form's body, as the schema gives it."""

    type: FieldType
    id: str
    label: str
    description: str = ""
    placeholder: str = ""
    value: str = ""
    render: str = ""
    options: tuple[FormOption, ...] = ()
    multiple: bool = False
    required: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueForm:
    """A parsed form: `source` is its file name, or `generic` for the built-in one."""

    name: str
    description: str
    title: str
    labels: tuple[str, ...]
    fields: tuple[FormField, ...]
    source: str

    @property
    def generic(self) -> bool:
        """True for the built-in form used when the repository has none."""
        return self.source == GENERIC_SOURCE

    @property
    def shown(self) -> tuple[FormField, ...]:
        """The fields that appear in a submitted issue (markdown elements do not)."""
        return tuple(f for f in self.fields if f.type is not FieldType.MARKDOWN)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _labels(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return ()


def parse_form(text: str, *, source: str) -> IssueForm:
    """Parse one form file; a file that is not a form raises `InputError` naming it."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InputError(f"{source}: not valid YAML ({err.__class__.__name__})") from err
    if not isinstance(data, dict) or not isinstance(data.get("body"), list):
        raise InputError(f"{source}: not an issue form (no `body` list)")
    fields: list[FormField] = []
    for index, element in enumerate(data["body"], start=1):
        if not isinstance(element, dict):
            raise InputError(f"{source}: body element {index} is not a mapping")
        try:
            kind = FieldType(str(element.get("type", "")))
        except ValueError as err:
            raise InputError(
                f"{source}: body element {index} has unknown type {element.get('type')!r}"
            ) from err
        attributes = element.get("attributes") or {}
        validations = element.get("validations") or {}
        if not isinstance(attributes, dict) or not isinstance(validations, dict):
            raise InputError(f"{source}: body element {index}: attributes must be a mapping")
        options: list[FormOption] = []
        for option in attributes.get("options") or ():
            if isinstance(option, dict):
                options.append(
                    FormOption(
                        label=_text(option.get("label")), required=bool(option.get("required"))
                    )
                )
            else:
                options.append(FormOption(label=_text(option)))
        label = _text(attributes.get("label"))
        if kind is not FieldType.MARKDOWN and not label:
            raise InputError(f"{source}: body element {index} ({kind.value}) has no label")
        fields.append(
            FormField(
                type=kind,
                id=_text(element.get("id")),
                label=label,
                description=_text(attributes.get("description")),
                placeholder=_text(attributes.get("placeholder")),
                value=_text(attributes.get("value")),
                render=_text(attributes.get("render")),
                options=tuple(options),
                multiple=bool(attributes.get("multiple")),
                required=bool(validations.get("required")),
            )
        )
    return IssueForm(
        name=_text(data.get("name")),
        description=_text(data.get("description")),
        title=_text(data.get("title")),
        labels=_labels(data.get("labels")),
        fields=tuple(fields),
        source=source,
    )


def parse_forms(files: Sequence[tuple[str, str]]) -> tuple[tuple[IssueForm, ...], tuple[str, ...]]:
    """Parse (file name, text) pairs; `config.yml` and non-forms are skipped with a note."""
    forms: list[IssueForm] = []
    notes: list[str] = []
    for name, text in sorted(files):
        if name.rsplit("/", 1)[-1] in ("config.yml", "config.yaml"):
            continue
        try:
            forms.append(parse_form(text, source=name))
        except InputError as err:
            notes.append(f"skipped issue template {err.message}")
    return tuple(forms), tuple(notes)


def pick_bug_form(forms: Sequence[IssueForm]) -> IssueForm | None:
    """The bug form: labelled `bug`, else named or titled like one; ties by file name."""

    def score(form: IssueForm) -> int:
        if any(label.lower() == "bug" for label in form.labels):
            return 3
        if _BUG_RE.search(form.name) or _BUG_RE.search(form.title):
            return 2
        return 1 if _BUG_RE.search(form.source) else 0

    ranked = sorted(forms, key=lambda f: (-score(f), f.source))
    return ranked[0] if ranked and score(ranked[0]) > 0 else None


@cache
def generic_form() -> IssueForm:
    """The built-in form (`reporter/data/generic-bug-form.yml`): bug, reproduction, environment."""
    return parse_form(data_files.read_text("generic-bug-form.yml"), source=GENERIC_SOURCE)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleRules:
    """The compiled `forms.toml`."""

    roles: tuple[tuple[Role, re.Pattern[str]], ...]
    tick_searched: re.Pattern[str]


def parse_role_rules(text: str, *, source: str = "forms.toml") -> RoleRules:
    """Compile a forms.toml; a malformed one raises `ReporterError`."""
    data = data_files.parse(text, data_files.SHAPES["forms.toml"], source=source)
    try:
        roles = tuple(
            (Role(entry["role"]), re.compile(entry["match"], re.IGNORECASE))
            for entry in data.get("role", [])
        )
        tick = re.compile(data.get("tick", {}).get("searched", r"(?!)"), re.IGNORECASE)
    except (ValueError, re.error) as err:
        raise ReporterError(f"{source}: {err}") from err
    return RoleRules(roles=roles, tick_searched=tick)


@cache
def default_role_rules() -> RoleRules:
    """The rules shipped in `reporter/data/forms.toml`."""
    return parse_role_rules(data_files.read_text("forms.toml"), source="reporter/data/forms.toml")


def role_of(field: FormField, rules: RoleRules | None = None) -> Role:
    """The role of a field: checkboxes are a checklist, the rest go by id, then label."""
    if field.type is FieldType.CHECKBOXES:
        return Role.CHECKLIST
    rules = rules or default_role_rules()
    for text in (field.id, field.label):
        for role, pattern in rules.roles:
            if text and pattern.search(text):
                return role
    return Role.OTHER
