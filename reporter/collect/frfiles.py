"""Flight Recorder dump files on disk: find them and copy them without trusting their names.

A watchdog writes one file per rank at `<prefix><rank>`: the prefix is
`TORCH_NCCL_DEBUG_INFO_TEMP_FILE` or `TORCH_FR_DUMP_TEMP_FILE` in the target's own
environment (default `/tmp/nccl_trace_rank_`), or the user names a folder (`--fr-dir`).
Both are places the target, or anyone who can write to `/tmp`, controls: a symbolic link
planted at `/tmp/nccl_trace_rank_0` pointing at `/proc/self/environ` would otherwise copy
the collector's own environment (its `GITHUB_TOKEN`) into the bundle, and a 6 GB file
there would be read whole. So:

* the folder a prefix names is opened one component at a time with `O_NOFOLLOW` (a
  symbolic link anywhere in a path the target named is not followed), and every file
  with `O_NOFOLLOW` relative to that open folder (no swap between check and read);
* a file must be a regular file with one link, owned by one of `owners` (the target's
  users; the collector's own user when no target is known), and not larger than the
  cap (`--max-size`); under a world-writable folder (`/tmp`) the owner is required even
  for a folder the user named;
* what is refused becomes a `RefusedError` with the reason (the session lists it as skipped).

Secrets in what is copied are masked by the session (`SessionState.scrubbed_bytes`).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from reporter.core.fileio import human_size, read_fd
from reporter.evidence import flight_recorder

DEFAULT_DUMP_PREFIX = "/tmp/nccl_trace_rank_"  # torch's own default; only read
DUMP_PREFIX_VARS = ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE")
# How much of a file `find_in_dir` reads to tell a dump from anything else.
_SNIFF_BYTES = 8192
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class RefusedError(Exception):
    """A file or folder that is not copied, and why (one line)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DumpFile:
    """A Flight Recorder dump found on disk, and its path inside the bundle."""

    source: Path
    path: str
    rank: int | None
    named_by_target: bool = True
    """Its folder came from a target's environment or torch's default (not `--fr-dir`)."""


def dump_prefixes(environs: dict[int, str]) -> tuple[str, ...]:
    """Dump file prefixes: the default and those the targets' environments set."""
    prefixes = {DEFAULT_DUMP_PREFIX}
    for text in environs.values():
        for entry in re.split(r"[\x00\n]", text):
            name, _, value = entry.partition("=")
            if name in DUMP_PREFIX_VARS and value.strip():
                prefixes.add(value.strip())
    return tuple(sorted(prefixes))


@contextmanager
def _open_folder(folder: Path, *, follow: bool) -> Iterator[int]:
    """A descriptor of `folder`; with `follow=False` no component may be a symbolic link."""
    if follow:
        fd = os.open(folder, _DIR_FLAGS)
    else:
        absolute = Path(os.path.abspath(folder))  # noqa: PTH100 - no resolving: links refused
        fd = os.open(absolute.anchor or "/", _DIR_FLAGS)
        try:
            for part in absolute.parts[1:]:
                try:
                    step = os.open(part, _DIR_FLAGS | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
                except OSError as err:
                    if err.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise RefusedError(
                            f"{folder}: goes through a symbolic link or a file at {part!r} "
                            "(not followed: the target names this path)"
                        ) from err
                    raise
                os.close(fd)
                fd = step
        except BaseException:
            os.close(fd)
            raise
    try:
        yield fd
    finally:
        os.close(fd)


def _names(fd: int) -> list[str]:
    return sorted(os.listdir(fd))


def find_prefixed(prefix: str) -> tuple[DumpFile, ...]:
    """Files named `<prefix><rank>` (a watchdog's dump of each rank).

    Raises `RefusedError` when the prefix's folder goes through a symbolic link; a folder that
    does not exist or cannot be read holds no dump.
    """
    base = Path(prefix)
    folder, stem = base.parent, base.name
    try:
        with _open_folder(folder, follow=False) as fd:
            names = _names(fd)
    except OSError:
        return ()
    found: list[DumpFile] = []
    for name in names:
        rest = name[len(stem) :]
        if name.startswith(stem) and rest.isdigit() and len(rest) < 10:
            found.append(
                DumpFile(
                    source=folder / name,
                    path=f"fr/{_safe(str(folder))}/{name}",
                    rank=int(rest),
                )
            )
    return tuple(found)


def find_in_dir(folder: Path) -> tuple[DumpFile, ...]:
    """Files in `folder` (not below) that look like Flight Recorder dumps (pickle or JSON).

    Only regular files are sniffed (opened with `O_NOFOLLOW`: a link is not a dump).
    """
    found: list[DumpFile] = []
    try:
        with _open_folder(folder, follow=True) as fd:
            for name in _names(fd):
                try:
                    head = _read(fd, name, limit=_SNIFF_BYTES, whole=False)
                except (OSError, RefusedError):
                    continue
                if flight_recorder.sniff_bytes(head) or flight_recorder.sniff_text(
                    head.decode("utf-8", errors="replace")
                ):
                    found.append(
                        DumpFile(
                            source=folder / name,
                            path=f"fr/{_safe(folder.name or 'dumps')}/{name}",
                            rank=flight_recorder.rank_from_name(name),
                            named_by_target=False,
                        )
                    )
    except OSError:
        return ()
    return tuple(found)


def read_dump(dump: DumpFile, *, owners: frozenset[int], max_bytes: int) -> bytes:
    """The bytes of `dump`, or `RefusedError` naming why not (see the module docstring)."""
    folder = dump.source.parent
    try:
        with _open_folder(folder, follow=not dump.named_by_target) as fd:
            info = os.fstat(fd)
            shared = bool(info.st_mode & stat.S_IWOTH)
            if dump.named_by_target or shared:
                return _read(fd, dump.source.name, limit=max_bytes, owners=owners)
            return _read(fd, dump.source.name, limit=max_bytes)
    except OSError as err:
        raise RefusedError(f"cannot read ({err.strerror or err})") from err


def _read(
    folder_fd: int,
    name: str,
    *,
    limit: int,
    owners: frozenset[int] | None = None,
    whole: bool = True,
) -> bytes:
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=folder_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RefusedError(
                "a symbolic link (not followed: its target is not the dump)"
            ) from err
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedError("not a regular file")
        if whole and info.st_nlink > 1:
            raise RefusedError(f"has {info.st_nlink} hard links (a dump has one)")
        if owners is not None and info.st_uid not in owners:
            want = ", ".join(str(u) for u in sorted(owners)) or "none known"
            raise RefusedError(
                f"owned by uid {info.st_uid}, not by the target's user (uid {want}): "
                "anyone may write there"
            )
        if whole and info.st_size > limit:
            raise RefusedError(
                f"{human_size(info.st_size)} is larger than the {human_size(limit)} cap "
                "(raise it with --max-size)"
            )
        data = read_fd(fd, limit, past=whole)
        if whole and len(data) > limit:
            raise RefusedError(f"grew past the {human_size(limit)} cap while read")
        return data
    finally:
        os.close(fd)


def _safe(text: str) -> str:
    """A bundle folder name from a host path: `/tmp/fr` -> `tmp_fr`."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")
    return cleaned or "dumps"
