"""The `report` command line: typer options -> one call into `reporter.app` -> print.

Exit codes: 0 success (also when the reader of a pipe stops early), 1 unusable input or
output failure (also findings, refusals, incomplete collections), 2 usage error, 130
interrupted. Errors, usage errors included, print one line plus a `Tip:`; `--debug`
(before or after the command) shows the traceback. Only this module imports typer, and
it imports the app layer inside each command so that `report --help` starts fast.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO, TypeVar


def _quiet_interrupt(_signum: int, _frame: object) -> None:  # pragma: no cover - timing
    os.write(2, b"interrupted\n")
    os._exit(130)


if Path(sys.argv[0]).name in ("report", "__main__.py"):
    # Ctrl-C while the imports below load exits quietly too (issue 16); main() puts
    # Python's KeyboardInterrupt back once the handlers that map it to 130 are in place.
    signal.signal(signal.SIGINT, _quiet_interrupt)

import typer  # noqa: E402 - after the interrupt handler, on purpose
from typer import _click as click  # noqa: E402 - typer >= 0.29 vendors click
from typer.core import TyperArgument, TyperGroup, TyperOption  # noqa: E402

from reporter import __version__, console  # noqa: E402
from reporter.errors import ReporterError, UsageError  # noqa: E402
from reporter.inert import for_terminal, one_line  # noqa: E402

if TYPE_CHECKING:
    from reporter import app
    from reporter.render.regions import MergeResult
    from reporter.upstream.search import SyncProgress, SyncReport

# Flags of the `report` callback that are also accepted after the subcommand.
GLOBAL_FLAGS = ("--debug", "--no-color")


class _Report(TyperGroup):
    """The `report` group: one-line usage errors, global flags anywhere, quiet broken pipes."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = hoist_globals(list(sys.argv[1:] if args is None else args), self.commands)
        plain_metavars(self)
        if standalone_mode and signal.getsignal(signal.SIGINT) is _quiet_interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            code = super().main(
                args=argv,
                prog_name=prog_name or "report",
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            sys.stdout.flush()
        except click.exceptions.NoArgsIsHelpError as err:
            # `report` alone: the help, and the usage-error code (as click gives it).
            assert err.ctx is not None
            _echo(err.ctx.get_help(), file=sys.stderr)
            code = 2
        except click.exceptions.UsageError as err:
            _usage_error(err)
            code = 2
        except click.exceptions.ClickException as err:
            _echo(f"error: {err.format_message()}", file=sys.stderr)
            code = err.exit_code
        except typer.Abort:
            _echo("aborted", file=sys.stderr)
            code = 1
        except BrokenPipeError:
            console.silence_stdout()
            code = 0
        except KeyboardInterrupt:
            _echo("interrupted", file=sys.stderr)
            code = 130
        except ReporterError as err:
            if "--debug" in argv:
                raise
            _error_lines(err)
            code = err.exit_code
        except Exception as err:  # the catch-all (issue 16): one line, never a traceback
            if "--debug" in argv:
                raise
            code = _unexpected(argv, err)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # `report status | head -1`: the reader has what it wanted; that is success.
            console.silence_stdout()
            raise typer.Exit(0) from None


_METAVARS = {"str": "TEXT", "int": "N", "float": "NUMBER", "path": "PATH", "bool": "BOOL"}


def plain_metavars(command: click.Command) -> None:
    """Help text in the usual style: `--out PATH`, `--pid N`, `EVIDENCE`, not `<list[int]>`."""
    ctx = click.Context(command)
    for param in command.params:
        if param.metavar is not None:
            continue
        if isinstance(param, TyperArgument):
            param.metavar = (param.name or "arg").upper()
            # The help line says what the argument is; `<list[Path]>` beside it is noise.
            vars(param)["display_type_rich"] = _no_type
        elif isinstance(param, TyperOption) and not param.is_flag and not param.count:
            label = param.display_type(ctx).strip("<>")
            label = label.removeprefix("list[").removesuffix("]")
            param.metavar = _METAVARS.get(label, f"[{label}]" if "|" in label else label.upper())
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            plain_metavars(sub)


def _no_type(ctx: click.Context) -> None:
    return None


def hoist_globals(args: list[str], commands: Any) -> list[str]:
    """Move `--debug`/`--no-color` given after the subcommand to before it."""
    position = next((i for i, a in enumerate(args) if a in commands), None)
    if position is None:
        return args
    end = position + args[position:].index("--") if "--" in args[position:] else len(args)
    moved = [a for a in args[position:end] if a in GLOBAL_FLAGS]
    if not moved:
        return args
    rest = [a for i, a in enumerate(args) if not (position <= i < end and a in GLOBAL_FLAGS)]
    return [*moved, *rest]


def _echo(*parts: object, file: TextIO | None = None, flush: bool = False) -> None:
    """`print` for everything the CLI says: evidence in it is inert (no escape sequences)."""
    print(for_terminal(" ".join(str(p) for p in parts)), file=file, flush=flush)


def _masked(text: str) -> str:
    from reporter.secrets import mask_text

    return mask_text(text)


def _error_lines(err: ReporterError) -> None:
    """A project error as one `error:` line and a `Tip:` (masked, inert)."""
    _echo(f"error: {one_line(_masked(err.message), limit=2000)}", file=sys.stderr)
    if err.tip:
        _echo(f"Tip: {one_line(_masked(err.tip), limit=2000)}", file=sys.stderr)


def _unexpected(argv: list[str], err: Exception) -> int:
    """An exception nobody mapped: one line naming the command and input, exit 1.

    SQLite errors (the issue index locked by another command, or damaged) get their own Tip.
    """
    if type(err).__module__ == "sqlite3":
        busy = "locked" in str(err) or "busy" in str(err)
        _echo(f"error: the issue index database: {one_line(str(err))}", file=sys.stderr)
        tip = (
            "another `report` command is using it; wait for it, or pass --db elsewhere"
            if busy
            else "the file is damaged: move it away and run `report sync` again"
        )
        _echo(f"Tip: {tip}", file=sys.stderr)
        return 1
    words = [a for a in argv if not a.startswith("-")]
    groups = {"upstream", "index", "auth", "config"}
    command = " ".join(words[:2]) if words and words[0] in groups else " ".join(words[:1])
    rest = words[2:] if words and words[0] in groups else words[1:]
    where = f" on {rest[0]}" if rest else ""
    detail = str(err) or "no details"
    text = f"report {command or '(no command)'} failed{where}: {type(err).__name__}: {detail}"
    _echo(f"error: {one_line(_masked(text))}", file=sys.stderr)
    _echo("Tip: re-run with --debug for the traceback, and report it", file=sys.stderr)
    return 1


def _usage_error(err: click.exceptions.UsageError) -> None:
    """A click usage error as one line and a `Tip:`."""
    _echo(f"error: {err.format_message()}", file=sys.stderr)
    command = err.ctx.command_path if err.ctx is not None else "report"
    _echo(f"Tip: `{command} --help` lists the options, with an example", file=sys.stderr)


cli = typer.Typer(
    name="report",
    cls=_Report,
    help="Turn hang evidence (py-spy dumps of every rank, tracebacks) into a verdict and a report.",
    epilog="Example: report analyze bundles/incident-42    (docs/cli.md has every command)",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain help text: no rich boxes, and `[wedge]` stays text rather than markup.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

_state = {"debug": False}
T = TypeVar("T")


class SimilarityName(StrEnum):
    """The `--similarity` choices (`reporter.analysis.Similarity`; a test keeps them equal).

    Declared here so that building the command line does not import the analysis layer.
    """

    EXACT = "exact"
    LINES_IGNORED = "lines-ignored"
    LOOSE = "loose"


Evidence = Annotated[
    list[Path],
    typer.Argument(
        help="A bundle folder, or one or more dump files (each file is one capture); "
        "- reads one pasted dump from stdin.",
        show_default=False,
    ),
]
SimilarityOpt = Annotated[
    SimilarityName,
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


JsonFlag = Annotated[
    bool,
    typer.Option(
        "--json", help="Print the result as one JSON object (schema: docs/cli.md#json-output)."
    ),
]


def _version(value: bool) -> None:
    if value:
        _echo(version_text())
        raise typer.Exit()


def version_text() -> str:
    """`report --version`: reporter, Python and py-spy, each with where it runs from."""
    from reporter.collect import envcap

    found = envcap.find_pyspy()
    if found.path:
        said = envcap.program_version(found.path, timeout=5.0) or "py-spy (version unknown)"
        pyspy = f"{said} ({found.path})"
    else:
        pyspy = f"py-spy: not found in {found.searched} (pip install py-spy)"
    python = f"Python {sys.version.split()[0]} ({sys.executable})"
    return "\n".join([f"reporter {__version__}", python, pyspy])


@cli.callback()
def _main(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks on errors (also after the command).")
    ] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colour or animation (as NO_COLOR=1 does).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the versions of reporter, Python and py-spy.",
        ),
    ] = False,
) -> None:
    _state["debug"] = debug
    if no_color:
        os.environ["NO_COLOR"] = "1"


def _size(text: str) -> int:
    import re

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
ReportsOpt = Annotated[
    Path | None,
    typer.Option(
        "--reports",
        help="Earlier reports to look through for the same hang (default: reports/ when present).",
    ),
]
BaselineOpt = Annotated[
    Path | None,
    typer.Option(
        "--baseline",
        help="The last good run (a bundle folder or an env / cmdline / freeze file) to diff against.",
    ),
]


def _options(
    similarity: SimilarityName,
    max_file_size: str,
    strict: bool,
    source_roots: list[Path] | None = None,
    baseline: Path | None = None,
    context: int = 6,
) -> app.Options:
    from reporter import app
    from reporter.analysis.result import Similarity

    return app.Options(
        similarity=Similarity(similarity.value),
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
        _error_lines(err)
        raise typer.Exit(err.exit_code) from None
    except KeyboardInterrupt:
        _echo("interrupted", file=sys.stderr)
        raise typer.Exit(130) from None


def _notes(notes: Sequence[str]) -> None:
    for note in notes:
        _echo(f"note: {note}", file=sys.stderr)


@cli.command("analyze", epilog="Example: report analyze fixtures/bundles/tp_desync")
def analyze_cmd(
    evidence: Evidence,
    as_json: JsonFlag = False,
    similarity: SimilarityOpt = SimilarityName.LINES_IGNORED,
    max_file_size: MaxSizeOpt = "512M",
    strict: StrictOpt = False,
    source_root: SourceRootOpt = None,
    baseline: BaselineOpt = None,
    context: ContextOpt = 6,
    reports: ReportsOpt = None,
) -> None:
    """Print the verdict for a bundle folder or loose dump files; writes nothing."""
    from reporter import app

    options = _run(
        lambda: _options(similarity, max_file_size, strict, source_root, baseline, context)
    )
    bundle, analysis = _run(lambda: app.load_and_analyze(evidence, options))
    seen = _run(lambda: app.seen_before(bundle, analysis, reports))
    if as_json:
        sys.stdout.write(app.analysis_json(analysis, bundle, seen=seen))
        return
    _echo(_masked(app.analysis_text(bundle, analysis, seen=seen)))
    for warning in bundle.warnings[:10]:
        _echo(f"warning: {warning}", file=sys.stderr)
    if len(bundle.warnings) > 10:
        _echo(f"warning: … {len(bundle.warnings) - 10} more (see --json)", file=sys.stderr)


@cli.command("draft", epilog="Example: report draft fixtures/bundles/tp_desync -o reports/tp.md")
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
    similarity: SimilarityOpt = SimilarityName.LINES_IGNORED,
    max_file_size: MaxSizeOpt = "512M",
    strict: StrictOpt = False,
    source_root: SourceRootOpt = None,
    baseline: BaselineOpt = None,
    context: ContextOpt = 6,
    reports: ReportsOpt = None,
) -> None:
    """Write a Markdown incident report for a bundle (or loose dump files).

    Into an existing report the new draft is merged: sections nobody edited are
    regenerated, reviewers' edits and text are kept byte for byte.
    """
    from reporter import app, documents

    options = _run(
        lambda: _options(similarity, max_file_size, strict, source_root, baseline, context)
    )
    result = _run(
        lambda: app.draft(evidence, out=out, options=options, force=force, reports=reports)
    )
    if as_json:
        console.emit_json(documents.draft_json(result))
        return
    for line in _merge_summary(result.merge):
        _echo(line)
    if result.unchanged:
        _echo(f"{result.path}: up to date")
        return
    _echo(f"wrote {result.path} ({result.analysis.verdict.value})")
    if result.charts:
        _echo(f"wrote {result.charts} (metrics charts)")
    if result.backup:
        _echo(f"previous version kept as {result.backup}")


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
    max_file_size: MaxSizeOpt = "512M",
) -> None:
    """Rank what changed between the last good run and the bad one, likeliest culprit first.

    Env vars, server options, package versions, GPUs, code excerpts and source files are
    compared; a changed tuning knob outranks per-run noise (PIDs, invocation ids,
    timestamps, random ports, temporary paths). Each change says why it ranks where it does.
    """
    from reporter import app

    run = _run(
        lambda: app.diff_runs(
            good, bad, source_roots=tuple(source_root or ()), max_file_bytes=_size(max_file_size)
        )
    )
    if as_json:
        sys.stdout.write(app.diff_json_text(run))
    else:
        _echo(_masked(app.diff_text(run, limit=max(limit, 0))))


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
    from reporter import app, documents

    result = _run(lambda: app.init_manifest(folder, force=force))
    if as_json:
        console.emit_json(documents.init_json(result))
        return
    for guess in result.suggestions:
        _echo(f"guessed {guess.key}: {guess.value} ({guess.why})")
    _echo(
        f"wrote {result.path}; edit the title, upstream repo and ranks, "
        f"then run `report draft {folder}`"
    )


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
    from reporter import app

    run = _run(lambda: app.lint_reports(files, index=index))
    if as_json:
        sys.stdout.write(app.lint_json(run))
    else:
        for finding in run.findings:
            _echo(finding)
            _echo(f"  fix: {finding.hint}")
        failing = len({f.path for f in run.findings})
        total = len(run.files)
        if run.findings:
            count = len(run.findings)
            _echo(f"{count} finding{'s' if count != 1 else ''} in {failing} of {total} files")
        else:
            _echo(f"{total} file{'s' if total != 1 else ''} clean")
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
    from reporter import app

    rows = _run(lambda: app.report_status(folder))
    if as_json:
        sys.stdout.write(app.status_json(rows))
    elif rows:
        _echo(_masked(app.status_text(rows)))
    else:
        _echo(f"no reports under {folder}")


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
    from reporter import app, documents

    path = _run(lambda: app.preview(file, out=out, force=force))
    if as_json:
        console.emit_json(documents.preview_json(path))
    else:
        _echo(f"wrote {path}")


# --- upstream issues -----------------------------------------------------------------

DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="The issue index (SQLite). Default: the config's `index`, else "
        "upstream-issues.sqlite3 in the user cache dir.",
    ),
]

index_app = typer.Typer(
    help="Move upstream issues in and out of the local index, as JSONL (one issue per line).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
cli.add_typer(index_app, name="index")


@cli.command("sync", epilog="Example: report sync sgl-project/sglang vllm-project/vllm")
def sync_cmd(
    repos: Annotated[
        list[str] | None,
        typer.Argument(
            help="Repositories as owner/name (default: the config's `repos`).", show_default=False
        ),
    ] = None,
    db: DbOpt = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="List every issue again instead of only the changed ones."),
    ] = False,
    fixed_in: Annotated[
        bool,
        typer.Option(
            "--fixed-in/--no-fixed-in",
            help="Look up what fixed issues closed as completed (pull request or commit, and "
            "the first release tag with it), up to 200 per run.",
        ),
    ] = True,
    as_json: JsonFlag = False,
) -> None:
    """Fetch upstream issues into the local index; later runs fetch only what changed.

    Each page is committed as it arrives: an interrupted sync loses nothing and the next
    run resumes. Token: see `report auth status`.
    """
    from reporter import app, documents

    def sync() -> tuple[list[SyncReport], list[str], Path]:
        with console.progress_bars() as (_line, tick):

            def show(step: SyncProgress) -> None:
                if tick is not None:
                    tick(step.repo, step.page, step.last_page or step.page)

            return app.sync_upstream(
                repos or (), db=db, full=full, progress=show, fixed_in=fixed_in
            )

    reports, notes, path = _run(sync)
    _notes(notes)
    if as_json:
        console.emit_json(documents.sync_json(reports, notes, path))
        return
    for report in reports:
        if report.not_modified:
            what = "no changes (304)"
        else:
            what = f"{report.stored} issues stored from {report.pages} page{'s' if report.pages != 1 else ''}"
        resumed = ", resumed an interrupted sync" if report.resumed else ""
        fixes = ""
        if report.fixes is not None and report.fixes.checked:
            fixes = f"; fixes of {report.fixes.checked} closed issues looked up ({report.fixes.found} found"
            fixes += f", {report.fixes.left} left for the next sync)" if report.fixes.left else ")"
        _echo(
            f"{report.repo}: {what}; {report.requests} request{'s' if report.requests != 1 else ''}{resumed}{fixes}"
        )
    _echo(f"index: {path}")


@index_app.command("import", epilog="Example: report index import issues.jsonl")
def index_import_cmd(
    file: Annotated[Path, typer.Argument(help="JSONL: repo, number, title, body, state, ...")],
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Import issues from JSONL; a bad line is reported with its number and skipped."""
    from reporter import app, documents

    result, path = _run(lambda: app.index_import(file, db=db))
    if as_json:
        console.emit_json(documents.import_json(result, path))
        return
    for problem in result.skipped:
        _echo(f"skipped {problem}", file=sys.stderr)
    _echo(f"imported {result.imported} issues into {path}")


@index_app.command("export", epilog="Example: report index export --repo sgl-project/sglang")
def index_export_cmd(
    repo: Annotated[
        str | None, typer.Option("--repo", help="Only this repository (owner/name).")
    ] = None,
    db: DbOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the indexed issues as JSONL, by repository and number (--json: one object)."""
    from reporter import app, documents

    if not as_json:
        _run(lambda: app.index_export(write=print, db=db, repo=repo))
        return
    lines: list[str] = []
    _count, path = _run(lambda: app.index_export(write=lines.append, db=db, repo=repo))
    # An export is data to import again: public issue text, kept byte for byte.
    console.emit_json(documents.export_json(lines, path, repo), mask=False)


@cli.command(
    "search-upstream", epilog="Example: report search-upstream fixtures/bundles/tp_desync --offline"
)
def search_upstream_cmd(
    bundle: Annotated[
        Path | None,
        typer.Argument(
            help="A bundle folder (its analysis and manifest are the query), or an indexed "
            "issue as OWNER/REPO#N.",
            show_default=False,
        ),
    ] = None,
    repo: Annotated[
        list[str] | None,
        typer.Option(
            "--repo",
            "-r",
            help="Repository to search (repeatable); default: the manifest's upstream, "
            "else the config's `repos`.",
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
    as_json: JsonFlag = False,
    online: Annotated[
        bool | None,
        typer.Option(
            "--online/--offline",
            help="--online: refresh from GitHub first; --offline: the local index only "
            "(without one, the example index shipped with reporter).",
            show_default=False,
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Find upstream issues that look like this hang: likely duplicates first, with reasons."""
    from reporter import app

    outcome = _run(
        lambda: app.search_upstream(
            bundle, repos=repo or (), text_file=text_file, limit=limit, online=online, db=db
        )
    )
    _notes(outcome.notes)
    if as_json:
        sys.stdout.write(app.search_upstream_json(outcome))
    else:
        _echo(app.search_upstream_text(outcome))


@cli.command("triage", epilog="Example: report triage vllm-project/vllm --since 2025-06-01")
def triage_cmd(
    target: Annotated[
        str,
        typer.Argument(
            help="OWNER/REPO#N (one indexed issue), or OWNER/REPO with --since or --text-file.",
            show_default=False,
        ),
    ],
    since: Annotated[
        str | None,
        typer.Option("--since", help="Every issue opened since this date (2025-01-31)."),
    ] = None,
    text_file: Annotated[
        Path | None,
        typer.Option("--text-file", help="Triage this text (a pasted issue; - for stdin)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Candidates per issue (1-100).")] = 5,
    as_json: JsonFlag = False,
    comment: Annotated[
        bool,
        typer.Option("--comment", help="Print the possible-duplicates comment (a dry run)."),
    ] = False,
    post: Annotated[
        bool,
        typer.Option(
            "--post",
            help="Post that comment on the issue (never twice: an earlier one is found by its "
            "marker). Needs GITHUB_TOKEN.",
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """List likely duplicates of tracker issues for maintainers, never the issue itself."""
    from reporter import app

    outcome = _run(
        lambda: app.triage(
            target,
            since=since,
            text_file=text_file,
            limit=limit,
            db=db,
            comment=comment,
            post=post,
        )
    )
    _notes(outcome.notes)
    if outcome.comment is not None:
        result = outcome.comment
        if result.posted_url is not None:
            _echo(f"posted: {result.posted_url}", file=sys.stderr)
        elif result.skipped is not None:
            _echo(f"not posted: {result.skipped}", file=sys.stderr)
        if result.body is not None and not as_json:
            sys.stdout.write(result.body)
            return
    sys.stdout.write(app.triage_text(outcome, as_json=as_json))


# --- live capture ----------------------------------------------------------------------


@cli.command(
    "collect", epilog="Example: report collect -o /tmp/incident-42 --match 'sglang::scheduler_TP'"
)
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
            show_default=False,
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
        str | None,
        typer.Option(
            "--py-spy",
            help="The py-spy executable (default: beside this Python, then its scripts "
            "folder, then PATH).",
        ),
    ] = None,
    title: Annotated[str, typer.Option("--title", help="The bundle's title.")] = "",
    wedge_window: Annotated[
        str | None,
        typer.Option(
            "--wedge-window", help="Write `[wedge] window` (for a scrape shorter than 60 s)."
        ),
    ] = None,
    torch_debug: Annotated[
        str | None,
        typer.Option(
            "--torch-debug",
            help="torch's debug server (rank 0, e.g. http://127.0.0.1:25999): fetch stacks, "
            "py-spy dumps and Flight Recorder traces of every rank (GET only).",
        ),
    ] = None,
    fr_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--fr-dir",
            help="A folder of Flight Recorder dumps a watchdog wrote (repeatable); "
            "/tmp/nccl_trace_rank_* is always looked at.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Capture evidence from live processes into a bundle, without disturbing them.

    py-spy dumps (non-blocking by default), /metrics scrapes, Prometheus query_range,
    /proc command lines and environments (secrets redacted), the targets' package
    versions and `systemctl show`. Never calls the serving API, never signals or
    restarts a process. Ctrl-C leaves a valid partial bundle. Exit 1 with status
    `incomplete` when no stack came back from any process it was asked to dump.
    """
    import shlex

    from reporter import app, documents
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
            torch_debug=torch_debug,
            fr_dirs=tuple(fr_dir or ()),
        )

    made = _run(request)
    with console.progress_bars() as (line, tick):
        summary = _run(lambda: app.collect(made, progress=line, tick=tick))
    if as_json:
        console.emit_json(documents.collect_json(summary))
    else:
        _echo(
            f"{summary.status.value}: {summary.files} files in {summary.out} "
            f"({summary.dumps_ok} dumps, {summary.dumps_failed} failed; {summary.scrapes} "
            f"scrapes; {len(summary.skipped)} skipped) in {summary.seconds:.1f} s"
        )
        for why in summary.missing_stacks:
            _echo(f"  no stacks: {why}", file=sys.stderr)
        for advice in summary.advice:
            _echo(advice if advice.startswith("py-spy") else f"  {advice}", file=sys.stderr)
        _echo(f"next: report analyze {shlex.quote(str(summary.out))}")
    if summary.status is CollectStatus.INTERRUPTED:
        raise typer.Exit(130)
    if summary.status is CollectStatus.INCOMPLETE:
        raise typer.Exit(1)


# --- upstream issues: drafts and filing ------------------------------------------------

upstream_app = typer.Typer(
    help="Upstream GitHub issues from a bundle: a redacted draft for review, then filing.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
cli.add_typer(upstream_app, name="upstream")

BundleArg = Annotated[
    Path, typer.Argument(help="The evidence bundle folder (or one dump file).", show_default=False)
]
RepoOpt = Annotated[
    str | None,
    typer.Option(
        "--repo",
        "-r",
        help="Upstream repository (owner/name); default: the manifest's, else the config's.",
    ),
]
FormsOpt = Annotated[
    Path | None,
    typer.Option(
        "--forms",
        help="Folder of issue forms (*.yml, or a checkout with .github/ISSUE_TEMPLATE) "
        "instead of fetching the repository's (default: the config's `forms`).",
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="GitHub API URL (GitHub Enterprise: https://HOST/api/v3); default GITHUB_API_URL, "
        "GH_HOST, the config's `host`, else api.github.com.",
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


@upstream_app.command(
    "draft", epilog="Example: report upstream draft fixtures/bundles/full_incident --offline"
)
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
    as_json: JsonFlag = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace an existing file that is not an upstream draft."),
    ] = False,
) -> None:
    """Write a redacted upstream issue draft for review, following the repository's bug form.

    Secrets, addresses, host and user names become placeholders (<host-1>); mentions and
    issue references in evidence are made inert. `report lint` checks the draft again.
    """
    from reporter import app, documents

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
            force=force,
        )
    )
    draft = made.run.draft
    _notes(made.run.notes)
    if as_json:
        console.emit_json(documents.upstream_draft_json(made))
        return
    form = "generic form" if made.run.form.generic else f"form {made.run.form.source}"
    _echo(f"wrote {made.path} ({draft.repo}, {form}, {len(draft.body):,} characters)")
    if made.backup:
        _echo(f"previous version kept as {made.backup}")
    total = draft.redaction.total()
    _echo(f"redacted: {total} value(s)" + (":" if total else ""))
    for line in app.redaction_lines(draft.redaction.report):
        _echo(f"  {line}")
    if draft.todos:
        _echo(f"to fill before filing: {len(draft.todos)} TODO(reviewer) line(s)")
    for leak in draft.leaks:
        _echo(f"warning: the final scan still flags {leak}", file=sys.stderr)
    for trimmed in draft.trimmed:
        _echo(f"trimmed: {trimmed}")


@upstream_app.command(
    "file", epilog="Example: report upstream file bundles/incident-42 --draft reports/x.md --yes"
)
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
    reports: ReportsOpt = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", help="The incident report whose upstream_issue gets the filed URL."
        ),
    ] = None,
    show_body: Annotated[
        bool,
        typer.Option("--show-body", help="Print the issue body also when filing is refused."),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """File the bundle upstream, or add "+1 with evidence" to the issue it duplicates.

    Runs the duplicate search first and follows "Duplicate of #N" to the canonical issue.
    Never sends anything the redaction scan still flags or with unfilled TODOs, and never
    files twice (a hidden marker is looked for before any retry). Exit 1 when refused;
    the refusal and its fix are printed first.
    """
    from reporter import app, documents

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
            reports=reports,
            report=report,
        )
    )
    refused = bool(result.plan.refusals) and not result.sent
    if as_json:
        _notes(result.plan.notes)
        console.emit_json(documents.upstream_file_json(result))
    else:
        # The news first: a refusal and its fix, then notes, then what would be sent.
        for line in app.refusal_lines(result):
            _echo(line, file=sys.stderr, flush=True)
        _notes(result.plan.notes)
        sys.stderr.flush()
        _echo(app.upstream_file_text(result, show_body=show_body))
    for warning in result.warnings:
        # Filed upstream, but a local write failed: the URL above is printed either way.
        _echo(f"warning: {warning}", file=sys.stderr)
    if refused:
        raise typer.Exit(1)


# --- settings: auth and config ---------------------------------------------------------

auth_app = typer.Typer(
    help="Which GitHub token the upstream commands use.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
cli.add_typer(auth_app, name="auth")
config_app = typer.Typer(
    help="The settings file (default repos, index, forms, host).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
cli.add_typer(config_app, name="config")


@auth_app.command("status", epilog="Example: GH_HOST=ghe.corp.example report auth status")
def auth_status_cmd(
    base_url: BaseUrlOpt = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="Do not ask GitHub for the rate limit left.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Say which host is used, where its token comes from and the rate limit left.

    Tokens, like gh: GH_TOKEN / GITHUB_TOKEN for github.com, GH_ENTERPRISE_TOKEN /
    GITHUB_ENTERPRISE_TOKEN for other hosts, gh's hosts.yml, then `gh auth token`
    (the system keyring). Each token is only sent to its own host. The token itself
    is never printed.
    """
    from reporter import app

    status = _run(lambda: app.auth_status(base_url=base_url, check=not offline))
    if as_json:
        console.emit_json(status.to_json())
    else:
        _echo(app.auth_status_text(status))


@config_app.command("show", epilog="Example: REPORTER_CONFIG=./reporter.toml report config show")
def config_show_cmd(as_json: JsonFlag = False) -> None:
    """Print the settings file's path and every setting (REPORTER_CONFIG overrides the path).

    Keys: repos = ["owner/name"], index = "PATH", forms = "DIR", host = "github.com".
    """
    from reporter import app

    conf = _run(app.settings)
    if as_json:
        console.emit_json(conf.to_json())
    else:
        _echo(app.config_show_text(conf))


def main() -> None:
    """Console-script entry point."""
    cli()
