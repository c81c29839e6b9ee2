"""The `report` command line: typer options -> one call into `reporter.app` -> print.

Exit codes: 0 success, 1 unusable input or output failure, 2 usage error.
Errors print one line (plus a `Tip:`); `--debug` shows the traceback.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from reporter import __version__, app
from reporter.analysis import Analysis, Similarity
from reporter.errors import ReporterError, UsageError

if TYPE_CHECKING:
    from reporter.render.regions import MergeResult

cli = typer.Typer(
    name="report",
    help="Turn hang evidence (py-spy dumps of every rank, tracebacks) into a verdict and a report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_state = {"debug": False}
T = TypeVar("T")

Evidence = Annotated[
    list[Path],
    typer.Argument(
        help="A bundle folder, or one or more dump files (each file is one capture).",
        show_default=False,
    ),
]
SimilarityOpt = Annotated[
    Similarity,
    typer.Option(
        "--similarity",
        help="How alike stacks must be to share a class: exact (with line numbers), "
        "lines-ignored, or loose (generic frames dropped too).",
    ),
]
MaxSizeOpt = Annotated[
    str,
    typer.Option("--max-file-size", help="Refuse evidence files larger than this (e.g. 512M, 2G)."),
]
StrictOpt = Annotated[
    bool,
    typer.Option("--strict", help="Treat parser warnings (skipped or truncated lines) as errors."),
]


def _version(value: bool) -> None:
    if value:
        print(f"reporter {__version__}")
        raise typer.Exit()


@cli.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    _state["debug"] = debug


def _size(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text.lower())
    if not match:
        raise UsageError(f"--max-file-size {text!r} is not a size", tip="write it like 512M or 2G")
    factor = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[match.group(2)]
    return int(float(match.group(1)) * factor)


def _options(similarity: Similarity, max_file_size: str, strict: bool) -> app.Options:
    return app.Options(similarity=similarity, max_file_bytes=_size(max_file_size), strict=strict)


def _run(action: Callable[[], T]) -> T:
    """Map the project's errors to a one-line message and an exit code."""
    try:
        return action()
    except ReporterError as err:
        if _state["debug"]:
            raise
        print(f"error: {err.message}", file=sys.stderr)
        if err.tip:
            print(f"Tip: {err.tip}", file=sys.stderr)
        raise typer.Exit(err.exit_code) from None
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise typer.Exit(130) from None


@cli.command("analyze")
def analyze_cmd(
    evidence: Evidence,
    as_json: Annotated[bool, typer.Option("--json", help="Print the analysis as JSON.")] = False,
    similarity: SimilarityOpt = Similarity.LINES_IGNORED,
    max_file_size: MaxSizeOpt = "512M",
    strict: StrictOpt = False,
) -> None:
    """Print the verdict for a bundle folder or loose dump files; writes nothing."""
    options = _run(lambda: _options(similarity, max_file_size, strict))
    bundle, analysis = _run(lambda: app.load_and_analyze(evidence, options))
    if as_json:
        sys.stdout.write(app.analysis_json(analysis))
        return
    print(_human(analysis))
    for warning in bundle.warnings[:10]:
        print(f"warning: {warning}", file=sys.stderr)
    if len(bundle.warnings) > 10:
        print(f"warning: … {len(bundle.warnings) - 10} more (see --json)", file=sys.stderr)


def _human(analysis: Analysis) -> str:
    """A short plain-text verdict for the terminal."""
    lines = [
        f"verdict: {analysis.verdict.value} (confidence {analysis.confidence.value}, "
        f"{analysis.snapshots} snapshot{'s' if analysis.snapshots != 1 else ''})",
        analysis.summary,
        "",
    ]
    for stack_class in analysis.classes:
        blocked = stack_class.collective or stack_class.wait or "-"
        top = stack_class.frames[0].display() if stack_class.frames else "-"
        lines.append(f"  {stack_class.label:<12} {stack_class.state.value:<8} {blocked:<16} {top}")
    if analysis.branch_point and analysis.branch_point.shared:
        lines.append(f"branch point: {analysis.branch_point.shared.display()}")
    for note in analysis.confidence_notes:
        lines.append(f"note: {note}")
    lines.append(f"signature: {analysis.signature.hash}")
    return "\n".join(lines)


@cli.command("draft")
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
    similarity: SimilarityOpt = Similarity.LINES_IGNORED,
    max_file_size: MaxSizeOpt = "512M",
    strict: StrictOpt = False,
) -> None:
    """Write a Markdown incident report for a bundle (or loose dump files).

    Into an existing report the new draft is merged: sections nobody edited are
    regenerated, reviewers' edits and text are kept byte for byte.
    """
    options = _run(lambda: _options(similarity, max_file_size, strict))
    result = _run(lambda: app.draft(evidence, out=out, options=options, force=force))
    for line in _merge_summary(result.merge):
        print(line)
    if result.unchanged:
        print(f"{result.path}: up to date")
        return
    print(f"wrote {result.path} ({result.analysis.verdict.value})")
    if result.backup:
        print(f"previous version kept as {result.backup}")


def _merge_summary(merge: MergeResult | None) -> list[str]:
    """One line per kind of outcome of merging a draft into an edited report."""
    if merge is None:
        return []
    lines = []
    for label, ids in (
        ("regenerated", merge.updated),
        ("kept your edits", merge.kept_edited),
        ("kept your edits; newer text offered beside them", merge.conflicts),
        ("added", merge.added),
        ("deleted by a reviewer, not restored", merge.removed_by_reviewer),
        ("no longer generated, removed", merge.retired),
        ("front matter keys added", merge.front_matter_added),
    ):
        if ids:
            lines.append(f"{label}: {', '.join(ids)}")
    for damage in merge.damaged:
        lines.append(f"left as text (line {damage.line}): {damage.problem}")
    return lines


@cli.command("init")
def init_cmd(
    folder: Annotated[Path, typer.Argument(help="The folder of evidence files.")],
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing bundle.toml.")
    ] = False,
) -> None:
    """Write a commented bundle.toml listing the evidence found in FOLDER."""
    path = _run(lambda: app.init_manifest(folder, force=force))
    print(
        f"wrote {path}; edit the title, upstream repo and ranks, then run `report draft {folder}`"
    )


@cli.command("lint")
def lint_cmd(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Report files, or folders to lint every *.md under.", show_default=False
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON.")] = False,
    index: Annotated[
        Path | None,
        typer.Option("--index", help="SQLite issue index; upstream issue links must be in it."),
    ] = None,
) -> None:
    """Check reports: sections, placeholders, fences, Mermaid, tables, links, secrets.

    Exit code 0 when clean, 1 with findings, 2 for usage errors.
    """
    run = _run(lambda: app.lint_reports(files, index=index))
    if as_json:
        sys.stdout.write(app.lint_json(run))
    else:
        for finding in run.findings:
            print(finding)
            print(f"  fix: {finding.hint}")
        failing = len({f.path for f in run.findings})
        total = len(run.files)
        if run.findings:
            count = len(run.findings)
            print(f"{count} finding{'s' if count != 1 else ''} in {failing} of {total} files")
        else:
            print(f"{total} file{'s' if total != 1 else ''} clean")
    if run.findings:
        raise typer.Exit(1)


@cli.command("status")
def status_cmd(
    folder: Annotated[
        Path, typer.Argument(help="Folder holding the reports (searched recursively).")
    ] = Path("reports"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """List the reports under FOLDER with status, owners, open TODOs, signature and title."""
    rows = _run(lambda: app.report_status(folder))
    if as_json:
        sys.stdout.write(app.status_json(rows))
    elif rows:
        print(app.status_text(rows))
    else:
        print(f"no reports under {folder}")


@cli.command("preview")
def preview_cmd(
    file: Annotated[Path, typer.Argument(help="The report's Markdown file.", show_default=False)],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="HTML path (default: FILE with .html).")
    ] = None,
) -> None:
    """Write a standalone HTML preview of a report (diagrams drawn inline, no network needed)."""
    path = _run(lambda: app.preview(file, out=out))
    print(f"wrote {path}")


def main() -> None:
    """Console-script entry point."""
    cli()
