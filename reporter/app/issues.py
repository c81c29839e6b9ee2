"""The local issue index's use cases: where it lives, sync, import, export, search, triage.

These resolve what the domain code must not: default paths (the user cache dir, the
example issues shipped with the package), the GitHub host and token from the settings'
environment, the clock; then they call `reporter.upstream` (sync, search, triage) with
an open `Index` and a `GitHubClient`. Nothing here prints.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

import reporter
from reporter.core.errors import InputError, UpstreamError, UsageError
from reporter.core.fileio import read_text_bounded
from reporter.upstream import semantic as semantic_model
from reporter.upstream.auth import api_url, host_of, missing_token_tip
from reporter.upstream.filing import HttpTracker
from reporter.upstream.github import Clock, GitHubClient, find_token
from reporter.upstream.index import Index
from reporter.upstream.query import Query, query_from_issue, query_from_text
from reporter.upstream.records import ImportResult, record_to_json, validate_repo
from reporter.upstream.search import SearchOutcome, fixes_of, search_and_explain, stored_issue
from reporter.upstream.sync import SyncProgress, SyncReport, refresh_online, sync_repo
from reporter.upstream.titles import embed_missing
from reporter.upstream.triage import (
    CommentResult,
    TriageOutcome,
    TriageRow,
    comment_body,
    issues_since,
    parse_issue_ref,
    parse_since,
    post_comment,
    replace_issue,
    triage_rows,
)

if TYPE_CHECKING:
    from reporter.app.settings import Context
    from reporter.upstream.auth import Token
    from reporter.upstream.filing import Tracker

DB_NAME = "upstream-issues.sqlite3"
EXAMPLE_DB_NAME = "example-upstream-issues.sqlite3"
EXAMPLE_JSONL = Path("fixtures") / "github" / "issues.jsonl"


def cache_root(cache_dir: Path | None = None) -> Path:
    """`cache_dir` (the context's), else the user cache dir (e.g. `~/.cache/reporter`)."""
    return cache_dir or platformdirs.user_cache_path("reporter")


def default_db_path(cache_dir: Path | None = None, host: str = "github.com") -> Path:
    """The index of `host`'s issues in the cache dir: `upstream-issues.sqlite3` for
    github.com, `upstream-issues@HOST.sqlite3` for any other host (GitHub Enterprise, a
    test server), so issue numbers of two hosts never meet in one index."""
    if host.lower() in ("github.com", "api.github.com", ""):
        return cache_root(cache_dir) / DB_NAME
    safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in host.lower())
    return cache_root(cache_dir) / f"upstream-issues@{safe}.sqlite3"


def discard_new(path: Path, existed: bool) -> None:
    """Remove an index file this command created, after a failure: a failed online
    command leaves nothing behind (an empty index would hide the example index)."""
    if existed:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def example_jsonl() -> Path | None:
    """The example issues shipped with the package (`reporter/data/example-issues.jsonl`,
    a copy of the checkout's `fixtures/github/issues.jsonl`), if present."""
    shipped = Path(reporter.__file__).resolve().parent / "data" / "example-issues.jsonl"
    if shipped.is_file():
        return shipped
    for root in (Path(reporter.__file__).resolve().parents[1], Path.cwd()):
        candidate = root / EXAMPLE_JSONL
        if candidate.is_file():
            return candidate
    return None


def open_for_search(
    db: Path | None,
    *,
    offline: bool,
    online: bool,
    notes: list[str],
    cache_dir: Path | None = None,
    host: str = "github.com",
) -> tuple[Index, bool]:
    """The index to search, and whether it is the example index.

    With `--db` that file; else the default index of `host` in the user cache dir. When
    that index does not exist, or holds no issue, and `--offline` was given, an example
    index is built from `fixtures/github/issues.jsonl` into the cache dir (rebuilt when
    the file changes): an empty index never hides the example.
    """
    if db is not None:
        if not online and not db.is_file():
            raise UsageError(
                f"{db}: no such issue index",
                tip=f"create it with `report sync OWNER/NAME --db {db}` or `report index import FILE --db {db}`",
            )
        return Index(db), False
    path = default_db_path(cache_dir, host)
    if online:
        return Index(path), False
    if path.is_file():
        index = Index(path, create=False)
        if index.count() > 0 or not offline:
            return index, False
        index.close()
        notes.append(f"the issue index at {path} holds no issue yet")
    if not offline:
        raise UsageError(
            f"no issue index yet (looked for {path})",
            tip="run `report sync OWNER/NAME` to build one, pass --online to search GitHub, "
            "or --offline to try the example index",
        )
    source = example_jsonl()
    if source is None:
        raise UsageError(
            f"no issue index at {path}, and no example issues to build one",
            tip="build one with `report sync OWNER/NAME` or `report index import FILE.jsonl`",
        )
    target = path.with_name(EXAMPLE_DB_NAME)
    index = build_example_index(source, target)
    notes.append(
        f"no issue index yet: searching the example index ({index.count()} issues); build "
        f"yours with `report sync OWNER/NAME` or `report index import FILE.jsonl`"
    )
    return index, True


def build_example_index(source: Path, target: Path) -> Index:
    """An index of the issues in `source`, rebuilt only when that file's content changed."""
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if target.is_file():
        index = Index(target)
        if index.meta("example_source") == digest:
            return index
        index.close()
        for suffix in ("", "-wal", "-shm"):
            target.with_name(target.name + suffix).unlink(missing_ok=True)
    index = Index(target)
    result = index.import_jsonl(data.decode("utf-8").splitlines(), source=str(source))
    if result.skipped:
        raise UsageError(f"example issues: {result.skipped[0]}")
    index.set_meta("example_source", digest)
    return index


def import_file(index: Index, path: Path) -> ImportResult:
    """Import a JSONL file of issues; bad lines are skipped and named."""
    if not path.exists():
        raise UsageError(f"{path}: no such file", tip="pass a UTF-8 JSONL file")
    text = read_text_bounded(path, max_bytes=4 << 30)
    result = index.import_jsonl(text.splitlines(), source=str(path))
    if result.imported == 0:
        first = f" (first: {result.skipped[0]})" if result.skipped else ""
        raise InputError(
            f"{path}: no valid issue line; nothing imported"
            + (f", {len(result.skipped)} line(s) skipped{first}" if result.skipped else ""),
            tip="each line is one JSON object with repo, number, title and state "
            "(`report index export` writes that format)",
        )
    return result


def export_lines(index: Index, repo: str | None = None) -> Iterator[str]:
    """JSONL lines of every stored issue and pull request, by repo and number, each with
    what fixed it (`fixed_in`) when a sync looked that up: an export imports back whole."""
    fixes = {(fix.repo, fix.number): fix for fix in index.fixes([repo] if repo else [])}
    for record in index.records(repo, include_pulls=True):
        line = record_to_json(record, fixes.get((record.repo, record.number)))
        yield json.dumps(line, ensure_ascii=False, sort_keys=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class GitHubAccess:
    """How the upstream use cases reach GitHub and their cache, resolved once: the
    environment the host and token come from (the context's), `--base-url`, the cache
    dir; tests add a clock (for retries' sleeps) and point the environment's API URL at a
    local server."""

    env: Mapping[str, str]
    base_url: str | None = None
    cache_dir: Path | None = None
    clock: Clock | None = None

    @classmethod
    def of(cls, ctx: Context) -> GitHubAccess:
        """The access a command's context gives."""
        return cls(env=ctx.env, base_url=ctx.base_url, cache_dir=ctx.cache_dir)

    @property
    def api_url(self) -> str:
        """`--base-url`, else `auth.api_url`'s rule over the environment."""
        return api_url(self.env, self.base_url)

    def token(self) -> Token | None:
        """The token for `api_url` from the environment or the gh CLI's config."""
        return find_token(self.env, base_url=self.api_url)

    @property
    def host(self) -> str:
        """The web host of `api_url`: caches (index, forms) are kept per host."""
        return host_of(self.api_url)

    def default_db(self) -> Path:
        """The default index of this host in the cache dir."""
        return default_db_path(self.cache_dir, self.host)

    def client(self, notes: list[str] | None = None, **options: Any) -> GitHubClient:
        """A client for `api_url` with the token (`options`: timeout, retry); without a
        token, a note in `notes` says so."""
        url, token = self.api_url, self.token()
        if token is None and notes is not None:
            notes.append(
                f"no GitHub token for {host_of(url)} ({missing_token_tip(host_of(url))}): "
                "using the unauthenticated limits (60 requests/hour, 10 searches/minute)"
            )
        return GitHubClient(base_url=url, token=token, clock=self.clock, **options)


def run_sync(
    repos: Sequence[str],
    *,
    db: Path | None,
    full: bool = False,
    access: GitHubAccess,
    progress: Callable[[SyncProgress], None] | None = None,
    fixed_in: bool = True,
) -> tuple[list[SyncReport], list[str], Path]:
    """`report sync`: sync each repo into the index (and, with `fixed_in`, what fixed its
    closed issues), then store title vectors when the semantic model is installed;
    returns reports, notes and the index path."""
    names = [validate_repo(r) for r in repos]
    if not names:
        raise UsageError(
            "name at least one repository", tip="e.g. `report sync sgl-project/sglang`"
        )
    path = db or access.default_db()
    existed = path.exists()
    notes: list[str] = []
    reports: list[SyncReport] = []
    try:
        with Index(path) as index, access.client(notes) as client:
            for repo in names:
                reports.append(
                    sync_repo(
                        index,
                        client,
                        repo,
                        full=full,
                        progress=progress,
                        fixed_in=fixed_in,
                        notes=notes,
                    )
                )
            notes.extend(client.notices)
            model = semantic_model.load()
            if model is None:
                notes.append(semantic_model.MISSING_NOTE)
            else:
                embed_missing(index, model)
    except UpstreamError:
        # Pages already stored stay (the next sync resumes); an index this run created
        # and could not fill is removed.
        if not existed and not _has_issues(path):
            discard_new(path, existed=False)
        raise
    return reports, notes, path


def _has_issues(path: Path) -> bool:
    try:
        with Index(path, create=False) as index:
            return index.count() > 0
    except Exception:
        return False


def run_search(
    query: Query,
    *,
    db: Path | None,
    online: bool | None,
    limit: int,
    access: GitHubAccess,
    issue: tuple[str, int] | None = None,
) -> SearchOutcome:
    """`report search-upstream` once the query is built: open (or build) the index,
    refresh it from GitHub when `online`, rank. `online=None` means neither flag.

    With `issue` (`owner/repo#N` given as the query) the query is that stored issue,
    searched in `query.repos` or its own repo, and never finds itself.
    """
    if not 1 <= limit <= 100:
        raise UsageError(f"--limit {limit}: must be between 1 and 100")
    notes: list[str] = []
    target = db or access.default_db()
    existed = target.exists()
    index, example = open_for_search(
        db,
        offline=online is False,
        online=online is True,
        notes=notes,
        cache_dir=access.cache_dir,
        host=access.host,
    )
    try:
        return _search(
            index,
            example,
            query,
            online=online,
            limit=limit,
            access=access,
            issue=issue,
            notes=notes,
        )
    except UpstreamError:
        # A result that could not be computed is no result: the command fails, and an
        # index this run created is not left behind.
        index.close()
        if online:
            discard_new(target, existed)
        raise


def _search(
    index: Index,
    example: bool,
    query: Query,
    *,
    online: bool | None,
    limit: int,
    access: GitHubAccess,
    issue: tuple[str, int] | None,
    notes: list[str],
) -> SearchOutcome:
    with index:
        if issue is not None:
            query = replace(
                query_from_issue(stored_issue(index, *issue), repos=query.repos),
                deployed=query.deployed,
            )
        if online:
            if not query.repos:
                raise UsageError(
                    "--online needs the repositories to search",
                    tip="pass --repo OWNER/NAME, or name them in the bundle's manifest (upstream)",
                )
            with access.client(notes) as client:
                refresh_online(index, client, query, notes)
        searched = index.count(query.repos)
        if query.repos and searched == 0:
            notes.append(
                f"the index at {index.path} has no issues of {', '.join(query.repos)}; "
                f"run `report sync {' '.join(query.repos)}`"
            )
        elif not query.repos:
            notes.append(
                "no repository named (--repo or the manifest's upstream): searched them all"
            )
        candidates = search_and_explain(index, query, limit=limit, notes=notes)
        found = fixes_of(index, candidates)
    return SearchOutcome(
        candidates=tuple(candidates),
        query=query,
        notes=tuple(notes),
        index_path=index.path,
        example_index=example,
        searched=searched,
        fixes=found,
    )


def run_triage(
    target: str,
    *,
    since: str | None,
    text: str | None,
    limit: int,
    db: Path | None,
    comment: bool = False,
    post: bool = False,
    access: GitHubAccess,
    tracker: Tracker | None = None,
) -> TriageOutcome:
    """`report triage`: `owner/repo#N` (one issue from the index), `owner/repo --since
    DATE` (every issue opened since), or `owner/repo` with a text (a pasted issue)."""
    if not 1 <= limit <= 100:
        raise UsageError(f"--limit {limit}: must be between 1 and 100")
    ref = parse_issue_ref(target)
    repo = ref[0] if ref is not None else validate_repo(target)
    if ref is None and since is None and text is None:
        raise UsageError(
            f"{target}: name an issue or a period",
            tip=f"write {repo}#NUMBER, or add --since 2025-01-31 or --text-file FILE",
        )
    if (comment or post) and ref is None:
        raise UsageError("--comment and --post work on one issue", tip=f"name it as {repo}#NUMBER")
    if ref is not None and since is not None:
        raise UsageError("--since lists many issues; drop it or the #NUMBER")
    path = db or access.default_db()
    notes: list[str] = []
    with Index(path, create=False) as index:
        if index.count([repo]) == 0:
            raise UsageError(
                f"the index at {path} has no issues of {repo}", tip=f"run `report sync {repo}`"
            )
        if text is not None:
            query = query_from_text(text, repos=(repo,))
            if ref is not None:
                query = replace_issue(query, ref)
            found = search_and_explain(index, query, limit=limit, notes=notes)
            rows = [
                TriageRow(
                    repo=repo,
                    number=ref[1] if ref else None,
                    title=query.title,
                    url=f"https://github.com/{repo}/issues/{ref[1]}" if ref else "",
                    candidates=tuple(found),
                    fixes=fixes_of(index, found),
                )
            ]
        elif ref is not None:
            rows = triage_rows(index, repo, [ref[1]], limit=limit, notes=notes)
        else:
            assert since is not None
            numbers = issues_since(index, repo, parse_since(since))
            if not numbers:
                notes.append(f"no issue of {repo} in the index was opened since {since}")
            rows = triage_rows(index, repo, numbers, limit=limit, notes=notes)
    result: CommentResult | None = None
    if comment or post:
        if tracker is None and post:
            tracker = _tracker(access)
        if tracker is None:
            result = CommentResult(
                body=comment_body(rows[0]), skipped="dry run (pass --post to post it)"
            )
        else:
            result = post_comment(tracker, rows[0], post=post, clock=access.clock)
    return TriageOutcome(rows=tuple(rows), notes=tuple(notes), comment=result)


def _tracker(access: GitHubAccess) -> Tracker:
    base = access.api_url
    token = access.token()
    if token is None:
        raise UsageError(
            "--post needs a GitHub token",
            tip="set GITHUB_TOKEN (in a workflow: `GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`)",
        )
    return HttpTracker(base_url=base, token=token, client=access.client())
