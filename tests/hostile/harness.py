"""Run the `report` CLI on hostile input in a subprocess, with a watchdog, and check the rules.

The rules every row of the hostile-input table is held to (issue 16):

* it finishes within its time bound (the watchdog kills it otherwise: a hang fails);
* no traceback on stdout or stderr;
* a failure says one `error:` line and one `Tip:` line; an interrupt says `interrupted`;
* no file outside the paths the row allows to change was created, changed or removed
  (FIFOs and devices are compared by `lstat` only: never opened).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Files larger than this are compared by size and time, not read (a row's 6 GB sparse file).
_HASHED_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run did."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    signalled: bool = False
    """SIGINT was sent (the command was still running when `interrupt_after` came)."""


@dataclass(frozen=True)
class Case:
    """One row: `setup(work)` builds the input and returns the arguments."""

    id: str
    setup: Callable[[Path], list[str]]
    expect: set[int]
    says: str = ""  # a substring of stdout + stderr
    allowed: tuple[str, ...] = ()  # paths (prefixes) the run may create or change
    check: Callable[[Path, Outcome], None] | None = None
    bound: float = 60.0
    interrupt_after: float | None = None
    extra: dict[str, object] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for the run (a fake token the collector must never copy)."""
    progress: bool = False
    """The command prints progress lines (collect): an interrupt is not a silent one."""
    # Called before the files are compared: a row that started a second process waits for it
    # here, so a file that process is still writing is not taken for the row's own doing.
    settle: Callable[[Path], None] | None = None


# Clean-up actions a row's setup registers (a server to stop, a process to end): run by
# `run_case` whatever the outcome.
CLEANUPS: list[Callable[[], None]] = []


def environment(work: Path) -> dict[str, str]:
    """A private environment: cache and config under `work`, no token, no colour."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "GH_", "REPORTER_")) and k != "PYTHONPATH"
    }
    env.update(
        PYTHONPATH=str(ROOT),
        XDG_CACHE_HOME=str(work / ".cache"),
        XDG_CONFIG_HOME=str(work / ".config"),
        NO_COLOR="1",
        COLUMNS="120",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run_cli(
    args: list[str],
    *,
    work: Path,
    timeout: float,
    interrupt_after: float | None = None,
    env: dict[str, str] | None = None,
) -> Outcome:
    """`python -m reporter ARGS` in `work`; SIGINT after `interrupt_after` seconds if given."""
    started = time.perf_counter()
    signalled = False
    proc = subprocess.Popen(
        [sys.executable, "-m", "reporter", *args],
        cwd=work,
        env={**environment(work), **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        if interrupt_after is not None:
            try:
                proc.wait(timeout=interrupt_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
                signalled = True
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise AssertionError(
            f"hung: report {' '.join(args)} still running after {timeout} s\n{stderr[-2000:]}"
        ) from None
    return Outcome(proc.returncode, stdout, stderr, time.perf_counter() - started, signalled)


def snapshot(
    root: Path, *, skip: tuple[str, ...] = (".cache", ".config")
) -> dict[str, tuple[object, ...]]:
    """Every path under `root` (relative) -> (type, size, content hash or mtime)."""
    out: dict[str, tuple[object, ...]] = {}
    # Iterative, links not followed: a row may build a thousand nested folders or a loop.
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        if rel_dir and Path(rel_dir).parts[0] in skip:
            continue
        try:
            entries = list(os.scandir(os.path.join(root, rel_dir) if rel_dir else root))  # noqa: PTH118
        except OSError:
            continue
        for entry in entries:
            rel = os.path.join(rel_dir, entry.name) if rel_dir else entry.name  # noqa: PTH118
            if Path(rel).parts[0] in skip:
                continue
            info = entry.stat(follow_symlinks=False)
            mode = info.st_mode
            if stat.S_ISREG(mode) and ".sqlite3" in entry.name:
                # Never opened: closing any descriptor of a SQLite file drops this
                # process's POSIX locks on it (a row may hold one on purpose).
                out[rel] = ("file", info.st_size, info.st_mtime_ns)
            elif stat.S_ISREG(mode) and info.st_size > _HASHED_BYTES:
                # A huge (sparse) input a row made on purpose: never read whole.
                out[rel] = ("file", info.st_size, info.st_mtime_ns)
            elif stat.S_ISREG(mode):
                digest = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
                out[rel] = ("file", info.st_size, digest)
            elif stat.S_ISLNK(mode):
                out[rel] = ("link", str(Path(entry.path).readlink()))
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir",)
                stack.append(rel)
            else:
                out[rel] = ("special", stat.S_IFMT(mode), info.st_rdev)
    return out


def changed(
    before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]]
) -> list[str]:
    """Paths created, changed or removed between two snapshots."""
    return sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))


def check_rules(
    outcome: Outcome, *, expect: set[int], args: list[str], progress: bool = False
) -> None:
    """No traceback; the exit code expected; a failure is one `error:` line and a `Tip:`."""
    said = outcome.stdout + outcome.stderr
    where = f"report {' '.join(args)} (exit {outcome.code}):\n{outcome.stderr[-3000:]}"
    assert "Traceback (most recent call last)" not in said, where
    assert outcome.code in expect, where
    if outcome.code in (130, -signal.SIGINT):
        # Quiet: `interrupted`, or nothing when the signal lands while Python starts or shuts
        # down (then the interpreter has no handler and dies by SIGINT itself: code -2).
        # A command with progress lines (collect) ends with its own last line instead.
        assert progress or outcome.stderr.strip() in ("", "interrupted"), where
    elif outcome.code == 1 and args[:1] == ["collect"]:
        # An incomplete collection is a result, not an error: what was taken, why the rest
        # was not, and one Tip.
        tips = [line for line in outcome.stderr.splitlines() if line.startswith("Tip:")]
        assert len(tips) <= 1 and "incomplete" in outcome.stdout + outcome.stderr, where
    elif outcome.code not in (0,) and not (outcome.code == 1 and args[:1] == ["lint"]):
        errors = [
            line for line in outcome.stderr.splitlines() if line.startswith(("error:", "Error:"))
        ]
        tips = [line for line in outcome.stderr.splitlines() if line.startswith("Tip:")]
        # `upstream file` refuses with one `refused:` line per reason, then one Tip.
        refused = [line for line in outcome.stderr.splitlines() if line.startswith("refused:")]
        assert len(errors) == 1 or (refused and not errors), where
        assert len(tips) == 1 or outcome.code == 2, where


def run_case(case: Case, tmp_path: Path, *, owned_elsewhere: dict[str, str] | None = None) -> None:
    """Run one row and hold it to the rules (see the module docstring)."""
    work = tmp_path
    try:
        args = case.setup(work)
        before = snapshot(work)
        outcome = run_cli(
            args,
            work=work,
            timeout=case.bound,
            interrupt_after=case.interrupt_after,
            env=case.env,
        )
    except BaseException:
        _clean_up()
        raise
    elsewhere = (owned_elsewhere or {}).get(case.id)
    if case.interrupt_after is not None and not outcome.signalled:
        # A fast machine finished before the interrupt came: nothing was interrupted, so the
        # run must simply have succeeded.
        case = dataclasses.replace(case, expect={0})
    try:
        # The rules hold for every row; a row owned elsewhere may still fail in one line.
        check_rules(
            outcome,
            expect=case.expect | ({1} if elsewhere else set()),
            args=args,
            progress=case.progress,
        )
        if case.says:
            assert case.says.lower() in (outcome.stdout + outcome.stderr).lower(), outcome.stderr
        if case.settle is not None:
            case.settle(work)
        after = snapshot(work)
        moved = [
            rel
            for rel in changed(before, after)
            if not any(rel == a or rel.startswith(a) for a in case.allowed)
        ]
        assert not moved, f"changed outside the outputs: {moved}"
    finally:
        try:
            if case.check is not None and not elsewhere:
                case.check(work, outcome)
        finally:
            _clean_up()
    if elsewhere:
        strict = outcome.code in case.expect
        if strict and case.check is not None:
            try:
                case.check(work, outcome)
            except AssertionError:
                strict = False
        if not strict:
            pytest.xfail(elsewhere)


def _clean_up() -> None:
    while CLEANUPS:
        CLEANUPS.pop()()
