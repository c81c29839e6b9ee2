"""Live: `report collect` against a real gloo hang and a wedged metrics server.

The hang is `fixtures/scenarios/tp_desync.py` run through its launcher: four ranks
titled `sglang::scheduler_TP{r}`, ranks 0-1 in an all_reduce, ranks 2-3 in the idle
loop. The metrics server has been told to wedge. Checks: the verdict and the wedge
from `report analyze` and `report draft` on what was collected; the targets still
run (not stopped, not dead) and still serve metrics afterwards; Ctrl-C mid-run leaves
a bundle that `report analyze` reads; an ordinary user can collect from their own
processes and gets told why and what to do for someone else's.

Skips (with the reason) without py-spy, torch or setproctitle, or without ptrace
rights. Every process started here is killed with its process group in a finally.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .servers import (
    Scenario,
    Server,
    kill_group,
    live_pyspy,
    metrics_server,
    scenario,
    state_of,
)

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class Live:
    pyspy: str
    hang: Scenario
    server: Server


@pytest.fixture(scope="module")
def live(ptrace_problem: Callable[[str], str | None]) -> Iterator[Live]:
    pyspy = live_pyspy(ptrace_problem)
    with metrics_server() as server, scenario("tp_desync") as hang:
        server.wedge()
        yield Live(pyspy=pyspy, hang=hang, server=server)


def _report(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # From an empty folder, so the default `reports/` is never the checkout's (issue 29).
    with tempfile.TemporaryDirectory(prefix="report-cwd-") as cwd:
        return subprocess.run(
            [sys.executable, "-m", "reporter", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )


def _alive_and_running(pids: list[int]) -> dict[int, str]:
    """PIDs whose state is not a running or sleeping one (stopped by ptrace, dead, gone)."""
    return {pid: s for pid in pids if (s := state_of(pid)) not in {"R", "S", "D"}}


def test_collect_then_analyze_and_draft(live: Live, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    began = time.monotonic()
    done = _report(
        "collect",
        "--out",
        str(out),
        "--match",
        "sglang::scheduler_TP",
        "--children-of",
        str(live.hang.launcher),
        "--snapshots",
        "2",
        "--interval",
        "1",
        "--metrics-url",
        live.server.url,
        "--scrape-every",
        "0.5",
        "--scrape-for",
        "4",
        "--wedge-window",
        "2s",
        "--py-spy",
        live.pyspy,
    )
    wall = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    print(f"\nreport collect wall time: {wall:.2f} s\n{done.stdout}{done.stderr}")
    assert done.stdout.startswith("complete: ")
    assert "(8 dumps, 0 failed; 9 scrapes;" in done.stdout
    data = tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))
    assert data["service"] == "sglang" and data["upstream"] == ["sgl-project/sglang"]
    assert [t["title"] for t in data["collect"]["target"]] == [
        f"sglang::scheduler_TP{r}" for r in range(4)
    ]
    assert data["collect"]["mode"] == "non-blocking"

    analyzed = _report("analyze", "--json", str(out))
    assert analyzed.returncode == 0, analyzed.stderr
    result = json.loads(analyzed.stdout)
    assert result["verdict"] == "collective-desync"
    ranks_in_all_reduce = [
        c["ranks"] for c in result["classes"] if c.get("collective") == "all_reduce"
    ]
    assert ranks_in_all_reduce == [[0, 1]]
    wedge = result["wedge"]
    assert wedge["found"] is True and wedge["still_wedged"] is True

    report = tmp_path / "report.md"
    drafted = _report("draft", str(out), "--out", str(report))
    assert drafted.returncode == 0, drafted.stderr
    text = report.read_text(encoding="utf-8")
    assert "collective-desync" in text and "## Metrics and the wedge" in text
    assert "**Collection.** Collected with report collect" in text

    assert _alive_and_running([pid for _, pid, _ in live.hang.ranks] + [live.hang.launcher]) == {}
    assert live.server.serves()


def test_ctrl_c_leaves_a_bundle_analyze_reads(live: Live, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reporter",
            "collect",
            "--out",
            str(out),
            "--children-of",
            str(live.hang.launcher),
            "--match",
            "sglang::scheduler_TP",
            "--snapshots",
            "50",
            "--interval",
            "0.5",
            "--metrics-url",
            live.server.url,
            "--scrape-every",
            "0.5",
            "--scrape-for",
            "60",
            "--py-spy",
            live.pyspy,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        manifest = out / "bundle.toml"
        deadline = time.monotonic() + 60
        while not (manifest.exists() and "pyspy/" in manifest.read_text(encoding="utf-8")):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no dump was listed in time"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        kill_group(proc)
    assert proc.returncode == 130, stderr
    assert stdout.startswith("interrupted: ")
    assert "stopping: open reads and helpers end now" in stderr
    data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    assert data["collect"]["status"] == "interrupted"
    listed = {e["path"] for e in data["evidence"]}
    on_disk = {
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.name != "bundle.toml"
    }
    assert listed == on_disk  # every file written is in the manifest
    analyzed = _report("analyze", "--json", str(out))
    assert analyzed.returncode == 0, analyzed.stderr
    assert json.loads(analyzed.stdout)["verdict"] in {"collective-desync", "inconclusive"}
    assert _alive_and_running([pid for _, pid, _ in live.hang.ranks]) == {}


def test_blocking_with_locals_resumes_the_target(live: Live, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    rank0 = live.hang.ranks[0][1]
    done = _report(
        "collect",
        "--out",
        str(out),
        "--pid",
        str(rank0),
        "--snapshots",
        "1",
        "--blocking",
        "--locals",
        "--py-spy",
        live.pyspy,
    )
    assert done.returncode == 0, done.stderr
    dump = (out / f"pyspy/pid{rank0}-s0.txt").read_text(encoding="utf-8")
    assert "Process " in dump and "tp_rank: 0" in dump
    assert (
        tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))["collect"]["mode"]
        == "blocking --locals"
    )
    assert _alive_and_running([rank0]) == {}


def _setpriv() -> list[str]:
    """Run as `nobody`, with one extra right: reading files (this Python lives under /root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start processes as another user")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    # DAC_READ_SEARCH lets nobody read the interpreter and packages under /root; it grants
    # no ptrace right, so py-spy's access is exactly an ordinary user's.
    return [
        setpriv,
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "--inh-caps=+dac_read_search",
        "--ambient-caps=+dac_read_search",
    ]


def test_an_ordinary_user_collects_their_own_processes(live: Live, tmp_path: Path) -> None:
    prefix = _setpriv()
    folder = tmp_path / "as-nobody"
    folder.mkdir()
    shutil.chown(folder, "nobody", "nogroup")
    code = "import setproctitle, time; setproctitle.setproctitle('collect-live' + '::own'); time.sleep(120)"
    own = subprocess.Popen([*prefix, sys.executable, "-c", code], start_new_session=True)
    root_owned = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        time.sleep(1.0)
        mine = subprocess.run(
            [
                *prefix,
                sys.executable,
                "-m",
                "reporter",
                "collect",
                "--out",
                str(folder / "own"),
                "--match",
                "^collect-live::own$",
                "--snapshots",
                "1",
                "--py-spy",
                live.pyspy,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            cwd="/",
        )
        assert mine.returncode == 0, mine.stderr
        assert "(1 dumps, 0 failed;" in mine.stdout
        assert "uid 65534 without CAP_SYS_PTRACE" in mine.stderr
        bundle = folder / "own"
        assert "Process " in next(bundle.glob("pyspy/*.txt")).read_text(encoding="utf-8")

        theirs = subprocess.run(
            [
                *prefix,
                sys.executable,
                "-m",
                "reporter",
                "collect",
                "--out",
                str(folder / "theirs"),
                "--pid",
                str(root_owned.pid),
                "--snapshots",
                "1",
                "--py-spy",
                live.pyspy,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
            cwd="/",
        )
        # No stack from the one process it was asked to dump: incomplete, exit 1, and why.
        assert theirs.returncode == 1, theirs.stderr
        assert theirs.stdout.startswith("incomplete: ")
        assert "(0 dumps, 1 failed;" in theirs.stdout
        assert f"no stacks: PID {root_owned.pid} (" in theirs.stderr
        assert "Permission Denied" in theirs.stderr
        assert f"the target runs as uid 0, report collect as uid {65534}" in theirs.stderr
        assert "what to do: run as the target's user" in theirs.stderr
        data = tomllib.loads((folder / "theirs/bundle.toml").read_text(encoding="utf-8"))
        assert "runs as uid 0" in data["fields"]["ptrace"]
        analyzed = _report("analyze", "--json", str(folder / "theirs"))
        assert analyzed.returncode == 0, analyzed.stderr
        failed = json.loads(analyzed.stdout)["failed_dumps"]
        assert failed and failed[0]["pid"] == root_owned.pid
        assert "Permission Denied" in failed[0]["reason"]
    finally:
        kill_group(own)
        kill_group(root_owned)
