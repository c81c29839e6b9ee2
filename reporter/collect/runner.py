"""Run one helper program (py-spy, an interpreter, systemctl) with a deadline and a stop switch.

The collector's only way of starting programs. A helper that outlives its
timeout, or runs when the user interrupts the collection, is killed (it is our
own child; the processes under investigation are never signalled) and its output
so far is kept. Example::

    done = run_bounded(("py-spy", "dump", "--pid", "4711"), timeout=10.0, stop=stop_event)
    done.returncode, done.timed_out, done.stopped, done.seconds
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# How often a waiting call looks at the stop switch.
_POLL_S = 0.05
# After a kill: how long to read what the helper left before giving up on its pipes.
_DRAIN_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """What a helper did: exit status (None when it never ran or was killed), output, time."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    stopped: bool = False
    """Killed because the collection was interrupted."""
    launch_error: str = ""
    """Why the program could not be started (not found, not executable)."""

    @property
    def ok(self) -> bool:
        """True when the helper ran to the end and exited 0."""
        return self.returncode == 0 and not (self.timed_out or self.stopped or self.launch_error)


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    stop: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    executable: str | None = None,
) -> Finished:
    """Run `argv` to completion, or until `timeout` seconds pass or `stop` is set."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=dict(env) if env is not None else None,
            cwd=cwd,
            # Its own process group, so a timeout ends what it started too: a wrapper
            # script's grandchild would otherwise hold the pipes open past the kill.
            start_new_session=True,
        )
    except OSError as err:
        return Finished(
            argv=tuple(argv),
            returncode=None,
            launch_error=f"cannot run {argv[0]}: {err.strerror or err}",
        )
    deadline = started + timeout
    out_parts: list[str] = []
    err_parts: list[str] = []
    timed_out = stopped = False
    with proc:
        while True:
            try:
                # Output read so far is kept across retries (documented for communicate).
                out, errors = proc.communicate(timeout=_POLL_S)
                out_parts.append(out or "")
                err_parts.append(errors or "")
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if stop is not None and stop.is_set():
                    stopped = True
                elif now >= deadline:
                    timed_out = True
                else:
                    continue
                out, errors = _end(proc)
                out_parts.append(out)
                err_parts.append(errors)
                break
    return Finished(
        argv=tuple(argv),
        returncode=None if (timed_out or stopped) else proc.returncode,
        stdout="".join(out_parts),
        stderr="".join(err_parts),
        seconds=time.monotonic() - started,
        timed_out=timed_out,
        stopped=stopped,
    )


def _end(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Kill `proc` and its process group; the output it left, without waiting on held pipes."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    try:
        out, errors = proc.communicate(timeout=_DRAIN_S)
    except subprocess.TimeoutExpired:
        # Something that left the group (setsid) still holds the pipes: stop reading.
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        proc.wait()
        return "", ""
    return out or "", errors or ""


def helper_env(*, drop: Sequence[str] = ()) -> dict[str, str]:
    """This process's environment without `drop` (e.g. RUST_BACKTRACE for py-spy)."""
    return {k: v for k, v in os.environ.items() if k not in drop}
