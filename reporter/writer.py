"""Atomic file writes: the only place that writes reports and manifests.

A write goes to a temporary file in the target's folder and is renamed over the
target, so a crash leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from reporter.errors import OutputError


def write_atomic(path: Path, text: str, *, backup: bool = False) -> Path | None:
    """Write `text` to `path` atomically; with `backup`, keep the old file as `<name>.bak`.

    Returns the backup path when one was made.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{path.parent}: cannot create the folder ({err.strerror})") from err
    backup_path: Path | None = None
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        # mkstemp makes the file owner-only; give it the mode a plain open() would
        # (the old file's mode when replacing one, else 0666 less the umask).
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if backup and path.exists():
            backup_path = path.with_name(path.name + ".bak")
            # A hard link keeps the old bytes under the backup name without a copy window.
            if backup_path.exists():
                backup_path.unlink()
            backup_path.hardlink_to(path)
        tmp.replace(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write ({err.strerror})") from err
    return backup_path


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
