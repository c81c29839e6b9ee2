"""Live: a remote capture saves what a local one saves, byte for byte, with the same code.

One simulated host (tests/collect/sshlab.py) runs a launcher with a long environment (secrets,
`MASTER_ADDR`, a value that is not UTF-8) and a child whose title was set with setproctitle
(its own command line and environment are gone: the parent's are saved instead), and the
pipe deadlock of `fixtures/scenarios/pipe_deadlock.py` (a parent in `Popen.wait()`, its child
blocked writing to a full stdout pipe). The same processes are captured twice: from this
host with `--pid` (by their PIDs here) and over ssh (by their PIDs on the simulated host),
both with `--log` of the deadlock's log file. Every `env/` file must be the same bytes, after
the same masking; so must the package listing and the log's tail.

The per-round `/proc` reads (`proc/pidN-s0.threads`, `.fds`, `.sockets`, `.family`) name
PIDs, and the simulated host has its own PID namespace: the two captures differ there and
only there, and in the moment of the read on the header line (`at=`). They are compared
after each PID and TID of this host's capture is written as the simulated host sees it
(the last `NSpid:` value of `/proc/PID/status`; 0 for a process outside that namespace, as
the kernel shows it there) and `at=` is dropped: header, `pid=`, TIDs, `Pid:`, `PPid:`,
`Child:` and `/proc/PID/net/...` lines. The deadlocked pair never runs again, so all four
files are compared whole. The launcher and its child wake every 0.2 s: their fd tables and
socket rows are compared whole, their family without `State:` (R or S by chance) and their
threads on TID and name only (CPU ticks grow between the two captures).

Skips, with the reason, where the lab cannot run or setproctitle is missing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reporter.load.bundle import load
from reporter.model import FdKind

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


DEADLOCK = ROOT / "fixtures" / "scenarios" / "pipe_deadlock.py"
KINDS = ("threads", "fds", "sockets", "family")


@dataclass(frozen=True, slots=True, kw_only=True)
class Running:
    lab: Lab
    pids: dict[int, int]
    """PID here -> PID on the simulated host, for the launcher and its child."""
    deadlock: dict[int, int]
    """The same for the deadlocked parent and child, parent first."""
    log: Path
    """The deadlock's log file (the same path here and there)."""


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
    """PID (or TID) `pid` of this host as the simulated host sees it; 0 when it is not in
    that namespace (the kernel shows such a parent as PPid 0 there)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    line = next(row for row in status.splitlines() if row.startswith("NSpid:"))
    values = line.split()[1:]
    return int(values[-1]) if len(values) > 1 else 0


def _wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text(encoding="utf-8")
    except OSError:
        return ""


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
        shutil.copy(DEADLOCK, Path(tmp) / DEADLOCK.name)
        log = Path(tmp) / "pipe.log"
        stuck = lab.hosts["node-a"].spawn(
            [sys.executable, DEADLOCK.name, str(log)],
            cwd=Path(tmp),
            env={"PATH": "/usr/bin:/bin", "HOME": "/root"},
            log=Path(tmp) / "deadlock.out",
        )
        deadline = time.monotonic() + 30
        pids: dict[int, int] = {}
        deadlock: dict[int, int] = {}
        while len(pids) < 2 or len(deadlock) < 2:
            assert time.monotonic() < deadline, f"not started: {pids}, {deadlock}"
            time.sleep(0.2)
            for launcher in _children(nsenter.pid):
                children = _children(launcher)
                if children and CHILD in Path(f"/proc/{children[0]}/cmdline").read_text():
                    pids = {p: _namespace_pid(p) for p in (launcher, children[0])}
            for parent in _children(stuck.pid):
                children = _children(parent)
                if (
                    children
                    and "pipe" in _wchan(children[0])
                    and _wchan(parent) in ("do_wait", "kernel_wait4")
                ):
                    deadlock = {p: _namespace_pid(p) for p in (parent, children[0])}
        yield Running(lab=lab, pids=pids, deadlock=deadlock, log=log)


def _collect(out: Path, *args: str) -> None:
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    done = report("collect", "-o", str(out), "--snapshots", "1", *args, path=path, timeout=240)
    assert done.returncode == 0, done.stderr


@dataclass(frozen=True, slots=True, kw_only=True)
class Captures:
    local: Path
    remote: Path
    """`hosts/node-a/` of the remote capture."""
    here: dict[int, int]
    """Every target: PID here -> PID there."""


@pytest.fixture(scope="module")
def captures(running: Running, tmp_path_factory: pytest.TempPathFactory) -> Captures:
    tmp = tmp_path_factory.mktemp("captures")
    local, remote = tmp / "local", tmp / "remote"
    here = {**running.pids, **running.deadlock}
    _collect(local, *[a for pid in here for a in ("--pid", str(pid))], "--log", str(running.log))
    _collect(
        remote,
        "--ssh", "node-a", *running.lab.ssh_args(), "--match", f"{MARK}|{DEADLOCK.name}",
        "--log", str(running.log),
    )  # fmt: skip
    return Captures(local=local, remote=remote / "hosts" / "node-a", here=here)


def _as_there(kind: str, text: str) -> str:
    """A per-round read taken here, with PIDs and TIDs as the simulated host sees them and
    without the moment of the read (see the module docstring)."""
    lines = text.splitlines()
    head = re.sub(r" at=\S+$", "", lines[0])
    out = [re.sub(r"pid=(\d+)", lambda m: f"pid={_namespace_pid(int(m[1]))}", head)]
    for line in lines[1:]:
        key, _, value = line.partition("\t")
        if line.startswith("# /proc/"):
            line = re.sub(r"/proc/(\d+)/", lambda m: f"/proc/{_namespace_pid(int(m[1]))}/", line)
        elif kind == "threads" and key.isdigit():
            line = f"{_namespace_pid(int(key))}\t{value}"
        elif kind == "family" and key in ("Pid:", "PPid:"):
            line = f"{key}\t{_namespace_pid(int(value))}"
        elif kind == "family" and key == "Child:":
            child, _, rest = value.partition("\t")
            line = f"Child:\t{_namespace_pid(int(child))}\t{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


def _without_header_time(text: str) -> str:
    first, _, rest = text.partition("\n")
    return re.sub(r" at=\S+$", "", first) + "\n" + rest


def _loosely(kind: str, text: str) -> str:
    """What stays put in a process that wakes every 0.2 s (see the module docstring)."""
    if kind == "family":
        return "".join(x for x in text.splitlines(keepends=True) if not x.startswith("State:"))
    if kind == "threads":
        rows = [x.split("\t") for x in text.splitlines()]
        return "\n".join(f"{r[0]}\t{r[-1]}" if len(r) == 6 else "\t".join(r) for r in rows)
    return text


def test_local_and_remote_captures_are_the_same_bytes(running: Running, captures: Captures) -> None:
    local, remote, here = captures.local, captures.remote, captures.here
    compared = []
    for path in sorted((local / "env").iterdir()):
        pid_here = int(path.name[3:].split(".", 1)[0])
        twin = remote / "env" / path.name.replace(f"pid{pid_here}", f"pid{here[pid_here]}", 1)
        assert twin.is_file(), f"{twin} missing; remote has {sorted(twin.parent.iterdir())}"
        assert twin.read_bytes() == path.read_bytes(), path.name
        compared.append(path.name.split(".", 1)[1])
    # Command lines and environments (the titled child's are its launcher's), and the
    # package listing of the interpreter they all share.
    assert set(compared) == {"cmdline", "environ", "packages.txt"}, compared
    assert compared.count("environ") == 3  # the launcher and both deadlocked processes
    # The per-round /proc copies come back too, written by the same code as here.
    for pid_here, pid_there in here.items():
        mine = (local / "proc" / f"pid{pid_here}-s0.status").read_text(encoding="utf-8")
        theirs = (remote / "proc" / f"pid{pid_there}-s0.status").read_text(encoding="utf-8")
        assert mine.splitlines()[0] == theirs.splitlines()[0]  # Name:
        assert f"NSpid:\t{pid_here}\t{pid_there}" in mine and f"\nPid:\t{pid_there}\n" in theirs
    environ = next((local / "env").glob(f"pid{min(running.pids)}.environ")).read_bytes()
    assert environ.count(b"\x00") == len(_environment()) + 1
    assert b"MASTER_ADDR=10.1.2.3\x00" in environ and b"hf_qqqq" not in environ
    # The log's tail, read there by the same function as here.
    assert (remote / "logs" / "pipe.log").read_bytes() == (local / "logs" / "pipe.log").read_bytes()


def test_the_wait_reads_are_the_same_files_as_here(running: Running, captures: Captures) -> None:
    local, remote, here = captures.local, captures.remote, captures.here
    compared = 0
    for pid_here, pid_there in here.items():
        for kind in KINDS:
            mine = (local / "proc" / f"pid{pid_here}-s0.{kind}").read_text(encoding="utf-8")
            theirs = (remote / "proc" / f"pid{pid_there}-s0.{kind}").read_text(encoding="utf-8")
            mine, theirs = _as_there(kind, mine), _without_header_time(theirs)
            if pid_here in running.pids:
                mine, theirs = _loosely(kind, mine), _loosely(kind, theirs)
            assert theirs == mine, f"pid{pid_there}-s0.{kind}"
            compared += 1
    assert compared == 4 * len(KINDS)
    manifest = (captures.remote.parents[1] / "bundle.toml").read_text(encoding="utf-8")
    assert 'kind = "proc-fds"' in manifest and 'host = "node-a"' in manifest


def test_the_pipe_deadlock_pairs_up_on_the_remote_side(
    running: Running, captures: Captures
) -> None:
    (parent, child) = running.deadlock.values()
    remote = captures.remote
    fds = {
        pid: (remote / "proc" / f"pid{pid}-s0.fds").read_text(encoding="utf-8")
        for pid in (parent, child)
    }
    written = re.search(r"^1\tw\tpipe:\[(\d+)\]$", fds[child], re.MULTILINE)
    assert written, fds[child]
    assert re.search(rf"^\d+\tr\tpipe:\[{written[1]}\]$", fds[parent], re.MULTILINE), fds[parent]
    family = (remote / "proc" / f"pid{parent}-s0.family").read_text(encoding="utf-8")
    assert re.search(rf"^Child:\t{child}\tS\t", family, re.MULTILINE), family
    threads = (remote / "proc" / f"pid{child}-s0.threads").read_text(encoding="utf-8")
    assert "pipe" in threads.splitlines()[2].split("\t")[2], threads
    # Read back: the two ends of one pipe, on node-a, in the loaded bundle.
    bundle = load([captures.remote.parents[1]])
    ends = {
        (e.pid, e.mode)
        for e in bundle.fd_entries
        if e.kind is FdKind.PIPE and e.inode == int(written[1]) and e.host == "node-a"
    }
    assert ends == {(child, "w"), (parent, "r")}
    log = (remote / "logs" / "pipe.log").read_text(encoding="utf-8")
    assert "render_rows: 0 rows written" in log
