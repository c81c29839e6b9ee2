"""Options shared by several `report` commands, and turning them into app-layer values.

Declared here, not in the app layer, so that building the command line imports no
analysis code (`report --help` stays fast).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reporter.core.errors import UsageError

if TYPE_CHECKING:
    from reporter import app


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
    source_roots: list[Path] | None = None,
    baseline: Path | None = None,
    context: int = 6,
) -> app.Options:
    from reporter import app
    from reporter.analysis.result import Similarity

    return app.Options(
        similarity=Similarity(similarity.value),
        max_file_bytes=size(max_file_size),
        strict=strict,
        source_roots=tuple(source_roots or ()),
        baseline=baseline,
        context=context,
    )


DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="The issue index (SQLite). Default: the config's `index`, else "
        "upstream-issues.sqlite3 in the user cache dir.",
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
