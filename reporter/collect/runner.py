"""Run one helper program (py-spy, an interpreter, systemctl) with a deadline and a stop switch.

The collector's only way of starting programs. A helper that outlives its
timeout, runs when the user interrupts the collection, or prints more than the
output cap is killed (it is our own child; the processes under investigation are
never signalled) and its output so far is kept (at most the cap: a flooding helper
cannot fill our memory). Example::

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from reporter.collect import probe

# How often a waiting call looks at the stop switch.
_POLL_S = 0.05
# After a kill: how long to read what the helper left before giving up on its pipes.
_DRAIN_S = 1.0
# The most a helper may print on one stream before it is stopped (a py-spy flooding its
# output, a `pip list` of a broken interpreter): `max_output` overrides it.
DEFAULT_MAX_OUTPUT = 64 << 20
_READ = 1 << 16


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
    flooded: int = 0
    """The output cap (bytes) the helper went past, and was stopped for; 0 when it did not."""

    @property
    def ok(self) -> bool:
        """True when the helper ran to the end and exited 0."""
        return self.returncode == 0 and not (
            self.timed_out or self.stopped or self.launch_error or self.flooded
        )


class _Reader:
    """Reads one pipe to its end in a thread, keeping at most `cap` bytes."""

    def __init__(
        self,
        pipe: IO[bytes] | None,
        cap: int,
        over: threading.Event,
        sink: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.chunks: list[bytes] = []
        self.sink = sink
        self.kept = 0
        self.cap = cap
        self.over = over
        self.pipe = pipe
        self.thread = threading.Thread(target=self._run, name="helper-output", daemon=True)
        if pipe is not None:
            self.thread.start()

    def _run(self) -> None:
        assert self.pipe is not None
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, _READ)
            except OSError:
                return
            if not chunk:
                return
            if self.sink is not None:
                # The sink keeps what it wants (parsed records) and says when to stop.
                if not self.sink(chunk):
                    self.over.set()
                    return
                continue
            room = self.cap - self.kept
            if len(chunk) > room:
                self.chunks.append(chunk[:room])
                self.kept = self.cap
                self.over.set()
                return
            self.chunks.append(chunk)
            self.kept += len(chunk)

    def text(self, wait: float) -> str:
        if self.pipe is not None:
            self.thread.join(wait)
        return b"".join(self.chunks).decode("utf-8", errors="replace")

    def close(self) -> None:
        """Close the pipe, unless a reader still blocks on it (a grandchild that left the
        group holds it open): closing it then could hand its number to another file
        under the reader's feet; the reader ends when that grandchild does."""
        if self.pipe is not None and not self.thread.is_alive():
            self.pipe.close()


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    stop: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    executable: str | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
    user: tuple[int, int] | None = None,
    on_stdout: Callable[[bytes], bool] | None = None,
) -> Finished:
    """Run `argv` to completion, or until `timeout` seconds pass, `stop` is set, or it
    prints more than `max_output` bytes on one stream (what it printed so far is kept).

    `user` = (uid, gid): run it as that user with no supplementary groups (a root
    collector runs a target's own interpreter as the target's user, see envcap).

    `on_stdout`: stdout goes to it chunk by chunk instead of into `Finished.stdout` (a
    remote host's records are parsed as they come, never held whole); it returns False
    to have the helper stopped as over its cap (`flooded`)."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            executable=executable,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            # Its own process group, so a timeout ends what it started too: a wrapper
            # script's grandchild would otherwise hold the pipes open past the kill.
            start_new_session=True,
            # The one way the collector, here or on a remote host, drops to a user.
            **probe.as_user(user),
        )
    except OSError as err:
        return Finished(
            argv=tuple(argv),
            returncode=None,
            launch_error=f"cannot run {argv[0]}: {err.strerror or err}",
        )
    deadline = started + timeout
    over = threading.Event()
    outs = _Reader(proc.stdout, max_output, over, on_stdout)
    errs = _Reader(proc.stderr, max_output, over)
    timed_out = stopped = flooded = False
    while True:
        try:
            proc.wait(timeout=_POLL_S)
            break
        except subprocess.TimeoutExpired:
            if stop is not None and stop.is_set():
                stopped = True
            elif over.is_set():
                flooded = True
            elif time.monotonic() >= deadline:
                timed_out = True
            else:
                continue
            _end(proc)
            break
    # The pipes close when the helper (and whatever it started) is gone; a grandchild
    # that left the group may hold them: stop waiting for it after a moment.
    stdout, stderr = outs.text(_DRAIN_S), errs.text(_DRAIN_S)
    flooded = flooded or over.is_set()
    ended = timed_out or stopped or flooded
    for reader in (outs, errs):
        reader.close()
    return Finished(
        argv=tuple(argv),
        returncode=None if ended else proc.returncode,
        stdout=stdout,
        stderr=stderr,
        seconds=time.monotonic() - started,
        timed_out=timed_out,
        stopped=stopped,
        flooded=max_output if flooded else 0,
    )


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill `proc` and its process group (our own child; never a target)."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_DRAIN_S)


def helper_env(*, drop: Sequence[str] = ()) -> dict[str, str]:
    """This process's environment without `drop` (e.g. RUST_BACKTRACE for py-spy)."""
    return {k: v for k, v in os.environ.items() if k not in drop}
