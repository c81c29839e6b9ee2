"""The hermetic guard: a test that touches files outside its own world fails.

A test reads only the repository's files (never `reports/`, which holds the user's own
reports, nor `artifacts/`), its tmp dirs, and the interpreter's and installed packages'
files, plus what the system keeps under /proc, /dev, /sys, /etc and /usr; it writes only in
tmp dirs (and Python's and the linters' caches). The user's config, cache, `~/.ssh` and
home are out of bounds. Issue 29: `report draft` in the Quickstart leaves
`reports/tp_desync.md` in the checkout, and 70 snapshot tests changed their "Seen before"
line because they looked through the default `--reports`.

How: an audit hook (`sys.addaudithook`) sees every `open`, `os.listdir`, `os.scandir`,
`glob.glob` and file-changing `os.*` / `shutil.*` event of the test process while a test's
setup, call or teardown runs; a path outside the bounds raises `HermeticError` (a
`PermissionError`, so the code under test sees an unreadable file) and is recorded, and the
phase then fails naming every such path. Subprocesses are outside the hook's reach: the
conftest points HOME and the XDG folders at a tmp dir for them.

`--update-golden` lets tests rewrite files in the repository (the goldens and snapshots);
`reports/` stays out of bounds even then.
"""

# The hook runs on every audit event of the suite: plain os.path string functions, not
# pathlib objects, keep it cheap.
# ruff: noqa: PTH109, PTH117, PTH118

from __future__ import annotations

import os
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# Events whose first argument is a path that is only read.
READ_EVENTS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.glob/2"})
# Events that change the file system: event -> (index of a path, index of its dir_fd or
# None) for each path argument, as CPython raises them.
WRITE_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.mkdir": ((0, 2),),
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.rename": ((0, 2), (1, 3)),
    "os.truncate": ((0, None),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "os.symlink": ((1, 2),),
    "os.link": ((1, 3),),
    "shutil.rmtree": ((0, 1),),
    "shutil.copyfile": ((1, None),),
    "shutil.copytree": ((1, None),),
    "shutil.move": ((0, None), (1, None)),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_DIR_FLAGS = getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_PATH", 0)
# Read-only system folders libraries read (locale, time zones, certificates, passwd, libs).
SYSTEM_READ = ("/proc", "/sys", "/dev", "/etc", "/usr", "/lib", "/lib64", "/bin", "/sbin")
# System folders the services the tests start need: sshd's privilege-separation folder
# (tests/collect/sshlab.py starts one sshd per simulated host).
SYSTEM_WRITE = ("/run/sshd",)
# Written by the interpreter, pytest and the linters as a matter of course.
CACHE_NAMES = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)


class HermeticError(PermissionError):
    """A test touched a file outside its bounds."""


def _within(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@dataclass
class Bounds:
    """Where tests may read and write. Paths are absolute and normalised."""

    root: str
    forbidden: tuple[str, ...]
    read: tuple[str, ...]
    write: tuple[str, ...]
    repo_writable: bool = False

    @classmethod
    def for_repo(
        cls, root: Path, *, home: str | None = None, repo_writable: bool = False
    ) -> Bounds:
        """The bounds of this checkout's tests, under the real `home` (default: $HOME)."""
        top = os.path.normpath(str(root))
        home = os.path.normpath(home or os.environ.get("HOME") or str(Path.home()))
        forbidden = [os.path.join(top, "reports"), os.path.join(top, "artifacts")]
        forbidden += [
            os.path.join(home, name)
            for name in (".ssh", ".config", ".cache", ".local/share", ".local/state", ".gnupg")
        ]
        tmp = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}
        # The interpreter, the standard library and every installed package's own files.
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
        prefixes.update(sysconfig.get_paths().values())
        prefixes.update(site.getsitepackages())
        prefixes.update(p for p in sys.path if p and os.path.isabs(p) and p != home)
        read = {top, *tmp, *SYSTEM_READ, *prefixes}
        write = {*tmp, "/dev", "/proc", *SYSTEM_WRITE}
        return cls(
            root=top,
            forbidden=tuple(sorted(forbidden)),
            read=tuple(sorted(os.path.normpath(p) for p in read)),
            write=tuple(sorted(os.path.normpath(p) for p in write)),
            repo_writable=repo_writable,
        )

    def problem(self, path: str, *, write: bool | str) -> str | None:
        """Why a test may not touch `path` (absolute, normalised), or None when it may.
        `write` is "dir" for a folder opened as an fd: allowed on the way to a place a test
        may read (`/`, the repo's parents), as a walk with openat starts there."""
        if write == "dir":
            if any(root.startswith(path.rstrip("/") + "/") for root in self.read):
                return None
            write = False
        if _within(path, self.forbidden):
            where = "the user's own files" if not _within(path, [self.root]) else "not a fixture"
            return f"{'wrote' if write else 'read'} {path} ({where})"
        if write:
            if CACHE_NAMES.intersection(path.split("/")):
                return None
            # The repo first: a clone may itself lie under /tmp.
            inside = _within(path, [self.root])
            if (inside and self.repo_writable) or (not inside and _within(path, self.write)):
                return None
            return f"wrote {path} (tests write only in their tmp dirs)"
        if _within(path, self.read):
            return None
        return f"read {path} (outside the repo, the tmp dirs and the installed packages)"


def _paths(event: str, args: tuple[Any, ...]) -> list[tuple[Any, bool | str]]:
    """The (path argument, is it a write) pairs an audit event touches. A path relative to
    a directory fd is left out: the event does not say where that fd points."""
    if event == "open":
        path, mode, flags = (*args, None, None, None)[:3]
        if mode is None and not os.path.isabs(_text(path)):
            return []  # os.open: its dir_fd is not in the event
        if isinstance(flags, int) and flags & _DIR_FLAGS and not flags & _WRITE_FLAGS:
            return [(path, "dir")]  # a folder fd to walk down from (openat) or to fsync
        if isinstance(flags, int) and flags:
            write = bool(flags & _WRITE_FLAGS)
        else:
            write = isinstance(mode, str) and any(c in mode for c in "wax+")
        return [(path, write)]
    if event == "glob.glob/2" and len(args) > 3:
        pattern, _, root_dir, dir_fd = args[:4]
        if root_dir is not None and not os.path.isabs(_text(pattern)):
            return (
                []
                if dir_fd is not None
                else [(os.path.join(_text(root_dir), _text(pattern)), False)]
            )
    if event in READ_EVENTS:
        return [(args[0] if args else None, False)]
    found: list[tuple[Any, bool | str]] = []
    for at, dir_at in WRITE_EVENTS.get(event, ()):
        if at >= len(args):
            continue
        relative = not os.path.isabs(_text(args[at]))
        if relative and dir_at is not None and dir_at < len(args) and args[dir_at] is not None:
            continue
        found.append((args[at], True))
    return found


def _text(path: Any) -> str:
    """`path` as text ('' for an fd or anything else that is not a path)."""
    if path is None or isinstance(path, int):
        return ""
    try:
        return os.fsdecode(os.fspath(path))
    except TypeError:
        return ""


def _absolute(path: Any) -> str | None:
    """`path` made absolute against the working folder; None for fds."""
    if path is None or isinstance(path, int):
        return None
    text = _text(path) or "."
    if not os.path.isabs(text):
        text = os.path.join(os.getcwd(), text)
    return os.path.normpath(text)


@dataclass
class Guard:
    """The audit hook's state: on during a test's phases, and what it has refused."""

    bounds: Bounds
    active: bool = False
    seen: list[str] = field(default_factory=list)

    def check(self, event: str, args: tuple[Any, ...]) -> str | None:
        """The problem with this audit event, or None (also when the guard is off)."""
        for raw, write in _paths(event, args):
            path = _absolute(raw)
            if path is None:
                continue
            problem = self.bounds.problem(path, write=write)
            if problem is not None:
                return f"{problem} [{event}]"
        return None

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or (event != "open" and event not in _ALL_EVENTS):
            return
        self.active = False  # os.getcwd and friends below must not re-enter
        try:
            problem = self.check(event, args)
        finally:
            self.active = True
        if problem is not None:
            self.seen.append(problem)
            raise HermeticError(f"hermetic test guard: {problem}")

    @contextmanager
    def expect_violation(self) -> Iterator[list[str]]:
        """Inside: touching a forbidden path still raises, but is not held against the test.
        Yields the problems seen, for the test to assert on."""
        before = len(self.seen)
        caught: list[str] = []
        try:
            yield caught
        finally:
            caught.extend(self.seen[before:])
            del self.seen[before:]

    def take(self) -> list[str]:
        found, self.seen[:] = list(self.seen), []
        return found


_ALL_EVENTS = READ_EVENTS | frozenset(WRITE_EVENTS)
_INSTALLED: list[Guard] = []


class GuardPlugin:
    """Turns the guard on around each test phase and fails the phase that broke the bounds."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._wrap())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._wrap())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._wrap())

    def _wrap(self) -> Iterator[None]:
        self.guard.take()
        self.guard.active = True
        try:
            return (yield)
        finally:
            self.guard.active = False
            found = self.guard.take()
            if found:
                listed = "\n  ".join(dict.fromkeys(found))
                pytest.fail(
                    "the test touched files outside its bounds (tests/hermetic.py):\n  "
                    f"{listed}\nTip: give it a tmp folder (`--reports`, `--out`, HOME, XDG_*) "
                    "instead of a default path",
                    pytrace=False,
                )


def install(config: pytest.Config, root: Path) -> Guard:
    """Add the audit hook (once per process) and the plugin for this pytest session."""
    bounds = Bounds.for_repo(root, repo_writable=bool(config.getoption("--update-golden", False)))
    if _INSTALLED:
        guard = _INSTALLED[0]
        guard.bounds = bounds
    else:
        guard = Guard(bounds)
        sys.addaudithook(guard.hook)
        _INSTALLED.append(guard)
    config.pluginmanager.register(GuardPlugin(guard), "hermetic-guard")
    return guard


def current() -> Guard:
    """The guard of this process (tests of the guard use it)."""
    assert _INSTALLED, "tests/conftest.py installs the guard at configure time"
    return _INSTALLED[0]
