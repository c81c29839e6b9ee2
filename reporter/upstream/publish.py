"""Filing decisions for `report upstream file`: the plan, its gate, and the send.

    reviewed draft or built one ─► gate: TODOs, redaction leaks, size
    duplicate search (online) ─► likely duplicate? follow "Duplicate of #N" and
        closed-as-duplicate to the canonical issue; open ─► "+1 with evidence" comment
        (skipped when a comment with the same marker or text is there)
    else ─► recent issues carry our marker? ─► already filed; else create the issue
    send with bounded retries: a rate limit waits (or stops with when it resets); an
        ambiguous failure (timeout after the POST) looks for the marker before retrying

Inputs: a `filing.Tracker` (`HttpTracker` over the one GitHub client, or a fake), the bundle's analysis and draft, the
clock and the retry policy (`reporter.upstream.policy`). Outputs: a `FilingPlan`, and
what GitHub accepted (`Sent`). Reading the draft file, the environment and recording
what was sent are the application layer's (`reporter.app.filing`); nothing here prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from reporter.analysis import Analysis, Verdict
from reporter.model import Bundle
from reporter.render.lint import GITHUB_BODY_LIMIT, placeholders
from reporter.upstream import draft as drafting
from reporter.upstream import redact
from reporter.upstream.filing import (
    AmbiguousError,
    RateLimitedError,
    RemoteComment,
    RemoteIssue,
    Tracker,
)
from reporter.upstream.policy import (
    Clock,
    RetryPolicy,
    gave_up,
    rate_limit_error,
)

# Likely duplicates whose canonical issue is looked up before deciding to file.
MAX_CANDIDATES = 3
MAX_DUPLICATE_HOPS = 5
T = TypeVar("T")
_DUPLICATE_RE = re.compile(
    r"(?im)^\s*duplicate\s+of\s+"
    r"(?:https?://[^\s/]+/(?P<url_repo>[\w.-]+/[\w.-]+)/issues/(?P<url_number>\d+)"
    r"|(?P<repo>[\w.-]+/[\w.-]+)?#(?P<number>\d+))"
)


class Action(StrEnum):
    """What `report upstream file` does (or, in a dry run, would do)."""

    NEW_ISSUE = "new-issue"
    COMMENT = "comment"
    ALREADY_FILED = "already-filed"
    SKIP_COMMENT = "skip-identical-comment"


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """Exactly what would be sent."""

    method: str
    url: str
    title: str | None
    labels: tuple[str, ...]
    body: str

    def payload(self) -> dict[str, Any]:
        """The JSON body of the request."""
        if self.title is None:
            return {"body": self.body}
        return {"title": self.title, "body": self.body, "labels": list(self.labels)}


@dataclass(frozen=True, slots=True, kw_only=True)
class FilingPlan:
    """The decision, with its reasons, and why it may not be sent (`refusals`)."""

    action: Action
    repo: str
    target: int | None
    url: str
    request: Request | None
    reasons: tuple[str, ...]
    refusals: tuple[str, ...]
    notes: tuple[str, ...]
    redactions: tuple[redact.RedactionEntry, ...] = ()

    @classmethod
    def already_filed(
        cls, *, repo: str, target: int | None, url: str, reason: str, notes: tuple[str, ...] = ()
    ) -> FilingPlan:
        """The plan that sends nothing because this bundle's issue already exists."""
        return cls(
            action=Action.ALREADY_FILED,
            repo=repo,
            target=target,
            url=url,
            request=None,
            reasons=(reason,),
            refusals=(),
            notes=notes,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class FileResult:
    """The plan and, when sent, the URL GitHub gave and where it was recorded."""

    plan: FilingPlan
    sent: bool
    url: str
    recorded: Path | None = None
    reports_updated: tuple[Path, ...] = ()
    """Incident reports whose `upstream_issue` now names `url` (set by the application layer)."""
    # Local writes that failed after GitHub accepted the post: the URL still counts.
    warnings: tuple[str, ...] = ()


# Filing follows the one retry policy of the reads (`policy.RetryPolicy`); the name stays
# for callers that pass their own.
FilingPolicy = RetryPolicy


def call_with_retries(
    what: str,
    action: Callable[[], T],
    *,
    clock: Clock,
    policy: RetryPolicy,
    look: Callable[[], T | None] | None = None,
) -> T:
    """Run `action`; wait out rate limits that fit the policy; after an ambiguous failure
    run `look` (did it happen after all?) before trying again. Filing's retry rules, used
    by the other writers too (triage)."""
    problem = "no answer"
    for attempt in range(1, policy.attempts + 1):
        try:
            return action()
        except RateLimitedError as err:
            if err.wait > policy.max_wait:
                raise rate_limit_error(
                    what,
                    err.reading,
                    now=clock.now(),
                    policy=policy,
                    tip="run the same command again after that time: it will not file twice",
                    tail="; nothing was sent",
                ) from err
            problem = str(err)
            if attempt < policy.attempts:
                clock.sleep(policy.rate_delay(err.wait, clock.random()))
        except AmbiguousError as err:
            problem = str(err)
            if look is not None:
                found = look()
                if found is not None:
                    return found
            if attempt < policy.attempts:
                clock.sleep(policy.backoff_delay(attempt, clock.random()))
    raise gave_up(
        what,
        problem,
        policy,
        tip="run the same command again later: it looks for what it sent before sending again",
    )


def duplicate_target(text: str, repo: str) -> int | None:
    """The issue a "Duplicate of #N" line in `text` points to, in `repo`; None if none."""
    for match in _DUPLICATE_RE.finditer(text or ""):
        other = match.group("url_repo") or match.group("repo")
        number = match.group("url_number") or match.group("number")
        if other and other.lower() != repo.lower():
            continue
        return int(number)
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Canonical:
    """Where a "Duplicate of" chain ends: the issue, its comments, and the path taken."""

    issue: RemoteIssue | None
    comments: tuple[RemoteComment, ...]
    chain: tuple[int, ...]
    note: str = ""


def canonical_issue(
    tracker: Tracker, repo: str, number: int, *, read: Callable[[str, Callable[[], Any]], Any]
) -> Canonical:
    """Follow "Duplicate of #N" (in the body or a comment) from issue `number` to the end.

    An issue closed as duplicate with no pointer has no known canonical (issue None); a
    cycle or a chain longer than `MAX_DUPLICATE_HOPS` stops where it is, with a note.
    """
    chain = [number]
    current: RemoteIssue = read(f"GET {repo}#{number}", lambda: tracker.issue(repo, number))
    while True:
        comments: tuple[RemoteComment, ...] = read(
            f"GET {repo}#{current.number} comments",
            partial(tracker.comments, repo, current.number),
        )
        target = duplicate_target(current.body, repo)
        for comment in comments:
            target = duplicate_target(comment.body, repo) or target
        if target is None:
            if current.state_reason == "duplicate":
                return Canonical(
                    issue=None,
                    comments=comments,
                    chain=tuple(chain),
                    note=f"#{current.number} is closed as a duplicate without saying of what",
                )
            return Canonical(issue=current, comments=comments, chain=tuple(chain))
        if target in chain or len(chain) > MAX_DUPLICATE_HOPS:
            return Canonical(
                issue=current,
                comments=comments,
                chain=tuple(chain),
                note=f"the duplicate chain {' -> '.join(f'#{n}' for n in chain)} loops or runs long; stopped",
            )
        chain.append(target)
        current = read(f"GET {repo}#{target}", partial(tracker.issue, repo, target))


def signature_decides(analysis: Analysis) -> bool:
    """True when a signature match may by itself pick the issue to comment on: the
    verdict is decided and rests on stacks."""
    return analysis.verdict is not Verdict.INCONCLUSIVE and bool(analysis.classes)


def _same_marker(text: str, signature: str, ident: str) -> bool:
    return drafting.find_marker(text) == (signature, ident)


def _gate(
    body: str,
    todos: Sequence[int],
    leaks: Sequence[redact.Leak],
    *,
    what: str,
    where: str = "",
) -> list[str]:
    """Why `body` may not be sent; line numbers are those of `where` (the draft file)
    when given, else of the body."""
    refusals: list[str] = []
    lines_of = f"{where} lines" if where else "body lines"
    if todos:
        lines = ", ".join(str(n) for n in todos[:8])
        refusals.append(
            f"{what} has {len(todos)} unfilled TODO(reviewer) placeholder(s) ({lines_of} {lines}): "
            "fill them in a reviewed draft and pass it with --draft"
        )
    if leaks:
        shown = "; ".join(str(leak) for leak in leaks[:5])
        refusals.append(
            f"the redaction scan (the same as `report lint`) still flags {len(leaks)} "
            f"value(s) in {where or f'the {what}'}: {shown}"
        )
    if len(body) > GITHUB_BODY_LIMIT:
        refusals.append(
            f"the {what} is {len(body):,} characters; GitHub accepts at most {GITHUB_BODY_LIMIT:,}"
        )
    return refusals


def plan_filing(
    tracker: Tracker,
    repo: str,
    bundle: Bundle,
    analysis: Analysis,
    built: drafting.UpstreamDraft,
    *,
    title: str,
    labels: tuple[str, ...],
    body: str,
    force_new: bool,
    url_base: str,
    clock: Clock,
    policy: RetryPolicy,
    dry_run: bool,
    notes: list[str],
    likely: Sequence[int],
    filed_before: frozenset[str] = frozenset(),
    document: str = "",
    where: str = "",
) -> FilingPlan:
    """What to send (a new issue, a comment on the canonical duplicate, or nothing), why,
    and what stops it being sent (`refusals`); a GitHub failure raises, dry run or not
    (`dry_run` only says which it is). `document` is the draft as a file (front matter and body; default
    the built one) that the gate scans, `where` its name in refusals."""
    signature, ident = built.signature, built.bundle_id
    reasons: list[str] = []

    def read(what: str, action: Callable[[], Any]) -> Any:
        return call_with_retries(what, action, clock=clock, policy=policy)

    # A plan GitHub could not be asked for is no plan: a failed read fails the command,
    # dry run or not (a dry run that assumed "no issue yet" would promise a duplicate).
    recent: tuple[RemoteIssue, ...] = read(
        f"GET {repo} recent issues", lambda: tracker.recent_issues(repo)
    )
    # With --force-new after a recorded filing, the issues already filed from this bundle
    # (`filed_before`) are known and do not stop a new one.
    mine = next(
        (
            i
            for i in recent
            if _same_marker(i.body, signature, ident) and not (force_new and i.url in filed_before)
        ),
        None,
    )
    if mine is not None:
        return FilingPlan.already_filed(
            repo=repo,
            target=mine.number,
            url=mine.url,
            reason=f"#{mine.number} already carries this bundle's marker",
            notes=tuple(notes),
        )
    if not force_new:
        # Open issues reporter filed for the same hang from other bundles come first.
        candidates: list[int] = [
            i.number
            for i in recent
            if i.state == "open" and (drafting.find_marker(i.body) or ("", ""))[0] == signature
        ]
        if candidates and not signature_decides(analysis):
            # Without stacks, or without a verdict, a signature says too little to fold two
            # incidents into one thread: only the duplicate search can name a target.
            reasons.append(
                f"the signature matches {', '.join(f'#{n}' for n in candidates)}, but the verdict "
                f"is {analysis.verdict.value}"
                + ("" if analysis.classes else " and there are no stacks")
                + ": a signature match alone is not enough to comment there"
            )
            candidates = []
        candidates.extend(n for n in likely if n not in candidates)
        for number in candidates[:MAX_CANDIDATES]:
            canonical = canonical_issue(tracker, repo, number, read=read)
            chain = " -> ".join(f"#{n}" for n in canonical.chain)
            if canonical.note:
                reasons.append(canonical.note)
            target = canonical.issue
            if target is None:
                continue
            if target.state != "open":
                reason = (
                    f" as {target.state_reason.replace('_', ' ')}" if target.state_reason else ""
                )
                reasons.append(
                    f"likely duplicate {chain} ends at #{target.number}, closed{reason}: "
                    "a new issue cites it instead of commenting on a closed thread"
                )
                continue
            if _same_marker(target.body, signature, ident):
                return FilingPlan.already_filed(
                    repo=repo,
                    target=target.number,
                    url=target.url,
                    reason=f"#{target.number} was filed from this bundle",
                    notes=tuple(notes),
                )
            comment = drafting.build_comment(
                bundle,
                analysis,
                issue_text="\n".join([target.body, *(c.body for c in canonical.comments)]),
            )
            reasons.append(
                f"likely duplicate: {chain}"
                + (f" (canonical #{target.number})" if len(canonical.chain) > 1 else "")
            )
            existing = next(
                (
                    c
                    for c in canonical.comments
                    if _same_marker(c.body, signature, ident) or c.body == comment.body
                ),
                None,
            )
            if existing is not None:
                return FilingPlan(
                    action=Action.SKIP_COMMENT,
                    repo=repo,
                    target=target.number,
                    url=existing.url,
                    request=None,
                    reasons=(*reasons, f"an identical comment is already there: {existing.url}"),
                    refusals=(),
                    notes=tuple(notes),
                )
            request = Request(
                method="POST",
                url=f"{url_base}/repos/{repo}/issues/{target.number}/comments",
                title=None,
                labels=(),
                body=comment.body,
            )
            return FilingPlan(
                action=Action.COMMENT,
                repo=repo,
                target=target.number,
                url=target.url,
                request=request,
                reasons=tuple(reasons),
                refusals=tuple(_gate(comment.body, (), comment.leaks, what="comment")),
                notes=tuple(notes),
                redactions=comment.redaction.report,
            )
    else:
        reasons.append("--force-new: filing a new issue whatever the duplicate search finds")
    if not reasons:
        reasons.append("no likely duplicate upstream")
    # The same scan as `report lint` over the same text (the draft document a reviewer
    # edits), so a refusal cites the line the reviewer sees in that file.
    document = document or built.document
    todos = placeholders(document)
    leaks = redact.scan_document(document, redaction=built.redaction)
    refusals = _gate(body, todos, leaks, what="issue body", where=where)
    if not title.strip():
        refusals.append("the issue has no title")
    request = Request(
        method="POST", url=f"{url_base}/repos/{repo}/issues", title=title, labels=labels, body=body
    )
    return FilingPlan(
        action=Action.NEW_ISSUE,
        repo=repo,
        target=None,
        url="",
        request=request,
        reasons=tuple(reasons),
        refusals=tuple(refusals),
        notes=tuple(notes),
        redactions=built.redaction.report,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """What GitHub accepted: the post's URL, `issue` or `comment`, and the issue's number."""

    url: str
    action: str
    number: int


def send(
    tracker: Tracker,
    plan: FilingPlan,
    *,
    signature: str,
    ident: str,
    clock: Clock,
    policy: RetryPolicy,
    filed_before: frozenset[str] = frozenset(),
) -> Sent:
    """Send the plan's request once; an ambiguous failure looks for the marker first (on
    issues other than those in `filed_before`, the ones a --force-new files again)."""
    request = plan.request
    assert request is not None
    repo = plan.repo

    def read(what: str, action: Callable[[], Any]) -> Any:
        return call_with_retries(what, action, clock=clock, policy=policy)

    if plan.action is Action.COMMENT:
        assert plan.target is not None
        number = plan.target

        def look_comment() -> RemoteComment | None:
            comments = read(f"GET {repo}#{number} comments", lambda: tracker.comments(repo, number))
            return next((c for c in comments if _same_marker(c.body, signature, ident)), None)

        comment = call_with_retries(
            f"POST {repo}#{number} comment",
            lambda: tracker.create_comment(repo, number, request.body),
            clock=clock,
            policy=policy,
            look=look_comment,
        )
        return Sent(url=comment.url, action="comment", number=number)
    else:

        def look_issue() -> RemoteIssue | None:
            recent = read(f"GET {repo} recent issues", lambda: tracker.recent_issues(repo))
            return next(
                (
                    i
                    for i in recent
                    if _same_marker(i.body, signature, ident) and i.url not in filed_before
                ),
                None,
            )

        issue = call_with_retries(
            f"POST {repo} issue",
            lambda: tracker.create_issue(
                repo, title=request.title or "", body=request.body, labels=request.labels
            ),
            clock=clock,
            policy=policy,
            look=look_issue,
        )
        return Sent(url=issue.url, action="issue", number=issue.number)
