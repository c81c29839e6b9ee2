"""Upstream use cases: sync, index, search-upstream, triage, upstream draft and file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reporter.analysis import Analysis
from reporter.app import filing, issues
from reporter.app.filing import DraftSource
from reporter.app.issues import GitHubAccess, run_triage
from reporter.app.report import (
    DEFAULT_REPORTS,
    REPORT_MAX_BYTES,
    Options,
    default_report_path,
    load_and_analyze,
    report_records,
)
from reporter.core.errors import InputError, OutputError, ReporterError, UsageError
from reporter.core.fileio import read_text_bounded
from reporter.core.writer import write_atomic
from reporter.model import Bundle
from reporter.render import frontmatter
from reporter.render import markdown as md
from reporter.upstream.index import Index
from reporter.upstream.publish import Action
from reporter.upstream.query import Query, query_from_analysis, query_from_text
from reporter.upstream.records import validate_repo
from reporter.upstream.triage import parse_issue_ref

if TYPE_CHECKING:
    from reporter.app.filing import DraftRun, DraftSource
    from reporter.app.settings import Context
    from reporter.core.config import Settings
    from reporter.upstream.publish import FileResult
    from reporter.upstream.query import Query as UpstreamQuery
    from reporter.upstream.records import ImportResult
    from reporter.upstream.search import SearchOutcome
    from reporter.upstream.sync import SyncProgress, SyncReport
    from reporter.upstream.triage import TriageOutcome


# --- upstream issues: `report sync`, `report index ...`, `report search-upstream` -------
# The work happens in reporter.app.issues; these wrappers build the query from the
# evidence and keep the upstream modules (httpx, sqlite) out of other commands' start-up.


def upstream_query(
    evidence: Path | None,
    *,
    repos: Sequence[str],
    text_file: Path | None,
    options: Options | None = None,
) -> UpstreamQuery:
    """The search query from a bundle (its analysis), a text file (`-`: stdin), or both."""
    names = tuple(validate_repo(r) for r in repos)
    text = None if text_file is None else read_text_arg(text_file, max_bytes=REPORT_MAX_BYTES)
    if evidence is None:
        if text is None:
            raise UsageError(
                "nothing to search for",
                tip="pass a BUNDLE, or --text-file with an issue draft or a dump",
            )
        return query_from_text(text, repos=names)
    bundle, analysis = load_and_analyze([evidence], options or Options())
    query = query_from_analysis(bundle, analysis, repos=names)
    if text is None:
        return query
    extra = query_from_text(text)
    from dataclasses import replace

    return replace(
        query,
        text=f"{query.text}\n{extra.text}",
        stacks=query.stacks + extra.stacks,
        errors=tuple(dict.fromkeys(query.errors + extra.errors)),
    )


def read_text_arg(path: Path, *, max_bytes: int | None = None) -> str:
    """The text of a `--text-file` (`-`: stdin), at most `max_bytes` when given; one that
    cannot be read is a `UsageError` with a tip."""
    import sys

    tip = "pass a UTF-8 text file"
    try:
        if str(path) == "-":
            return sys.stdin.read(-1 if max_bytes is None else max_bytes)
        if max_bytes is None:
            return path.read_text("utf-8")
        return read_text_bounded(path, max_bytes=max_bytes)
    except InputError as err:
        raise UsageError(err.message, tip=tip) from err
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read it ({err})", tip=tip) from err


def search_upstream(
    ctx: Context,
    evidence: Path | None,
    *,
    repos: Sequence[str] = (),
    text_file: Path | None = None,
    limit: int = 10,
    online: bool | None = None,
    db: Path | None = None,
) -> SearchOutcome:
    """`report search-upstream`: ranked upstream issues like the bundle's hang, the text,
    or a stored issue given as `owner/repo#N` in place of the bundle."""
    from dataclasses import replace

    ref = None if evidence is None or evidence.exists() else parse_issue_ref(str(evidence))
    if ref is not None:
        query = Query(repos=tuple(validate_repo(r) for r in repos), title="", text="")
    else:
        query = upstream_query(evidence, repos=repos, text_file=text_file)
        if not query.repos and ctx.config.repos:
            query = replace(query, repos=ctx.config.repos)
    return issues.run_search(
        query,
        db=ctx.db(db),
        online=online,
        limit=limit,
        access=GitHubAccess.of(ctx),
        issue=ref,
    )


def triage(
    ctx: Context,
    target: str,
    *,
    since: str | None = None,
    text_file: Path | None = None,
    limit: int = 5,
    db: Path | None = None,
    comment: bool = False,
    post: bool = False,
) -> TriageOutcome:
    """`report triage`: likely duplicates of tracker issues (see `upstream.triage`)."""
    return run_triage(
        target,
        since=since,
        text=None if text_file is None else read_text_arg(text_file),
        limit=limit,
        db=ctx.db(db),
        comment=comment,
        post=post,
        access=GitHubAccess.of(ctx),
    )


def sync_upstream(
    ctx: Context,
    repos: Sequence[str],
    *,
    db: Path | None = None,
    full: bool = False,
    progress: Callable[[SyncProgress], None] | None = None,
    fixed_in: bool = True,
) -> tuple[list[SyncReport], list[str], Path]:
    """`report sync`: bring the local index of each repo up to date (and what fixed its
    closed issues, with `fixed_in`)."""
    names = list(repos) or list(ctx.config.repos)
    if not names:
        raise UsageError(
            "no repository to sync", tip="pass OWNER/NAME, or set `repos` in `report config show`"
        )
    return issues.run_sync(
        names,
        db=ctx.db(db),
        full=full,
        access=GitHubAccess.of(ctx),
        progress=progress,
        fixed_in=fixed_in,
    )


def index_import(ctx: Context, file: Path, *, db: Path | None = None) -> tuple[ImportResult, Path]:
    """`report index import`: JSONL issues into the index (default: the user cache index)."""
    path = ctx.db(db) or issues.default_db_path(ctx.cache_dir, ctx.host)
    existed = path.exists()
    try:
        with Index(path) as index:
            return issues.import_file(index, file), path
    except ReporterError:
        # Nothing imported: an index this command created is not left behind empty.
        issues.discard_new(path, existed)
        raise


def index_export(
    ctx: Context, *, write: Callable[[str], object], db: Path | None = None, repo: str | None = None
) -> tuple[int, Path]:
    """`report index export`: hand each stored issue's JSONL line to `write`; the count."""
    name = validate_repo(repo) if repo else None
    count = 0
    path = ctx.db(db) or issues.default_db_path(ctx.cache_dir, ctx.host)
    with Index(path, create=False) as index:
        for line in issues.export_lines(index, name):
            write(line)
            count += 1
    return count, path


# --- upstream drafts and filing: `report upstream draft`, `report upstream file` ---------
# The work happens in reporter.app.filing; these wrappers resolve the repository and
# the paths, and keep httpx out of other commands' start-up.


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamDraftRun:
    """Where `report upstream draft` wrote the draft, and what it made."""

    path: Path
    backup: Path | None
    run: DraftRun


def upstream_repo(bundle: Bundle, repo: str | None, conf: Settings | None = None) -> str:
    """`--repo`, else the manifest's first `upstream` repository, else the config's first."""
    if repo:
        return validate_repo(repo)
    if bundle.manifest.upstream:
        return validate_repo(bundle.manifest.upstream[0])
    if conf is not None and conf.repos:
        return validate_repo(conf.repos[0])
    raise UsageError(
        "no upstream repository to draft for",
        tip="pass --repo OWNER/NAME, or set `upstream = [...]` in bundle.toml",
    )


def default_upstream_path(bundle: Bundle, analysis: Analysis, repo: str, *, now: datetime) -> Path:
    """`reports/<date>-<slug>.upstream-<owner>-<name>.md`, beside the incident report."""
    report = default_report_path(bundle, analysis, now=now)
    return report.with_name(f"{report.stem}.upstream-{md.slug(repo)}.md")


def draft_source(
    ctx: Context,
    evidence: Path,
    *,
    repo: str | None,
    forms: Path | None,
    db: Path | None,
    link_related: bool,
    options: Options | None,
) -> DraftSource:
    """What `upstream draft` and `upstream file` draft from: the bundle analysed, the
    repository (`upstream_repo`), `--forms` else the config's, `--db` else the config's."""
    bundle, analysis = load_and_analyze([evidence], options or Options())
    return DraftSource(
        bundle=bundle,
        analysis=analysis,
        repo=upstream_repo(bundle, repo, ctx.config),
        forms_dir=forms or ctx.config.forms,
        db=ctx.db(db),
        link_related=link_related,
    )


def upstream_draft(
    ctx: Context,
    evidence: Path,
    *,
    repo: str | None = None,
    out: Path | None = None,
    forms: Path | None = None,
    offline: bool = False,
    db: Path | None = None,
    link_related: bool = False,
    options: Options | None = None,
    force: bool = False,
) -> UpstreamDraftRun:
    """Write the upstream issue draft for review (front matter `kind: upstream-draft`).

    Works with no network and no token: forms fall back to the cache or the generic form,
    related issues to the local index. An existing file is kept as `.bak`.
    """
    source = draft_source(
        ctx, evidence, repo=repo, forms=forms, db=db, link_related=link_related, options=options
    )
    run = filing.make_draft(source, access=GitHubAccess.of(ctx), offline=offline)
    if out is not None and str(out) == "-":
        # `-o -`: the document goes to stdout (the caller prints it), no file is written.
        return UpstreamDraftRun(path=out, backup=None, run=run)
    target = out or default_upstream_path(source.bundle, source.analysis, source.repo, now=ctx.now)
    backup = write_atomic(
        target,
        run.draft.document,
        backup=True,
        owned=None if force else _is_upstream_draft,
    )
    return UpstreamDraftRun(path=target, backup=backup, run=run)


def _is_upstream_draft(head: str) -> bool:
    """True for a file `report upstream draft` wrote (front matter `kind: upstream-draft`)."""
    return f"kind: {frontmatter.UPSTREAM_DRAFT}" in head[:4096]


def upstream_file(
    ctx: Context,
    evidence: Path,
    *,
    repo: str | None = None,
    yes: bool = False,
    force_new: bool = False,
    draft: Path | None = None,
    forms: Path | None = None,
    db: Path | None = None,
    link_related: bool = False,
    options: Options | None = None,
    reports: Path | None = None,
    report: Path | None = None,
    force: bool = False,
) -> FileResult:
    """`report upstream file`: a dry run unless `yes`; see `reporter.app.filing`.

    Once filed (or commented), the issue's URL goes into the incident report's
    `upstream_issue` (`record_upstream_issue`).
    """
    source = draft_source(
        ctx, evidence, repo=repo, forms=forms, db=db, link_related=link_related, options=options
    )
    try:
        result = filing.file_upstream(
            source,
            yes=yes,
            force_new=force_new,
            force=force,
            draft_file=draft,
            access=GitHubAccess.of(ctx),
            reports=reports if reports is not None else DEFAULT_REPORTS,
        )
    except ReporterError as err:
        raise _with_file_tip(err) from None
    already = (Action.ALREADY_FILED, Action.SKIP_COMMENT)
    if result.url and (result.sent or result.plan.action in already):
        from dataclasses import replace

        updated = record_upstream_issue(source.bundle, result.url, reports=reports, report=report)
        result = replace(result, reports_updated=updated)
    return result


# Tips the shared GitHub client gives name flags of the search commands; `upstream file`
# has neither --offline nor --online, so its errors get a tip naming what it has.
_FOREIGN_FLAGS = ("--offline", "--online")
FILE_NETWORK_TIP = (
    "check the network or --base-url, then run the same command again: it looks for what "
    "it sent before sending again (`report upstream draft --offline` drafts without GitHub)"
)


def _with_file_tip(err: ReporterError) -> ReporterError:
    """`err` with a tip that names only flags `report upstream file` has."""
    if any(flag in err.tip for flag in _FOREIGN_FLAGS):
        err.tip = FILE_NETWORK_TIP
    return err


def record_upstream_issue(
    bundle: Bundle, url: str, *, reports: Path | None = None, report: Path | None = None
) -> tuple[Path, ...]:
    """Write `url` into `upstream_issue` of the incident report(s) of this bundle.

    `report` names the report; otherwise every incident report under `reports` (default
    `reports/` when present) drafted from this bundle. A report whose `upstream_issue`
    already names another issue is left alone (the reviewer chose it).
    """
    if report is not None:
        candidates = [report]
    else:
        folder = reports if reports is not None else DEFAULT_REPORTS
        candidates = []
        if folder.is_dir() and bundle.root:
            candidates = [
                path for path, record in report_records(folder) if record.bundle == bundle.root
            ]
    updated: list[Path] = []
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise OutputError(f"{path}: cannot read the report to record {url} ({err})") from err
        front = frontmatter.parse(text)
        current = front.data.get("upstream_issue") if front and front.data else None
        if current not in (None, "", url):
            continue
        new = frontmatter.set_value(text, "upstream_issue", url)
        if new is not None and new != text:
            write_atomic(path, new)
            updated.append(path)
    return tuple(updated)
