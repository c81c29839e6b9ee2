"""Bring the local issue index up to date from GitHub: listings, fixes, online refresh.

Inputs: an `Index` and a `GitHubClient` (built by the application layer with the host,
token and clock it resolved). Outputs: `SyncReport`s and notes; progress goes to a
callback so that only the CLI knows about progress bars. Nothing here prints or reads
settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from reporter.core.errors import UpstreamError
from reporter.model.document import Count, document, spec
from reporter.upstream import fixes, terms
from reporter.upstream.github import GitHubClient
from reporter.upstream.index import Index
from reporter.upstream.query import (
    Query,
    frame_phrases,
    github_queries,
)
from reporter.upstream.records import Fix, SyncState, records_from_api

# Closed issues whose fix one sync looks up (a timeline request each, and a few compare
# requests per fix); the rest are looked up by the next sync.
MAX_FIX_LOOKUPS = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncProgress:
    """One step of a sync, for a progress display. `last_page` is None when unknown."""

    repo: str
    page: int
    last_page: int | None
    stored: int
    done: bool = False


@document
class SyncReport:
    """One repository.

    What syncing it cost and brought. `report sync --json` writes it as it is
    (`reporter.console.documents_sync`): its first line is the schema's description, its
    field order the JSON's key order.
    """

    repo: str
    stored: Count
    pages: Count
    requests: Count
    not_modified: bool = spec(
        "GitHub answered 304: nothing changed since the last sync (one request)"
    )
    resumed: bool
    # A warning names the first one left out.
    skipped: Count = spec("malformed items in GitHub's answer, left out", default=0)
    fixes: FixReport | None = spec(
        "fix look-ups: checked, found, left for the next sync (null: not run)", default=None
    )


@document
class FixReport:
    """What looking up fixes cost: issues checked, fixes found, issues left for later."""

    checked: Count
    found: Count
    left: Count


def _now_iso() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sync_repo(
    index: Index,
    client: GitHubClient,
    repo: str,
    *,
    full: bool = False,
    progress: Callable[[SyncProgress], None] | None = None,
    now: Callable[[], str] = _now_iso,
    fixed_in: bool = False,
    notes: list[str] | None = None,
) -> SyncReport:
    """Bring `repo` up to date in the index, one transaction per page.

    Listing runs oldest update first from the stored `since`; after each page the
    newest `updated_at` stored becomes the resume point, so an interrupted sync
    restarts where it stopped. The ETag is kept only for a listing that fit on one
    page (for a longer one a change could land on a later page without changing the
    first); such a listing keeps its `since`, so the next sync asks the same URL and an
    unchanged repository answers with one 304. Known limit: GitHub pages by number, so an issue
    updated while a long listing is read moves to its end and can push an unchanged one
    back onto a page already read; `--full` lists everything again.

    With `fixed_in`, issues closed as completed then get their fix looked up
    (`find_fixes`), unless the listing was unchanged (304); a GitHub failure there
    becomes a note in `notes`, the issues stay stored.
    """
    state = index.sync_state(repo) or SyncState(repo=repo)
    if full:
        state = SyncState(repo=repo)
    resumed = state.resume_since is not None
    start = state.resume_since or state.since
    etag = state.etag if not resumed else None
    requests_before = client.stats.requests
    newest = start
    pages = stored = 0
    single_page_etag: str | None = None
    not_modified = False
    skipped: list[str] = []
    for page in client.list_issues(repo, since=start, etag=etag):
        pages += 1
        if page.not_modified:
            not_modified = True
            break
        records = records_from_api(page.items, repo, skipped=skipped)
        for record in records:
            if record.updated_at and (newest is None or record.updated_at > newest):
                newest = record.updated_at
        stored += index.save_page(records, replace(state, resume_since=newest or start))
        if pages == 1 and page.next_url is None:
            single_page_etag = page.etag
        if progress is not None:
            progress(SyncProgress(repo=repo, page=pages, last_page=page.last_page, stored=stored))
    if not_modified:
        final = replace(state, complete=True, synced_at=now())
    else:
        # A listing that fit on one page is asked again as it was (same `since`, so the
        # same URL) with its ETag: an unchanged repository then answers the very next
        # sync with one 304. A longer listing moves `since` on instead.
        single = single_page_etag is not None
        final = SyncState(
            repo=repo,
            since=start if single else newest,
            etag=single_page_etag,
            resume_since=None,
            complete=True,
            synced_at=now(),
        )
    index.save_state(final)
    fix_report: FixReport | None = None
    if fixed_in and not not_modified:
        try:
            fix_report = find_fixes(index, client, repo, now=now)
        except UpstreamError as err:
            if notes is not None:
                notes.append(f"{repo}: looking up what fixed closed issues failed: {err.message}")
    if progress is not None:
        progress(SyncProgress(repo=repo, page=pages, last_page=pages, stored=stored, done=True))
    if skipped and notes is not None:
        notes.append(
            f"warning: {repo}: skipped {len(skipped)} malformed issue(s) in GitHub's answer "
            f"(first: {skipped[0]})"
        )
    return SyncReport(
        skipped=len(skipped),
        fixes=fix_report,
        repo=repo,
        requests=client.stats.requests - requests_before,
        pages=pages,
        stored=stored,
        not_modified=not_modified,
        resumed=resumed,
    )


def find_fixes(
    index: Index,
    client: GitHubClient,
    repo: str,
    *,
    limit: int = MAX_FIX_LOOKUPS,
    now: Callable[[], str] = _now_iso,
) -> FixReport:
    """For issues of `repo` closed as completed and not looked at since their last update:
    the change that closed them (timeline) and the first release tag containing it
    (tags, then compare by bisection), stored in the index. At most `limit` issues per
    run, newest first; the rest wait for the next sync."""
    pending = index.unchecked_fixes(repo)
    pending.sort(key=lambda r: (r.closed_at or "", r.number), reverse=True)
    todo, left = pending[:limit], max(0, len(pending) - limit)
    tags: list[str] | None = None
    contains: dict[tuple[str, str], bool] = {}
    found = 0
    for record in todo:
        change = fixes.closing_change(client.timeline(repo, record.number), repo)
        sha = change.sha
        if change.kind == "pull" and sha is None and change.pull is not None:
            pull = client.pull(repo, change.pull)
            merged = pull.get("merge_commit_sha") if pull else None
            sha = merged if isinstance(merged, str) and merged else None
        tag: str | None = None
        if sha is not None:
            if tags is None:
                tags = client.tags(repo)

            def has(name: str, sha: str = sha) -> bool:
                key = (sha, name)
                if key not in contains:
                    contains[key] = client.compare(repo, sha, name) in ("ahead", "identical")
                return contains[key]

            tag = fixes.first_release(tags, has)
        index.save_fix(
            Fix(
                repo=repo,
                number=record.number,
                kind=change.kind,
                ref=change.ref,
                url=change.url,
                sha=sha,
                tag=tag,
                checked_at=max(now(), record.updated_at or ""),
            )
        )
        found += change.kind != "none"
    return FixReport(checked=len(todo), found=found, left=left)


def refresh_online(index: Index, client: GitHubClient, query: Query, notes: list[str]) -> None:
    """Before an online search: sync the repos synced before, then ask GitHub's search.

    A repo never synced is not listed in full here (that can take thousands of requests);
    GitHub's search stands in. A GitHub failure is raised (`UpstreamError`): an online
    search that could not ask GitHub has no result to show, and must not look like "no
    duplicates" (the caller says so and exits non-zero; `--offline` searches the index).
    """
    for repo in query.repos:
        state = index.sync_state(repo)
        if state is None:
            # Say which index answered: one filled by `index import` holds the repo's
            # issues without a sync state, and is not "never synced" to its user.
            held = index.count([repo])
            where = f"the index at {index.path}"
            if held:
                notes.append(
                    f"{repo}: {where} holds {held} of its issues (imported, not synced); "
                    f"asking GitHub's search for newer ones (`report sync {repo} --db "
                    f"{index.path}` keeps it current)"
                )
            else:
                notes.append(
                    f"{repo}: not in {where}; asking GitHub's search only (`report sync "
                    f"{repo} --db {index.path}` builds a full local index)"
                )
            continue
        sync_repo(index, client, repo, notes=notes)
    frame_df = index.frame_df(frame_phrases(query))
    term_df = index.term_df(terms.content_terms(query.title))
    for text in github_queries(query, frame_df=frame_df, term_df=term_df):
        result = client.search_issues(text)
        skipped: list[str] = []
        index.upsert(records_from_api(result.items, None, skipped=skipped))
        if skipped:
            notes.append(
                f"warning: skipped {len(skipped)} malformed item(s) in GitHub's search "
                f"answer (first: {skipped[0]})"
            )
        if result.incomplete:
            notes.append(f"GitHub's search for {text!r} timed out and returned partial results")
    for notice in client.notices:
        notes.append(notice)
