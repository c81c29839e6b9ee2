"""The README Quickstart's shell commands, one per line, for `.ci/run` to run as written.

CI runs the very commands a new user copies, so they cannot drift apart: this reads the
first fenced block under the `## Quickstart` heading and prints its commands (blank and
`#` lines dropped, `\\`-continued lines joined). It exits 1 with a reason when the section
or block is missing or holds other than `--expect` commands (2 by default).

    python3 tools/quickstart.py [README.md] [--expect N] [--outs]

`--outs` prints instead the files the commands write with `--out FILE` (one per line), so
CI can check the first command's report is where the README says and that the suite leaves
it alone. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

HEADING = "## Quickstart"


class QuickstartError(ValueError):
    """The README has no usable Quickstart block; the message says what and where."""


def commands(text: str, *, source: str = "README.md") -> list[str]:
    """The commands of the first fenced block under `## Quickstart`, in order."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == HEADING)
    except StopIteration:
        raise QuickstartError(f"{source}: no '{HEADING}' heading") from None
    fence = ""
    found: list[str] = []
    pending = ""
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        stripped = line.strip()
        if not fence:
            if stripped.startswith("## "):
                break  # the next section: the Quickstart has no fenced block
            if stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
                opened = number
            continue
        if stripped.startswith(fence):
            if pending:
                raise QuickstartError(f"{source}:{number}: the block ends inside a '\\' line")
            return found
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("$ "):  # a prompt shown before the command is not part of it
            stripped = stripped[2:]
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        found.append(pending + stripped)
        pending = ""
    if fence:
        raise QuickstartError(f"{source}:{opened}: the Quickstart's fenced block is not closed")
    raise QuickstartError(f"{source}:{start + 1}: '{HEADING}' has no fenced command block")


def outputs(command: str) -> list[str]:
    """The files `command` names with `--out FILE` or `--out=FILE` (`-o FILE` too)."""
    words = shlex.split(command)
    found: list[str] = []
    for i, word in enumerate(words):
        if word in ("--out", "-o") and i + 1 < len(words):
            found.append(words[i + 1])
        elif word.startswith("--out="):
            found.append(word.split("=", 1)[1])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", nargs="?", default="README.md", type=Path)
    parser.add_argument("--expect", type=int, default=2, help="how many commands there must be")
    parser.add_argument("--outs", action="store_true", help="print the --out files instead")
    args = parser.parse_args(argv)
    try:
        text = args.readme.read_text(encoding="utf-8")
        found = commands(text, source=str(args.readme))
    except (OSError, UnicodeDecodeError, QuickstartError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if len(found) != args.expect:
        print(
            f"error: {args.readme}: the Quickstart block holds {len(found)} command(s), "
            f"CI expects exactly {args.expect}: {found!r}\n"
            "Tip: keep one line per command (install and draft; install tests and run them), "
            "or change --expect in .ci/run with the README",
            file=sys.stderr,
        )
        return 1
    lines = [out for command in found for out in outputs(command)] if args.outs else found
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
