"""Upstream issues as records: what the index stores, and how GitHub's API and JSONL map to it.

`IssueRecord` (one issue or pull request), `StoredIssue` (a record with what extraction
found, as ranking reads it), `SyncState`, `Fix`, `ImportResult`; `record_from_api`,
`record_from_json` and `record_to_json` convert (see `index` for the JSONL shape).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reporter.errors import UsageError
from reporter.upstream.signals import EMPTY, Signals

_REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,38}/[A-Za-z0-9_.-]{1,100}")


@dataclass(frozen=True, slots=True, kw_only=True)
class IssueRecord:
    """One upstream issue (or pull request) as it goes into and out of the index."""

    repo: str
    number: int
    title: str
    body: str = ""
    state: str = "open"
    state_reason: str | None = None
    labels: tuple[str, ...] = ()
    created_at: str | None = None
    updated_at: str | None = None
    closed_at: str | None = None
    comments: int = 0
    url: str | None = None
    is_pull: bool = False

    @property
    def html_url(self) -> str:
        """The issue's web address: the recorded one, else github.com's form."""
        return self.url or f"https://github.com/{self.repo}/issues/{self.number}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredIssue:
    """An indexed issue as ranking reads it: the record plus what extraction found, its
    distinct search terms (`terms.tokens` of title and body) and its signals."""

    id: int
    record: IssueRecord
    stacks: tuple[tuple[str, ...], ...]
    errors: tuple[str, ...]
    terms: frozenset[str] = frozenset()
    title_terms: tuple[str, ...] | None = None
    """The title's tokens in order (`terms.tokens`), stored at index time; None: not
    stored (tokenise the title)."""
    signals: Signals = EMPTY


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncState:
    """Where the last sync of one repo got to.

    `since` is the `updated_at` to ask from next time and `etag` the ETag GitHub gave
    for that listing (None until a single-page listing for `since` was seen).
    `resume_since` is set while a sync is under way: the newest `updated_at` stored
    so far; a sync that was interrupted restarts from there.
    """

    repo: str
    since: str | None = None
    etag: str | None = None
    resume_since: str | None = None
    complete: bool = False
    synced_at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """What an import did: records stored, and one `file:line: reason` per skipped line."""

    imported: int
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Fix:
    """What fixed a closed issue, as a sync found it.

    `kind` is `pull` (a pull request that closed it or was linked; `ref` is `#N`),
    `commit` (a commit that closed it; `ref` is the short SHA) or `none` (looked up,
    nothing found). `tag` is the first release tag that contains the change, None when
    no release has it yet (or it was not found). `checked_at` is when it was looked up.
    """

    repo: str
    number: int
    kind: str
    ref: str
    url: str | None = None
    sha: str | None = None
    tag: str | None = None
    checked_at: str | None = None


def validate_repo(repo: str) -> str:
    """`owner/name` or a `UsageError` saying how to write it."""
    repo = repo.strip().removeprefix("https://github.com/").rstrip("/")
    if not _REPO_RE.fullmatch(repo):
        raise UsageError(
            f"{repo!r} is not a GitHub repository (owner/name)",
            tip="write it like sgl-project/sglang",
        )
    return repo


def record_from_api(item: dict[str, Any], repo: str) -> IssueRecord:
    """An `IssueRecord` from one issue object of GitHub's REST API (listing or search)."""
    return IssueRecord(
        repo=repo,
        number=int(item["number"]),
        title=str(item.get("title") or ""),
        body=str(item.get("body") or ""),
        state=str(item.get("state") or "open"),
        state_reason=_opt_str(item.get("state_reason")),
        labels=_label_names(item.get("labels") or ()),
        created_at=_opt_str(item.get("created_at")),
        updated_at=_opt_str(item.get("updated_at")),
        closed_at=_opt_str(item.get("closed_at")),
        comments=int(item.get("comments") or 0),
        url=_opt_str(item.get("html_url")),
        is_pull="pull_request" in item,
    )


def repo_of_api_item(item: dict[str, Any]) -> str | None:
    """`owner/name` from a search result's `repository_url` (search spans repos)."""
    url = item.get("repository_url")
    if not isinstance(url, str) or "/repos/" not in url:
        return None
    return url.rsplit("/repos/", 1)[1].strip("/") or None


def record_from_json(obj: Any) -> IssueRecord:
    """An `IssueRecord` from one JSONL object; `ValueError` says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    for key in ("repo", "number", "title", "state"):
        if key not in obj:
            raise ValueError(f"missing {key!r}")
    repo = obj["repo"]
    if not isinstance(repo, str) or not _REPO_RE.fullmatch(repo):
        raise ValueError(f"'repo' must be owner/name, not {repo!r}")
    number = obj["number"]
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 2**63:
        raise ValueError(f"'number' must be a positive integer, not {number!r}")
    title, body, state = obj["title"], obj.get("body"), obj["state"]
    if not isinstance(title, str):
        raise ValueError("'title' must be a string")
    if body is not None and not isinstance(body, str):
        raise ValueError("'body' must be a string or null")
    if state not in ("open", "closed"):
        raise ValueError(f"'state' must be 'open' or 'closed', not {state!r}")
    raw_labels = obj.get("labels") or []
    if not isinstance(raw_labels, list):
        raise ValueError("'labels' must be a list")
    comments = obj.get("comments", 0)
    return IssueRecord(
        repo=repo,
        number=number,
        title=title,
        body=body or "",
        state=state,
        state_reason=_opt_str(obj.get("state_reason")),
        labels=_label_names(raw_labels),
        created_at=_opt_str(obj.get("created_at")),
        updated_at=_opt_str(obj.get("updated_at")),
        closed_at=_opt_str(obj.get("closed_at")),
        comments=comments if isinstance(comments, int) and not isinstance(comments, bool) else 0,
        url=_opt_str(obj.get("url") or obj.get("html_url")),
    )


def record_to_json(record: IssueRecord) -> dict[str, Any]:
    """The JSONL object for a record (the import format plus the optional extras)."""
    return {
        "repo": record.repo,
        "number": record.number,
        "title": record.title,
        "body": record.body,
        "state": record.state,
        "state_reason": record.state_reason,
        "labels": list(record.labels),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "closed_at": record.closed_at,
        "comments": record.comments,
        "url": record.html_url,
    }


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _label_names(labels: Any) -> tuple[str, ...]:
    """Label names sorted, empty ones left out: GitHub gives objects, JSONL may give strings."""
    names = (
        str(label.get("name", "")) if isinstance(label, dict) else str(label) for label in labels
    )
    return tuple(sorted(name for name in names if name))
