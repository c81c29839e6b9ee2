"""Start and stop the fixture processes the collector tests read from.

`metrics_server()` runs `fixtures/scenarios/metrics_server.py` (SGLang metric names,
wedges on `POST /admin/wedge`) on an ephemeral port; `scenario()` runs a gloo hang
from `fixtures/scenarios` through its launcher and waits until every rank is in
place. Both start their process in a new session and kill the whole process group
when the `with` block ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    """The running metrics server."""

    pid: int
    url: str

    def wedge(self) -> None:
        httpx.post(self.url.removesuffix("/metrics") + "/admin/wedge", timeout=5).raise_for_status()

    def serves(self) -> bool:
        try:
            return httpx.get(self.url, timeout=5).status_code == 200
        except httpx.HTTPError:
            return False


def kill_group(
    proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 10.0
) -> None:
    """SIGKILL the process group `proc` leads, and reap `proc`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)


@contextlib.contextmanager
def metrics_server() -> Iterator[Server]:
    """The fixture metrics server on 127.0.0.1, killed (with its group) on exit."""
    with tempfile.TemporaryDirectory(prefix="collect-metrics-") as tmp:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(SCENARIOS / "metrics_server.py"),
                "--log",
                str(Path(tmp) / "server.log"),
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            line = proc.stdout.readline() if proc.stdout else ""
            match = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
            assert match is not None, f"metrics server did not start: {line!r}"
            yield Server(pid=proc.pid, url=f"http://127.0.0.1:{match.group(1)}/metrics")
        finally:
            kill_group(proc)
            if proc.stdout:
                proc.stdout.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """A running hang: the launcher and each rank's PID and title."""

    launcher: int
    ranks: tuple[tuple[int, int, str], ...]
    """(rank, pid, title), by rank."""


@contextlib.contextmanager
def scenario(name: str, *, ready_timeout: float = 120.0, settle: float = 1.5) -> Iterator[Scenario]:
    """Run `fixtures/scenarios/<name>.py` until the block ends; then kill its process group."""
    with tempfile.TemporaryDirectory(prefix=f"collect-{name}-") as tmp:
        run_dir = Path(tmp)
        log = (run_dir / "launcher.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, f"{name}.py"],
            cwd=SCENARIOS,
            env={**os.environ, "SCENARIO_RUN_DIR": str(run_dir), "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + ready_timeout
            while True:
                if proc.poll() is not None:
                    raise AssertionError(
                        f"{name} exited early: {(run_dir / 'launcher.log').read_text()[-2000:]}"
                    )
                info_path = run_dir / "scenario.json"
                if info_path.exists():
                    world = int(json.loads(info_path.read_text())["world_size"])
                    ready = sorted((run_dir / "ready").glob("rank*.json"))
                    if len(ready) == world:
                        rows = [json.loads(p.read_text()) for p in ready]
                        break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{name}: not ready after {ready_timeout:.0f} s")
                time.sleep(0.1)
            time.sleep(settle)  # ranks say "ready" just before they block
            yield Scenario(
                launcher=proc.pid,
                ranks=tuple(sorted((int(r["rank"]), int(r["pid"]), str(r["title"])) for r in rows)),
            )
        finally:
            kill_group(proc)
            log.close()


def state_of(pid: int) -> str:
    """The process state letter from /proc (R, S, T, Z, ...), or "gone"."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "gone"
    return stat[stat.rfind(")") + 2 :].split()[0]


def live_pyspy(ptrace_problem: Callable[[str], str | None]) -> str:
    """The py-spy binary for a live test (itself: a pyenv shim would not run for another
    user); skips, with the reason, without it, torch, setproctitle or ptrace rights."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        pytest.skip("py-spy is not installed")
    for module in ("torch", "setproctitle"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    problem = ptrace_problem(found)
    if problem is not None:
        pytest.skip(problem)
    return found
