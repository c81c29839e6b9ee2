"""The bundle folder of one collection, held open for the whole run: no write leaves it.

`report collect` often runs as root, and what it writes (dumps, environments) comes from
processes other users own. So `--out` is claimed once (`OutDir.claim`): it must be new, or
an empty folder the caller owns that not everyone can write to, and never a symbolic link.
It is then held as an open directory descriptor, and every file is written relative to it
(`openat`-style: `os.open(name, ..., dir_fd=...)`), each folder on the way created and
opened with `O_NOFOLLOW`: a symbolic link planted during the run (`--out/hosts` pointing
at `/etc`) makes that write fail with a clear error, never lands a file elsewhere.

A lock file (`.report-collect.lock`, made with `O_EXCL`) refuses a second collection into
the same folder, also two started at the same moment; it is removed when the run ends.
Files are written whole or not at all: a temporary name in the same folder, then a rename.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from reporter.core.errors import OutputError, UsageError

LOCK_NAME = ".report-collect.lock"
# (inode, size, modification time in ns) of a file: changes whenever anyone replaces or
# edits it (an editor's save, `report init --force`), so it tells our write from theirs.
Stamp = tuple[int, int, int]
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def check_new_out(path: Path) -> None:
    """Raise `UsageError` unless `path` is free, or an empty folder the caller owns that
    not everyone can write to (checked again, race-free, by `OutDir.claim`)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise UsageError(f"{path}: cannot be checked ({err.strerror})") from err
    _check_folder(path, info)
    with os.scandir(path) as entries:
        empty = not any(entries)
    if not empty:
        raise UsageError(
            f"{path}: already exists and is not an empty folder",
            tip="name a new folder; report collect never writes over evidence",
        )


def _check_folder(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(
            f"{path}: is a symbolic link", tip="name the folder itself, or a new folder"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(
            f"{path}: already exists and is not an empty folder",
            tip="name a new folder; report collect never writes over evidence",
        )
    if info.st_uid != os.geteuid():
        raise UsageError(
            f"{path}: belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})",
            tip="name a new folder: its owner could change the evidence, or plant links in it",
        )
    # World-writable only: a group-writable folder is the norm under umask 002 (a group of
    # one's own), and a link planted in it is refused on the way anyway (`folder`).
    if info.st_mode & stat.S_IWOTH:
        raise UsageError(
            f"{path}: anyone can write into it (mode {stat.S_IMODE(info.st_mode):o})",
            tip="name a new folder, or `chmod o-w` it first",
        )


def _stamp(info: os.stat_result) -> Stamp:
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class OutDir:
    """`--out`, open for the run; `write`, `append` and `close` (see the module docstring)."""

    def __init__(self, path: Path, fd: int, lock_fd: int) -> None:
        self.path = path
        self.fd = fd
        self._lock_fd = lock_fd

    @classmethod
    def claim(cls, path: Path) -> OutDir:
        """Create `path` (or take the empty folder there), open it and take its lock."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)  # noqa: PTH102 (the mode, and no parents: one step)
        try:
            fd = os.open(path, _DIR)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UsageError(
                    f"{path}: is not a folder (or is a symbolic link)",
                    tip="name a new folder",
                ) from err
            raise OutputError(f"{path}: cannot open ({err.strerror})") from err
        try:
            _check_folder(path, os.fstat(fd))
            try:
                lock_fd = os.open(LOCK_NAME, _NEW, 0o600, dir_fd=fd)
            except FileExistsError:
                raise UsageError(
                    f"{path}: another report collect is writing into it ({LOCK_NAME})",
                    tip="name another folder; if no collection runs, the folder holds what "
                    "an earlier one left: name a new folder",
                ) from None
            os.write(lock_fd, f"{os.getpid()}\n".encode())
            if set(os.listdir(fd)) - {LOCK_NAME}:  # noqa: PTH208 (the held folder, by fd)
                os.close(lock_fd)
                os.unlink(LOCK_NAME, dir_fd=fd)
                raise UsageError(
                    f"{path}: already exists and is not an empty folder",
                    tip="name a new folder; report collect never writes over evidence",
                )
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, lock_fd)

    def close(self) -> None:
        """Remove the lock and let go of the folder (the run is over)."""
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)
            os.unlink(LOCK_NAME, dir_fd=self.fd)
        os.close(self.fd)
        self.fd = -1

    @contextmanager
    def folder(self, rel: str) -> Iterator[tuple[int, str]]:
        """(descriptor of the folder of `rel`, its file name); folders created on the way,
        each opened with `O_NOFOLLOW`."""
        parts = rel.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise OutputError(f"{rel}: not a path inside the bundle")
        current = self.fd
        try:
            for depth, part in enumerate(parts[:-1], start=1):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=current)
                try:
                    step = os.open(part, _DIR, dir_fd=current)
                except OSError as err:
                    where = self.path / "/".join(parts[:depth])
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise OutputError(
                            f"{where}: is not a folder this collection made (a symbolic "
                            "link or a file was put there during the run); nothing written "
                            "through it",
                            tip="check who else writes into --out",
                        ) from err
                    raise OutputError(f"{where}: cannot open ({err.strerror})") from err
                if current != self.fd:
                    os.close(current)
                current = step
            yield current, parts[-1]
        finally:
            if current != self.fd:
                os.close(current)

    def write(self, rel: str, data: bytes, *, sync: bool = False) -> Stamp:
        """Write `data` as the bundle file `rel`, whole or not at all (the rename is
        atomic), and return its `Stamp`. `sync`: on the disk before the rename (the
        manifest); an evidence file is not synced one by one, which costs ~5 ms each on a
        loaded disk: 5,000 files from one host would take half a minute."""
        with self.folder(rel) as (fd, name):
            temp = f".{name}.{secrets.token_hex(4)}.tmp"
            try:
                out = os.open(temp, _NEW, 0o666, dir_fd=fd)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(out, view) :]
                    if sync:
                        os.fsync(out)
                    stamp = _stamp(os.fstat(out))
                finally:
                    os.close(out)
                os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
                return stamp
            except OSError as err:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=fd)
                raise OutputError(
                    f"{self.path / rel}: cannot write ({err.strerror})",
                    tip="check the free space and the folder's permissions",
                ) from err

    def write_text(self, rel: str, text: str) -> Stamp:
        """`write` of UTF-8 text."""
        return self.write(rel, text.encode("utf-8"))

    def write_synced(self, rel: str, text: str) -> Stamp:
        """`write` of UTF-8 text, on the disk before it replaces the old file (the manifest)."""
        return self.write(rel, text.encode("utf-8"), sync=True)

    def stamp(self, rel: str) -> Stamp | None:
        """The `Stamp` of the bundle file `rel` now (None when it is gone): the manifest
        writer compares it with what it wrote last, so a person's edit is never replaced."""
        with self.folder(rel) as (fd, name):
            try:
                return _stamp(os.stat(name, dir_fd=fd, follow_symlinks=False))
            except FileNotFoundError:
                return None
            except OSError as err:
                raise OutputError(f"{self.path / rel}: cannot be checked ({err.strerror})") from err

    def read_text(self, rel: str, *, max_bytes: int) -> str:
        """The bundle file `rel` (never through a link), at most `max_bytes` of it."""
        with self.folder(rel) as (fd, name):
            try:
                handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as err:
                raise OutputError(f"{self.path / rel}: cannot read ({err.strerror})") from err
            with os.fdopen(handle, "rb") as source:
                data = source.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise OutputError(f"{self.path / rel}: larger than {max_bytes} bytes")
        return data.decode("utf-8", "replace")

    def remove(self, rel: str) -> None:
        """Remove the bundle file `rel` (gone already is fine)."""
        with self.folder(rel) as (fd, name):
            try:
                os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                return
            except OSError as err:
                raise OutputError(f"{self.path / rel}: cannot remove ({err.strerror})") from err

    def remove_folder(self, rel: str) -> bool:
        """Remove the folder `rel` if it is empty; True when it is gone."""
        with self.folder(rel) as (fd, name):
            try:
                os.rmdir(name, dir_fd=fd)
            except FileNotFoundError:
                return True
            except OSError:
                return False  # not empty (a stray file): left as it is
        return True

    def append(self, rel: str) -> IO[str]:
        """`rel` opened for appending text (created if need be; never through a link)."""
        with self.folder(rel) as (fd, name):
            try:
                handle = os.open(
                    name,
                    os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o666,
                    dir_fd=fd,
                )
            except OSError as err:
                raise OutputError(f"{self.path / rel}: cannot open ({err.strerror})") from err
        return os.fdopen(handle, "a", encoding="utf-8")
