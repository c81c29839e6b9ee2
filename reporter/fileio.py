"""Reading input files safely: regular files only, read with a bound.

Every file the tool reads on a user's say-so (evidence, bundle.toml, reports for lint,
status and preview, drafts, index exports, source trees) goes through here:

* FIFOs, devices, sockets and folders are refused with a one-line reason *before*
  any read (`os.stat`), and again on the opened descriptor (`fstat`: the path may have
  been swapped); the open is non-blocking, so a FIFO never hangs the open itself;
* a read never goes past `max_bytes` (+1 to tell "too large"): a file that grows, or a
  symlink to `/dev/zero`, cannot make us read to EOF.

    read_text_bounded(Path("bundle/r0.txt"), display="r0.txt", max_bytes=512 << 20)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reporter.errors import InputError

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_CHUNK = 1 << 20


# What a stat mode is, in words; the first test that holds names it.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a stat mode is, in words ("a FIFO (named pipe)", "a folder", ...)."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def _refuse(display: str, mode: int) -> InputError:
    return InputError(
        f"{display}: is {file_kind(mode)}, not a regular file; not read",
        tip="pass regular files only (copy the data into a file first)",
    )


def check_regular(path: Path, *, display: str | None = None) -> os.stat_result:
    """The stat of `path` (symlinks followed) when it is a regular file; else `InputError`."""
    where = display or str(path)
    try:
        info = path.stat()
    except OSError as err:
        raise InputError(
            f"{where}: cannot read ({err.strerror or err})",
            tip="check the path and its permissions",
        ) from err
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(where, info.st_mode)
    return info


def read_bytes_bounded(
    path: Path, *, display: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> bytes:
    """The bytes of a regular file, refusing other kinds and files over `max_bytes`."""
    where = display or str(path)
    check_regular(path, display=where)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise InputError(
            f"{where}: cannot read ({err.strerror or err})",
            tip="check the path and its permissions",
        ) from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(where, info.st_mode)
        if info.st_size > max_bytes:
            raise too_large(where, info.st_size, max_bytes)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise too_large(where, total, max_bytes)
        return b"".join(chunks)
    except OSError as err:
        raise InputError(
            f"{where}: cannot read ({err.strerror or err})",
            tip="check the file and its permissions",
        ) from err
    finally:
        os.close(fd)


def read_text_bounded(
    path: Path,
    *,
    display: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    errors: str = "strict",
) -> str:
    """A regular file's UTF-8 text (see `read_bytes_bounded`); bad UTF-8 is one-line error."""
    where = display or str(path)
    data = read_bytes_bounded(path, display=where, max_bytes=max_bytes)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as err:
        raise InputError(
            f"{where}: not UTF-8 text (byte {err.start})",
            tip="pass a text file written in UTF-8",
        ) from err


def too_large(display: str, size: int, limit: int) -> InputError:
    """The one-line error for a file over the size limit."""
    return InputError(
        f"{display}: {human_size(size)} is larger than the {human_size(limit)} limit for one file",
        tip="split the file, or raise the limit with --max-file-size",
    )


def human_size(size: int) -> str:
    """`512.0 MiB`, `812 bytes`."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"  # pragma: no cover - loop always returns
