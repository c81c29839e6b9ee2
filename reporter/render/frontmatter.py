"""YAML front matter of a report: split it off, read it, and merge a regenerated one.

A report starts with::

    ---
    kind: incident-report
    status: draft
    owners: []
    incident_start: null
    incident_end: null
    upstream_issue: null
    signature: "3f9c0a1b2c3d4e5f"
    ---

The reviewers own these values, except the generated ones (`GENERATED_KEYS`: the
signature follows the evidence). `merge` keeps the existing block byte for byte but for the
line of a generated key whose value changed, and appends top-level keys that a newer
template added; it never re-serialises what is there, so comments and formatting survive.
"""

from __future__ import annotations

import bisect
import json
import re
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import yaml

# Files whose front matter has one of these `kind`s are reporter documents.
REPORT_KINDS = ("incident-report", "upstream-draft")
INCIDENT_REPORT = "incident-report"
UPSTREAM_DRAFT = "upstream-draft"
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})")


class Status(StrEnum):
    """The review workflow, in order: draft -> in-review -> reviewed -> filed."""

    DRAFT = "draft"
    IN_REVIEW = "in-review"
    REVIEWED = "reviewed"
    FILED = "filed"


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontMatter:
    """The front matter block of a document, as written and as read."""

    raw: str
    """The whole block, both `---` fences and their newlines included."""
    data: Mapping[str, Any] | None
    """The YAML mapping, or None when the block is not a YAML mapping."""
    error: str
    """Why `data` is None (empty when it parsed)."""
    end_line: int
    """1-based line of the closing fence."""
    problems: tuple[tuple[int, str], ...] = ()
    """(1-based line, what) of values kept as text: an impossible date (`2026-02-30`), an
    integer too long to be one (a hundred thousand digits)."""

    @property
    def kind(self) -> str:
        """The `kind` value, or "" when absent or not a string."""
        value = self.data.get("kind") if self.data else None
        return value if isinstance(value, str) else ""

    @property
    def is_report(self) -> bool:
        """True when this is reporter's front matter (a known `kind`)."""
        return self.kind in REPORT_KINDS

    @property
    def status(self) -> str:
        """The `status` value as written ("" when absent)."""
        value = self.data.get("status") if self.data else None
        return "" if value is None else str(value)

    def date(self, path: str) -> str:
        """The report's day: from its file name (`2026-07-12-...md`), else `incident_start`;
        "" when neither has one."""
        start = self.data.get("incident_start") if self.data else None
        found = _DATE.search(path.rsplit("/", 1)[-1]) or _DATE.search(str(start or ""))
        return found.group(1) if found else ""


def lines_of(text: str) -> list[str]:
    """`text` cut into lines that keep their `\\n` (only `\\n` ends a line); joined back, it is `text`."""
    return _LINE.findall(text)


class LineTable:
    """The lines of `text` as `lines_of` cuts them, read on demand from an array of offsets:
    a 50 MB report of short lines is one array, not millions of strings."""

    def __init__(self, text: str) -> None:
        self.text = text
        starts = array("q", [0])
        at = text.find("\n")
        while at >= 0:
            starts.append(at + 1)
            at = text.find("\n", at + 1)
        if starts[-1] == len(text) and len(starts) > 1:
            starts.pop()  # a final newline ends the last line; no empty line after it
        if not text:
            starts = array("q")
        self.starts = starts

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> str:
        return self.join(index, index + 1)

    def join(self, first: int, stop: int) -> str:
        """Lines `first` to `stop - 1` as one string (`"".join(lines[first:stop])`)."""
        begin = self.starts[first] if first < len(self.starts) else len(self.text)
        end = self.starts[stop] if stop < len(self.starts) else len(self.text)
        return self.text[begin:end]

    def with_text(self, needle: str) -> list[int]:
        """Indexes of the lines holding `needle` (found by `str.find`, in order)."""
        found: list[int] = []
        at = self.text.find(needle)
        while at >= 0:
            index = bisect.bisect_right(self.starts, at) - 1
            found.append(index)
            following = index + 1
            if following >= len(self.starts):
                break
            at = self.text.find(needle, self.starts[following])
        return found


def split(text: str) -> tuple[str, str, int]:
    """Split `text` into (front matter block, the rest, 1-based line where the rest starts).

    The block is "" when the text does not open with a closed `---` fence.
    `block + rest == text` always.
    """
    block, _inner, closing = _find(text)
    if not block:
        return "", text, 1
    return block, text[len(block) :], closing + 1


def _find(text: str) -> tuple[str, str, int]:
    """(block, YAML between the fences, 1-based line of the closing fence), or ("", "", 0).

    Reads lines only until the closing fence (a report's body may be millions of lines)."""
    lines = _LINE.finditer(text)
    first = next(lines, None)
    if first is None or first.group(0).rstrip("\r\n ") != "---":
        return "", "", 0
    for number, line in enumerate(lines, start=2):
        if line.group(0).rstrip("\r\n ") in ("---", "..."):
            return text[: line.end()], text[first.end() : line.start()], number
    return "", "", 0


# Front matter is a dozen keys a person types: these bounds are far above any real one and
# keep a hostile block (a "billion laughs" alias bomb, 5,000 nested brackets) from costing
# more than a linear scan.
MAX_FRONT_MATTER = 256 * 1024
MAX_DEPTH = 32
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Longer integers than this are kept as text (Python refuses to convert 4,300 digits and
# more, and no front matter value is a number that long).
MAX_INT_DIGITS = 64


class _Loader(_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, total: a date that does not exist or an integer too long to be
    one is kept as the text written, and noted in `problems`, never an exception."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.problems: list[tuple[int, str]] = []

    def note(self, node: yaml.Node, what: str) -> None:
        self.problems.append((node.start_mark.line + 2, what))


def _timestamp(loader: _Loader, node: yaml.ScalarNode) -> object:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        loader.note(node, f"{node.value!r} is not a real date or time (kept as text)")
        return str(node.value)


def _integer(loader: _Loader, node: yaml.ScalarNode) -> object:
    if len(str(node.value)) > MAX_INT_DIGITS:
        loader.note(
            node, f"a {len(str(node.value)):,}-character integer (kept as text, not a number)"
        )
        return str(node.value)
    return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_Loader.add_constructor("tag:yaml.org,2002:int", _integer)


def _refuse_yaml(inner: str) -> str:
    """Why this front matter is not parsed (too large, anchors or aliases, too deep); or ""."""
    if len(inner) > MAX_FRONT_MATTER:
        return f"not parsed: larger than {MAX_FRONT_MATTER // 1024} KiB"
    depth = 0
    try:
        for event in yaml.parse(inner, Loader=_LOADER):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                return "not parsed: it uses YAML anchors or aliases (&name, *name); write the values out"
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return f"not parsed: nested deeper than {MAX_DEPTH} levels"
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return ""  # the real load below reports where the YAML is broken
    return ""


def parse(text: str) -> FrontMatter | None:
    """The front matter of a whole document, or None when it has none."""
    block, inner, closing = _find(text)
    if not block:
        return None
    refused = _refuse_yaml(inner)
    if refused:
        return FrontMatter(raw=block, data=None, error=refused, end_line=closing)
    loader = _Loader(inner)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return FrontMatter(raw=block, data=None, error=f"not valid YAML{where}", end_line=closing)
    except (ValueError, OverflowError, RecursionError) as err:
        # A value the constructors still cannot take (a float of a million digits, ...).
        return FrontMatter(
            raw=block, data=None, error=f"not readable ({type(err).__name__})", end_line=closing
        )
    finally:
        loader.dispose()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return FrontMatter(
            raw=block, data=None, error="not a YAML mapping of keys", end_line=closing
        )
    return FrontMatter(
        raw=block, data=data, error="", end_line=closing, problems=tuple(loader.problems)
    )


# Keys the tool writes and keeps up to date; every other key belongs to the reviewers.
GENERATED_KEYS = ("signature",)


def _refresh_generated(
    existing: str, old: Mapping[Any, Any], new: Mapping[Any, Any], generated: str
) -> str:
    """`existing` with each generated key's line replaced by the generated one, when it differs."""
    for key in GENERATED_KEYS:
        if key not in new or key not in old or old[key] == new[key]:
            continue
        pattern = re.compile(rf"^{re.escape(key)}:.*$", re.M)
        fresh = pattern.search(generated)
        if fresh is not None and len(pattern.findall(existing)) == 1:
            line = fresh.group(0)
            start = pattern.search(existing)
            if start is not None:
                existing = existing[: start.start()] + line + existing[start.end() :]
    return existing


def merge(existing: str, generated: str) -> tuple[str, tuple[str, ...]]:
    """Merge two front matter blocks: the existing one wins, new top-level keys are appended.

    Returns the merged block and the keys added. An existing block that is not a YAML
    mapping is kept as it is (nothing added); a missing one is replaced by `generated`.
    """
    if not generated:
        return existing, ()
    new = parse(generated)
    if not existing:
        keys = tuple(str(k) for k in new.data) if new and new.data else ()
        return generated, keys
    old = parse(existing)
    if old is None or old.data is None or new is None or new.data is None:
        return existing, ()
    existing = _refresh_generated(existing, old.data, new.data, generated)
    added = [k for k in new.data if k not in old.data]
    if not added:
        return existing, ()
    extra = yaml.safe_dump(
        {k: new.data[k] for k in added},
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1000,
    )
    # Insert before the closing fence line, keeping everything above it as it was.
    closing_start = existing.rstrip("\n").rfind("\n") + 1
    head, closing = existing[:closing_start], existing[closing_start:]
    if not head.endswith("\n"):
        head += "\n"
    return head + extra + closing, tuple(str(k) for k in added)


def set_value(text: str, key: str, value: str) -> str | None:
    """`text` with the top-level `key: ...` line of its front matter set to `value` (quoted).

    None when the text has no front matter, or not exactly one such line to change.
    """
    block, _body, _start = split(text)
    if not block:
        return None
    pattern = re.compile(rf"^{re.escape(key)}:.*$", re.M)
    if len(pattern.findall(block)) != 1:
        return None
    line = f"{key}: {json.dumps(value, ensure_ascii=False)}"
    return pattern.sub(lambda _m: line, block, count=1) + text[len(block) :]
