"""The parts of `bundle.toml` a many-host `report collect` writes while it runs.

Each host's tables (`[[evidence]]`, `[[collect.target]]`, `[[collect.process]]`,
`[[collect.remote]]`, `[[collect.skipped]]`) go once into a file of their own under
`bundle.d/`, and `bundle.toml` keeps the rest, naming the folder; at the end the collector
joins them into one `bundle.toml`. A bundle whose collection was cut short keeps the parts,
and the loader joins them after the head in file-name order (`join_parts`), as the
collector would::

    [collect]
    status = "running"
    parts = "bundle.d"          # bundle.d/node-0.toml, bundle.d/node-1.toml, ...
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from pathlib import Path

from reporter.core import fileio
from reporter.core.errors import InputError, ManifestError

MANIFEST_NAME = "bundle.toml"
# The folder of a running collection's per-host parts of bundle.toml (`[collect] parts`).
PARTS_DIR = "bundle.d"
# One part holds one host's tables: at most 5,000 files and 200 notes, a few MiB.
MAX_PART_BYTES = 64 << 20


def join_parts(head: str, parts: Sequence[tuple[str, str]]) -> str:
    """`bundle.toml`'s head and its parts (name, text) as one manifest text; a part that
    does not read as TOML, or does not fit after the head, is a `ManifestError` naming it.

    A part holds arrays of tables only, and an array of tables may go on after any table,
    so each part joins as it stands: the cost is the text, no table is rewritten.
    """
    joined = head.rstrip("\n") + "\n" + "".join("\n" + p.strip("\n") + "\n" for _, p in parts)
    try:
        tomllib.loads(joined)
    except tomllib.TOMLDecodeError as err:
        for name, part in parts:  # which one: read each alone (only when the whole fails)
            try:
                tomllib.loads(part)
            except tomllib.TOMLDecodeError as bad:
                raise ManifestError(
                    f"{name}: {bad}",
                    tip="fix or remove that file; the files it lists are still found by "
                    f"walking (a part of {MANIFEST_NAME} left by a collection that did not "
                    "finish)",
                ) from bad
        raise ManifestError(
            f"{MANIFEST_NAME} with its parts in {PARTS_DIR}/: {err}",
            tip=f"a part repeats a table of {MANIFEST_NAME}; write each entry as a "
            "[[name]] table, or remove `parts` from [collect]",
        ) from err
    return joined


def read_parts(root: Path, folder: str) -> list[tuple[str, str]]:
    """The parts under `root/folder` as (display name, text), in file-name order: regular
    `*.toml` files only (a link or anything else there is passed over), each bounded."""
    base = root / folder
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(base)
            if entry.name.endswith(".toml") and entry.is_file(follow_symlinks=False)
        )
    except FileNotFoundError:
        return []  # joined already, or none written yet
    except OSError as err:
        raise ManifestError(f"{folder}/: cannot be read ({err.strerror})") from err
    out: list[tuple[str, str]] = []
    for name in names:
        display = f"{folder}/{name}"
        try:
            out.append(
                (
                    display,
                    fileio.read_text_bounded(
                        base / name, display=display, max_bytes=MAX_PART_BYTES
                    ),
                )
            )
        except InputError:
            if (base / name).exists():
                raise
            # the collector joined the parts and removed this one while we read
    return out
