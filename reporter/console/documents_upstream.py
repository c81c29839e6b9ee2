"""The `--json` documents of the upstream and settings commands, as typed records.

search-upstream, triage, index import/export, upstream draft/file, config show, and
collect: one class per document and the builder that makes it from the app layer's
result (see `reporter.console.jsontext` for how they are printed). `sync`'s and `auth
status`'s are in `documents_sync` and `documents_auth`: they write the upstream records
themselves, whose modules load httpx, which `report config show` must not load.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from reporter.model.document import Count, Shape, document, spec

if TYPE_CHECKING:
    from reporter.app.upstream import UpstreamDraftRun
    from reporter.collect import CollectSummary
    from reporter.core.config import Settings
    from reporter.upstream import rank
    from reporter.upstream.index import ImportResult
    from reporter.upstream.publish import FileResult
    from reporter.upstream.records import Fix
    from reporter.upstream.search import SearchOutcome
    from reporter.upstream.triage import TriageRow


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _score(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# --- search-upstream and triage


@document
class Scores:
    """The signals behind a score (null: the signal had nothing to compare)."""

    text: float
    title: float
    bm25: float
    stack: float | None
    error: float | None
    semantic: float | None
    body: float | None
    exception: float | None
    version: float | None
    failure: float | None
    reference: float = spec(
        "1: the query names the issue (#N, owner/repo#N, its URL); 0.5: an issue the query "
        "names links to it; 0: neither"
    )


@document
class Reasons:
    """Why the candidate matched."""

    scores: Scores
    shared_frames: tuple[str, ...]
    terms: tuple[str, ...]
    notes: tuple[str, ...]


@document
class FixedIn:
    """What fixed a match closed as completed."""

    change: str
    kind: str
    url: str | None
    commit: str | None
    release: str | None
    deployment: str | None
    deployment_has_fix: bool | None = spec("null: cannot tell")


@document
class Candidate:
    """One upstream issue."""

    repo: str
    number: Count
    title: str
    state: str
    url: str
    score: float
    level: str
    reasons: Reasons


@document
class TriageCandidate(Candidate):
    """One likely duplicate."""

    fixed_in: FixedIn | None


@document
class SearchCandidate(Candidate):
    """One upstream issue."""

    rank_in_repo: Count = spec("place among the candidates of the same repo")
    fixed_in: FixedIn | None = spec(
        "for a match closed as completed: change, release, deployment_has_fix"
    )


@document
class QueryStack:
    """One stack searched for."""

    label: str
    weight: float
    frames: tuple[str, ...]


@document
class QuerySignals:
    """What the query's text says beyond its words."""

    exceptions: tuple[str, ...]
    versions: Mapping[str, str] = spec("product -> version quoted")
    failure: tuple[str, ...]


@document
class SearchQuery:
    """What was searched for."""

    repos: tuple[str, ...]
    title: str
    stacks: tuple[QueryStack, ...]
    errors: tuple[str, ...]
    issue: str | None
    deployed: Mapping[str, str] = spec("repo -> the version this deployment runs")
    signals: QuerySignals
    verdict: str | None


@document
class IndexUsed:
    """The index searched."""

    path: str
    example: bool = spec("true for the bundled example index")
    issues_searched: Count


@document
class SearchDocument:
    """Candidates best first, the query and the index searched."""

    masked: ClassVar[bool] = False  # public issues, printed as GitHub has them

    candidates: tuple[SearchCandidate, ...]
    fixed: tuple[str, ...] = spec('"matches #N, fixed in vX; this deployment runs Y" lines')
    query: SearchQuery
    index: IndexUsed
    notes: tuple[str, ...]


def fixed_in(fix: Fix | None, deployed: str) -> FixedIn | None:
    """The `fixed_in` object of a candidate: the change, the first release with it, and
    whether the deployment runs that release or later (None: cannot tell)."""
    if fix is None:
        return None
    # Lazy: start-up; `report config show` must not load reporter.upstream.
    from reporter.upstream import fixes

    return FixedIn(
        change=fix.ref,
        kind=fix.kind,
        url=fix.url,
        commit=fix.sha,
        release=fix.tag,
        deployment=deployed or None,
        deployment_has_fix=(
            None if not fix.tag or not deployed else fixes.has_fix(fix.tag, deployed)
        ),
    )


def _candidate(candidate: rank.Candidate) -> dict[str, Any]:
    """The fields every candidate has: repo, number, title, state, url, score, level, reasons."""
    record = candidate.issue.record
    s = candidate.reasons.scores
    return {
        "repo": record.repo,
        "number": record.number,
        "title": record.title,
        "state": record.state,
        "url": record.html_url,
        "score": round(candidate.score, 3),
        "level": candidate.level.value,
        "reasons": Reasons(
            scores=Scores(
                text=round(s.text, 3),
                title=round(s.title, 3),
                bm25=round(s.bm25, 3),
                stack=_score(s.stack),
                error=_score(s.error),
                semantic=_score(s.semantic),
                body=_score(s.body),
                exception=_score(s.exception),
                version=s.version,
                failure=s.failure,
                reference=s.reference,
            ),
            shared_frames=candidate.reasons.shared_frames,
            terms=candidate.reasons.terms,
            notes=candidate.reasons.notes,
        ),
    }


def search_document(outcome: SearchOutcome) -> SearchDocument:
    """`report search-upstream --json`."""
    # Lazy: start-up; `report config show` must not load reporter.analysis.
    from reporter.upstream.search import fixed_notes

    deployed = {repo.lower(): version for repo, version in outcome.query.deployed}
    per_repo: dict[str, int] = {}
    candidates = []
    for c in outcome.candidates:
        repo = c.issue.record.repo.lower()
        # Scores are calibrated per repo: this is the candidate's place among its repo's.
        per_repo[repo] = per_repo.get(repo, 0) + 1
        fix = outcome.fixes.get((repo, c.issue.record.number))
        candidates.append(
            SearchCandidate(
                **_candidate(c),
                rank_in_repo=per_repo[repo],
                fixed_in=fixed_in(fix, deployed.get(repo, "")),
            )
        )
    query = outcome.query
    return SearchDocument(
        candidates=tuple(candidates),
        fixed=tuple(fixed_notes(outcome)),
        query=SearchQuery(
            repos=query.repos,
            title=query.title,
            stacks=tuple(
                QueryStack(label=s.label, weight=s.weight, frames=s.keys) for s in query.stacks
            ),
            errors=query.errors,
            issue=None if query.issue is None else f"{query.issue[0]}#{query.issue[1]}",
            deployed=dict(query.deployed),
            signals=QuerySignals(
                exceptions=query.signals.exceptions,
                versions=dict(query.signals.versions),
                failure=query.signals.classes,
            ),
            verdict=query.verdict,
        ),
        index=IndexUsed(
            path=str(outcome.index_path),
            example=outcome.example_index,
            issues_searched=outcome.searched,
        ),
        notes=outcome.notes,
    )


@document
class TriagedIssue:
    """One triaged issue."""

    repo: str
    number: int | None
    title: str
    url: str
    candidates: tuple[TriageCandidate, ...]


@document
class TriageDocument:
    """Each triaged issue with its likely duplicates, never itself."""

    masked: ClassVar[bool] = False  # public issues, printed as GitHub has them

    issues: tuple[TriagedIssue, ...]
    notes: tuple[str, ...]


def triage_document(rows: Sequence[TriageRow], notes: Sequence[str] = ()) -> TriageDocument:
    """`report triage --json`: each issue with its candidates (as search-upstream lists
    them, with `fixed_in`)."""
    return TriageDocument(
        issues=tuple(
            TriagedIssue(
                repo=row.repo,
                number=row.number,
                title=row.title,
                url=row.url,
                candidates=tuple(
                    TriageCandidate(
                        **_candidate(c),
                        fixed_in=fixed_in(
                            row.fixes.get((c.issue.record.repo.lower(), c.issue.record.number)),
                            "",
                        ),
                    )
                    for c in row.candidates
                ),
            )
            for row in rows
        ),
        notes=tuple(notes),
    )


# --- the index


@document
class ImportDocument:
    """Issues imported and lines skipped."""

    index: str
    imported: Count
    skipped: tuple[str, ...] = spec("`file:line: reason` per skipped line")


def import_document(result: ImportResult, index: Path) -> ImportDocument:
    """`report index import --json`."""
    return ImportDocument(index=str(index), imported=result.imported, skipped=result.skipped)


ISSUE_LINE = Annotated[
    dict[str, Any],
    Shape(
        {
            "type": "object",
            "required": ["repo", "number", "title", "state"],
            "description": "one issue as `index import` reads it: repo, number, title, body, "
            "state, state_reason, labels, created_at, updated_at, closed_at, comments, url, "
            "is_pull, and fixed_in (kind, ref, url, sha, tag, checked_at) when a sync "
            "looked up what fixed it",
        },
        "a line of the JSONL interchange format, whose one definition is its reader and "
        "writer in reporter/upstream/records.py (record_from_json, record_to_json)",
    ),
]


@document
class ExportDocument:
    """The indexed issues (the same objects as the JSONL lines)."""

    masked: ClassVar[bool] = False  # a data export: imports back as it was

    index: str
    repo: str | None
    count: Count
    issues: tuple[ISSUE_LINE, ...]


def export_document(lines: Sequence[str], index: Path, repo: str | None) -> ExportDocument:
    """`report index export --json`: the JSONL lines as one list."""
    return ExportDocument(
        index=str(index),
        repo=repo,
        count=len(lines),
        issues=tuple(json.loads(line) for line in lines),
    )


# --- collect


@document
class Skipped:
    """One thing not captured."""

    what: str
    reason: str


@document
class HostOutcome:
    """One host."""

    host: str
    via: str
    status: Literal["complete", "partial", "incomplete", "failed", "timeout", "interrupted"] = spec(
        "partial: stacks came back, but a snapshot was not taken; incomplete: reached, but no "
        "stack came back"
    )
    reason: str
    hostname: str
    targets: Count
    dumps: Count
    failed_dumps: Count
    seconds: float


@document
class CollectDocument:
    """What a live collection took and skipped."""

    status: Literal["complete", "incomplete", "partial", "interrupted", "failed"] = spec(
        "incomplete: no stack came back from any process it was asked to dump, or "
        "nothing from a URL it was asked to read; partial: stacks from some hosts, not "
        "from others"
    )
    out: str
    targets: Count
    dumps_ok: Count
    dumps_failed: Count
    scrapes: Count
    files: Count
    seconds: float
    skipped: tuple[Skipped, ...]
    missing_stacks: tuple[str, ...] = spec("status incomplete: why, per target")
    missing: tuple[str, ...] = spec("status incomplete: why, per URL that gave nothing")
    advice: tuple[str, ...]
    hosts: tuple[HostOutcome, ...] = spec(
        "--ssh/--exec: each host's outcome, in the order named; [] on this host"
    )


def collect_document(summary: CollectSummary) -> CollectDocument:
    """`report collect --json`."""
    return CollectDocument(
        status=summary.status.value,  # type: ignore[arg-type]
        out=str(summary.out),
        targets=summary.targets,
        dumps_ok=summary.dumps_ok,
        dumps_failed=summary.dumps_failed,
        scrapes=summary.scrapes,
        files=summary.files,
        seconds=round(summary.seconds, 3),
        skipped=tuple(Skipped(what=s.what, reason=s.reason) for s in summary.skipped),
        missing_stacks=summary.missing_stacks,
        missing=summary.missing,
        advice=summary.advice,
        hosts=tuple(
            HostOutcome(
                host=h.host,
                via=h.via,
                status=h.status,  # type: ignore[arg-type]
                reason=h.reason,
                hostname=h.hostname,
                targets=h.targets,
                dumps=h.dumps,
                failed_dumps=h.failed_dumps,
                seconds=round(h.seconds, 3),
            )
            for h in summary.hosts
        ),
    )


# --- upstream draft and file


@document
class RedactionRow:
    """One kind of value in one place."""

    kind: str
    where: str
    count: Count


@document
class KnownFixRow:
    """A likely duplicate fixed in a release: `has_fix` false means upgrade first."""

    repo: str
    number: int
    url: str
    tag: str
    change: str
    deployed: str
    has_fix: bool | None


@document
class RelatedRow:
    """A related upstream issue the draft cites."""

    repo: str
    number: int
    url: str
    title: str
    state: str
    level: str


@document
class UpstreamDraftDocument:
    """The redacted draft written for review."""

    path: str
    backup: str | None
    repo: str
    title: str = spec("the issue title (the form's prefix included)")
    known_fix: KnownFixRow | None = spec(
        "a likely duplicate fixed in a release, and how the deployment stands against it"
    )
    related: tuple[RelatedRow, ...] = spec("the related upstream issues the draft cites")
    form: str = spec("the issue form followed (or 'generic')")
    characters: Count
    redacted: Count = spec("values replaced by placeholders")
    redactions: tuple[RedactionRow, ...]
    todos: Count = spec("TODO(reviewer) lines left to fill")
    leaks: tuple[str, ...] = spec("what the final scan still flags")
    trimmed: tuple[str, ...]
    notes: tuple[str, ...]


def upstream_draft_document(made: UpstreamDraftRun) -> UpstreamDraftDocument:
    """`report upstream draft --json`."""
    draft = made.run.draft
    fix = made.run.known_fix
    return UpstreamDraftDocument(
        path=str(made.path),
        backup=_path(made.backup),
        repo=draft.repo,
        title=draft.title,
        known_fix=None
        if fix is None
        else KnownFixRow(
            repo=fix.repo,
            number=fix.number,
            url=fix.url,
            tag=fix.tag,
            change=fix.change,
            deployed=fix.deployed,
            has_fix=fix.has_fix,
        ),
        related=tuple(
            RelatedRow(
                repo=c.issue.record.repo,
                number=c.issue.record.number,
                url=c.issue.record.html_url,
                title=c.issue.record.title,
                state=c.issue.record.state,
                level=c.level.value,
            )
            for c in made.run.related
        ),
        form="generic" if made.run.form.generic else str(made.run.form.source),
        characters=len(draft.body),
        redacted=draft.redaction.total(),
        redactions=tuple(
            RedactionRow(kind=e.kind, where=e.where, count=e.count) for e in draft.redaction.report
        ),
        todos=len(draft.todos),
        leaks=tuple(str(leak) for leak in draft.leaks),
        trimmed=tuple(draft.trimmed),
        notes=made.run.notes,
    )


@document
class RequestRow:
    """Exactly what would be sent (the body only as its length)."""

    method: str
    url: str
    title: str | None
    labels: tuple[str, ...]
    characters: Count


@document
class UpstreamFileDocument:
    """The decision and, when sent, the issue or comment URL."""

    action: Literal["new-issue", "comment", "already-filed", "skip-identical-comment"] = spec(
        "what was (or would be) done"
    )
    repo: str
    sent: bool
    url: str = spec("the filed issue or comment (sent), or the duplicate's")
    target: int | None
    reasons: tuple[str, ...]
    refusals: tuple[str, ...] = spec("why it was not sent; empty when it could be")
    notes: tuple[str, ...]
    recorded: str | None
    request: RequestRow | None


def upstream_file_document(result: FileResult) -> UpstreamFileDocument:
    """`report upstream file --json`: the decision, and the URL when it was sent."""
    plan = result.plan
    request = plan.request
    return UpstreamFileDocument(
        action=plan.action.value,
        repo=plan.repo,
        sent=result.sent,
        url=result.url if result.sent else plan.url,
        target=plan.target,
        reasons=plan.reasons,
        refusals=() if result.sent else plan.refusals,
        notes=plan.notes,
        recorded=_path(result.recorded),
        request=None
        if request is None
        else RequestRow(
            method=request.method,
            url=request.url,
            title=request.title,
            labels=request.labels,
            characters=len(request.body),
        ),
    )


# --- config show


@document
class SettingsRow:
    """Every key, null when unset."""

    repos: tuple[str, ...]
    index: str | None
    forms: str | None
    host: str | None


@document
class ConfigDocument:
    """The config file and the settings it gives."""

    path: str
    exists: bool
    settings: SettingsRow


def config_document(conf: Settings) -> ConfigDocument:
    """`report config show --json`."""
    return ConfigDocument(
        path=str(conf.path),
        exists=conf.exists,
        settings=SettingsRow(
            repos=conf.repos,
            index=str(conf.index) if conf.index else None,
            forms=str(conf.forms) if conf.forms else None,
            host=conf.host or None,
        ),
    )
