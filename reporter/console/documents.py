"""The `--json` documents of analyze, draft, diff, init, lint, status and preview.

Each command's document is a class (`reporter.model.document`): its JSON and its JSON
Schema are generated from it, never written twice. `reporter.console.schemas.DOCUMENTS`
maps a command to its class (the schemas and the docs come from it); a builder
per class turns the app layer's result into the record. The documents of the upstream
commands live beside this module, in `documents_upstream`.

`console.emit(doc)` prints any document (`reporter.console.jsontext` writes it: masked,
indented or one key per line, as the class says).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from reporter.analysis import export, export_context
from reporter.analysis.export import AnalysisDocument
from reporter.analysis.export_context import Diff
from reporter.console.jsontext import render
from reporter.model.document import Count, document, schema, spec
from reporter.render import answer
from reporter.render.answer.records import SummaryLine, seen_of
from reporter.render.nextsteps import Step
from reporter.render.status import ReportStatus

if TYPE_CHECKING:
    from reporter.analysis import Analysis
    from reporter.app.report import DiffRun, DraftResult, InitResult, LintRun
    from reporter.model import Bundle
    from reporter.render.answer import SeenBefore, SeenReport
    from reporter.render.regions import MergeResult


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


def _path(path: Path | None) -> str | None:
    return None if path is None else str(path)


# --- analyze


@document
class SeenRow:
    """An earlier report."""

    path: str
    date: str
    status: str
    same: bool


@document
class AnalysisOnlyDocument(AnalysisDocument):
    """The verdict and everything behind it, from the analysis alone (no bundle at hand)."""

    masked: ClassVar[bool] = True
    layout: ClassVar[str] = "lines"


@document
class AnalyzeDocument(AnalysisOnlyDocument):
    """The verdict and everything behind it (see README 'analyze --json')."""

    # Required: `report analyze` always has the bundle, so these keys are always there.
    verdict_label: str = spec(
        "the verdict as the text and the report word it: `verdict`, or `wedged (metrics "
        "only)` when metrics show a wedge and no stack settles it"
    )
    headline: str = spec("the title the report would get: who waits for whom")
    summary_lines: tuple[SummaryLine, ...] = spec(
        "the summary block; each line cites its evidence as file:line"
    )
    next_steps: tuple[Step, ...] = spec("from reporter/data/next_steps.toml")
    seen_before: tuple[SeenRow, ...] = spec(
        "earlier reports of the same (same: true) or a similar hang"
    )


def analysis_document(
    analysis: Analysis,
    bundle: Bundle | None = None,
    *,
    seen: SeenBefore | Sequence[SeenReport] = (),
) -> AnalysisOnlyDocument:
    """The `analyze --json` document. With the `bundle`, it adds `headline`, `summary_lines`
    (each summary line with its topic and sources), `next_steps` and `seen_before`."""
    from dataclasses import fields

    base = export.build(analysis)
    values = {f.name: getattr(base, f.name) for f in fields(base)}
    if bundle is None:
        return AnalysisOnlyDocument(**values)

    ans = answer.build(bundle, analysis, seen=seen)
    return AnalyzeDocument(
        **values,
        # `summary` stays the verdict paragraph (a documented key); the lines go beside it.
        verdict_label=ans.verdict_label,
        headline=ans.title,
        summary_lines=ans.lines,
        next_steps=ans.steps,
        seen_before=tuple(
            SeenRow(path=s.path, date=s.date, status=s.status, same=s.same)
            for s in seen_of(seen).matches
        ),
    )


def analysis_json(
    analysis: Analysis,
    bundle: Bundle | None = None,
    *,
    seen: SeenBefore | Sequence[SeenReport] = (),
) -> str:
    """The `analyze --json` text, byte-stable for the same evidence; secrets masked."""
    return render(analysis_document(analysis, bundle, seen=seen))


# --- draft


@document
class Damage:
    """A region left as text."""

    line: Count
    problem: str


@document
class Merge:
    """What merging into the edited report did (region ids per outcome)."""

    regenerated: tuple[str, ...]
    kept_edited: tuple[str, ...]
    conflicts: tuple[str, ...]
    added: tuple[str, ...]
    removed_by_reviewer: tuple[str, ...]
    retired: tuple[str, ...]
    front_matter_added: tuple[str, ...]
    damaged: tuple[Damage, ...]


@document
class DraftDocument:
    """Where the report went."""

    path: str = spec("the report written (or found up to date)")
    backup: str | None = spec("the previous version kept as .bak, if any")
    unchanged: bool = spec("true when the report was already up to date")
    charts: str | None = spec("the metrics SVG beside the report, if any")
    verdict: str
    signature: str
    merge: Merge | None = spec(
        "null for a new report; else what merging into the edited report did "
        "(region ids per outcome)"
    )


def merge_document(merge: MergeResult | None) -> Merge | None:
    """What merging a draft into an edited report did, by outcome."""
    if merge is None:
        return None
    outcomes = {name: getattr(merge, attr) for name, attr, _label in MERGE_OUTCOMES}
    return Merge(
        **outcomes, damaged=tuple(Damage(line=d.line, problem=d.problem) for d in merge.damaged)
    )


def draft_document(result: DraftResult) -> DraftDocument:
    """`report draft --json`."""
    return DraftDocument(
        path=str(result.path),
        backup=_path(result.backup),
        unchanged=result.unchanged,
        charts=_path(result.charts),
        verdict=result.analysis.verdict.value,
        signature=result.analysis.signature.hash,
        merge=merge_document(result.merge),
    )


# --- diff, init, lint, status, preview


def diff_document(run: DiffRun) -> Diff:
    """`report diff --json`: `changes` in rank order, then counts and notes."""
    return export_context.diff(run.diff)


@document
class Suggestion:
    """One guess, written commented out."""

    key: str
    value: str | int | tuple[str, ...]
    why: str


@document
class InitDocument:
    """The manifest written and the guesses it holds as comments."""

    path: str
    suggestions: tuple[Suggestion, ...]


def init_document(result: InitResult) -> InitDocument:
    """`report init --json`."""
    return InitDocument(
        path=str(result.path),
        suggestions=tuple(
            Suggestion(
                key=s.key,
                value=tuple(s.value) if isinstance(s.value, list) else s.value,
                why=s.why,
            )
            for s in result.suggestions
        ),
    )


@document
class LintFinding:
    """One finding."""

    path: str
    line: Count
    rule: str
    message: str
    hint: str


@document
class LintDocument:
    """Findings, by file and line."""

    masked: ClassVar[bool] = False  # a finding quotes what it found, to be fixed

    files: tuple[str, ...]
    findings: tuple[LintFinding, ...]


def lint_document(run: LintRun) -> LintDocument:
    """`report lint --json`."""
    return LintDocument(
        files=tuple(str(p) for p in run.files),
        findings=tuple(
            LintFinding(path=f.path, line=f.line, rule=f.rule.value, message=f.message, hint=f.hint)
            for f in run.findings
        ),
    )


@document
class StatusDocument:
    """One row per report (kept a list for compatibility)."""

    root: ClassVar[str] = "rows"

    rows: tuple[ReportStatus, ...]


def status_document(rows: Sequence[ReportStatus]) -> StatusDocument:
    """`report status --json`: one row per report."""
    return StatusDocument(rows=tuple(rows))


@document
class PreviewDocument:
    """The HTML page written."""

    path: str


# --- schemas


def document_schema(cls: type) -> dict[str, Any]:
    """A document class's JSON Schema, as printed (a `root` class is that field's schema)."""
    out = schema(cls)
    root = getattr(cls, "root", None)
    if root is None:
        return out
    return {**out["properties"][root], "description": out["description"]}
