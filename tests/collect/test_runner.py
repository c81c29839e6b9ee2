"""Bounded helper programs: finished, timed out, stopped, not startable."""

from __future__ import annotations

import sys
import threading

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
