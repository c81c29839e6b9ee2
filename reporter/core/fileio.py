"""Reading input files safely: regular files only, read with a bound.

Every file the tool reads on a user's say-so (evidence, bundle.toml, reports for lint,
status and preview, drafts, index exports, source trees) goes through here:

* FIFOs, devices, sockets and folders are refused with a one-line reason *before*
  any read (`os.stat`), and again on the opened descriptor (`fstat`: the path may have
  been swapped); the open is non-blocking, so a FIFO never hangs the open itself;
* a read never goes past `max_bytes` (+1 to tell "too large"): a file that grows, or a
  symlink to `/dev/zero`, cannot make us read to EOF.

    read_text_bounded(Path("bundle/r0.txt"), display="r0.txt", max_bytes=512 << 20)

Walking a folder (`walk`) is iterative, never follows a symbolic link into a folder (a
link to itself or to a parent cannot loop), and stops at a depth cap: a bundle with a
thousand nested folders is one warning, not a crash. `glob_regex` matches manifest globs
against the walk's relative paths (`**/` for any depth), so a glob never recurses either.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from reporter.core.errors import InputError

# The default bound of every input file read (`--max-file-size`, "512M"): typed only here.
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_CHUNK = 1 << 20
# What a read asks for once a read came back short (the end of the file, most likely).
_TAIL = 1 << 12


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


def check_regular(path: Path | str, *, display: str | None = None) -> os.stat_result:
    """The stat of `path` (symlinks followed) when it is a regular file; else `InputError`."""
    where = display or str(path)
    try:
        info = os.stat(path)  # noqa: PTH116 - a str (a walked file) or a Path
    except OSError as err:
        raise InputError(
            f"{where}: cannot read ({err.strerror or err})",
            tip="check the path and its permissions",
        ) from err
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(where, info.st_mode)
    return info


def read_fd(fd: int, limit: int, *, past: bool = True, size: int | None = None) -> bytes:
    """The bytes of an open file, read a megabyte at a time until its end or the limit.

    At most `limit + 1` bytes: the one byte beyond lets the caller tell a file over the
    limit (`len(data) > limit`) from one exactly at it. With `past` False reading also
    stops at the first read that brings `limit` bytes in (a head, for sniffing), so a
    growing file is never followed past it. `size` is the file's size by `fstat`, when
    known: the first read asks for that and one byte more, the next for a little (a read
    allocates what it asks for, and a file rarely grows meanwhile).
    """
    chunks: list[bytes] = []
    total = 0
    want = _CHUNK if size is None else size + 1
    while total <= limit:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if not past and total >= limit:
            break
        want = _CHUNK if len(chunk) >= want else _TAIL
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_bytes_bounded(
    path: Path | str,
    *,
    display: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    listed_regular: bool = False,
) -> bytes:
    """The bytes of a regular file, refusing other kinds and files over `max_bytes`.

    `listed_regular` says a folder listing showed a regular file (not a link) at `path`
    (`Walked.regular`): the stat before the open is then left out; the `fstat` of the
    opened file still refuses anything else.
    """
    where = display or str(path)
    if not listed_regular:
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
        data = read_fd(fd, max_bytes, size=info.st_size)
        if len(data) > max_bytes:
            raise too_large(where, len(data), max_bytes)
        return data
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


# --- walking a folder tree ------------------------------------------------------------------

# Deeper than this below the folder walked, nothing is evidence: a thousand nested folders
# (or a loop made of bind mounts) is skipped with a warning rather than walked.
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Walked:
    """One entry a walk found: its path relative to the root (posix), and the path."""

    rel: str
    where: str
    """The path as a string (`os.DirEntry.path`); `path` makes a `Path` of it when asked."""
    link: bool
    """A symbolic link (never followed into, when a folder)."""
    regular: bool = False
    """A regular file, as the folder listing said (its `d_type`: no system call)."""

    @property
    def path(self) -> Path:
        """The path (a `Path` is built per call: a walk of 16,384 files needs few of them)."""
        return Path(self.where)


@dataclass(slots=True)
class Walk:
    """The files below a folder and what the walk left out (too deep, unreadable)."""

    files: list[Walked] = field(default_factory=list)
    folders: list[Walked] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(relative path, why) of folders not walked."""


def walk(
    root: Path,
    *,
    max_depth: int = MAX_DEPTH,
    hidden: bool = False,
    skip: tuple[str, ...] = (),
    max_entries: int = 1_000_000,
) -> Walk:
    """Every file (and folder) below `root`, sorted, without recursion and without following
    symbolic links into folders (a link to itself or to a parent cannot loop).

    `hidden=False` leaves out dot folders; `skip` holds relative folder prefixes ending in
    `/` not to enter. Folders deeper than `max_depth` below `root`, unreadable ones and
    everything past `max_entries` entries are listed in `skipped` instead.
    """
    found = Walk()
    stack: list[tuple[str, int]] = [("", 0)]
    seen = 0
    while stack:
        rel_dir, depth = stack.pop()
        folder = root / rel_dir if rel_dir else root
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError as err:
            found.skipped.append((rel_dir or ".", f"cannot be read ({err.strerror or err})"))
            continue
        below: list[tuple[str, int]] = []
        for entry in listed:
            seen += 1
            if seen > max_entries:
                found.skipped.append((rel_dir or ".", f"more than {max_entries} entries"))
                stack.clear()
                break
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError:
                is_link, is_dir, is_file = False, False, False
            if is_dir:
                if not hidden and entry.name.startswith("."):
                    continue
                if skip and f"{rel}/".startswith(skip):
                    continue
                found.folders.append(Walked(rel, entry.path, False))
                if depth + 1 > max_depth:
                    found.skipped.append((rel, f"nested deeper than {max_depth} folders"))
                    continue
                below.append((rel, depth + 1))
            else:
                found.files.append(Walked(rel, entry.path, is_link, is_file))
        stack.extend(reversed(below))
    found.files.sort(key=lambda w: w.rel)
    found.folders.sort(key=lambda w: w.rel)
    return found


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a relative glob: `*` and `?` within one path part, `[...]` classes,
    `**/` any number of folders (`snapshots/**/rank*.txt`)."""
    out: list[str] = []
    at = 0
    while at < len(pattern):
        if pattern.startswith("**/", at):
            out.append("(?:[^/]*/)*")
            at += 3
        elif pattern.startswith("**", at):
            out.append(".*")
            at += 2
        elif pattern[at] == "*":
            out.append("[^/]*")
            at += 1
        elif pattern[at] == "?":
            out.append("[^/]")
            at += 1
        elif pattern[at] == "[":
            close = pattern.find("]", at + 2)
            if close < 0:
                out.append(re.escape("["))
                at += 1
                continue
            body = pattern[at + 1 : close].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body}]")
            at = close + 1
        else:
            out.append(re.escape(pattern[at]))
            at += 1
    return re.compile("".join(out) + r"\Z")


def markdown_files(folder: Path) -> list[Path]:
    """The `*.md` files under `folder`, sorted by path (`walk`: no recursion, no loops)."""
    return [
        w.path
        for w in walk(folder).files
        if w.rel.endswith(".md") and (not w.link or w.path.is_file())
    ]
