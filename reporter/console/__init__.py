"""Terminal output for the CLI: JSON documents, colour and progress policy, broken pipes.

The terminal text of each command is built beside this module, from app-layer results:
`console.report` (analyze, draft, diff, init, lint, status, collect) and
`console.upstream` (sync, search-upstream, triage, upstream draft/file, auth, config).
Used by `reporter.cli` only. Colour and animation appear only on a terminal and never
with `NO_COLOR` set (https://no-color.org) or `TERM=dumb`; piped output is plain text.
rich is imported only when a progress bar is actually drawn.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from reporter.core.errors import UsageError

# `--json a,b` (as gh takes it): the fields to keep, set by the command line's parser.
JSON_FIELDS: list[tuple[str, ...]] = []


def emit(document: object, *, stream: TextIO | None = None) -> None:
    """Print one `--json` document (a typed record of `reporter.console.documents` or a
    `documents_*` module beside it): the one way every command prints JSON. Masking and layout are
    the document class's (`jsontext.render`); `--json a,b` keeps fields a and b."""
    # Lazy: start-up; `report --help` must not load the masking and the document model.
    from reporter.console.jsontext import pieces, render

    out = stream or sys.stdout
    if JSON_FIELDS and JSON_FIELDS[-1]:
        out.write(select_fields(render(document), JSON_FIELDS[-1]))
        return
    # Written as it is made: a large document is never held whole as text.
    for piece in pieces(document):
        out.write(piece)


def select_fields(text: str, fields: tuple[str, ...]) -> str:
    """The JSON object `text` with only `fields`, in the order asked; an unknown field is a
    `UsageError` listing the fields there are (what gh does)."""
    import json

    value = json.loads(text)
    if not isinstance(value, dict):
        raise UsageError("--json FIELDS needs a command whose JSON is one object")
    unknown = [f for f in fields if f not in value]
    if unknown:
        raise UsageError(
            f"unknown JSON field {unknown[0]!r}",
            tip="available fields: " + ", ".join(sorted(value)),
        )
    return json.dumps({f: value[f] for f in fields}, indent=2, ensure_ascii=False) + "\n"


def fancy(stream: TextIO) -> bool:
    """True when `stream` is a terminal that wants colour and animation."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def say(line: str) -> None:
    """A progress or note line on stderr."""
    print(line, file=sys.stderr, flush=True)


@contextmanager
def progress_bars(
    line: Callable[[str], None] = say,
) -> Iterator[tuple[Callable[[str], None], Callable[[str, int, int], None] | None]]:
    """`(line, tick)` for a long-running command: on a terminal, rich bars on stderr
    (`tick(what, done, total)` moves the bar named `what`; lines print above them);
    elsewhere plain lines and no `tick`."""
    if not fancy(sys.stderr):
        yield line, None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

    console = Console(stderr=True)
    bars: dict[str, TaskID] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as progress:

        def tick(what: str, done: int, total: int) -> None:
            if what not in bars:
                bars[what] = progress.add_task(what, total=total)
            progress.update(bars[what], completed=done, total=total)

        def print_line(text: str) -> None:
            progress.console.print(text, markup=False, highlight=False, soft_wrap=True)

        yield print_line, tick


def silence_stdout() -> None:
    """After a broken pipe (`report status | head -1`): send the rest of stdout nowhere,
    so the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test runner's buffer): nothing to silence
