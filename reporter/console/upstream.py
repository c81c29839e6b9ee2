"""Terminal text of the upstream and settings commands (sync, index, search-upstream,
triage, upstream draft/file, auth status, config show).

Each function takes an app-layer result and returns lines or text for `reporter.cli` to
print; nothing here prints, reads files or decides an exit code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from reporter.core.text import plural

if TYPE_CHECKING:
    from reporter.app.settings import AuthStatus
    from reporter.app.upstream import UpstreamDraftRun
    from reporter.core.config import Settings
    from reporter.upstream.publish import FileResult
    from reporter.upstream.search import SearchOutcome, SyncReport
    from reporter.upstream.triage import TriageOutcome


def sync_lines(reports: list[SyncReport], path: Path) -> list[str]:
    """`report sync`: one line per repository (pages, requests, fixes), then the index."""
    lines = []
    for report in reports:
        if report.not_modified:
            what = "no changes (304)"
        else:
            what = f"{report.stored} issues stored from {plural(report.pages, 'page')}"
        resumed = ", resumed an interrupted sync" if report.resumed else ""
        fixes = ""
        if report.fixes is not None and report.fixes.checked:
            fixes = f"; fixes of {report.fixes.checked} closed issues looked up ({report.fixes.found} found"
            fixes += f", {report.fixes.left} left for the next sync)" if report.fixes.left else ")"
        lines.append(f"{report.repo}: {what}; {plural(report.requests, 'request')}{resumed}{fixes}")
    lines.append(f"index: {path}")
    return lines


def search_table(outcome: SearchOutcome) -> str:
    """`report search-upstream`: one line per candidate, its reasons indented under it."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.upstream.search import fixed_notes

    source = (
        f"index: the example index shipped with reporter ({outcome.index_path}; demo issues, "
        "not upstream's)"
        if outcome.example_index
        else f"index: {outcome.index_path}"
    )
    if not outcome.candidates:
        scope = ", ".join(outcome.query.repos) or "all repos"
        return (
            f"no likely duplicates or related issues among {outcome.searched} issues ({scope})"
            f"\n{source}"
        )
    lines: list[str] = [f"{note}." for note in fixed_notes(outcome)]
    for n, candidate in enumerate(outcome.candidates, start=1):
        record = candidate.issue.record
        lines.append(
            f"{n:>2}. {candidate.score:.2f}  {candidate.level.value:<16} "
            f"{record.repo}#{record.number} ({record.state})  {record.title}"
        )
        lines.append(f"      {record.html_url}")
        lines.extend(f"      - {note}" for note in candidate.reasons.notes)
    lines.append(source)
    return "\n".join(lines)


def triage_text(outcome: TriageOutcome) -> str:
    """The `report triage` table in Markdown."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.upstream import triage

    return triage.markdown_table(outcome.rows)


def upstream_draft_lines(made: UpstreamDraftRun) -> list[tuple[str, bool]]:
    """`report upstream draft`: the written draft as (line, to stderr) pairs, in order."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.upstream.redact import report_lines

    draft = made.run.draft
    form = "generic form" if made.run.form.generic else f"form {made.run.form.source}"
    out = [f"wrote {made.path} ({draft.repo}, {form}, {len(draft.body):,} characters)"]
    if made.backup:
        out.append(f"previous version kept as {made.backup}")
    total = draft.redaction.total()
    out.append(f"redacted: {total} value(s)" + (":" if total else ""))
    out.extend(f"  {line}" for line in report_lines(draft.redaction.report))
    if draft.todos:
        out.append(f"to fill before filing: {len(draft.todos)} TODO(reviewer) line(s)")
    lines = [(line, False) for line in out]
    lines.extend((f"warning: the final scan still flags {leak}", True) for leak in draft.leaks)
    lines.extend((f"trimmed: {trimmed}", False) for trimmed in draft.trimmed)
    return lines


def known_fix_lines(made: UpstreamDraftRun, *, force_new: bool) -> list[str]:
    """`report upstream draft` with a known fix the deployment lacks: the upgrade first."""
    fix = made.run.known_fix
    if fix is None:
        return []
    change = f" ({fix.change})" if fix.change else ""
    lines = [
        f"known fix: upgrade to {fix.tag} or later: {fix.repo}#{fix.number} is a likely "
        f"duplicate fixed in {fix.tag}{change}; this deployment runs {fix.deployed}",
    ]
    if not force_new:
        lines.append(
            "Tip: upgrade and capture again if it still hangs; the draft leads with the fix, "
            "and --force-new exits 0 to file it anyway"
        )
    return lines


def refusal_lines(result: FileResult) -> list[str]:
    """Why filing was refused, one `refused:` line each, then what to do (a `Tip:`)."""
    plan = result.plan
    if result.sent or not plan.refusals:
        return []
    lines = [f"refused: {refusal}" for refusal in plan.refusals]
    if any(r.startswith("upstream cannot act on this yet") for r in plan.refusals):
        tip = "capture what the refusal names, then draft again; --force files it as it is"
    elif any("token" in r for r in plan.refusals):
        tip = "see `report auth status` for where a token is looked for"
    else:
        tip = "fix the draft (`report upstream draft`, then `report lint` it) and pass --draft FILE"
    lines.append(f"Tip: {tip}; --show-body prints what would be sent")
    return lines


def upstream_file_text(result: FileResult, *, show_body: bool = False) -> str:
    """What `report upstream file` prints after the refusals (`refusal_lines`): the
    decision, its reasons and the request. The body is printed in a dry run that could be
    sent; when refused, only with `show_body` (the refusal is the news, not 25 KB of body)."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.upstream.publish import Action

    plan = result.plan
    lines: list[str] = []
    if result.sent:
        verb = "commented on" if plan.action is Action.COMMENT else "filed"
        lines.append(f"{verb}: {result.url}")
        if result.recorded is not None:
            lines.append(f"recorded in {result.recorded}")
        lines.extend(f"upstream_issue set in {path}" for path in result.reports_updated)
        return "\n".join(lines)
    lines.append(f"action: {plan.action.value}" + (f" ({plan.url})" if plan.url else ""))
    lines.extend(f"  why: {reason}" for reason in plan.reasons)
    request = plan.request
    if request is None:
        return "\n".join(lines)
    if plan.refusals:
        lines.append("nothing was sent; once fixed, --yes sends exactly this:")
    else:
        lines.append("dry run: nothing was sent; pass --yes to send exactly this:")
    lines.append(f"{request.method} {request.url}")
    if request.title is not None:
        lines.append(f"title: {request.title}")
        lines.append(f"labels: {', '.join(request.labels) if request.labels else '(none)'}")
    if show_body or not plan.refusals:
        lines.append(f"body ({len(request.body):,} characters) between the scissors lines:")
        lines.append("-------- 8< --------")
        lines.append(request.body.rstrip("\n"))
        lines.append("-------- >8 --------")
    else:
        lines.append(f"body: {len(request.body):,} characters (--show-body prints it)")
    if plan.redactions:
        total = sum(e.count for e in plan.redactions)
        lines.append(f"redacted before sending: {total} value(s); see the draft's front matter")
    return "\n".join(lines)


def auth_status_text(status: AuthStatus, *, now: float | None = None) -> str:
    """`report auth status` for a terminal; `now` (epoch seconds) for the reset time."""
    import time

    # Lazy: start-up; `report --help` must not load reporter.upstream.
    from reporter.upstream.auth import missing_token_tip

    lines = [f"{status.host} ({status.api_url})"]
    if status.token_source:
        lines.append(f"  token: from {status.token_source}")
    else:
        lines.append(f"  token: none ({missing_token_tip(status.host)})")
    if status.rate_limit is not None:
        limit = status.rate_limit
        minutes = max(0, round((limit.reset - (now or time.time())) / 60))
        lines.append(
            f"  rate limit: {limit.remaining} of {limit.limit} requests left "
            f"(resets in {minutes} min)"
        )
    if status.error:
        lines.append(f"  rate limit: not checked: {status.error}")
    return "\n".join(lines)


def config_show_text(conf: Settings) -> str:
    """`report config show` for a terminal: the path, then each key."""
    # Lazy: start-up; `report --help` must not load reporter.core.config.
    from reporter.core.config import KEYS

    where = f"{conf.path}" + ("" if conf.exists else " (not created; every key unset)")
    lines = [f"config file: {where}"]
    from reporter.console.documents_upstream import config_document
    from reporter.model.document import data

    values = data(config_document(conf))["settings"]
    for key in KEYS:
        value = values[key]
        shown = json.dumps(value) if value not in (None, []) else "(unset)"
        lines.append(f"  {key} = {shown}")
    return "\n".join(lines)
