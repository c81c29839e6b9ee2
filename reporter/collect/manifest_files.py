"""Where the manifest writer puts `bundle.toml` and its parts: the files seam of `ManifestWriter`.

`report collect` writes through its held `--out` (`outdir.OutDir`, every file relative to
an open folder, never through a link); tests and tools that hold no `OutDir` use
`PathFiles`, plain paths under a root with the same atomic writes. Both answer the same
four calls, and every write returns a `Stamp` (inode, size, modification time) that the
writer compares before its next write, so a file someone else changed is never replaced.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Protocol

from reporter.collect.outdir import Stamp
from reporter.core.errors import OutputError
from reporter.core.fileio import read_text_bounded
from reporter.core.writer import write_atomic


class ManifestFiles(Protocol):
    """The file calls `ManifestWriter` makes, each on a path relative to the bundle."""

    def write_text(self, rel: str, text: str) -> Stamp:
        """Write `text` as `rel` atomically."""
        ...

    def write_synced(self, rel: str, text: str) -> Stamp:
        """Write `text` as `rel` atomically (on the disk before the rename)."""
        ...

    def stamp(self, rel: str) -> Stamp | None:
        """`rel`'s stamp now, None when it does not exist."""
        ...

    def read_text(self, rel: str, *, max_bytes: int) -> str:
        """`rel`'s text, at most `max_bytes` of it."""
        ...

    def remove(self, rel: str) -> None:
        """Remove the file `rel` (gone already is fine)."""
        ...

    def remove_folder(self, rel: str) -> bool:
        """Remove the folder `rel` if it is empty; True when it is gone."""
        ...


class PathFiles:
    """`ManifestFiles` on plain paths under `root` (`write_atomic` for every write)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write_text(self, rel: str, text: str) -> Stamp:
        return self.write_synced(rel, text)

    def write_synced(self, rel: str, text: str) -> Stamp:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        stamp = self.stamp(rel)
        assert stamp is not None
        return stamp

    def stamp(self, rel: str) -> Stamp | None:
        try:
            info = os.lstat(self.root / rel)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise OutputError(f"{self.root / rel}: cannot be checked ({err.strerror})") from err
        return (info.st_ino, info.st_size, info.st_mtime_ns)

    def read_text(self, rel: str, *, max_bytes: int) -> str:
        return read_text_bounded(self.root / rel, max_bytes=max_bytes, errors="replace")

    def remove(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.root / rel).unlink()

    def remove_folder(self, rel: str) -> bool:
        try:
            (self.root / rel).rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True
