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
from reporter.analysis import Analysis, Similarity, format_ranks
from reporter.errors import ReporterError, UsageError

if TYPE_CHECKING:
    from reporter.render.regions import MergeResult
    from reporter.upstream.search import SyncProgress, SyncReport

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


SourceRootOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--source-root",
        help="A checkout or site-packages folder to cut code excerpts from (repeatable).",
    ),
]
ContextOpt = Annotated[
    int,
    typer.Option("--context", min=0, help="Lines shown on each side of a frame in code excerpts."),
]
BaselineOpt = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="The last good run (a bundle folder or an env / cmdline / freeze file) to diff against.",
    ),
]


def _options(
    similarity: Similarity,
    max_file_size: str,
    strict: bool,
    source_roots: list[Path] | None = None,
    baseline: Path | None = None,
    context: int = 6,
) -> app.Options:
    return app.Options(
        similarity=similarity,
        max_file_bytes=_size(max_file_size),
        strict=strict,
        source_roots=tuple(source_roots or ()),
        baseline=baseline,
        context=context,
    )


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
    source_root: SourceRootOpt = None,
    baseline: BaselineOpt = None,
    context: ContextOpt = 6,
) -> None:
    """Print the verdict for a bundle folder or loose dump files; writes nothing."""
    options = _run(
        lambda: _options(similarity, max_file_size, strict, source_root, baseline, context)
    )
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
    for inst in analysis.instances:
        lines.append(f"instance {inst.id}: {inst.verdict.value} ({inst.label})")
    for stack_class in analysis.classes:
        blocked = stack_class.collective or stack_class.wait or "-"
        top = stack_class.frames[0].display() if stack_class.frames else "-"
        label = (
            f"{stack_class.instance}:{stack_class.label}"
            if analysis.instances
            else stack_class.label
        )
        lines.append(f"  {label:<12} {stack_class.state.value:<8} {blocked:<16} {top}")
    for edge in analysis.waits_for:
        where = f" at {edge.waiting.at}" if edge.waiting.at else ""
        whom = edge.waited.at or edge.waited.state
        prefix = f"instance {edge.instance}: " if analysis.instances else ""
        lines.append(
            f"waits: {prefix}{format_ranks(edge.waiting.ranks)} in {edge.waiting.collective}{where}"
            f" -> {format_ranks(edge.waited.ranks)} {whom}"
        )
    if analysis.branch_point and analysis.branch_point.shared:
        lines.append(f"branch point: {analysis.branch_point.shared.display()}")
    for note in analysis.confidence_notes:
        lines.append(f"note: {note}")
    if analysis.wedge is not None:
        lines.append(f"metrics: {analysis.wedge.summary}")
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
    source_root: SourceRootOpt = None,
    baseline: BaselineOpt = None,
    context: ContextOpt = 6,
) -> None:
    """Write a Markdown incident report for a bundle (or loose dump files).

    Into an existing report the new draft is merged: sections nobody edited are
    regenerated, reviewers' edits and text are kept byte for byte.
    """
    options = _run(
        lambda: _options(similarity, max_file_size, strict, source_root, baseline, context)
    )
    result = _run(lambda: app.draft(evidence, out=out, options=options, force=force))
    for line in _merge_summary(result.merge):
        print(line)
    if result.unchanged:
        print(f"{result.path}: up to date")
        return
    print(f"wrote {result.path} ({result.analysis.verdict.value})")
    if result.charts:
        print(f"wrote {result.charts} (metrics charts)")
    if result.backup:
        print(f"previous version kept as {result.backup}")


@cli.command("diff")
def diff_cmd(
    good: Annotated[
        Path,
        typer.Argument(
            help="The last good run: a bundle folder, or an environ / cmdline / freeze file.",
            show_default=False,
        ),
    ],
    bad: Annotated[Path, typer.Argument(help="The bad run, in the same form.", show_default=False)],
    as_json: Annotated[
        bool, typer.Option("--json", help='Print {"changes": [...]} in rank order.')
    ] = False,
    source_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--source-root", help="Give it twice: GOOD's source tree, then BAD's; files are hashed."
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Changes listed without --json.")] = 20,
    max_file_size: MaxSizeOpt = "512M",
) -> None:
    """Rank what changed between the last good run and the bad one, likeliest culprit first.

    Env vars, server options, package versions, GPUs, code excerpts and source files are
    compared; a changed tuning knob outranks per-run noise (PIDs, invocation ids,
    timestamps, random ports, temporary paths). Each change says why it ranks where it does.
    """
    run = _run(
        lambda: app.diff_runs(
            good, bad, source_roots=tuple(source_root or ()), max_file_bytes=_size(max_file_size)
        )
    )
    if as_json:
        sys.stdout.write(app.diff_json_text(run))
    else:
        print(app.diff_text(run, limit=max(limit, 0)))


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


# --- upstream issues -----------------------------------------------------------------

DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="The issue index (SQLite). Default: upstream-issues.sqlite3 in the user cache dir.",
    ),
]

index_app = typer.Typer(
    help="Move upstream issues in and out of the local index, as JSONL (one issue per line).",
    no_args_is_help=True,
)
cli.add_typer(index_app, name="index")


@cli.command("sync")
def sync_cmd(
    repos: Annotated[
        list[str], typer.Argument(help="Repositories as owner/name.", show_default=False)
    ],
    db: DbOpt = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="List every issue again instead of only the changed ones."),
    ] = False,
) -> None:
    """Fetch upstream issues into the local index; later runs fetch only what changed.

    Each page is committed as it arrives: an interrupted sync loses nothing and the next
    run resumes. Token: GITHUB_TOKEN, GH_TOKEN or the gh CLI's login.
    """
    from rich.console import Console
    from rich.progress import Progress, TaskID

    def sync() -> tuple[list[SyncReport], list[str], Path]:
        with Progress(console=Console(stderr=True), transient=True) as bar:
            tasks: dict[str, TaskID] = {}

            def show(step: SyncProgress) -> None:
                if step.repo not in tasks:
                    tasks[step.repo] = bar.add_task(step.repo, total=step.last_page)
                bar.update(
                    tasks[step.repo],
                    completed=step.page,
                    total=step.last_page,
                    description=f"{step.repo}: {step.stored} issues stored",
                )

            return app.sync_upstream(repos, db=db, full=full, progress=show)

    reports, notes, path = _run(sync)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for report in reports:
        if report.not_modified:
            what = "no changes (304)"
        else:
            what = f"{report.stored} issues stored from {report.pages} page{'s' if report.pages != 1 else ''}"
        resumed = ", resumed an interrupted sync" if report.resumed else ""
        print(
            f"{report.repo}: {what}; {report.requests} request{'s' if report.requests != 1 else ''}{resumed}"
        )
    print(f"index: {path}")


@index_app.command("import")
def index_import_cmd(
    file: Annotated[Path, typer.Argument(help="JSONL: repo, number, title, body, state, ...")],
    db: DbOpt = None,
) -> None:
    """Import issues from JSONL; a bad line is reported with its number and skipped."""
    result, path = _run(lambda: app.index_import(file, db=db))
    for problem in result.skipped:
        print(f"skipped {problem}", file=sys.stderr)
    print(f"imported {result.imported} issues into {path}")


@index_app.command("export")
def index_export_cmd(
    repo: Annotated[
        str | None, typer.Option("--repo", help="Only this repository (owner/name).")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Print the indexed issues as JSONL, by repository and number."""
    _run(lambda: app.index_export(write=print, db=db, repo=repo))


@cli.command("search-upstream")
def search_upstream_cmd(
    bundle: Annotated[
        Path | None,
        typer.Argument(
            help="A bundle folder (its analysis and manifest are the query).", show_default=False
        ),
    ] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option(
            "--repo",
            "-r",
            help="Repository to search (repeatable); default: the manifest's upstream.",
        ),
    ] = None,
    text_file: Annotated[
        Path | None,
        typer.Option(
            "--text-file",
            help="Search with this text (an issue draft, a pasted dump; - for stdin).",
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", help="Most candidates to show (1-100).")
    ] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the candidates as JSON.")] = False,
    online: Annotated[
        bool | None,
        typer.Option(
            "--online/--offline",
            help="--online: refresh from GitHub first; --offline: the local index only "
            "(without an index and --db, an example index built from fixtures/github).",
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Find upstream issues that look like this hang: likely duplicates first, with reasons."""
    outcome = _run(
        lambda: app.search_upstream(
            bundle, repos=repo or (), text_file=text_file, limit=limit, online=online, db=db
        )
    )
    for note in outcome.notes:
        print(f"note: {note}", file=sys.stderr)
    if as_json:
        sys.stdout.write(app.search_upstream_json(outcome))
    else:
        print(app.search_upstream_text(outcome))


# --- live capture ----------------------------------------------------------------------


@cli.command("collect")
def collect_cmd(
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="New bundle folder to write (must not exist, or be empty)."
        ),
    ],
    pid: Annotated[
        list[int] | None, typer.Option("--pid", help="A process to dump (repeatable).")
    ] = None,
    match: Annotated[
        str | None,
        typer.Option(
            "--match",
            help="Regex over process titles and command lines, e.g. 'sglang::scheduler_TP'.",
        ),
    ] = None,
    children_of: Annotated[
        int | None,
        typer.Option(
            "--children-of", help="Only descendants of this PID (with --match: that match)."
        ),
    ] = None,
    snapshots: Annotated[int, typer.Option("--snapshots", help="py-spy dumps per process.")] = 3,
    interval: Annotated[
        str, typer.Option("--interval", help="Time between snapshots (0.5, 2s, 1m).")
    ] = "1",
    with_locals: Annotated[
        bool, typer.Option("--locals", help="Also dump local variables (secrets redacted).")
    ] = False,
    blocking: Annotated[
        bool,
        typer.Option(
            "--blocking/--nonblocking",
            help="--blocking pauses each target while py-spy reads it (more accurate); "
            "default --nonblocking never pauses it.",
        ),
    ] = False,
    metrics_url: Annotated[
        str | None, typer.Option("--metrics-url", help="A Prometheus /metrics URL to scrape.")
    ] = None,
    scrape_every: Annotated[
        str, typer.Option("--scrape-every", help="Time between scrapes.")
    ] = "2s",
    scrape_for: Annotated[str, typer.Option("--scrape-for", help="How long to scrape.")] = "60s",
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="Prometheus base URL for --query.")
    ] = None,
    query: Annotated[
        list[str] | None, typer.Option("--query", help="PromQL for query_range (repeatable).")
    ] = None,
    range_: Annotated[
        str, typer.Option("--range", help="How far back the queries reach (30m, 2h).")
    ] = "1h",
    step: Annotated[
        str | None, typer.Option("--step", help="query_range step (default: at most 1000 points).")
    ] = None,
    unit: Annotated[
        list[str] | None,
        typer.Option("--unit", help="A systemd unit for `systemctl show` (repeatable)."),
    ] = None,
    raw_env: Annotated[
        bool,
        typer.Option("--raw-env", help="Keep secrets in environments, command lines and locals."),
    ] = False,
    timeout: Annotated[
        str,
        typer.Option("--timeout", help="Limit for each py-spy run, helper program and request."),
    ] = "10s",
    parallel: Annotated[int, typer.Option("--parallel", help="py-spy runs at once.")] = 4,
    pyspy: Annotated[
        str | None, typer.Option("--py-spy", help="The py-spy executable (default: from PATH).")
    ] = None,
    title: Annotated[str, typer.Option("--title", help="The bundle's title.")] = "",
    wedge_window: Annotated[
        str | None,
        typer.Option(
            "--wedge-window", help="Write `[wedge] window` (for a scrape shorter than 60 s)."
        ),
    ] = None,
) -> None:
    """Capture evidence from live processes into a bundle, without disturbing them.

    py-spy dumps (non-blocking by default), /metrics scrapes, Prometheus query_range,
    /proc command lines and environments (secrets redacted), the targets' package
    versions and `systemctl show`. Never calls the serving API, never signals or
    restarts a process. Ctrl-C leaves a valid partial bundle.
    """
    import shlex

    from reporter.collect import CollectRequest, CollectStatus, plan

    def request() -> CollectRequest:
        return CollectRequest(
            out=out,
            pids=tuple(pid or ()),
            match=match,
            children_of=children_of,
            snapshots=snapshots,
            interval=plan.seconds(interval, option="--interval", allow_zero=True),
            with_locals=with_locals,
            blocking=blocking,
            metrics_url=metrics_url,
            scrape_every=plan.seconds(scrape_every, option="--scrape-every"),
            scrape_for=plan.seconds(scrape_for, option="--scrape-for", allow_zero=True),
            prometheus=prometheus,
            queries=tuple(query or ()),
            range_seconds=plan.seconds(range_, option="--range"),
            step_seconds=plan.seconds(step, option="--step") if step else None,
            units=tuple(unit or ()),
            raw_env=raw_env,
            timeout=plan.seconds(timeout, option="--timeout"),
            parallel=parallel,
            pyspy=pyspy,
            title=title,
            wedge_window=plan.seconds(wedge_window, option="--wedge-window")
            if wedge_window
            else None,
            command=shlex.join(["report", *sys.argv[1:]]),
        )

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    made = _run(request)
    summary = _run(lambda: app.collect(made, progress=progress))
    print(
        f"{summary.status.value}: {summary.files} files in {summary.out} "
        f"({summary.dumps_ok} dumps, {summary.dumps_failed} failed; {summary.scrapes} scrapes; "
        f"{len(summary.skipped)} skipped) in {summary.seconds:.1f} s"
    )
    for line in summary.advice:
        print(line if line.startswith("py-spy") else f"  {line}", file=sys.stderr)
    print(f"next: report analyze {shlex.quote(str(summary.out))}")
    if summary.status is CollectStatus.INTERRUPTED:
        raise typer.Exit(130)


# --- upstream issues: drafts and filing ------------------------------------------------

upstream_app = typer.Typer(
    help="Upstream GitHub issues from a bundle: a redacted draft for review, then filing.",
    no_args_is_help=True,
)
cli.add_typer(upstream_app, name="upstream")

BundleArg = Annotated[
    Path, typer.Argument(help="The evidence bundle folder (or one dump file).", show_default=False)
]
RepoOpt = Annotated[
    str | None,
    typer.Option("--repo", "-r", help="Upstream repository (owner/name); default: the manifest's."),
]
FormsOpt = Annotated[
    Path | None,
    typer.Option(
        "--forms",
        help="Folder of issue forms (*.yml, or a checkout with .github/ISSUE_TEMPLATE) "
        "instead of fetching the repository's.",
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="GitHub API URL (GitHub Enterprise: https://HOST/api/v3); default GITHUB_API_URL "
        "or api.github.com.",
    ),
]
LinkRelatedOpt = Annotated[
    bool,
    typer.Option(
        "--link-related",
        help="Link related upstream issues (adds a cross-reference to their timelines); "
        "by default they are cited as code.",
    ),
]


@upstream_app.command("draft")
def upstream_draft_cmd(
    bundle: BundleArg,
    repo: RepoOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Draft path (default: reports/<date>-<slug>.upstream-<repo>.md)."
        ),
    ] = None,
    forms: FormsOpt = None,
    offline: Annotated[
        bool,
        typer.Option(
            "--offline",
            help="No network: cached or generic form; related issues from the local (or "
            "example) index.",
        ),
    ] = False,
    db: DbOpt = None,
    link_related: LinkRelatedOpt = False,
    base_url: BaseUrlOpt = None,
) -> None:
    """Write a redacted upstream issue draft for review, following the repository's bug form.

    Secrets, addresses, host and user names become placeholders (<host-1>); mentions and
    issue references in evidence are made inert. `report lint` checks the draft again.
    """
    made = _run(
        lambda: app.upstream_draft(
            bundle,
            repo=repo,
            out=out,
            forms=forms,
            offline=offline,
            db=db,
            link_related=link_related,
            base_url=base_url,
        )
    )
    draft = made.run.draft
    for note in made.run.notes:
        print(f"note: {note}", file=sys.stderr)
    form = "generic form" if made.run.form.generic else f"form {made.run.form.source}"
    print(f"wrote {made.path} ({draft.repo}, {form}, {len(draft.body):,} characters)")
    if made.backup:
        print(f"previous version kept as {made.backup}")
    total = draft.redaction.total()
    print(f"redacted: {total} value(s)" + (":" if total else ""))
    for line in app.redaction_lines(draft.redaction.report):
        print(f"  {line}")
    if draft.todos:
        print(f"to fill before filing: {len(draft.todos)} TODO(reviewer) line(s)")
    for leak in draft.leaks:
        print(f"warning: the final scan still flags {leak}", file=sys.stderr)
    for trimmed in draft.trimmed:
        print(f"trimmed: {trimmed}")


@upstream_app.command("file")
def upstream_file_cmd(
    bundle: BundleArg,
    repo: RepoOpt = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Send it. Without --yes: a dry run that prints it.")
    ] = False,
    force_new: Annotated[
        bool,
        typer.Option(
            "--force-new", help="File a new issue even when a likely duplicate exists upstream."
        ),
    ] = False,
    base_url: BaseUrlOpt = None,
    draft: Annotated[
        Path | None,
        typer.Option("--draft", help="Send this reviewed draft (from `upstream draft`)."),
    ] = None,
    forms: FormsOpt = None,
    db: DbOpt = None,
    link_related: LinkRelatedOpt = False,
) -> None:
    """File the bundle upstream, or add "+1 with evidence" to the issue it duplicates.

    Runs the duplicate search first and follows "Duplicate of #N" to the canonical issue.
    Never sends anything the redaction scan still flags or with unfilled TODOs, and never
    files twice (a hidden marker is looked for before any retry). Exit 1 when refused.
    """
    result = _run(
        lambda: app.upstream_file(
            bundle,
            repo=repo,
            yes=yes,
            force_new=force_new,
            base_url=base_url,
            draft=draft,
            forms=forms,
            db=db,
            link_related=link_related,
        )
    )
    for note in result.plan.notes:
        print(f"note: {note}", file=sys.stderr)
    print(app.upstream_file_text(result))
    if result.plan.refusals and not result.sent:
        for refusal in result.plan.refusals:
            print(f"refused: {refusal}", file=sys.stderr)
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    cli()
