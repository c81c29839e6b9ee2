"""Upstream issues as records: what the index stores, and how GitHub's API and JSONL map to it.

`IssueRecord` (one issue or pull request), `StoredIssue` (a record with what extraction
found, as ranking reads it), `SyncState`, `Fix`, `ImportResult`; `record_from_api`,
`record_from_json` and `record_to_json` convert (see `index` for the JSONL shape).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reporter.core.errors import UsageError
from reporter.core.inert import for_terminal
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
    """An `IssueRecord` from one issue object of GitHub's REST API (listing or search).

    `ValueError` says what is wrong with a malformed item (the caller skips and counts it);
    the title is made inert (escape sequences, controls and bidi overrides removed): it
    reaches terminals and upstream drafts.
    """
    number = item.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 2**63:
        raise ValueError(f"'number' must be a positive integer, not {str(number)[:40]!r}")
    for key in ("title", "body", "state", "html_url", "created_at", "updated_at", "closed_at"):
        if item.get(key) is not None and not isinstance(item[key], str):
            raise ValueError(f"issue {number}: {key!r} must be a string")
    comments = item.get("comments")
    return IssueRecord(
        repo=repo,
        number=number,
        title=inert_title(item.get("title") or ""),
        body=str(item.get("body") or ""),
        state=str(item.get("state") or "open"),
        state_reason=_opt_str(item.get("state_reason")),
        labels=_label_names(item.get("labels") or ()),
        created_at=_opt_str(item.get("created_at")),
        updated_at=_opt_str(item.get("updated_at")),
        closed_at=_opt_str(item.get("closed_at")),
        comments=comments if isinstance(comments, int) and not isinstance(comments, bool) else 0,
        url=_opt_str(item.get("html_url")),
        is_pull="pull_request" in item,
    )


def records_from_api(
    items: Sequence[dict[str, Any]], repo: str | None, *, skipped: list[str]
) -> list[IssueRecord]:
    """The records of a page of API items; a malformed item costs one line in `skipped`,
    not the page. `repo` None: each item's own (search results span repositories)."""
    out: list[IssueRecord] = []
    for item in items:
        owner_name = repo or repo_of_api_item(item)
        if owner_name is None:
            skipped.append("an item without a repository_url")
            continue
        try:
            out.append(record_from_api(item, owner_name))
        except ValueError as err:
            skipped.append(str(err))
    return out


# Invisible characters that hide or reorder text in a title: zero-width spaces and
# joiners, bidi marks, word joiners and the byte-order mark (`reporter.core.inert` removes
# escape sequences, controls and bidi overrides).
_INVISIBLE_RE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff]")


def inert_title(text: str) -> str:
    """A title from upstream made inert, on one line: `reporter.core.inert.for_terminal`, then
    invisible characters removed."""
    return " ".join(_INVISIBLE_RE.sub("", for_terminal(str(text))).split())


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
        is_pull=obj.get("is_pull") is True,
    )


_FIX_KINDS = ("pull", "commit", "none")


def fix_from_json(obj: Any, record: IssueRecord) -> Fix | None:
    """The `fixed_in` object of a JSONL line (see `fix_to_json`) for `record`; None when
    the line has none; `ValueError` when it is malformed."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ValueError("'fixed_in' must be an object or null")
    kind, ref = obj.get("kind"), obj.get("ref")
    if kind not in _FIX_KINDS:
        raise ValueError(f"'fixed_in.kind' must be one of {', '.join(_FIX_KINDS)}, not {kind!r}")
    if not isinstance(ref, str):
        raise ValueError("'fixed_in.ref' must be a string")
    for key in ("url", "sha", "tag", "checked_at"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise ValueError(f"'fixed_in.{key}' must be a string or null")
    return Fix(
        repo=record.repo,
        number=record.number,
        kind=kind,
        ref=ref,
        url=_opt_str(obj.get("url")),
        sha=_opt_str(obj.get("sha")),
        tag=_opt_str(obj.get("tag")),
        checked_at=_opt_str(obj.get("checked_at")),
    )


def fix_to_json(fix: Fix) -> dict[str, Any]:
    """The `fixed_in` object of an exported line: what `report sync` found fixed the issue.

    Example: `{"kind": "pull", "ref": "#4410", "url": "...", "sha": "3f2c...",
    "tag": "v0.5.3", "checked_at": "2026-07-12T10:00:00Z"}` (`kind` `none`: looked up,
    nothing found)."""
    return {
        "kind": fix.kind,
        "ref": fix.ref,
        "url": fix.url,
        "sha": fix.sha,
        "tag": fix.tag,
        "checked_at": fix.checked_at,
    }


def record_to_json(record: IssueRecord, fix: Fix | None = None) -> dict[str, Any]:
    """The JSONL object for a record (the import format plus the optional extras:
    `is_pull`, and `fixed_in` when a sync looked up what fixed it)."""
    out: dict[str, Any] = {
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
        "is_pull": record.is_pull,
    }
    if fix is not None:
        out["fixed_in"] = fix_to_json(fix)
    return out


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _label_names(labels: Any) -> tuple[str, ...]:
    """Label names sorted, empty ones left out: GitHub gives objects, JSONL may give strings."""
    names = (
        str(label.get("name", "")) if isinstance(label, dict) else str(label) for label in labels
    )
    return tuple(sorted(name for name in names if name))
