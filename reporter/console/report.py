"""Terminal text of the report commands (analyze, draft, diff, init, lint, status, collect).

Each function takes an app-layer result and returns lines or text for `reporter.cli` to
print; nothing here prints, reads files or decides an exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reporter.core.text import plural

if TYPE_CHECKING:
    from reporter.analysis import Analysis
    from reporter.analysis.result import HostRow
    from reporter.app.report import DiffRun, DraftResult, InitResult, LintRun
    from reporter.collect import CollectSummary
    from reporter.model import Bundle
    from reporter.render.answer import SeenBefore, SeenReport
    from reporter.render.regions import MergeResult
    from reporter.render.status import ReportStatus


def analysis_text(
    bundle: Bundle, analysis: Analysis, *, seen: SeenBefore | Sequence[SeenReport] = ()
) -> str:
    """`report analyze` for a terminal: the summary block first (each fact once), then the classes."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.analysis import format_ranks
    from reporter.model import innermost_python
    from reporter.render import answer

    ans = answer.build(bundle, analysis, seen=seen)
    lines = [
        ans.title,
        f"verdict: {ans.verdict_label} (confidence {analysis.confidence.value}, "
        f"{plural(analysis.snapshots, 'snapshot')})",
    ]
    for line in ans.lines:
        where = f"  [{', '.join(line.sources)}]" if line.sources else ""
        lines.append(f"  {line.topic.lower()}: {line.text}{where}")
    if ans.steps:
        lines.append("next steps:")
        lines.extend(f"  {n}. {step.action}" for n, step in enumerate(ans.steps[:4], start=1))
    if ans.paragraph:
        lines.append("")
        lines.append(ans.paragraph)
    if analysis.classes:
        lines.append("")
    for inst in analysis.instances:
        lines.append(f"instance {inst.id}: {inst.verdict.value} ({inst.label})")
    for stack_class in analysis.classes:
        blocked = stack_class.collective or stack_class.wait or "-"
        top = innermost_python(stack_class.frames)
        where = (
            f"{top.function} ({top.file}:{top.line})"
            if top and top.line
            else (top.display() if top else "-")
        )
        label = (
            f"{stack_class.instance}:{stack_class.label}"
            if analysis.instances
            else stack_class.label
        )
        lines.append(f"  {label:<12} {stack_class.state.value:<8} {blocked:<16} {where}")
    for edge in analysis.waits_for:
        at = f" at {edge.waiting.at}" if edge.waiting.at else ""
        whom = edge.waited.at or edge.waited.state
        prefix = f"instance {edge.instance}: " if analysis.instances else ""
        lines.append(
            f"waits: {prefix}{format_ranks(edge.waiting.ranks)} in {edge.waiting.collective}{at}"
            f" -> {format_ranks(edge.waited.ranks)} {whom}"
        )
    for row in analysis.hosts:
        lines.append(f"host {row.name}: {host_text(row)}")
    for note in analysis.confidence_notes:
        lines.append(f"note: {note}")
    lines.append(f"signature: {analysis.signature.hash}")
    return "\n".join(lines)


def host_text(row: HostRow) -> str:
    """One host in a line: its ranks and their states, or why it gave nothing."""
    if row.missing:
        return f"not captured ({row.status}: {row.reason})" if row.reason else row.status
    states = ", ".join(f"{count} {state}" for state, count in row.states)
    parts = [f"ranks {row.label}" if row.label else "no rank process"]
    if states:
        parts.append(states)
    if row.failed_dumps:
        parts.append(f"{plural(row.failed_dumps, 'failed dump')}")
    return "; ".join(parts)


def warning_lines(warnings: Sequence[object], *, most: int = 10) -> list[str]:
    """The loader's warnings for stderr: the first `most`, then how many more."""
    lines = [f"warning: {warning}" for warning in warnings[:most]]
    if len(warnings) > most:
        lines.append(f"warning: … {len(warnings) - most} more (see --json)")
    return lines


def merge_lines(merge: MergeResult | None) -> list[str]:
    """One line per kind of outcome of merging a draft into an edited report."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.console.documents import MERGE_OUTCOMES

    if merge is None:
        return []
    lines = []
    for _key, field, label in MERGE_OUTCOMES:
        ids: tuple[str, ...] = getattr(merge, field)
        if ids:
            lines.append(f"{label}: {', '.join(ids)}")
    for damage in merge.damaged:
        lines.append(f"left as text (line {damage.line}): {damage.problem}")
    return lines


def draft_lines(result: DraftResult) -> list[str]:
    """`report draft`: what the merge did, then what was written (or that nothing was)."""
    lines = merge_lines(result.merge)
    if result.unchanged:
        return [*lines, f"{result.path}: up to date"]
    lines.append(f"wrote {result.path} ({result.analysis.verdict.value})")
    if result.charts:
        lines.append(f"wrote {result.charts} (metrics charts)")
    if result.backup:
        lines.append(f"previous version kept as {result.backup}")
    return lines


def diff_text(run: DiffRun, *, limit: int = 20) -> str:
    """The ranked changes for a terminal: one line each, the reasons under the first few."""
    diff = run.diff
    lines = [f"{diff.good} -> {diff.bad}: {len(diff.changes)} changes"]
    for rank, change in enumerate(diff.changes[:limit], start=1):
        before = change.before if change.before is not None else "(absent)"
        after = change.after if change.after is not None else "(absent)"
        lines.append(
            f"{rank:>3}. [{change.score:>4}] {change.kind.value:<8} {change.key}: {before} -> {after}"
        )
        if rank <= 3:
            lines.append(f"          why: {'; '.join(change.why)}")
    if len(diff.changes) > limit:
        lines.append(f"  … {len(diff.changes) - limit} more (see --json or --limit)")
    equal = ", ".join(f"{n} {kind.value}" for kind, n in diff.unchanged)
    if equal:
        lines.append(f"unchanged: {equal}")
    lines.extend(f"note: {note}" for note in diff.notes)
    return "\n".join(lines)


def init_lines(result: InitResult, folder: object) -> list[str]:
    """`report init`: each guess, then what to do next."""
    lines = [f"guessed {guess.key}: {guess.value} ({guess.why})" for guess in result.suggestions]
    lines.append(
        f"wrote {result.path}; edit the title, upstream repo and ranks, "
        f"then run `report draft {folder}`"
    )
    return lines


def lint_lines(run: LintRun) -> list[str]:
    """`report lint`: each finding with its fix, then the count (or that all is clean)."""
    lines: list[str] = []
    for finding in run.findings:
        lines.append(str(finding))
        lines.append(f"  fix: {finding.hint}")
    total = len(run.files)
    if run.findings:
        failing = len({f.path for f in run.findings})
        lines.append(f"{plural(len(run.findings), 'finding')} in {failing} of {total} files")
    else:
        lines.append(f"{plural(total, 'file')} clean")
    return lines


def status_text(rows: Sequence[ReportStatus]) -> str:
    """The `status` table for a terminal."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.render import status

    return status.table(rows)


def collect_lines(summary: CollectSummary) -> list[tuple[str, bool]]:
    """`report collect`: the summary as (line, to stderr) pairs, in printing order."""
    import shlex

    lines = [
        (
            f"{summary.status.value}: {summary.files} files in {summary.out} "
            f"({summary.dumps_ok} dumps, {summary.dumps_failed} failed; {summary.scrapes} "
            f"scrapes; {len(summary.skipped)} skipped) in {summary.seconds:.1f} s",
            False,
        )
    ]
    lines.extend((f"  no stacks: {why}", True) for why in summary.missing_stacks)
    lines.extend((f"  {why}", True) for why in summary.missing)
    if summary.missing:
        lines.append(
            (
                "Tip: check that each URL answers within --timeout and under --max-size "
                "(`curl -m 10 URL | wc -c`); every skipped read is listed in bundle.toml [collect]",
                True,
            )
        )
    lines.extend(
        (f"  host {h.host}: {h.status}: {h.reason}", True)
        for h in summary.hosts
        if h.status != "complete"
    )
    lines.extend(
        (advice if advice.startswith("py-spy") else f"  {advice}", True)
        for advice in summary.advice
    )
    lines.append((f"next: report analyze {shlex.quote(str(summary.out))}", False))
    return lines
