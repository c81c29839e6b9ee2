"""Bounded helper programs: finished, timed out, stopped, not startable."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from reporter.collect.runner import run_bounded


def test_finishes_with_output() -> None:
    done = run_bounded(
        (
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
        ),
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert not done.ok and not done.timed_out and not done.stopped


def test_timeout_kills_the_helper_and_keeps_its_output() -> None:
    code = "import sys, time; print('partial', flush=True); time.sleep(60)"
    done = run_bounded((sys.executable, "-c", code), timeout=1.0)
    assert done.timed_out and done.returncode is None
    assert done.stdout == "partial\n"


def test_stop_switch_kills_the_helper() -> None:
    stop = threading.Event()
    stop.set()
    done = run_bounded((sys.executable, "-c", "import time; time.sleep(60)"), timeout=60, stop=stop)
    assert done.stopped and not done.timed_out and done.returncode is None


def test_launch_error() -> None:
    done = run_bounded(("/nonexistent/py-spy", "dump"), timeout=5)
    assert done.returncode is None
    assert done.launch_error.startswith("cannot run /nonexistent/py-spy: ")
    assert not done.ok


def test_a_timeout_ends_a_wrapper_whose_grandchild_holds_the_pipe(tmp_path: Path) -> None:
    # A wrapper script (as some installs put in front of py-spy) whose child outlives it
    # with stdout still open: the timeout must end both and return, not wait for EOF.
    marker = tmp_path / "grandchild.pid"
    wrapper = tmp_path / "py-spy"
    wrapper.write_text(f"#!/bin/sh\nsleep 30 &\necho $! > {marker}\necho started\nwait\n")
    wrapper.chmod(0o755)
    began = time.monotonic()
    done = run_bounded((str(wrapper),), timeout=0.5)
    assert done.timed_out and not done.ok
    assert time.monotonic() - began < 10
    grandchild = int(marker.read_text())
    time.sleep(0.2)
    # The grandchild is gone (killed with the group), not left running.
    assert not Path(f"/proc/{grandchild}").exists() or "Z" in _proc_state(grandchild)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
