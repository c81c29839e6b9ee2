"""Read local source trees (`--source-root`): find a frame's file, hash a whole tree.

This is the only module that reads source files; `reporter.analysis.excerpts` sees
them through `SourceRoots.find`. A frame's file is looked up under every root by
its longest path suffix that exists: `/usr/lib/python3.11/site-packages/sglang/srt/x.py`
is found as `<root>/sglang/srt/x.py`, and py-spy's short `sglang/srt/x.py` too.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from reporter.analysis.excerpts import SourceFile
from reporter.core import fileio
from reporter.core.errors import UsageError

# Files hashed by `hash_tree`: source code, not data or build output.
SOURCE_SUFFIXES = frozenset(
    (".py", ".pyi", ".pyx", ".cu", ".cuh", ".c", ".cc", ".cpp", ".h", ".hpp", ".go", ".rs")
)
MAX_SOURCE_BYTES = 8 * 1024 * 1024
MAX_TREE_FILES = 200_000
_SKIP_DIRS = frozenset(("__pycache__", ".git", ".hg", ".svn", "node_modules", ".mypy_cache"))


class SourceRoots:
    """Folders to find source files in, searched in the order given."""

    def __init__(self, roots: Sequence[Path]) -> None:
        for root in roots:
            if not root.is_dir():
                raise UsageError(
                    f"{root}: not a folder", tip="pass a checkout or a site-packages folder"
                )
        self.roots = tuple(roots)
        self._cache: dict[str, SourceFile | None] = {}

    def find(self, frame_file: str) -> SourceFile | None:
        """The local file for `frame_file`, or None when no root has it."""
        if frame_file in self._cache:
            return self._cache[frame_file]
        found = self._lookup(frame_file)
        self._cache[frame_file] = found
        return found

    def _lookup(self, frame_file: str) -> SourceFile | None:
        parts = [
            p for p in PurePosixPath(frame_file.replace("\\", "/")).parts if p not in ("/", "")
        ]
        if not parts or any(p == ".." for p in parts) or frame_file.startswith("<"):
            return None
        for root in self.roots:
            resolved_root = root.resolve()
            for start in range(len(parts)):
                relative = "/".join(parts[start:])
                candidate = root / relative
                try:
                    if not candidate.is_file() or not candidate.resolve().is_relative_to(
                        resolved_root
                    ):
                        continue
                    if candidate.stat().st_size > MAX_SOURCE_BYTES:
                        continue
                    data = candidate.read_bytes()
                except OSError:
                    continue
                return SourceFile(
                    path=relative,
                    root=str(root),
                    lines=tuple(data.decode("utf-8", errors="replace").splitlines()),
                    sha256=hashlib.sha256(data).hexdigest(),
                )
        return None


def hash_tree(root: Path) -> dict[str, str]:
    """sha256 of every source file under `root`, by posix path relative to it (sorted)."""
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder", tip="pass a checkout or a site-packages folder")
    found: dict[str, str] = {}
    for walked in fileio.walk(root).files:
        if any(part in _SKIP_DIRS for part in walked.rel.split("/")[:-1]):
            continue
        if os.path.splitext(walked.rel)[1] not in SOURCE_SUFFIXES:  # noqa: PTH122 - many names
            continue
        full = str(walked.path)
        try:
            if os.path.getsize(full) > MAX_SOURCE_BYTES:  # noqa: PTH202
                continue
            with open(full, "rb") as handle:  # noqa: PTH123
                digest = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            continue
        found[walked.rel] = digest
        if len(found) >= MAX_TREE_FILES:
            raise UsageError(
                f"{root}: more than {MAX_TREE_FILES} source files",
                tip="point --source-root at the package folder, not a whole disk",
            )
    return dict(sorted(found.items()))
