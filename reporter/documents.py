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
    from reporter.analysis import Analysis
    from reporter.app import DiffRun, DraftResult, InitResult, LintRun, UpstreamDraftRun
    from reporter.collect import CollectSummary
    from reporter.model import Bundle
    from reporter.render.answer import SeenBefore, SeenReport
    from reporter.render.regions import MergeResult
    from reporter.render.status import ReportStatus
    from reporter.upstream.index import ImportResult
    from reporter.upstream.publish import FileResult
    from reporter.upstream.search import SyncReport

JSON = dict[str, Any]


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)


# The outcomes of merging a draft into an edited report, in the order every output lists
# them: (JSON key, `MergeResult` field, what the terminal says).
MERGE_OUTCOMES = (
    ("regenerated", "updated", "regenerated"),
    ("kept_edited", "kept_edited", "kept your edits"),
    ("conflicts", "conflicts", "kept your edits; newer text offered beside them"),
    ("added", "added", "added"),
    ("removed_by_reviewer", "removed_by_reviewer", "deleted by a reviewer, not restored"),
    ("retired", "retired", "no longer generated, removed"),
    ("front_matter_added", "front_matter_added", "front matter keys added"),
)


def merge_json(merge: MergeResult | None) -> JSON | None:
    """What merging a draft into an edited report did, by outcome."""
    if merge is None:
        return None
    document: JSON = {key: list(getattr(merge, field)) for key, field, _ in MERGE_OUTCOMES}
    document["damaged"] = [{"line": d.line, "problem": d.problem} for d in merge.damaged]
    return document


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


def analysis_json(
    analysis: Analysis,
    bundle: Bundle | None = None,
    *,
    seen: SeenBefore | Sequence[SeenReport] = (),
) -> str:
    """The `analyze --json` document, byte-stable for the same evidence.

    With the `bundle`, it adds `headline`, `summary_lines` (each summary line with its
    topic and sources), `next_steps` (action, why, rule) and `seen_before`.

    One top-level key per line and one list item per line: readable, and written by
    the C encoder (`indent=` switches json to its pure-Python encoder, five times
    slower on a 4,096-rank bundle). Secret-shaped values are masked.
    """
    from reporter.analysis import to_json
    from reporter.secrets import mask_data

    data = to_json(analysis)
    if bundle is not None:
        from reporter.render import answer
        from reporter.render.answer.records import seen_of

        ans = answer.build(bundle, analysis, seen=seen)
        data["headline"] = ans.title
        # `summary` stays the verdict paragraph (a documented key); the lines go beside it.
        data["summary_lines"] = [
            {"topic": line.topic, "text": line.text, "sources": list(line.sources)}
            for line in ans.lines
        ]
        data["next_steps"] = [
            {"action": step.action, "why": step.why, "rule": step.rule} for step in ans.steps
        ]
        data["seen_before"] = [
            {"path": s.path, "date": s.date, "status": s.status, "same": s.same}
            for s in seen_of(seen).matches
        ]
    masked = mask_data(data)
    assert isinstance(masked, dict)
    return _json_lines(masked)


def _json_lines(data: dict[str, object]) -> str:
    """`data` with one top-level key, and one item of a top-level list, per line."""
    import json

    from reporter.analysis.export import dumps_deep

    def dump(value: object) -> str:
        try:
            return json.dumps(value, ensure_ascii=False)
        except RecursionError:
            # A value nested past the C encoder's limit (the tree of a 10,000-frame stack).
            return dumps_deep(value)

    out = ["{"]
    for index, (key, value) in enumerate(data.items()):
        comma = "," if index < len(data) - 1 else ""
        if isinstance(value, list) and value:
            out.append(f"  {dump(key)}: [")
            out.extend(f"    {dump(item)}," for item in value[:-1])
            out.append(f"    {dump(value[-1])}")
            out.append(f"  ]{comma}")
        else:
            out.append(f"  {dump(key)}: {dump(value)}{comma}")
    out.append("}")
    return "\n".join(out) + "\n"


def diff_json(run: DiffRun) -> JSON:
    """`report diff --json`: `{"changes": [...]}` in rank order, then counts and notes."""
    from reporter.analysis.diff import diff_json as document

    return document(run.diff)


def lint_json(run: LintRun) -> JSON:
    """`report lint --json`."""
    return {
        "files": [str(p) for p in run.files],
        "findings": [f.to_json() for f in run.findings],
    }


def status_json(rows: Sequence[ReportStatus]) -> list[JSON]:
    """`report status --json`: one object per report."""
    return [r.to_json() for r in rows]


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
                "skipped": r.skipped,
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
        "missing": list(summary.missing),
        "advice": list(summary.advice),
        "hosts": [
            {
                "host": h.host,
                "via": h.via,
                "status": h.status,
                "reason": h.reason,
                "hostname": h.hostname,
                "targets": h.targets,
                "dumps": h.dumps,
                "failed_dumps": h.failed_dumps,
                "seconds": round(h.seconds, 3),
            }
            for h in summary.hosts
        ],
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
