"""The `--json` document of each command, built from the app layer's result objects.

Pure functions, one per command; the shapes are declared in `reporter.schemas` and
checked by the tests. Imports of result types are for typing only, so the CLI pays
for nothing it does not print.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reporter.app import DraftResult, InitResult, UpstreamDraftRun
    from reporter.collect import CollectSummary
    from reporter.render.regions import MergeResult
    from reporter.upstream.index import ImportResult
    from reporter.upstream.publish import FileResult
    from reporter.upstream.search import SyncReport

JSON = dict[str, Any]


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)


def merge_json(merge: MergeResult | None) -> JSON | None:
    """What merging a draft into an edited report did, by outcome."""
    if merge is None:
        return None
    return {
        "regenerated": list(merge.updated),
        "kept_edited": list(merge.kept_edited),
        "conflicts": list(merge.conflicts),
        "added": list(merge.added),
        "removed_by_reviewer": list(merge.removed_by_reviewer),
        "retired": list(merge.retired),
        "front_matter_added": list(merge.front_matter_added),
        "damaged": [{"line": d.line, "problem": d.problem} for d in merge.damaged],
    }


def draft_json(result: DraftResult) -> JSON:
    """`report draft --json`."""
    return {
        "path": str(result.path),
        "backup": _path(result.backup),
        "unchanged": result.unchanged,
        "charts": _path(result.charts),
        "verdict": result.analysis.verdict.value,
        "signature": result.analysis.signature.hash,
        "merge": merge_json(result.merge),
    }


def init_json(result: InitResult) -> JSON:
    """`report init --json`."""
    return {
        "path": str(result.path),
        "suggestions": [{"key": s.key, "value": s.value, "why": s.why} for s in result.suggestions],
    }


def preview_json(path: Path) -> JSON:
    """`report preview --json`."""
    return {"path": str(path)}


def sync_json(reports: Sequence[SyncReport], notes: Sequence[str], index: Path) -> JSON:
    """`report sync --json`."""
    return {
        "index": str(index),
        "repos": [
            {
                "repo": r.repo,
                "stored": r.stored,
                "pages": r.pages,
                "requests": r.requests,
                "not_modified": r.not_modified,
                "resumed": r.resumed,
                "fixes": (
                    None
                    if r.fixes is None
                    else {"checked": r.fixes.checked, "found": r.fixes.found, "left": r.fixes.left}
                ),
            }
            for r in reports
        ],
        "notes": list(notes),
    }


def import_json(result: ImportResult, index: Path) -> JSON:
    """`report index import --json`."""
    return {"index": str(index), "imported": result.imported, "skipped": list(result.skipped)}


def export_json(lines: Sequence[str], index: Path, repo: str | None) -> JSON:
    """`report index export --json`: the JSONL lines as one list."""
    import json

    return {
        "index": str(index),
        "repo": repo,
        "count": len(lines),
        "issues": [json.loads(line) for line in lines],
    }


def collect_json(summary: CollectSummary) -> JSON:
    """`report collect --json`."""
    return {
        "status": summary.status.value,
        "out": str(summary.out),
        "targets": summary.targets,
        "dumps_ok": summary.dumps_ok,
        "dumps_failed": summary.dumps_failed,
        "scrapes": summary.scrapes,
        "files": summary.files,
        "seconds": round(summary.seconds, 3),
        "skipped": [{"what": s.what, "reason": s.reason} for s in summary.skipped],
        "missing_stacks": list(summary.missing_stacks),
        "advice": list(summary.advice),
    }


def upstream_draft_json(made: UpstreamDraftRun) -> JSON:
    """`report upstream draft --json`."""
    draft = made.run.draft
    return {
        "path": str(made.path),
        "backup": _path(made.backup),
        "repo": draft.repo,
        "form": "generic" if made.run.form.generic else str(made.run.form.source),
        "characters": len(draft.body),
        "redacted": draft.redaction.total(),
        "redactions": [
            {"kind": e.kind, "where": e.where, "count": e.count} for e in draft.redaction.report
        ],
        "todos": len(draft.todos),
        "leaks": [str(leak) for leak in draft.leaks],
        "trimmed": list(draft.trimmed),
        "notes": list(made.run.notes),
    }


def upstream_file_json(result: FileResult) -> JSON:
    """`report upstream file --json`: the decision, and the URL when it was sent."""
    plan = result.plan
    request = plan.request
    return {
        "action": plan.action.value,
        "repo": plan.repo,
        "sent": result.sent,
        "url": result.url if result.sent else plan.url,
        "target": plan.target,
        "reasons": list(plan.reasons),
        "refusals": [] if result.sent else list(plan.refusals),
        "notes": list(plan.notes),
        "recorded": _path(result.recorded),
        "request": None
        if request is None
        else {
            "method": request.method,
            "url": request.url,
            "title": request.title,
            "labels": list(request.labels),
            "characters": len(request.body),
        },
    }
