"""Options shared by several `report` commands, and turning them into app-layer values.

Declared here, not in the app layer, so that building the command line imports no
analysis code (`report --help` stays fast).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import typer

from reporter.core.errors import UsageError
from reporter.core.fileio import DEFAULT_MAX_BYTES

if TYPE_CHECKING:
    from reporter.app.report import Options

    EvidenceOptions: TypeAlias = Options
else:

    class EvidenceOptions:
        """Marks the parameter that `evidence_command` replaces with the evidence options.

        mypy sees `reporter.app.report.Options`; at run time this light class stands in, so the
        command line is built without importing the app layer.
        """


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
# The one default of `--max-file-size`, as people write it: "512M" (core/fileio.py's limit).
DEFAULT_MAX_FILE_SIZE = f"{DEFAULT_MAX_BYTES >> 20}M"
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
        "--json",
        help="Print the result as one JSON object (schema: docs/cli.md#json-output); "
        "--json a,b keeps only those fields, as gh does.",
    ),
]


def size(text: str, option: str = "--max-file-size") -> int:
    """A size option's bytes (`512M`, `2G`, `64KiB`); `UsageError` naming `option` if not one."""
    import re

    match = re.fullmatch(r"\s*(\d{1,12}(?:\.\d{1,6})?)\s*([kmgt]?)i?b?\s*", text.lower())
    if not match:
        raise UsageError(f"{option} {text!r} is not a size", tip="write it like 512M or 2G")
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


def evidence_options(
    similarity: SimilarityName,
    max_file_size: str,
    strict: bool,
    source_root: list[Path] | None = None,
    baseline: Path | None = None,
    context: int = 6,
) -> Options:
    """The evidence options' values as the app layer's `Options`."""
    # Lazy: start-up; `report --help` must not load reporter.analysis.
    from reporter.analysis.result import Similarity
    from reporter.app.report import Options

    return Options(
        similarity=Similarity(similarity.value),
        max_file_bytes=size(max_file_size),
        strict=strict,
        source_roots=tuple(source_root or ()),
        baseline=baseline,
        context=context,
    )


def _option(name: str, annotation: object, default: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


# The options of the commands that read and analyse evidence (`report analyze`, `report
# draft`), declared once, in the order `--help` lists them; names match `evidence_options`.
EVIDENCE_OPTIONS: tuple[inspect.Parameter, ...] = (
    _option("similarity", SimilarityOpt, SimilarityName.LINES_IGNORED),
    _option("max_file_size", MaxSizeOpt, DEFAULT_MAX_FILE_SIZE),
    _option("strict", StrictOpt, False),
    _option("source_root", SourceRootOpt, None),
    _option("baseline", BaselineOpt, None),
    _option("context", ContextOpt, 6),
)


def evidence_command(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with its `EvidenceOptions` parameter replaced by the `EVIDENCE_OPTIONS`.

    typer reads the options from the returned function's signature (in the place of that
    parameter); on a call their values become one `Options` passed under its name::

        @cli.command("analyze")
        @evidence_command
        def analyze_cmd(evidence: Evidence, options: EvidenceOptions, ...) -> None: ...
    """
    signature = inspect.signature(command, eval_str=True)
    (marker,) = (p for p in signature.parameters.values() if p.annotation is EvidenceOptions)
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param is marker:
            params.extend(EVIDENCE_OPTIONS)
        else:
            params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def run(**values: Any) -> None:
        given = {p.name: values.pop(p.name) for p in EVIDENCE_OPTIONS}
        command(**values, **{marker.name: evidence_options(**given)})

    run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    return run


def option_sets(order: Sequence[str]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A decorator: `command` with each parameter typed by an *option set* (a frozen
    dataclass whose fields are typer options) replaced by that set's fields, all listed in
    `order` (the order `--help` shows them); on a call the fields' values become one
    instance of each set, passed under the parameter's name::

        @cli.command("collect")
        @option_sets(("out", "pid", "match", ...))
        def collect_cmd(out: OutOpt, targets: Targets, ...) -> None: ...
    """

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        sets: dict[str, type[Any]] = {}
        owner: dict[str, str] = {}  # a field's name -> the parameter of its set
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            kind = param.annotation
            if not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
                params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))
                continue
            sets[param.name] = kind
            hints = typing.get_type_hints(kind, include_extras=True)
            for field in dataclasses.fields(kind):
                default = inspect.Parameter.empty
                if field.default is not dataclasses.MISSING:
                    default = field.default
                params.append(_option(field.name, hints[field.name], default))
                owner[field.name] = param.name
        rank = {name: index for index, name in enumerate(order)}
        if sorted(rank) != sorted(p.name for p in params):
            raise TypeError(f"{command.__name__}: the order does not name each option once")
        params.sort(key=lambda p: rank[p.name])

        @functools.wraps(command)
        def run(**values: Any) -> None:
            given: dict[str, dict[str, Any]] = {name: {} for name in sets}
            for field_name, set_name in owner.items():
                given[set_name][field_name] = values.pop(field_name)
            command(**values, **{name: sets[name](**given[name]) for name in sets})

        run.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return run

    return wrap


DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db",
        envvar="REPORTER_DB",
        help="The issue index (SQLite). Default: $REPORTER_DB, else the config's `index`, "
        "else upstream-issues.sqlite3 in the user cache dir.",
    ),
]
BundleArg = Annotated[
    Path, typer.Argument(help="The evidence bundle folder (or one dump file).", show_default=False)
]
RepoOpt = Annotated[
    str | None,
    typer.Option(
        "--repo",
        "-r",
        envvar=["REPORTER_REPO", "GH_REPO"],
        help="Upstream repository (owner/name); default: $REPORTER_REPO or $GH_REPO, else "
        "the manifest's, else the config's.",
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
