"""Use cases of the upstream index: sync, import, export, and the duplicate search.

Inputs: an `Index`, a `GitHubClient` (only for sync and online search), a `Query`.
Outputs: result objects (`SyncReport`, `SearchOutcome`) and notes for stderr; nothing
here prints. Progress of a sync goes to a callback so that only the CLI knows about
progress bars.

Search, step by step (`find_duplicates`):

1. the query's terms get IDF weights from the index; the heaviest (at most
   `MAX_MATCH_TERMS`, none found in more than `COMMON_TERM_SHARE` of the issues) form
   an FTS5 OR query whose BM25 top `TEXT_POOL` issues are candidates;
2. the query's frame keys seen in at most `FRAME_DF_SHARE` of the issues pull in the
   `FRAME_POOL` issues with the most (rarity-weighted) frames in common;
3. `rank.score_candidates` scores the union and says why.

`Method.BM25` stops after step 1 and orders by BM25 alone (an ablation in the evaluation).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import platformdirs

import reporter
from reporter.errors import UpstreamError, UsageError
from reporter.upstream import rank, terms
from reporter.upstream.auth import api_url, host_of, missing_token_tip
from reporter.upstream.github import Clock, GitHubClient, find_token
from reporter.upstream.index import (
    ImportResult,
    Index,
    IssueRecord,
    SyncState,
    record_from_api,
    record_to_json,
    repo_of_api_item,
    validate_repo,
)
from reporter.upstream.query import (
    Query,
    frame_phrases,
    github_queries,
    match_expression,
    surface_forms,
    term_weights,
)

DB_NAME = "upstream-issues.sqlite3"
EXAMPLE_DB_NAME = "example-upstream-issues.sqlite3"
EXAMPLE_JSONL = Path("fixtures") / "github" / "issues.jsonl"
MAX_MATCH_TERMS = 24
TEXT_POOL = 150
FRAME_POOL = 100
# Frames in more issues than this share say little and cost a long posting list.
FRAME_DF_SHARE = 0.01
FRAME_DF_MIN = 50
# Terms in more issues than this are left out of the FTS5 query (they still count in the
# text score): their long posting lists cost time and their BM25 weight is small.
COMMON_TERM_SHARE = 0.05
COMMON_TERM_MIN = 200


class Method(StrEnum):
    """How to rank: ours, or BM25 alone (for evaluation)."""

    COMBINED = "combined"
    BM25 = "bm25"


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncProgress:
    """One step of a sync, for a progress display. `last_page` is None when unknown."""

    repo: str
    page: int
    last_page: int | None
    stored: int
    done: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncReport:
    """What syncing one repo cost and brought."""

    repo: str
    requests: int
    pages: int
    stored: int
    not_modified: bool
    resumed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOutcome:
    """Ranked candidates (best first) and the notes worth showing on stderr."""

    candidates: tuple[rank.Candidate, ...]
    query: Query
    notes: tuple[str, ...]
    index_path: Path
    example_index: bool
    searched: int


def default_db_path() -> Path:
    """The index in the user cache dir (e.g. `~/.cache/reporter/upstream-issues.sqlite3`)."""
    return platformdirs.user_cache_path("reporter") / DB_NAME


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
    db: Path | None, *, offline: bool, online: bool, notes: list[str]
) -> tuple[Index, bool]:
    """The index to search, and whether it is the example index.

    With `--db` that file; else the default index in the user cache dir. When the default
    index does not exist and `--offline` was given, an example index is built from
    `fixtures/github/issues.jsonl` into the cache dir (rebuilt when the file changes).
    """
    if db is not None:
        if not online and not db.is_file():
            raise UsageError(
                f"{db}: no such issue index",
                tip=f"create it with `report sync OWNER/NAME --db {db}` or `report index import FILE --db {db}`",
            )
        return Index(db), False
    path = default_db_path()
    if path.is_file() or online:
        return Index(path), False
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


# --- import / export ---------------------------------------------------------------


def import_file(index: Index, path: Path) -> ImportResult:
    """Import a JSONL file of issues; bad lines are skipped and named."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read it ({err})", tip="pass a UTF-8 JSONL file") from err
    return index.import_jsonl(text.splitlines(), source=str(path))


def export_lines(index: Index, repo: str | None = None) -> Iterator[str]:
    """JSONL lines of the stored issues, by repo and number."""
    for record in index.records(repo):
        yield json.dumps(record_to_json(record), ensure_ascii=False, sort_keys=False)


# --- sync --------------------------------------------------------------------------


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
) -> SyncReport:
    """Bring `repo` up to date in the index, one transaction per page.

    Listing runs oldest update first from the stored `since`; after each page the
    newest `updated_at` stored becomes the resume point, so an interrupted sync
    restarts where it stopped. The ETag is kept only for a listing that fit on one
    page (for a longer one a change could land on a later page without changing the
    first), and only while `since` stays the same; then a no-change resync is one
    conditional request answered 304. Known limit: GitHub pages by number, so an issue
    updated while a long listing is read moves to its end and can push an unchanged one
    back onto a page already read; `--full` lists everything again.
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
    for page in client.list_issues(repo, since=start, etag=etag):
        pages += 1
        if page.not_modified:
            not_modified = True
            break
        records = [record_from_api(item, repo) for item in page.items if "number" in item]
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
        keep_etag = newest == start and single_page_etag is not None
        final = SyncState(
            repo=repo,
            since=newest,
            etag=single_page_etag if keep_etag else None,
            resume_since=None,
            complete=True,
            synced_at=now(),
        )
    index.save_state(final)
    if progress is not None:
        progress(SyncProgress(repo=repo, page=pages, last_page=pages, stored=stored, done=True))
    return SyncReport(
        repo=repo,
        requests=client.stats.requests - requests_before,
        pages=pages,
        stored=stored,
        not_modified=not_modified,
        resumed=resumed,
    )


def refresh_online(index: Index, client: GitHubClient, query: Query, notes: list[str]) -> None:
    """Before an online search: sync the repos synced before, then ask GitHub's search.

    A repo never synced is not listed in full here (that can take thousands of requests);
    GitHub's search stands in. Any GitHub failure becomes a note: the search then runs
    on what the index has.
    """
    try:
        for repo in query.repos:
            state = index.sync_state(repo)
            if state is None:
                notes.append(
                    f"{repo}: never synced; asking GitHub's search only "
                    f"(run `report sync {repo}` for a full local index)"
                )
                continue
            sync_repo(index, client, repo)
        frame_df = index.frame_df(frame_phrases(query))
        term_df = index.term_df(terms.content_terms(query.title))
        for text in github_queries(query, frame_df=frame_df, term_df=term_df):
            result = client.search_issues(text)
            records: list[IssueRecord] = []
            for item in result.items:
                owner_name = repo_of_api_item(item)
                if owner_name is not None and "number" in item:
                    records.append(record_from_api(item, owner_name))
            index.upsert(records)
            if result.incomplete:
                notes.append(f"GitHub's search for {text!r} timed out and returned partial results")
    except UpstreamError as err:
        notes.append(f"GitHub: {err.message}; results come from the local index only")
    for notice in client.notices:
        notes.append(notice)


def make_client(
    env: Mapping[str, str],
    notes: list[str],
    *,
    transport: Any = None,
    clock: Clock | None = None,
) -> GitHubClient:
    """A client for `GITHUB_API_URL` (default api.github.com) with the token found in `env`
    or the gh CLI's config; without a token, a note says so."""
    base_url = api_url(env)
    token = find_token(env, base_url=base_url)
    if token is None:
        notes.append(
            f"no GitHub token for {host_of(base_url)} ({missing_token_tip(host_of(base_url))}): "
            "using the unauthenticated limits (60 requests/hour, 10 searches/minute)"
        )
    return GitHubClient(base_url=base_url, token=token, transport=transport, clock=clock)


def run_sync(
    repos: Sequence[str],
    *,
    db: Path | None,
    full: bool = False,
    env: Mapping[str, str],
    progress: Callable[[SyncProgress], None] | None = None,
    transport: Any = None,
    clock: Clock | None = None,
) -> tuple[list[SyncReport], list[str], Path]:
    """`report sync`: sync each repo into the index; returns reports, notes and the index path."""
    names = [validate_repo(r) for r in repos]
    if not names:
        raise UsageError(
            "name at least one repository", tip="e.g. `report sync sgl-project/sglang`"
        )
    path = db or default_db_path()
    notes: list[str] = []
    reports: list[SyncReport] = []
    with Index(path) as index, make_client(env, notes, transport=transport, clock=clock) as client:
        for repo in names:
            reports.append(sync_repo(index, client, repo, full=full, progress=progress))
        notes.extend(client.notices)
    return reports, notes, path


def run_search(
    query: Query,
    *,
    db: Path | None,
    online: bool | None,
    limit: int,
    env: Mapping[str, str],
    transport: Any = None,
    clock: Clock | None = None,
) -> SearchOutcome:
    """`report search-upstream` once the query is built: open (or build) the index,
    refresh it from GitHub when `online`, rank. `online=None` means neither flag."""
    if not 1 <= limit <= 100:
        raise UsageError(f"--limit {limit}: must be between 1 and 100")
    notes: list[str] = []
    index, example = open_for_search(
        db, offline=online is False, online=online is True, notes=notes
    )
    with index:
        if online:
            if not query.repos:
                raise UsageError(
                    "--online needs the repositories to search",
                    tip="pass --repo OWNER/NAME, or name them in the bundle's manifest (upstream)",
                )
            with make_client(env, notes, transport=transport, clock=clock) as client:
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
        candidates = find_duplicates(index, query, limit=limit)
    return SearchOutcome(
        candidates=tuple(candidates),
        query=query,
        notes=tuple(notes),
        index_path=index.path,
        example_index=example,
        searched=searched,
    )


# --- search ------------------------------------------------------------------------


def find_duplicates(
    index: Index,
    query: Query,
    *,
    limit: int = 10,
    method: Method = Method.COMBINED,
    include_weak: bool = False,
) -> list[rank.Candidate]:
    """The best candidates for `query` in `query.repos` (all repos when empty), best first."""
    documents = index.count()
    weights = term_weights(query)
    term_df = index.term_df(weights)
    common = max(COMMON_TERM_MIN, int(documents * COMMON_TERM_SHARE))
    ranked_terms = sorted(
        (t for t in weights if 0 < term_df[t] <= common),
        key=lambda t: (-weights[t] * rank.idf(documents, term_df[t]), t),
    )[:MAX_MATCH_TERMS]
    pool: dict[int, float] = {}
    if ranked_terms:
        for issue_id, score in index.text_candidates(
            match_expression(ranked_terms), query.repos, TEXT_POOL
        ):
            pool[issue_id] = score
    keys = frame_phrases(query)
    frame_df = index.frame_df(keys)
    if method is Method.COMBINED and keys:
        cap = max(FRAME_DF_MIN, int(documents * FRAME_DF_SHARE))
        rare = [k for k in keys if 0 < frame_df[k] <= cap]
        stats = rank.Stats(documents=documents, term_df=term_df, frame_df=frame_df)
        sums: dict[int, float] = {}
        for issue_id, key in index.frame_postings(rare, query.repos):
            sums[issue_id] = sums.get(issue_id, 0.0) + stats.rarity(key)
        best = sorted(sums.items(), key=lambda item: (-item[1], item[0]))[:FRAME_POOL]
        for issue_id, _ in best:
            pool.setdefault(issue_id, 0.0)
    stored = index.stored(pool)
    issues = [stored[i] for i in sorted(stored)]
    # The candidates' own frames weigh in their stack similarity too: look them up.
    seen = {key for issue in issues for stack in issue.stacks for key in stack}
    frame_df = {**index.frame_df(seen - frame_df.keys()), **frame_df}
    stats = rank.Stats(documents=documents, term_df=term_df, frame_df=frame_df)
    if method is Method.BM25:
        return _bm25_only(issues, pool, limit)
    scored = rank.score_candidates(query, issues, pool, stats, weights, surface_forms(query))
    if not include_weak:
        scored = [c for c in scored if c.level is not rank.Level.WEAK]
    return scored[:limit]


def _bm25_only(
    issues: Sequence[Any], pool: Mapping[int, float], limit: int
) -> list[rank.Candidate]:
    top = max(pool.values(), default=0.0) or 1.0
    out = [
        rank.Candidate(
            issue=issue,
            score=round(pool[issue.id] / top, 4),
            level=rank.Level.RELATED,
            reasons=rank.Reasons(
                scores=rank.SubScores(
                    text=0.0, title=0.0, bm25=pool[issue.id] / top, stack=None, error=None
                ),
                shared_frames=(),
                terms=(),
                notes=(),
            ),
        )
        for issue in issues
        if pool.get(issue.id, 0.0) > 0.0
    ]
    out.sort(key=lambda c: (-c.score, c.issue.record.repo.lower(), c.issue.record.number))
    return out[:limit]


def outcome_json(outcome: SearchOutcome) -> dict[str, Any]:
    """The `search-upstream --json` document: candidates best first, plus context."""
    return {
        "candidates": [candidate_json(c) for c in outcome.candidates],
        "query": {
            "repos": list(outcome.query.repos),
            "title": outcome.query.title,
            "stacks": [
                {"label": s.label, "weight": s.weight, "frames": list(s.keys)}
                for s in outcome.query.stacks
            ],
            "errors": list(outcome.query.errors),
        },
        "index": {
            "path": str(outcome.index_path),
            "example": outcome.example_index,
            "issues_searched": outcome.searched,
        },
        "notes": list(outcome.notes),
    }


def candidate_json(candidate: rank.Candidate) -> dict[str, Any]:
    """One candidate: repo, number, title, state, url, score, level, reasons."""
    record = candidate.issue.record
    scores = candidate.reasons.scores
    return {
        "repo": record.repo,
        "number": record.number,
        "title": record.title,
        "state": record.state,
        "url": record.html_url,
        "score": round(candidate.score, 3),
        "level": candidate.level.value,
        "reasons": {
            "scores": {
                "text": round(scores.text, 3),
                "title": round(scores.title, 3),
                "bm25": round(scores.bm25, 3),
                "stack": None if scores.stack is None else round(scores.stack, 3),
                "error": None if scores.error is None else round(scores.error, 3),
            },
            "shared_frames": list(candidate.reasons.shared_frames),
            "terms": list(candidate.reasons.terms),
            "notes": list(candidate.reasons.notes),
        },
    }


def format_table(outcome: SearchOutcome) -> str:
    """A readable listing: one line per candidate, its reasons indented under it."""
    if not outcome.candidates:
        scope = ", ".join(outcome.query.repos) or "all repos"
        return f"no likely duplicates or related issues among {outcome.searched} issues ({scope})"
    lines: list[str] = []
    for n, candidate in enumerate(outcome.candidates, start=1):
        record = candidate.issue.record
        lines.append(
            f"{n:>2}. {candidate.score:.2f}  {candidate.level.value:<16} "
            f"{record.repo}#{record.number} ({record.state})  {record.title}"
        )
        lines.append(f"      {record.html_url}")
        lines.extend(f"      - {note}" for note in candidate.reasons.notes)
    return "\n".join(lines)
