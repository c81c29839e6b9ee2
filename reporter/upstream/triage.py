"""Triage for maintainers: likely duplicates of tracker issues, as a table or a comment.

Inputs: the index (issues synced from the tracker), an issue reference
(`owner/repo#N`, or its github.com address) or a date. Outputs: `TriageRow`s (an issue
and its candidates, never itself), a Markdown or JSON table, and the "possible
duplicates" comment a bot would post on an issue.

The comment carries `MARKER` (an HTML comment GitHub does not show) followed by the
issue's reference, so a second run, a re-run of the workflow or a second bot finds it in
the issue's comments and does not post again (`already_posted`). Posting needs an
explicit `--post`; without it the comment is printed (a dry run).

Titles quoted in a comment have their `@mentions` and `#references` neutralised (a
zero-width joiner after `@` / `#`), so a comment never pings people or back-links
issues it merely lists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from reporter.core.errors import UsageError
from reporter.render.markdown import cell
from reporter.upstream import rank, search
from reporter.upstream.index import Index
from reporter.upstream.policy import FILING, SystemClock
from reporter.upstream.publish import call_with_retries
from reporter.upstream.query import query_from_issue
from reporter.upstream.records import Fix, validate_repo

if TYPE_CHECKING:
    from reporter.upstream.filing import RemoteComment, Tracker
    from reporter.upstream.policy import Clock, RetryPolicy
    from reporter.upstream.query import Query

MARKER = "<!-- reporter:possible-duplicates -->"
_REF_RE = re.compile(
    r"^(?:https?://github\.com/)?(?P<repo>[A-Za-z0-9][A-Za-z0-9_.-]{0,38}/[A-Za-z0-9_.-]{1,100}?)"
    r"(?:#|/issues/|/pull/)(?P<number>[1-9][0-9]{0,9})/?$"
)
_PING_RE = re.compile(r"([@#])(?=[A-Za-z0-9])")
# Candidates weaker than this are not worth a maintainer's look in a comment.
COMMENT_LEVELS = (rank.Level.LIKELY_DUPLICATE, rank.Level.RELATED)


def parse_issue_ref(text: str) -> tuple[str, int] | None:
    """`owner/repo#N` or `https://github.com/owner/repo/issues/N` -> (repo, N); else None."""
    match = _REF_RE.match(text.strip())
    if match is None:
        return None
    return match.group("repo"), int(match.group("number"))


def parse_since(text: str) -> str:
    """A `--since` date (`2025-01-31` or an ISO 8601 time) as the index stores times."""
    value = text.strip()
    try:
        if len(value) == 10:
            moment = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
        else:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)
    except ValueError as err:
        raise UsageError(
            f"--since {text!r}: not a date", tip="write it like 2025-01-31 or 2025-01-31T12:00:00Z"
        ) from err
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True, kw_only=True)
class TriageRow:
    """One triaged issue and its candidates, best first (never the issue itself)."""

    repo: str
    number: int | None
    title: str
    url: str
    candidates: tuple[rank.Candidate, ...]
    fixes: Mapping[tuple[str, int], Fix] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """`owner/repo#N`, or `owner/repo (text)` for a pasted text."""
        return f"{self.repo}#{self.number}" if self.number is not None else f"{self.repo} (text)"


def _neutral(text: str) -> str:
    return _PING_RE.sub("\\1\u200d", text)


def _candidate_text(row: TriageRow, candidate: rank.Candidate, *, markdown: bool) -> str:
    record = candidate.issue.record
    same_repo = record.repo.lower() == row.repo.lower()
    name = f"#{record.number}" if same_repo else f"{record.repo}#{record.number}"
    label = f"[{name}]({record.html_url})" if markdown else name
    extra = []
    if record.state == "closed":
        extra.append(
            f"closed{' as ' + record.state_reason.replace('_', ' ') if record.state_reason else ''}"
        )
    fix = row.fixes.get((record.repo.lower(), record.number))
    if fix is not None and fix.tag:
        extra.append(f"fixed in {fix.tag} ({fix.ref})")
    elif fix is not None:
        extra.append(f"fixed by {fix.ref}, in no release yet")
    tail = f", {', '.join(extra)}" if extra else ""
    return f"{label} {candidate.score:.2f} {candidate.level.value}{tail}"


def markdown_table(rows: Sequence[TriageRow]) -> str:
    """One Markdown table: each issue with its possible duplicates."""
    lines = [
        "| Issue | Title | Possible duplicates |",
        "| --- | --- | --- |",
    ]
    for row in rows:
        issue = f"[{row.ref}]({row.url})" if row.number is not None else cell(row.ref)
        found = "<br>".join(cell(_candidate_text(row, c, markdown=True)) for c in row.candidates)
        lines.append(f"| {issue} | {cell(row.title)} | {found or 'none found'} |")
    return "\n".join(lines) + "\n"


def comment_body(row: TriageRow, *, limit: int = 5) -> str | None:
    """The "possible duplicates" comment for one issue, or None when no candidate is at
    least related (nothing worth a comment)."""
    shown = [c for c in row.candidates if c.level in COMMENT_LEVELS][:limit]
    if not shown or row.number is None:
        return None
    lines = [
        MARKER,
        f"<!-- reporter:issue {row.repo}#{row.number} -->",
        "Possible duplicates, found by comparing this issue with the tracker's other issues "
        "(titles, text, stack traces and error lines). A maintainer decides; nothing was "
        "closed or labelled.",
        "",
    ]
    for candidate in shown:
        record = candidate.issue.record
        lines.append(
            f"- {_candidate_text(row, candidate, markdown=True)}: {_neutral(record.title)}"
        )
    lines += ["", "<sub>Posted once per issue by `report triage`.</sub>"]
    return "\n".join(lines) + "\n"


def already_posted(comments: Sequence[str]) -> bool:
    """True when one of the issue's comments is a possible-duplicates comment already."""
    return any(MARKER in body for body in comments)


def triage_rows(
    index: Index,
    repo: str,
    numbers: Sequence[int],
    *,
    limit: int,
    notes: list[str],
) -> list[TriageRow]:
    """Candidates for each stored issue `repo#N` of `numbers` (its own repo searched)."""
    rows: list[TriageRow] = []
    note_once: list[str] = []
    for number in numbers:
        record = search.stored_issue(index, repo, number)
        query = query_from_issue(record)
        found = search.search_and_explain(index, query, limit=limit, notes=note_once)
        rows.append(
            TriageRow(
                repo=record.repo,
                number=record.number,
                title=record.title,
                url=record.html_url,
                candidates=tuple(found),
                fixes=search.fixes_of(index, found),
            )
        )
    notes.extend(dict.fromkeys(note_once))
    return rows


def issues_since(index: Index, repo: str, since: str) -> list[int]:
    """Numbers of the issues of `repo` opened at or after `since` (oldest first)."""
    name = validate_repo(repo)
    return [record.number for record in index.opened_since(name, since)]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommentResult:
    """What happened to a possible-duplicates comment: its body (None: nothing worth
    saying), and whether it was posted, or why not."""

    body: str | None
    posted_url: str | None = None
    skipped: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TriageOutcome:
    """The rows of one `report triage`, notes for stderr, and the comment (single issue)."""

    rows: tuple[TriageRow, ...]
    notes: tuple[str, ...]
    comment: CommentResult | None = None


def post_comment(
    tracker: Tracker,
    row: TriageRow,
    *,
    post: bool,
    clock: Clock | None = None,
    policy: RetryPolicy | None = None,
) -> CommentResult:
    """Post the comment for `row` when `post`, unless the issue has one already (its
    marker is in a comment); without `post` only say what would be posted.

    Reads and the post follow filing's retry rules (`publish.call_with_retries`): a rate
    limit is waited out or said, a failure after the POST looks for the marker before
    trying again, and what still fails is an `UpstreamError` with a Tip."""
    body = comment_body(row)
    if body is None:
        return CommentResult(body=None, skipped="no likely duplicate or related issue")
    if not post:
        return CommentResult(body=body, skipped="dry run (pass --post to post it)")
    assert row.number is not None  # comment_body is None for a pasted text
    number = row.number
    clock = clock or SystemClock()
    policy = policy or FILING

    def read() -> tuple[RemoteComment, ...]:
        return call_with_retries(
            f"GET {row.ref} comments",
            lambda: tracker.comments(row.repo, number),
            clock=clock,
            policy=policy,
        )

    comments = read()
    if already_posted([c.body for c in comments]):
        earlier = next(c for c in comments if MARKER in c.body)
        return CommentResult(
            body=body, skipped=f"{row.ref} has a possible-duplicates comment already: {earlier.url}"
        )
    made = call_with_retries(
        f"POST {row.ref} comment",
        lambda: tracker.create_comment(row.repo, number, body),
        clock=clock,
        policy=policy,
        look=lambda: next((c for c in read() if MARKER in c.body), None),
    )
    return CommentResult(body=body, posted_url=made.url)


def replace_issue(query: Query, ref: tuple[str, int]) -> Query:
    """`query` made from the text of issue `ref`: that issue is never a candidate."""
    from dataclasses import replace

    return replace(query, issue=ref)
