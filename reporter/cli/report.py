"""The report commands: analyze, draft, diff, init, lint, status, preview."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reporter import console
from reporter.cli import quickexit
from reporter.cli.group import cli, echo, echo_lines, masked
from reporter.cli.options import (
    DEFAULT_MAX_FILE_SIZE,
    Evidence,
    EvidenceOptions,
    JsonFlag,
    MaxSizeOpt,
    ReportsOpt,
    evidence_command,
    size,
)
from reporter.console import report as text


@cli.command("analyze", epilog="Example: report analyze fixtures/bundles/tp_desync")
@evidence_command
def analyze_cmd(
    evidence: Evidence,
    as_json: JsonFlag = False,
    *,
    options: EvidenceOptions,
    reports: ReportsOpt = None,
) -> None:
    """Print the verdict for a bundle folder or loose dump files; writes nothing."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import load_and_analyze, seen_before
    from reporter.console import documents
    from reporter.core.gcpause import gc_paused

    # One pause for the whole command: each resume would first walk everything built
    # meanwhile (seconds at 16,384 ranks) and free nothing.
    with gc_paused():
        bundle, analysis = load_and_analyze(evidence, options)
        seen = seen_before(bundle, analysis, reports)
        if as_json:
            console.emit(documents.analysis_document(analysis, bundle, seen=seen))
        else:
            echo(masked(text.analysis_text(bundle, analysis, seen=seen)))
            # Warnings quote evidence lines: masked here, at the terminal's edge (the report
            # and --json mask them at theirs).
            echo_lines((masked(line), True) for line in text.warning_lines(bundle.warnings))
    # All written to the terminal: the process may end without freeing the analysis.
    quickexit.allow()


@cli.command("draft", epilog="Example: report draft fixtures/bundles/tp_desync -o reports/tp.md")
@evidence_command
def draft_cmd(
    evidence: Evidence,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Report path (default: reports/<date>-<slug>.md)."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace an existing report instead of merging (old one kept as .bak)."
        ),
    ] = False,
    as_json: JsonFlag = False,
    *,
    options: EvidenceOptions,
    reports: ReportsOpt = None,
) -> None:
    """Write a Markdown incident report for a bundle (or loose dump files).

    Into an existing report the new draft is merged: sections nobody edited are
    regenerated, reviewers' edits and text are kept byte for byte.
    """
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import draft
    from reporter.app.settings import Context
    from reporter.console import documents
    from reporter.core.gcpause import gc_paused

    ctx = Context.resolve(read_config=False)
    with gc_paused():  # as in `analyze`
        result = draft(
            evidence, out=out, options=options, now=ctx.now, force=force, reports=reports
        )
    if as_json:
        console.emit(documents.draft_document(result))
    else:
        for line in text.draft_lines(result):
            echo(line)
    # The report and its charts are written whole and closed (`write_atomic`), the lock
    # released: as in `analyze`, nothing is left to free but memory.
    quickexit.allow()


@cli.command("diff", epilog="Example: report diff bundles/monday bundles/tuesday --limit 5")
def diff_cmd(
    good: Annotated[
        Path,
        typer.Argument(
            help="The last good run: a bundle folder, or an environ / cmdline / freeze file.",
            show_default=False,
        ),
    ],
    bad: Annotated[Path, typer.Argument(help="The bad run, in the same form.", show_default=False)],
    as_json: JsonFlag = False,
    source_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--source-root", help="Give it twice: GOOD's source tree, then BAD's; files are hashed."
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Changes listed without --json.")] = 20,
    max_file_size: MaxSizeOpt = DEFAULT_MAX_FILE_SIZE,
) -> None:
    """Rank what changed between the last good run and the bad one, likeliest culprit first.

    Env vars, server options, package versions, GPUs, code excerpts and source files are
    compared; a changed tuning knob outranks per-run noise (PIDs, invocation ids,
    timestamps, random ports, temporary paths). Each change says why it ranks where it does.
    """
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import diff_runs
    from reporter.console import documents

    run = diff_runs(
        good, bad, source_roots=tuple(source_root or ()), max_file_bytes=size(max_file_size)
    )
    if as_json:
        console.emit(documents.diff_document(run))
    else:
        echo(masked(text.diff_text(run, limit=max(limit, 0))))


@cli.command("init", epilog="Example: report init /tmp/incident-42")
def init_cmd(
    folder: Annotated[Path, typer.Argument(help="The folder of evidence files.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing bundle.toml.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Write a commented bundle.toml listing the evidence found in FOLDER.

    The upstream repository (from process titles, command lines, packages and frames),
    the world size and evidence globs are guessed and written as comments to confirm.
    """
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import init_manifest
    from reporter.console import documents

    result = init_manifest(folder, force=force)
    if as_json:
        console.emit(documents.init_document(result))
        return
    for line in text.init_lines(result, folder):
        echo(line)


@cli.command("lint", epilog="Example: report lint reports/")
def lint_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Report files, or folders to lint every *.md under.", show_default=False
        ),
    ],
    as_json: JsonFlag = False,
    index: Annotated[
        Path | None,
        typer.Option("--index", help="SQLite issue index; upstream issue links must be in it."),
    ] = None,
) -> None:
    """Check reports: sections, placeholders, fences, Mermaid, tables, links, secrets.

    Exit code 0 when clean, 1 with findings, 2 for usage errors.
    """
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import lint_reports
    from reporter.console import documents

    run = lint_reports(files, index=index)
    if as_json:
        console.emit(documents.lint_document(run))
    else:
        for line in text.lint_lines(run):
            echo(line)
    if run.findings:
        raise typer.Exit(1)


@cli.command("status", epilog="Example: report status reports/ | head -5")
def status_cmd(
    folder: Annotated[
        Path, typer.Argument(help="Folder holding the reports (searched recursively).")
    ] = Path("reports"),
    as_json: JsonFlag = False,
) -> None:
    """List the reports under FOLDER with status, owners, open TODOs, signature and title."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import report_status
    from reporter.console import documents

    rows = report_status(folder)
    if as_json:
        console.emit(documents.status_document(rows))
    elif rows:
        echo(masked(text.status_text(rows)))
    else:
        echo(f"no reports under {folder}")


@cli.command("preview", epilog="Example: report preview reports/tp.md -o /tmp/tp.html")
def preview_cmd(
    file: Annotated[Path, typer.Argument(help="The report's Markdown file.", show_default=False)],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="HTML path (default: FILE with .html).")
    ] = None,
    as_json: JsonFlag = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing file that is not a preview.")
    ] = False,
) -> None:
    """Write a standalone HTML preview of a report (diagrams drawn inline, no network needed)."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.app.report import preview
    from reporter.console import documents

    path = preview(file, out=out, force=force)
    if as_json:
        console.emit(documents.PreviewDocument(path=str(path)))
    else:
        echo(f"wrote {path}")
