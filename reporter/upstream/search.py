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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import platformdirs

import reporter
from reporter.errors import UpstreamError, UsageError
from reporter.upstream import boilerplate, fixes, rank, terms
from reporter.upstream import semantic as semantic_model
from reporter.upstream.auth import api_url, host_of, missing_token_tip
from reporter.upstream.github import Clock, GitHubClient, find_token
from reporter.upstream.index import (
    Fix,
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
    query_from_issue,
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
# Closed issues whose fix one sync looks up (a timeline request each, and a few compare
# requests per fix); the rest are looked up by the next sync.
MAX_FIX_LOOKUPS = 200
# Issues whose titles mean the most alike join the candidates (they may share no word),
# at most this many and only above this cosine (unrelated titles of the real set sit at
# 0.13, 90 % of them below 0.29; each extra candidate costs a full scoring).
SEMANTIC_POOL = 30
SEMANTIC_FLOOR = 0.25
# With a stack in the query the semantic weight is small (rank.SEMANTIC_WITH_STACK): an
# issue that only shares the title's meaning rarely makes the top, so fewer are scored.
SEMANTIC_POOL_WITH_STACK = 10


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
    fixes: FixReport | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FixReport:
    """What looking up fixes cost: issues checked, fixes found, issues left for later."""

    checked: int
    found: int
    left: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOutcome:
    """Ranked candidates (best first) and the notes worth showing on stderr."""

    candidates: tuple[rank.Candidate, ...]
    query: Query
    notes: tuple[str, ...]
    index_path: Path
    example_index: bool
    searched: int
    fixes: Mapping[tuple[str, int], Fix] = field(default_factory=dict)
    """Stored fixes of candidates closed as completed, by (repo lowercased, number)."""


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
    from reporter.fileio import read_text_bounded

    if not path.exists():
        raise UsageError(f"{path}: no such file", tip="pass a UTF-8 JSONL file")
    text = read_text_bounded(path, max_bytes=4 << 30)
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
    fixed_in: bool = False,
    notes: list[str] | None = None,
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
    fix_report: FixReport | None = None
    if fixed_in and not not_modified:
        try:
            fix_report = find_fixes(index, client, repo, now=now)
        except UpstreamError as err:
            if notes is not None:
                notes.append(f"{repo}: looking up what fixed closed issues failed: {err.message}")
    if progress is not None:
        progress(SyncProgress(repo=repo, page=pages, last_page=pages, stored=stored, done=True))
    return SyncReport(
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
    base_url: str | None = None,
    transport: Any = None,
    clock: Clock | None = None,
) -> GitHubClient:
    """A client for `base_url` (else `auth.api_url`'s rule over `env`) with the token found
    in `env` or the gh CLI's config; without a token, a note says so."""
    base_url = api_url(env, base_url)
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
    path = db or default_db_path()
    notes: list[str] = []
    reports: list[SyncReport] = []
    with Index(path) as index, make_client(env, notes, transport=transport, clock=clock) as client:
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
    return reports, notes, path


def run_search(
    query: Query,
    *,
    db: Path | None,
    online: bool | None,
    limit: int,
    env: Mapping[str, str],
    base_url: str | None = None,
    transport: Any = None,
    clock: Clock | None = None,
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
    index, example = open_for_search(
        db, offline=online is False, online=online is True, notes=notes
    )
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
            with make_client(
                env, notes, base_url=base_url, transport=transport, clock=clock
            ) as client:
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


def search_and_explain(
    index: Index, query: Query, *, limit: int, notes: list[str]
) -> list[rank.Candidate]:
    """`find_duplicates` for people: the semantic model's absence and a pasted issue's
    own entry (left out) become notes."""
    if semantic_model.load() is None:
        notes.append(semantic_model.MISSING_NOTE)
    pasted: list[IssueRecord] = []
    candidates = find_duplicates(index, query, limit=limit, pasted=pasted)
    for record in pasted:
        notes.append(
            f"left out {record.repo}#{record.number}: the pasted text is that issue "
            f"(pass `{record.repo}#{record.number}` to search for its duplicates)"
        )
    return candidates


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def pasted_self(records: Sequence[IssueRecord], pasted: str) -> IssueRecord | None:
    """The stored issue that *is* the pasted query text: its whole body (and its title,
    or nearly all the text) appear in the query. With several such (re-submissions of
    one text) the newest is taken as the pasted one and the others stay, as duplicates."""
    text = _flat(pasted)
    same: list[IssueRecord] = []
    for record in records:
        body = _flat(record.body)
        if len(body) < 20 or body not in text:
            continue
        if _flat(record.title) in text or len(body) >= 0.8 * len(text):
            same.append(record)
    if not same:
        return None
    return max(same, key=lambda r: (r.created_at or "", r.number))


def stored_issue(index: Index, repo: str, number: int) -> IssueRecord:
    """A stored issue, or a `UsageError` saying how to get it into the index."""
    record = index.issue(repo, number)
    if record is None or record.is_pull:
        what = "a pull request" if record is not None else "not in the index"
        raise UsageError(
            f"{repo}#{number}: {what} at {index.path}",
            tip=f"run `report sync {repo}` first, or pass the issue's text with --text-file",
        )
    return record


def fixes_of(index: Index, candidates: Sequence[rank.Candidate]) -> dict[tuple[str, int], Fix]:
    """The stored fixes of the candidates closed as completed."""
    out: dict[tuple[str, int], Fix] = {}
    for candidate in candidates:
        record = candidate.issue.record
        if record.state != "closed" or (record.state_reason or "completed") != "completed":
            continue
        fix = index.fix(record.repo, record.number)
        if fix is not None and fix.kind != "none":
            out[(record.repo.lower(), record.number)] = fix
    return out


def fixed_in_json(fix: Fix | None, deployed: str) -> dict[str, Any] | None:
    """The `fixed_in` object of a candidate: the change, the first release with it, and
    whether the deployment runs that release or later (None: cannot tell)."""
    if fix is None:
        return None
    return {
        "change": fix.ref,
        "kind": fix.kind,
        "url": fix.url,
        "commit": fix.sha,
        "release": fix.tag,
        "deployment": deployed or None,
        "deployment_has_fix": (
            None if not fix.tag or not deployed else fixes.has_fix(fix.tag, deployed)
        ),
    }


def fixed_notes(outcome: SearchOutcome) -> list[str]:
    """One "matches #N, fixed in vX; this deployment runs Y" line per fixed candidate."""
    deployed = {repo.lower(): version for repo, version in outcome.query.deployed}
    lines: list[str] = []
    for candidate in outcome.candidates:
        record = candidate.issue.record
        fix = outcome.fixes.get((record.repo.lower(), record.number))
        if fix is None:
            continue
        change = fixes.Change(kind=fix.kind, ref=fix.ref, url=fix.url, sha=fix.sha)
        note = fixes.fixed_note(
            record.number, record.repo, change, fix.tag, deployed.get(record.repo.lower(), "")
        )
        if note is not None:
            lines.append(note)
    return lines


# --- search ------------------------------------------------------------------------


def find_duplicates(
    index: Index,
    query: Query,
    *,
    limit: int = 10,
    method: Method = Method.COMBINED,
    include_weak: bool = False,
    embedder: semantic_model.Embedder | bool | None = True,
    exclude: Sequence[tuple[str, int]] = (),
    pasted: list[IssueRecord] | None = None,
) -> list[rank.Candidate]:
    """The best candidates for `query` in `query.repos` (all repos when empty), best first.

    The query's text loses the lines that are issue-form boilerplate in those repos
    first. `embedder=True` uses the packaged semantic model when installed (False or
    None: no semantic signal; or pass one). Issues in `exclude` (`(repo, number)`, the
    query's own issue) are never returned. With a `pasted` list, a stored issue whose
    text *is* the query (see `pasted_self`) is left out before scoring (it would set the
    BM25 scale for every other candidate) and appended to `pasted`. When several repos
    are searched, the best candidate of each repo that has one is kept in the list (see
    `_best_of_each`).
    """
    model = _embedder(embedder)
    pasted_text = query.text
    query = replace(query, text=index.strip_boilerplate(query.text, query.repos))
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
    titles: TitleSimilarity | None = None
    if method is Method.COMBINED and model is not None:
        titles = semantic_neighbours(index, model, query)
        for issue_id in titles.nearest:
            pool.setdefault(issue_id, 0.0)
    stored = index.stored(pool)
    skip = {(repo.lower(), number) for repo, number in exclude}
    if query.issue is not None:
        skip.add((query.issue[0].lower(), query.issue[1]))
    elif pasted is not None:
        own = pasted_self([stored[i].record for i in sorted(stored)], pasted_text)
        if own is not None:
            pasted.append(own)
            skip.add((own.repo.lower(), own.number))
    issues = [
        stored[i]
        for i in sorted(stored)
        if (stored[i].record.repo.lower(), stored[i].record.number) not in skip
    ]
    # The candidates' own frames weigh in their stack similarity too: look them up.
    seen = {key for issue in issues for stack in issue.stacks for key in stack}
    frame_df = {**index.frame_df(seen - frame_df.keys()), **frame_df}
    stats = rank.Stats(documents=documents, term_df=term_df, frame_df=frame_df)
    if method is Method.BM25:
        return _bm25_only(issues, pool, limit)
    similarity = None if titles is None else titles.lookup(i.id for i in issues)
    scored = rank.score_candidates(
        query, issues, pool, stats, weights, surface_forms(query), similarity
    )
    if not include_weak:
        scored = [c for c in scored if c.level is not rank.Level.WEAK]
    return _best_of_each(scored, limit)


def _best_of_each(scored: Sequence[rank.Candidate], limit: int) -> list[rank.Candidate]:
    """The top `limit`, except that each repo's best candidate takes the place of the
    lowest-ranked one of a repo that has more than one in the list: searching PyTorch
    alongside SGLang must not hide PyTorch's best match."""
    top = list(scored[:limit])
    shown = {c.issue.record.repo.lower() for c in top}
    for candidate in scored[limit:]:
        repo = candidate.issue.record.repo.lower()
        if repo in shown:
            continue
        counts: dict[str, int] = {}
        for c in top:
            counts[c.issue.record.repo.lower()] = counts.get(c.issue.record.repo.lower(), 0) + 1
        victim = next(
            (
                i
                for i in range(len(top) - 1, -1, -1)
                if counts[top[i].issue.record.repo.lower()] > 1
            ),
            None,
        )
        if victim is None:
            break
        top.pop(victim)
        top.append(candidate)
        shown.add(repo)
    return top


def _embedder(choice: semantic_model.Embedder | bool | None) -> semantic_model.Embedder | None:
    if choice is True:
        return semantic_model.load()
    if choice is False or choice is None:
        return None
    return choice


def embedding_text(title: str) -> str:
    """What the semantic model embeds for an issue: its title without the form's tags."""
    return boilerplate.strip_title(title)


def embed_missing(
    index: Index,
    model: semantic_model.Embedder,
    *,
    batch: int = 1024,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Store a title vector for every issue that has none yet; returns how many.

    The index remembers that every issue has a vector of this model (until the next
    write), so a search on a complete index does not look for missing ones.
    """
    if index.meta("vectors_complete") == model.model_id:
        return 0
    done = 0
    while True:
        rows = index.missing_vectors(model.model_id, batch)
        if not rows:
            index.set_meta("vectors_complete", model.model_id)
            return done
        vectors = model.embed([embedding_text(title) for _, _, title in rows])
        index.save_vectors(
            model.model_id,
            [
                (issue, repo, semantic_model.to_blob(vector))
                for (issue, repo, _), vector in zip(rows, vectors, strict=True)
            ],
        )
        done += len(rows)
        if progress is not None:
            progress(done)


@dataclass(frozen=True, slots=True)
class TitleSimilarity:
    """The query title's cosine similarity to every stored title of the searched repos:
    ids sorted, their cosines, and the `SEMANTIC_POOL` nearest ids at `SEMANTIC_FLOOR` or
    above, best first."""

    ids: Any
    cosines: Any
    nearest: tuple[int, ...]

    def lookup(self, wanted: Iterable[int]) -> dict[int, float]:
        """Cosines of the `wanted` ids (0.0 for an issue without a vector)."""
        import numpy as np

        keys = np.fromiter(wanted, dtype=np.int64)
        if not len(keys) or not len(self.ids):
            return dict.fromkeys((int(k) for k in keys), 0.0)
        at = np.minimum(np.searchsorted(self.ids, keys), len(self.ids) - 1)
        found = self.ids[at] == keys
        values = np.where(found, self.cosines[at], 0.0)
        return {int(k): float(v) for k, v in zip(keys, values, strict=True)}


def semantic_neighbours(
    index: Index, model: semantic_model.Embedder, query: Query
) -> TitleSimilarity:
    """The query title against every stored title in its repos: one embedding and one
    matrix-vector product over the repos' vector packs. Issues without a vector get one
    first (once per index, after a sync or import that ran without the model)."""
    import numpy as np

    embed_missing(index, model)
    ids, matrix = semantic_model.unpack(index.vectors(query.repos, model.model_id))
    if not len(ids):
        return TitleSimilarity(ids=ids, cosines=np.zeros(0, dtype=np.float32), nearest=())
    vector = model.embed([embedding_text(query.title)])[0] / semantic_model.SCALE
    cosines = matrix @ vector
    if len(ids) > 1 and bool((ids[1:] < ids[:-1]).any()):
        # Several repos' packs: each is in id order, the concatenation need not be.
        order = ids.argsort(kind="stable")
        ids, cosines = ids[order], cosines[order]
    k = min(SEMANTIC_POOL if not query.stacks else SEMANTIC_POOL_WITH_STACK, len(ids))
    top = np.argpartition(-cosines, k - 1)[:k]
    best = sorted(
        (i for i in top.tolist() if cosines[i] >= SEMANTIC_FLOOR),
        key=lambda i: (-float(cosines[i]), int(ids[i])),
    )
    return TitleSimilarity(ids=ids, cosines=cosines, nearest=tuple(int(ids[i]) for i in best))


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
    deployed = {repo.lower(): version for repo, version in outcome.query.deployed}

    per_repo: dict[str, int] = {}

    def one(candidate: rank.Candidate) -> dict[str, Any]:
        record = candidate.issue.record
        key = (record.repo.lower(), record.number)
        per_repo[key[0]] = per_repo.get(key[0], 0) + 1
        return {
            **candidate_json(candidate),
            # Scores are calibrated per repo (BM25 relative to the repo's best): this is
            # the candidate's place among its own repo's.
            "rank_in_repo": per_repo[key[0]],
            "fixed_in": fixed_in_json(outcome.fixes.get(key), deployed.get(key[0], "")),
        }

    return {
        "candidates": [one(c) for c in outcome.candidates],
        "fixed": fixed_notes(outcome),
        "query": {
            "repos": list(outcome.query.repos),
            "title": outcome.query.title,
            "stacks": [
                {"label": s.label, "weight": s.weight, "frames": list(s.keys)}
                for s in outcome.query.stacks
            ],
            "errors": list(outcome.query.errors),
            "issue": (
                None
                if outcome.query.issue is None
                else f"{outcome.query.issue[0]}#{outcome.query.issue[1]}"
            ),
            "deployed": dict(outcome.query.deployed),
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
                "semantic": None if scores.semantic is None else round(scores.semantic, 3),
            },
            "shared_frames": list(candidate.reasons.shared_frames),
            "terms": list(candidate.reasons.terms),
            "notes": list(candidate.reasons.notes),
        },
    }
