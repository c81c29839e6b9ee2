"""Live: `report collect --ssh` and `--exec` against real sshd hosts running a real gloo job.

Two simulated hosts (tests/collect/sshlab.py: one Debian OpenSSH sshd each on 127.0.0.1, each
in its own UTS and PID namespace, host key checked against a known_hosts file, key login in
batch mode) run one TP4 job of `fixtures/scenarios/tp_desync.py` through
`fixtures/scenarios/multinode.py`: ranks 0-1 on node-a wait in an all_reduce that ranks 2-3 on
node-b never join. Both hosts number their processes from 1, so PIDs repeat across them.

Checks: the capture over ssh gives one bundle with each host's files and `host` per evidence;
`report analyze` on it names the desync across both hosts (waits-for 0-1 -> 2-3); an
unreachable third host leaves a partial bundle whose verdict names the missing host; the
`--exec` template reaches the same hosts through ssh (one shell line) and through nsenter
(arguments passed as they are, like `docker exec`); py-spy is found on the remote side.

Skips, with the reason, where sshd cannot run (not root, openssh-server not installed).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .sshlab import Lab, report, require_lab, ssh_lab

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "fixtures" / "scenarios"
READY_TIMEOUT_S = 180.0


def _pyspy() -> str:
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.is_file() else shutil.which("py-spy")
    if found is None:
        pytest.skip("py-spy is not installed")
    return str(Path(found).resolve()) if Path(found).is_symlink() else found


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    lab: Lab
    ranks: dict[int, tuple[str, int]]
    """rank -> (host, PID on that host)."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def job() -> Iterator[Job]:
    problem = require_lab()
    if problem is not None:
        pytest.skip(problem)
    for module in ("torch", "setproctitle"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    with (
        ssh_lab(["node-a", "node-b"], down=["node-down"]) as lab,
        tempfile.TemporaryDirectory(prefix="multinode-") as tmp,
    ):
        port = _free_port()
        runs = {}
        for node, name in enumerate(("node-a", "node-b")):
            run = Path(tmp) / name
            run.mkdir()
            runs[name] = run
            lab.hosts[name].spawn(
                [
                    sys.executable,
                    str(SCENARIOS / "multinode.py"),
                    "tp_desync",
                    "--nnodes",
                    "2",
                    "--node-rank",
                    str(node),
                    "--master-port",
                    str(port),
                ],
                cwd=SCENARIOS,
                env={**os.environ, "SCENARIO_RUN_DIR": str(run), "PYTHONUNBUFFERED": "1"},
                log=run / "node.log",
            )
        deadline = time.monotonic() + READY_TIMEOUT_S
        ranks: dict[int, tuple[str, int]] = {}
        while len(ranks) < 4:
            for name, run in runs.items():
                for path in (run / "ready").glob("rank*.json"):
                    row = json.loads(path.read_text())
                    ranks[int(row["rank"])] = (name, int(row["pid"]))
            if time.monotonic() > deadline:
                logs = {
                    n: (r / "node.log").read_text(errors="replace")[-1500:] for n, r in runs.items()
                }
                raise AssertionError(f"the job did not get ready: {logs}")
            time.sleep(0.2)
        time.sleep(1.5)  # ranks say "ready" just before they block
        yield Job(lab=lab, ranks=ranks)


def _collect(
    job: Job, out: Path, *args: str, pyspy: bool = True, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    extra = ["--remote-py-spy", _pyspy()] if pyspy else []
    return report(
        "collect", "-o", str(out), "--match", "sglang::scheduler_TP", "--snapshots", "2",
        "--interval", "0.5", *extra, *args, path=path,
    )  # fmt: skip


def _analyze(out: Path) -> Any:
    earlier = out.parent / "earlier-reports"  # never the checkout's reports/ (issue 29)
    earlier.mkdir(exist_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reporter",
            "analyze",
            str(out),
            "--json",
            "--reports",
            str(earlier),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _assert_desync_over_both_hosts(job: Job, analysis: Any) -> None:
    assert analysis["verdict"] == "collective-desync"
    ranks = {r["rank"]: (r["host"], r["pid"]) for r in analysis["ranks"]}
    assert ranks == job.ranks
    (edge, *more) = analysis["waits_for"]
    assert edge["waiting"]["ranks"] == [0, 1]
    assert edge["waiting"]["collective"] == "all_reduce"
    waited = set(edge["for"]["ranks"]) | {r for e in more for r in e["for"]["ranks"]}
    assert waited == {2, 3}
    rows = {h["name"]: h for h in analysis["hosts"]}
    assert rows["node-a"]["ranks"] == [0, 1] and rows["node-b"]["ranks"] == [2, 3]


def test_two_hosts_over_ssh_one_desync(job: Job, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    done = _collect(job, out, "--ssh", "node-a", "--ssh", "node-b", *job.lab.ssh_args())
    assert done.returncode == 0, done.stderr
    manifest = tomllib.loads((out / "bundle.toml").read_text())
    notes = {n["host"]: n for n in manifest["collect"]["remote"]}
    assert {n: v["status"] for n, v in notes.items()} == {
        "node-a": "complete",
        "node-b": "complete",
    }
    # What each host calls itself (its own UTS namespace), and its own PID space.
    assert {n: v["hostname"] for n, v in notes.items()} == {"node-a": "node-a", "node-b": "node-b"}
    for rank, (host, pid) in job.ranks.items():
        assert (out / "hosts" / host / "pyspy" / f"pid{pid}-s1.txt").is_file(), rank
    assert {e["host"] for e in manifest["evidence"]} == {"node-a", "node-b"}
    _assert_desync_over_both_hosts(job, _analyze(out))


def test_an_unreachable_host_leaves_a_partial_bundle_that_says_so(job: Job, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    done = _collect(
        job, out, "--ssh", "node-a", "--ssh", "node-b", "--ssh", "node-down", *job.lab.ssh_args()
    )
    assert done.returncode == 0, done.stderr
    assert "host node-down: failed: ssh: connect to host 127.0.0.1 port" in done.stderr
    manifest = tomllib.loads((out / "bundle.toml").read_text())
    assert manifest["collect"]["status"] == "partial"
    (down,) = [n for n in manifest["collect"]["remote"] if n["host"] == "node-down"]
    assert down["status"] == "failed" and "Connection refused" in down["reason"]
    analysis = _analyze(out)
    _assert_desync_over_both_hosts(job, analysis)
    assert "Not captured: node-down (failed: ssh: connect to host" in str(analysis["summary"])
    assert any("node-down" in n for n in analysis["confidence_notes"])
    rows = {h["name"]: h for h in analysis["hosts"]}
    assert rows["node-down"]["status"] == "failed" and rows["node-down"]["ranks"] == []


def test_an_ssh_template_reaches_the_same_hosts(job: Job, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    template = f"ssh -F {job.lab.config} -o BatchMode=yes {{host}}"
    done = _collect(job, out, "--exec", template, "--host", "node-a", "--host", "node-b")
    assert done.returncode == 0, done.stderr
    _assert_desync_over_both_hosts(job, _analyze(out))


def test_an_argv_template_reaches_the_same_hosts(job: Job, tmp_path: Path) -> None:
    # nsenter passes its arguments through as they are, like `docker exec` or `kubectl exec`;
    # the host names are the namespaces' PID 1, as a container id would be.
    names = {str(h.init_pid): n for n, h in job.lab.hosts.items()}
    out = tmp_path / "bundle"
    template = "nsenter --target {host} --pid --mount --uts --"
    hosts = [arg for pid in names for arg in ("--host", pid)]
    done = _collect(job, out, "--exec", template, *hosts, "--remote-python", sys.executable)
    assert done.returncode == 0, done.stderr
    analysis = _analyze(out)
    assert analysis["verdict"] == "collective-desync"
    by_rank = {r["rank"]: names[r["host"]] for r in analysis["ranks"]}
    assert by_rank == {rank: host for rank, (host, _) in job.ranks.items()}


def test_py_spy_is_found_on_the_remote_side(job: Job, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    done = _collect(job, out, "--ssh", "node-a", *job.lab.ssh_args(), pyspy=False)
    assert done.returncode == 0, done.stderr
    manifest = tomllib.loads((out / "bundle.toml").read_text())
    assert manifest["collect"]["pyspy"].startswith("py-spy ")
    assert manifest["collect"]["remote"][0]["dumps"] == 4


def test_py_spy_is_found_in_the_targets_venv_when_path_has_none(job: Job, tmp_path: Path) -> None:
    # No login shell, a PATH without py-spy and a probe run by the system's Python: py-spy
    # can only come from where the ranks' launcher was started (its venv, or the base
    # interpreter's bin folder), as an operator would look. The ranks carry titles.
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("needs /usr/bin/python3 for the probe")
    names = [str(h.init_pid) for h in job.lab.hosts.values()]
    out = tmp_path / "bundle"
    template = "nsenter --target {host} --pid --mount --uts --"
    hosts = [arg for pid in names[:1] for arg in ("--host", pid)]
    done = _collect(
        job, out, "--exec", template, *hosts, "--remote-python", "/usr/bin/python3",
        pyspy=False, path="/usr/bin:/bin",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = tomllib.loads((out / "bundle.toml").read_text())
    assert manifest["collect"]["pyspy"].startswith("py-spy ")
    (note,) = manifest["collect"]["remote"]
    assert note["status"] == "complete" and note["dumps"] == 4, note
    (listing,) = out.glob("hosts/*/env/pid*.packages.txt")
    assert "torch==" in listing.read_text(encoding="utf-8")
