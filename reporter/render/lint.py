"""Lint reports and upstream issue drafts: findings with a stable rule id, a line and a fix hint.

Input: the text of one Markdown file (and optionally an `IssueIndex`); output: a tuple
of `Finding`s sorted by line, rule and message. No I/O here: the application layer
reads the files and opens the index. A finding prints as::

    reports/2026-07-14-tp-desync.md:88: unclosed-fence: fence opened with ``` is never closed

Which rules apply depends on the front matter: incident reports (`kind: incident-report`)
must have the required sections; upstream drafts (`kind: upstream-draft`) are checked for
secrets (the shapes of `reporter.secrets`, shared with redaction) and GitHub's
body size limit; `TODO(reviewer)` placeholders are allowed while
`status: draft` and are findings once a report is in review.
"""

from __future__ import annotations

import bisect
import re
import sqlite3
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from reporter.core.errors import UsageError
from reporter.render import blocks, frontmatter, regions
from reporter.render.frontmatter import Status
from reporter.secrets import find_secrets as find_secrets

# The H2 sections every incident report has, in template order; the template and the
# golden tests are checked against this list.
REQUIRED_SECTIONS = (
    "Verdict",
    "Ranks and classes",
    "Merged stacks",
    "Environment seen in the dumps",
    "Hang signature",
    "Impact",
    "Contributing factors",
    "Action items",
    "Evidence",
)
PLACEHOLDER = "TODO(reviewer)"
# GitHub refuses issue bodies longer than this many characters.
GITHUB_BODY_LIMIT = 65_536
MERMAID_DIAGRAMS = frozenset(
    {
        "flowchart",
        "graph",
        "sequenceDiagram",
        "classDiagram",
        "classDiagram-v2",
        "stateDiagram",
        "stateDiagram-v2",
        "erDiagram",
        "journey",
        "gantt",
        "pie",
        "quadrantChart",
        "requirementDiagram",
        "gitGraph",
        "C4Context",
        "C4Container",
        "C4Component",
        "C4Dynamic",
        "C4Deployment",
        "mindmap",
        "timeline",
        "zenuml",
        "sankey-beta",
        "xychart-beta",
        "block-beta",
        "packet-beta",
        "architecture-beta",
        "kanban",
        "radar-beta",
        "treemap-beta",
    }
)
FLOWCHART_DIRECTIONS = frozenset({"TD", "TB", "BT", "RL", "LR"})


class Rule(StrEnum):
    """Stable rule ids (used in output, JSON and suppression by tools)."""

    FRONT_MATTER = "front-matter"
    REQUIRED_SECTION = "required-section"
    PLACEHOLDER = "placeholder"
    UNCLOSED_FENCE = "unclosed-fence"
    MERMAID_TYPE = "mermaid-type"
    MERMAID_BRACKETS = "mermaid-brackets"
    MERMAID_QUOTE = "mermaid-quote"
    TABLE_COLUMNS = "table-columns"
    UPSTREAM_LINK = "upstream-link"
    SECRET = "secret"
    BODY_SIZE = "body-size"
    REGION_MARKER = "region-marker"
    UNREADABLE = "unreadable"


HINTS: Mapping[Rule, str] = {
    Rule.FRONT_MATTER: "start the file with a `---` YAML block: kind, status "
    "(draft, in-review, reviewed, filed), owners, incident_start, incident_end, upstream_issue",
    Rule.REQUIRED_SECTION: "restore the section (an older version is in the .bak file or git), "
    "or rerun `report draft` after removing its id from the reporter:regions line",
    Rule.PLACEHOLDER: "write the text, or set `status: draft` while the report is unfinished",
    Rule.UNCLOSED_FENCE: "close the block with a line of at least as many backticks (or tildes)",
    Rule.MERMAID_TYPE: "start the block with a diagram type such as `flowchart TD` or `xychart-beta`",
    Rule.MERMAID_BRACKETS: "balance the brackets and quotes; quote labels with brackets in them: "
    'A["f(x) [1]"]',
    Rule.MERMAID_QUOTE: 'write a quote inside a label as #quot; (Mermaid has no \\" escape)',
    Rule.TABLE_COLUMNS: "give every row the header's number of cells; write a literal | as \\|",
    Rule.UPSTREAM_LINK: "check the issue number, or refresh the local issue index",
    Rule.SECRET: "replace it with [redacted] (in an upstream draft, <secret-N>) and rotate the "
    "credential if it was ever pushed",
    Rule.BODY_SIZE: "move long evidence to an attachment or a gist and link it",
    Rule.REGION_MARKER: "restore the marker lines as reporter wrote them (see the .bak file or "
    "git), or delete both markers to make the text yours",
    Rule.UNREADABLE: "save the file as UTF-8 text",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One problem in one file."""

    path: str
    line: int
    """1-based; 1 for whole-file findings."""
    rule: Rule
    message: str

    @property
    def hint(self) -> str:
        """How to fix it."""
        return HINTS[self.rule]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule.value}: {self.message}"


class IssueIndex(Protocol):
    """The local index of upstream issues (the search feature provides the real one)."""

    def has(self, repo: str, number: int) -> bool:
        """True when `repo` (`owner/name`) has an issue or pull request `number`."""
        ...


@dataclass(frozen=True, slots=True)
class SetIssueIndex:
    """An in-memory index: a set of (`owner/name`, number)."""

    issues: frozenset[tuple[str, int]]

    def has(self, repo: str, number: int) -> bool:
        """True when the pair is in the set (repo compared case-insensitively, as GitHub does)."""
        return (repo.lower(), number) in {(r.lower(), n) for r, n in self.issues}


class SqliteIssueIndex:
    """Interim reader of a SQLite issue index: a table `issues` with `repo` and `number`.

    The upstream search feature owns the index format; until it lands this is the contract.
    """

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise UsageError(f"{path}: no such issue index", tip="pass the index's SQLite file")
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            self._db.execute("SELECT repo, number FROM issues LIMIT 0")
        except sqlite3.Error as err:
            self._db.close()
            raise UsageError(
                f"{path}: not an issue index ({err})",
                tip="it needs a table `issues` with columns `repo` (owner/name) and `number`",
            ) from err

    def has(self, repo: str, number: int) -> bool:
        """True when the index has that issue."""
        row = self._db.execute(
            "SELECT 1 FROM issues WHERE lower(repo) = lower(?) AND number = ? LIMIT 1",
            (repo, number),
        ).fetchone()
        return row is not None

    def close(self) -> None:
        """Close the database."""
        self._db.close()


_GITHUB_LINK = re.compile(
    r"https?://github\.com/(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(?:issues|pull)/(?P<number>\d+)"
)
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_CLOSERS = {"[": "]", "(": ")", "{": "}"}


def parser() -> MarkdownIt:
    """The Markdown parser lint uses: CommonMark with HTML, tables and front matter."""
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin)


def placeholders(text: str, tokens: Sequence[Token] | None = None) -> tuple[int, ...]:
    """1-based lines holding an unfilled `TODO(reviewer)` outside code blocks.

    `tokens` are the `parser()` tokens of `text`, when the caller has them already; else
    the text is parsed a piece at a time (`blocks`: memory near the text's size).
    """
    if PLACEHOLDER not in text:
        return ()
    if tokens is not None:
        code = _code_lines(tokens)
    else:
        # Only the pieces holding a placeholder are parsed: code elsewhere does not matter.
        code = LineRanges()
        for found in blocks.token_pieces(parser(), text, only=lambda piece: PLACEHOLDER in piece):
            code.update(_code_lines(found))
    return _placeholder_lines(Lines(text), code)


def _placeholder_lines(lines: Lines, code: LineRanges) -> tuple[int, ...]:
    return tuple(n for n, line in lines.having(PLACEHOLDER) if n not in code)


# The upstream side's pre-send scan (`reporter.upstream.redact.scan_document`): for
# upstream drafts lint runs the very check the filing gate runs. Handed in by the
# application layer (render may not import upstream): (line, kind, sample) per finding.
UpstreamScan = Callable[[str], Iterable[tuple[int, str, str]]]


def lint_text(
    text: str,
    *,
    path: str,
    index: IssueIndex | None = None,
    upstream_scan: UpstreamScan | None = None,
) -> tuple[Finding, ...]:
    """Every finding for one file's text (parsed a piece at a time: `blocks`); an upstream
    draft's secrets and identifiers are found by `upstream_scan` when given (the filing
    gate's scan, same lines)."""
    lines = Lines(text)
    front = frontmatter.parse(text)
    findings: list[Finding] = []

    def add(line: int, rule: Rule, message: str) -> None:
        findings.append(Finding(path=path, line=line, rule=rule, message=message))

    kind = front.kind if front else ""
    status = front.status if front else ""
    _check_front_matter(front, add)
    code_lines = LineRanges()
    heads: list[str] = []
    for tokens in blocks.token_pieces(parser(), text):
        code_lines.update(_code_lines(tokens))
        heads.extend(_h2_titles(tokens))
        _check_fences(tokens, lines, add)
        _check_mermaid(tokens, add)
        _check_tables(tokens, lines, add)
    if kind != frontmatter.UPSTREAM_DRAFT:
        _check_sections(heads, add)
    if status != Status.DRAFT:
        for number in _placeholder_lines(lines, code_lines):
            add(number, Rule.PLACEHOLDER, f"unfilled placeholder `{PLACEHOLDER}`")
    _check_links(lines, code_lines, index, add)
    _check_regions(text, status, add)
    # Every report: incident reports are committed to repositories too. Markdown escapes
    # are undone before the scan (`ghp\\_...` is still a token): reporter.secrets
    # normalises the text it scans. detect-secrets' line-by-line plugins only up to a
    # megabyte (an upstream draft is at most 65,536 characters).
    where = "an upstream draft" if kind == frontmatter.UPSTREAM_DRAFT else "a report"
    if kind == frontmatter.UPSTREAM_DRAFT and upstream_scan is not None:
        for number, name, sample in upstream_scan(text):
            add(
                number,
                Rule.SECRET,
                f"possible {name} ({sample}) in {where}: the filing gate refuses it",
            )
    else:
        for number, name, sample in find_secrets(text, library=len(text) <= blocks.WHOLE):
            add(number, Rule.SECRET, f"possible {name} ({sample}) in {where}")
    if kind == frontmatter.UPSTREAM_DRAFT:
        _block, body, _start = frontmatter.split(text)
        if len(body) > GITHUB_BODY_LIMIT:
            add(
                1,
                Rule.BODY_SIZE,
                f"body is {len(body):,} characters; GitHub accepts at most {GITHUB_BODY_LIMIT:,}",
            )
    return tuple(sorted(findings, key=lambda f: (f.line, f.rule.value, f.message)))


# Records one finding: (line, rule, message).
_Add = Callable[[int, Rule, str], None]


def _check_front_matter(front: frontmatter.FrontMatter | None, add: _Add) -> None:
    if front is None:
        add(1, Rule.FRONT_MATTER, "no YAML front matter (status, owners, ...)")
        return
    if front.data is None:
        add(1, Rule.FRONT_MATTER, f"front matter is {front.error}")
        return
    data = front.data
    for line, what in front.problems:
        add(line, Rule.FRONT_MATTER, what)
    if front.kind and not front.is_report:
        add(1, Rule.FRONT_MATTER, f"unknown kind {front.kind!r}")
    statuses = [s.value for s in Status]
    if "status" not in data:
        add(1, Rule.FRONT_MATTER, "no `status` key")
    elif front.status not in statuses:
        add(1, Rule.FRONT_MATTER, f"status {front.status!r} is not one of {', '.join(statuses)}")
    owners = data.get("owners")
    if owners is not None and not (
        isinstance(owners, list) and all(isinstance(o, str) for o in owners)
    ):
        add(1, Rule.FRONT_MATTER, "`owners` must be a list of names")
    for key in ("incident_start", "incident_end"):
        value = data.get(key)
        if value is not None and not _is_time(value):
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            add(1, Rule.FRONT_MATTER, f"`{key}` {shown} is not a date or ISO 8601 time")
    upstream = data.get("upstream_issue")
    if upstream is not None and not (
        isinstance(upstream, str) and _GITHUB_LINK.fullmatch(upstream.strip())
    ):
        add(1, Rule.FRONT_MATTER, f"`upstream_issue` {upstream!r} is not a GitHub issue URL")
    if front.status == Status.FILED and not upstream:
        add(1, Rule.FRONT_MATTER, "status is `filed` but `upstream_issue` is empty")


def _is_time(value: object) -> bool:
    if isinstance(value, datetime | date):
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


class Lines:
    """The lines of a text (split at `\\r\\n`, `\\r` or `\\n`), read on demand from one array of
    offsets: a report of millions of short lines is not millions of string objects."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = array("q", [0])
        self.ends = array("q")
        for match in _LINE_BREAK.finditer(text):
            self.ends.append(match.start())
            self.starts.append(match.end())
        self.ends.append(len(text))

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> str:
        return self.text[self.starts[index] : self.ends[index]]

    def __iter__(self) -> Iterator[str]:
        for index in range(len(self.starts)):
            yield self[index]

    def having(self, needle: str) -> Iterator[tuple[int, str]]:
        """(1-based number, line) of the lines holding `needle` (found by `str.find`)."""
        at = self.text.find(needle)
        while at >= 0:
            index = bisect.bisect_right(self.starts, at) - 1
            yield index + 1, self[index]
            at = self.text.find(needle, self.ends[index])
            if at < 0:
                return


_LINE_BREAK = re.compile(r"\r\n?|\n")


class LineRanges:
    """A set of 1-based lines kept as ranges (a pasted 500,000-line log is one range, not
    half a million set entries); membership is a binary search."""

    def __init__(self) -> None:
        self._ranges: list[tuple[int, int]] = []
        self._starts: list[int] | None = None
        self._ends: list[int] = []

    def add(self, first: int, last: int) -> None:
        """Lines `first` to `last`, both included."""
        self._ranges.append((first, last))
        self._starts = None

    def update(self, other: LineRanges) -> None:
        self._ranges.extend(other._ranges)
        self._starts = None

    def __contains__(self, line: object) -> bool:
        if not isinstance(line, int) or not self._ranges:
            return False
        if self._starts is None:
            merged: list[list[int]] = []
            for first, last in sorted(self._ranges):
                if merged and first <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], last)
                else:
                    merged.append([first, last])
            self._starts = [m[0] for m in merged]
            self._ends = [m[1] for m in merged]
        at = bisect.bisect_right(self._starts, line) - 1
        return at >= 0 and line <= self._ends[at]


def _code_lines(tokens: Sequence[Token]) -> LineRanges:
    """1-based lines inside fenced or indented code blocks (fence lines included)."""
    out = LineRanges()
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map:
            out.add(token.map[0] + 1, token.map[1])
    return out


def _h2_titles(tokens: Sequence[Token]) -> list[str]:
    return [
        tokens[i + 1].content.strip()
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h2" and i + 1 < len(tokens)
    ]


def _check_sections(heads: Sequence[str], add: _Add) -> None:
    for title in REQUIRED_SECTIONS:
        if title not in heads:
            add(1, Rule.REQUIRED_SECTION, f"no `## {title}` section")


def _check_fences(tokens: Sequence[Token], lines: Lines, add: _Add) -> None:
    for token in tokens:
        if token.type != "fence" or not token.map:
            continue
        start, end = token.map
        char, width = token.markup[0], len(token.markup)
        last = re.sub(r"^[\s>]*", "", lines[end - 1]) if end - 1 < len(lines) else ""
        closed = end - 1 > start and re.fullmatch(rf"{re.escape(char)}{{{width},}}\s*", last)
        if not closed:
            add(start + 1, Rule.UNCLOSED_FENCE, f"fence opened with {token.markup} is never closed")


def _check_mermaid(tokens: Sequence[Token], add: _Add) -> None:
    for token in tokens:
        if token.type != "fence" or not token.map or token.info.split()[:1] != ["mermaid"]:
            continue
        first = token.map[0] + 2  # file line of the first content line
        body = token.content.split("\n")
        kind, at = _diagram_type(body)
        if kind is None:
            add(token.map[0] + 1, Rule.MERMAID_TYPE, "empty Mermaid block")
            continue
        words = body[at].split()
        if kind not in MERMAID_DIAGRAMS:
            add(first + at, Rule.MERMAID_TYPE, f"unknown Mermaid diagram type {kind!r}")
            continue
        if kind in ("flowchart", "graph") and len(words) > 1:
            direction = words[1].rstrip(";")
            if direction not in FLOWCHART_DIRECTIONS:
                add(first + at, Rule.MERMAID_TYPE, f"unknown flowchart direction {direction!r}")
        if kind not in ("flowchart", "graph", "xychart-beta"):
            continue
        for offset, line in enumerate(body[at + 1 :], start=at + 1):
            problem = _label_problem(line, labels=kind != "xychart-beta")
            if problem:
                add(first + offset, problem[0], problem[1])


def _diagram_type(body: Sequence[str]) -> tuple[str | None, int]:
    """The diagram keyword and its line index, skipping comments and a `---` config block."""
    index = 0
    if body and body[0].strip() == "---":
        index = next((i + 1 for i in range(1, len(body)) if body[i].strip() == "---"), len(body))
    for i in range(index, len(body)):
        stripped = body[i].strip()
        if stripped and not stripped.startswith("%%"):
            return stripped.split()[0].rstrip(";"), i
    return None, 0


def _label_problem(line: str, *, labels: bool) -> tuple[Rule, str] | None:
    """A bracket, quote or label problem in one flowchart / chart line, or None."""
    text = line.split("%%", 1)[0]
    stack: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            close = text.find('"', index + 1)
            if close < 0:
                return Rule.MERMAID_BRACKETS, "unterminated quoted label"
            opened_label = index > 0 and text[index - 1] in "[({>|/\\"
            after = text[close + 1 : close + 2]
            if labels and opened_label and after not in ("]", ")", "}", "|", "/", "\\"):
                return Rule.MERMAID_QUOTE, 'raw `"` inside a quoted label'
            index = close + 1
            continue
        if char in _CLOSERS:
            stack.append(_CLOSERS[char])
        elif (
            char == ">"
            and labels
            and index > 0
            and (text[index - 1].isalnum() or text[index - 1] == "_")
        ):
            stack.append("]")  # asymmetric node shape: id>label]
        elif char in ")]}" and (not stack or stack.pop() != char):
            return Rule.MERMAID_BRACKETS, f"unbalanced {char!r}"
        index += 1
    if stack:
        return Rule.MERMAID_BRACKETS, f"missing {stack[-1]!r}"
    return None


def _check_tables(tokens: Sequence[Token], lines: Lines, add: _Add) -> None:
    for token in tokens:
        if token.type != "table_open" or not token.map:
            continue
        start, end = token.map
        expected = _cells(lines[start])
        for number in range(start + 1, min(end, len(lines))):
            count = _cells(lines[number])
            if count != expected:
                add(
                    number + 1,
                    Rule.TABLE_COLUMNS,
                    f"row has {count} cells; the header has {expected}",
                )


def _cells(row: str) -> int:
    text = row.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return len(_CELL_SPLIT.split(text))


def _check_links(lines: Lines, code_lines: LineRanges, index: IssueIndex | None, add: _Add) -> None:
    if index is None:
        return
    # Front matter lines count too: `upstream_issue` must exist as well.
    for number, line in lines.having("github.com/"):
        if number in code_lines:
            continue
        for match in _GITHUB_LINK.finditer(line):
            repo, issue = match.group("repo"), int(match.group("number"))
            if not index.has(repo, issue):
                add(number, Rule.UPSTREAM_LINK, f"{repo}#{issue} is not in the issue index")


def _check_regions(text: str, status: str, add: _Add) -> None:
    _block, body, start = regions.split_front(text)
    parsed = regions.parse(body, first_line=start)
    for damage in parsed.damage:
        add(damage.line, Rule.REGION_MARKER, damage.problem)
    for chunk in parsed.chunks:
        if isinstance(chunk, regions.Region) and chunk.hash is None:
            add(chunk.line, Rule.REGION_MARKER, f"region {chunk.id!r} has no hash")
        if isinstance(chunk, regions.Offer) and status not in ("", Status.DRAFT):
            add(
                chunk.line,
                Rule.PLACEHOLDER,
                f"newer generated text for {chunk.id!r} is neither applied nor dismissed",
            )
