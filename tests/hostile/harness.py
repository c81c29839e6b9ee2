"""Run the `report` CLI on hostile input in a subprocess, with a watchdog, and check the rules.

The rules every row of the hostile-input table is held to (issue 16):

* it finishes within its time bound (the watchdog kills it otherwise: a hang fails);
* no traceback on stdout or stderr;
* a failure says one `error:` line and one `Tip:` line; an interrupt says `interrupted`;
* no file outside the paths the row allows to change was created, changed or removed
  (FIFOs and devices are compared by `lstat` only: never opened).
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run did."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    signalled: bool = False
    """SIGINT was sent (the command was still running when `interrupt_after` came)."""


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
) -> Outcome:
    """`python -m reporter ARGS` in `work`; SIGINT after `interrupt_after` seconds if given."""
    started = time.perf_counter()
    signalled = False
    proc = subprocess.Popen(
        [sys.executable, "-m", "reporter", *args],
        cwd=work,
        env=environment(work),
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
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir != "." and Path(rel_dir).parts[0] in skip:
            dirnames[:] = []
            continue
        for name in [*filenames, *dirnames]:
            full = os.path.join(dirpath, name)  # noqa: PTH118
            rel = os.path.relpath(full, root)
            if Path(rel).parts[0] in skip:
                continue
            info = os.lstat(full)
            mode = info.st_mode
            if stat.S_ISREG(mode) and ".sqlite3" in name:
                # Never opened: closing any descriptor of a SQLite file drops this
                # process's POSIX locks on it (a row may hold one on purpose).
                out[rel] = ("file", info.st_size, info.st_mtime_ns)
            elif stat.S_ISREG(mode):
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                out[rel] = ("file", info.st_size, digest)
            elif stat.S_ISLNK(mode):
                out[rel] = ("link", str(Path(full).readlink()))
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir",)
            else:
                out[rel] = ("special", stat.S_IFMT(mode), info.st_rdev)
    return out


def changed(
    before: dict[str, tuple[object, ...]], after: dict[str, tuple[object, ...]]
) -> list[str]:
    """Paths created, changed or removed between two snapshots."""
    return sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))


def check_rules(outcome: Outcome, *, expect: set[int], args: list[str]) -> None:
    """No traceback; the exit code expected; a failure is one `error:` line and a `Tip:`."""
    said = outcome.stdout + outcome.stderr
    where = f"report {' '.join(args)} (exit {outcome.code}):\n{outcome.stderr[-3000:]}"
    assert "Traceback (most recent call last)" not in said, where
    assert outcome.code in expect, where
    if outcome.code in (130, -signal.SIGINT):
        # Quiet: `interrupted`, or nothing when the signal lands while Python starts or shuts
        # down (then the interpreter has no handler and dies by SIGINT itself: code -2).
        assert outcome.stderr.strip() in ("", "interrupted"), where
    elif outcome.code not in (0,) and not (outcome.code == 1 and args[:1] == ["lint"]):
        errors = [
            line for line in outcome.stderr.splitlines() if line.startswith(("error:", "Error:"))
        ]
        tips = [line for line in outcome.stderr.splitlines() if line.startswith("Tip:")]
        # `upstream file` refuses with one `refused:` line per reason, then one Tip.
        refused = [line for line in outcome.stderr.splitlines() if line.startswith("refused:")]
        assert len(errors) == 1 or (refused and not errors), where
        assert len(tips) == 1 or outcome.code == 2, where
