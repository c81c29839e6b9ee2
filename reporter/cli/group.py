"""The `report` group: global flags, error handling and exit codes, `--version`.

Exit codes: 0 success (also when the reader of a pipe stops early), 1 unusable input or
output failure (also findings, refusals, incomplete collections), 2 usage error, 130
interrupted. Errors, usage errors included, print one line plus a `Tip:`; `--debug`
(before or after the command) shows the traceback. The commands live beside this
module, one module per family; each imports its use case from its app module inside the
command, so that `report --help` starts fast (`tests/test_startup.py`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from typer import _click as click  # typer >= 0.29 vendors click
from typer.core import TyperArgument, TyperGroup, TyperOption

from reporter import __version__, console
from reporter.cli import interrupt, quickexit, values
from reporter.core.errors import ReporterError
from reporter.core.inert import for_terminal, one_line

# Flags of the `report` callback that are also accepted after the subcommand.
GLOBAL_FLAGS = ("--debug", "--no-color")


_FIELDS_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*")


def json_fields(argv: list[str]) -> list[str]:
    """`--json a,b` and `--json=a,b` (gh's form) become `--json`, the fields kept in
    `console.JSON_FIELDS` for `console.emit`. A word after `--json` counts as fields only
    when it looks like them and is not a file or folder (a bundle named `tp_desync`)."""
    out: list[str] = []
    fields: tuple[str, ...] = ()
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            out.extend(argv[index:])
            break
        if word.startswith("--json="):
            fields = tuple(f for f in word.split("=", 1)[1].split(",") if f)
            out.append("--json")
        elif (
            word == "--json"
            and index + 1 < len(argv)
            and _FIELDS_RE.fullmatch(argv[index + 1])
            and not Path(argv[index + 1]).exists()
        ):
            fields = tuple(argv[index + 1].split(","))
            out.append("--json")
            index += 1
        else:
            out.append(word)
        index += 1
    console.JSON_FIELDS[:] = [fields]
    return out


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
        argv = json_fields(argv)
        plain_metavars(self)
        values.install()  # option values without pydantic, where that is exact
        if standalone_mode:
            interrupt.restore()
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
            echo(err.ctx.get_help(), file=sys.stderr)
            code = 2
        except click.exceptions.UsageError as err:
            _usage_error(err)
            code = 2
        except click.exceptions.ClickException as err:
            echo(f"error: {err.format_message()}", file=sys.stderr)
            code = err.exit_code
        except typer.Abort:
            echo("aborted", file=sys.stderr)
            code = 1
        except BrokenPipeError:
            console.silence_stdout()
            code = 0
        except KeyboardInterrupt:
            echo("interrupted", file=sys.stderr)
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


def echo(*parts: object, file: TextIO | None = None, flush: bool = False) -> None:
    """`print` for everything the CLI says: evidence in it is inert (no escape sequences)."""
    print(for_terminal(" ".join(str(p) for p in parts)), file=file, flush=flush)


def masked(text: str) -> str:
    # Lazy: start-up; `report --help` must not load reporter.core.rules.
    from reporter.secrets import mask_text

    return mask_text(text)


def _error_lines(err: ReporterError) -> None:
    """A project error as one `error:` line and a `Tip:` (masked, inert)."""
    echo(f"error: {one_line(masked(err.message), limit=2000)}", file=sys.stderr)
    if err.tip:
        echo(f"Tip: {one_line(masked(err.tip), limit=2000)}", file=sys.stderr)


def _unexpected(argv: list[str], err: Exception) -> int:
    """An exception nobody mapped: one line naming the command and input, exit 1.

    SQLite errors (the issue index locked by another command, or damaged) get their own Tip.
    """
    if type(err).__module__ == "sqlite3":
        busy = "locked" in str(err) or "busy" in str(err)
        echo(f"error: the issue index database: {one_line(str(err))}", file=sys.stderr)
        tip = (
            "another `report` command is using it; wait for it, or pass --db elsewhere"
            if busy
            else "the file is damaged: move it away and run `report sync` again"
        )
        echo(f"Tip: {tip}", file=sys.stderr)
        return 1
    words = [a for a in argv if not a.startswith("-")]
    groups = {"upstream", "index", "auth", "config"}
    command = " ".join(words[:2]) if words and words[0] in groups else " ".join(words[:1])
    rest = words[2:] if words and words[0] in groups else words[1:]
    where = f" on {rest[0]}" if rest else ""
    detail = str(err) or "no details"
    text = f"report {command or '(no command)'} failed{where}: {type(err).__name__}: {detail}"
    echo(f"error: {one_line(masked(text))}", file=sys.stderr)
    echo("Tip: re-run with --debug for the traceback, and report it", file=sys.stderr)
    return 1


def _usage_error(err: click.exceptions.UsageError) -> None:
    """A click usage error as one line and a `Tip:`."""
    echo(f"error: {err.format_message()}", file=sys.stderr)
    command = err.ctx.command_path if err.ctx is not None else "report"
    echo(f"Tip: `{command} --help` lists the options, with an example", file=sys.stderr)


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


def subgroup(name: str, help: str) -> typer.Typer:
    """A command group under `report` (`report index ...`), with the group's conventions."""
    group = typer.Typer(help=help, no_args_is_help=True, rich_markup_mode=None)
    cli.add_typer(group, name=name)
    return group


def echo_lines(lines: Iterable[tuple[str, bool]]) -> None:
    """Print (line, to stderr) pairs from `reporter.console` in their order."""
    for line, to_stderr in lines:
        echo(line, file=sys.stderr if to_stderr else None)


def notes(found: Sequence[str]) -> None:
    """The app's notes on stderr, one `note:` line each."""
    for note in found:
        echo(f"note: {note}", file=sys.stderr)


def _version(value: bool) -> None:
    if value:
        echo(version_text())
        raise typer.Exit()


def version_text() -> str:
    """`report --version`: reporter, Python and py-spy, each with where it runs from."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.collect import envcap

    found = envcap.find_pyspy()
    if found.path:
        said = envcap.program_version(found.path, timeout=5.0) or "py-spy (version unknown)"
        pyspy = f"{said} ({found.path})"
    else:
        pyspy = f"py-spy: not found in {found.searched} (pip install py-spy)"
    python = f"Python {sys.version.split()[0]} ({sys.executable})"
    return "\n".join([f"hangreport {__version__} (import reporter)", python, pyspy])


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
    # `--debug` is read from the arguments by `_Report.main`, wherever it was given.
    if no_color:
        os.environ["NO_COLOR"] = "1"


def main() -> None:
    """Console-script entry point."""
    try:
        cli()
    except SystemExit as done:
        quickexit.leave(done.code)
        raise
