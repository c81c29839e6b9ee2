"""Atomic file writes: the only place that writes reports, previews, drafts and manifests.

A write goes to a temporary file in the target's folder and is renamed over the
target, so a crash leaves either the old file or the new one, never half of one. And:

* the target is a regular file or a new path: a device, FIFO, socket, folder or
  symbolic link there is refused, never replaced (`/dev/full` is not "the old report");
* `owned` lets a caller refuse to replace a file this tool did not write;
* backups keep history: the old file becomes `<name>.bak` and older backups move up to
  `<name>.bak.1`, `<name>.bak.2`, ... (hard link, never overwriting; under the lock);
* writers of one folder serialise on a lock (`flock` on the folder itself, so no lock
  file is left behind), re-entrant within the process (`locked`);
* every OS error (permission, read-only file system, full disk) is one `OutputError`
  line with a tip; the temporary file never outlives a failure.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reporter.core.errors import OutputError
from reporter.core.fileio import file_kind, read_text_bounded

# How many backups one report may collect before writes are refused (history is never
# dropped silently).
MAX_BACKUPS = 1000

_held: dict[str, int] = {}
_held_guard = threading.Lock()

_TIPS = {
    errno.EACCES: "choose a folder you can write to (--out), or fix its permissions",
    errno.EPERM: "choose a folder you can write to (--out), or fix its permissions",
    errno.EROFS: "the file system is read-only: pass --out with a writable path",
    errno.ENOSPC: "the disk is full: free space or pass --out on another disk",
    errno.EDQUOT: "the disk quota is exhausted: free space or pass --out elsewhere",
    errno.ENAMETOOLONG: "choose a shorter --out path",
}


def _error(path: Path, what: str, err: OSError) -> OutputError:
    reason = err.strerror or str(err)
    return OutputError(
        f"{path}: {what} ({reason})",
        tip=_TIPS.get(err.errno or 0, "check the path, its folder and the free space"),
    )


def check_target(path: Path) -> bool:
    """True when `path` exists as a regular file, False when it is free; else `OutputError`.

    `lstat`, not `stat`: a symbolic link is refused whatever it points at.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise _error(path, "cannot check the output path", err) from err
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return True

    raise OutputError(
        f"{path}: is {file_kind(mode)}; not replacing it with a report",
        tip="pass --out with a regular file or a new path",
    )


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the write lock of `path`'s folder (re-entrant in this process)."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _error(folder, "cannot create the folder", err) from err
    key = str(folder.resolve())
    with _held_guard:
        depth = _held.get(key, 0)
        _held[key] = depth + 1
    fd = -1
    try:
        if depth == 0:
            import fcntl

            try:
                fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                # A file system without locks still gets the write, unserialised.
                if fd >= 0:
                    os.close(fd)
                fd = -1
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases the flock
        with _held_guard:
            _held[key] -= 1
            if not _held[key]:
                del _held[key]


def _backup_name(path: Path, number: int) -> Path:
    return path.with_name(path.name + (".bak" if number == 0 else f".bak.{number}"))


def _free_backup_number(path: Path) -> int:
    for number in range(MAX_BACKUPS):
        if not os.path.lexists(_backup_name(path, number)):
            return number
    raise OutputError(
        f"{path}: {MAX_BACKUPS} backups already kept beside it; not adding another",
        tip="delete old .bak.N files you no longer need",
    )


def write_atomic(
    path: Path,
    text: str,
    *,
    backup: bool = False,
    owned: Callable[[str], bool] | None = None,
) -> Path | None:
    """Write `text` to `path` atomically; with `backup`, keep the old file (`.bak`, `.bak.N`).

    `owned(head)` is asked about an existing target's first 64 KiB: False refuses the
    write (the file is not one this tool wrote). Returns the backup path when one was made.
    """
    with locked(path):
        exists = check_target(path)
        if exists and owned is not None:
            try:
                head = read_text_bounded(path, max_bytes=1 << 40, errors="replace")[:65536]
            except Exception:
                head = ""
            if not owned(head):
                raise OutputError(
                    f"{path}: exists and was not written by reporter; not overwriting it",
                    tip="pass --out with another path, or --force to replace it (kept as .bak)",
                )
        return _write(path, text, backup=backup and exists)


def _write(path: Path, text: str, *, backup: bool) -> Path | None:
    backup_path: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise _error(path, "cannot write", err) from err
    tmp = Path(tmp_name)
    try:
        # mkstemp makes the file owner-only; give it the mode a plain open() would
        # (the old file's mode when replacing one, else 0666 less the umask).
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if backup:
            backup_path = _link_backup(path)
        tmp.replace(path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise _error(path, "cannot write", err) from err
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return backup_path


def _link_backup(path: Path) -> Path | None:
    """Keep the current file as `<name>.bak`, older backups moving up to `.bak.1`, `.bak.2`.

    Runs under the folder lock: each rename goes to a name that is free by construction,
    and the hard link never overwrites (EEXIST would mean an outside writer: we stop).
    """
    free = _free_backup_number(path)
    for number in range(free, 0, -1):
        _backup_name(path, number - 1).rename(_backup_name(path, number))
    newest = _backup_name(path, 0)
    try:
        os.link(path, newest)
    except FileNotFoundError:
        return None  # removed meanwhile: nothing to keep
    return newest


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
