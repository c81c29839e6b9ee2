"""Live: a remote capture saves command lines and environments byte for byte as a local one does.

One simulated host (tests/collect/sshlab.py) runs a launcher with a long environment (secrets,
`MASTER_ADDR`, a value that is not UTF-8) and a child whose title was set with setproctitle
(its own command line and environment are gone: the parent's are saved instead). The same
processes are captured twice: from this host with `--pid` (by their PIDs here) and over ssh
(by their PIDs on the simulated host). Every `env/` file must be the same bytes, after the
same masking; so must the package listing.

Skips, with the reason, where the lab cannot run or setproctitle is missing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .sshlab import Lab, report, require_lab, ssh_lab

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
MARK = "bytes-target-51d2"
CHILD = f"{MARK}::worker_TP0"
LAUNCHER = f"""\
import multiprocessing as mp, sys, time
def work():
    import setproctitle
    setproctitle.setproctitle({CHILD!r})
    while True:
        time.sleep(0.2)
if __name__ == "__main__":
    mp.set_start_method("fork")
    mp.Process(target=work).start()
    while True:
        time.sleep(0.2)
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Running:
    lab: Lab
    pids: dict[int, int]
    """PID here -> PID on the simulated host, for the launcher and its child."""


def _environment() -> dict[str, str]:
    env = {f"APP_SETTING_{i:02d}": f"value {i} with spaces and = signs" for i in range(30)}
    env.update(
        PATH="/usr/bin:/bin",
        HOME="/root",
        MASTER_ADDR="10.1.2.3",
        MASTER_PORT="29500",
        HF_TOKEN="hf_" + "q" * 34,
        PYTHONPATH=sys.path[-1],
        PYTHONUNBUFFERED="1",
    )
    return env


def _namespace_pid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    line = next(row for row in status.splitlines() if row.startswith("NSpid:"))
    return int(line.split()[-1])


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        out += [int(c) for c in (task / "children").read_text().split()]
    return out


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    problem = require_lab()
    if problem is not None:
        pytest.skip(problem)
    if importlib.util.find_spec("setproctitle") is None:
        pytest.skip("setproctitle is not installed")
    with ssh_lab(["node-a"]) as lab, tempfile.TemporaryDirectory(prefix="bytes-") as tmp:
        script = Path(tmp) / "launcher.py"
        script.write_text(LAUNCHER, encoding="utf-8")
        env = _environment()
        env_bytes = {k.encode(): v.encode() for k, v in env.items()}
        env_bytes[b"LATIN1_VALUE"] = b"caf\xe9"  # not UTF-8: both captures see the same bytes
        nsenter = lab.hosts["node-a"].spawn(
            [sys.executable, str(script), "--node-rank", "0", MARK],
            cwd=Path(tmp),
            env=env_bytes,  # type: ignore[arg-type]
            log=Path(tmp) / "launcher.log",
        )
        deadline = time.monotonic() + 30
        pids: dict[int, int] = {}
        while len(pids) < 2:
            assert time.monotonic() < deadline, "the launcher did not start its child"
            time.sleep(0.2)
            for launcher in _children(nsenter.pid):
                children = _children(launcher)
                if children and CHILD in Path(f"/proc/{children[0]}/cmdline").read_text():
                    pids = {p: _namespace_pid(p) for p in (launcher, children[0])}
        yield Running(lab=lab, pids=pids)


def _collect(out: Path, *args: str) -> None:
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    done = report("collect", "-o", str(out), "--snapshots", "1", *args, path=path, timeout=240)
    assert done.returncode == 0, done.stderr


def test_local_and_remote_captures_are_the_same_bytes(running: Running, tmp_path: Path) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    _collect(local, *[a for pid in running.pids for a in ("--pid", str(pid))])
    here = {p: n for p, n in running.pids.items()}
    _collect(remote, "--ssh", "node-a", *running.lab.ssh_args(), "--match", MARK)
    compared = []
    for path in sorted((local / "env").iterdir()):
        pid_here = int(path.name[3:].split(".", 1)[0])
        twin = (
            remote
            / "hosts"
            / "node-a"
            / "env"
            / path.name.replace(f"pid{pid_here}", f"pid{here[pid_here]}", 1)
        )
        assert twin.is_file(), f"{twin} missing; remote has {sorted(twin.parent.iterdir())}"
        assert twin.read_bytes() == path.read_bytes(), path.name
        compared.append(path.name.split(".", 1)[1])
    # The launcher's command line and environment (the child's title hid its own), and the
    # package listing of the interpreter they share.
    assert sorted(compared) == ["cmdline", "environ", "packages.txt"], compared
    # The per-round /proc copies come back too, written by the same code as here.
    for pid_here, pid_there in here.items():
        mine = (local / "proc" / f"pid{pid_here}-s0.status").read_text(encoding="utf-8")
        theirs = (remote / "hosts" / "node-a" / "proc" / f"pid{pid_there}-s0.status").read_text(
            encoding="utf-8"
        )
        assert mine.splitlines()[0] == theirs.splitlines()[0]  # Name:
        assert f"NSpid:\t{pid_here}\t{pid_there}" in mine and f"\nPid:\t{pid_there}\n" in theirs
    environ = next((local / "env").glob("*.environ")).read_bytes()
    assert environ.count(b"\x00") == len(_environment()) + 1
    assert b"MASTER_ADDR=10.1.2.3\x00" in environ and b"hf_qqqq" not in environ
