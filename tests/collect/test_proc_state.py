"""`report collect` records each target's /proc status (and wchan), and takes a
`--nonblocking` dump when a blocking one could not suspend the target.

The target is a real child process frozen with a real SIGSTOP. py-spy is a stand-in
script here (the collector's part is what is tested; `capture_states.py` records the real
py-spy against a gloo job): its blocking dump fails the way py-spy 0.4.3 fails on a
stopped process (its text copied from `fixtures/bundles/stopped_rank/`), its non-blocking
one prints a dump.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.analysis import RankState, analyze
from reporter.collect import CollectRequest, collect, procfs
from reporter.collect.dumps import DumpResult, DumpStatus, wants_nonblocking
from reporter.load import bundle as bundle_io

ROOT = Path(__file__).resolve().parents[2]
REAL_FAILURE = ROOT / "fixtures" / "bundles" / "stopped_rank" / "pyspy" / "snapshots"
AT = datetime(2026, 12, 1, tzinfo=UTC)


def _result(status: DumpStatus, stderr: str, *, permission: bool = False) -> DumpResult:
    return DumpResult(
        pid=7,
        snapshot=0,
        started_at=AT,
        seconds=1.0,
        status=status,
        returncode=1,
        stdout="",
        stderr=stderr,
        reason=stderr.splitlines()[0] if stderr else "",
        permission=permission,
    )


def test_which_failures_get_a_nonblocking_dump() -> None:
    real = (REAL_FAILURE / "rank2_s0.txt").read_text(encoding="utf-8")
    error = real[real.index("Error:") :]
    assert wants_nonblocking(_result(DumpStatus.FAILED, error))
    assert wants_nonblocking(_result(DumpStatus.TIMED_OUT, ""))
    assert not wants_nonblocking(_result(DumpStatus.OK, ""))
    refused = "Permission Denied: Try running again with elevated permissions"
    assert not wants_nonblocking(_result(DumpStatus.FAILED, refused, permission=True))
    gone = "Error: Failed to get process executable name.\n    0: No such file or directory (os error 2)"
    assert not wants_nonblocking(_result(DumpStatus.FAILED, gone))


def test_status_copy_from_a_fake_tree(tmp_path: Path) -> None:
    base = tmp_path / "42"
    base.mkdir()
    (base / "status").write_text("Name:\tpython3\nState:\tT (stopped)\nPid:\t42\n")
    (base / "wchan").write_text("do_signal_stop")
    assert procfs.status_copy(42, proc=tmp_path).endswith("Pid:\t42\nWchan:\tdo_signal_stop\n")
    (base / "wchan").write_text("0")  # running: the kernel writes 0
    assert "Wchan" not in procfs.status_copy(42, proc=tmp_path)
    assert procfs.status_copy(43, proc=tmp_path) == ""  # gone


def _fake_pyspy(folder: Path) -> Path:
    real = (REAL_FAILURE / "rank2_s0.txt").read_text(encoding="utf-8")
    error = real[real.index("Error:") :]
    script = folder / "py-spy"
    script.write_text(
        f"#!{sys.executable}\n"
        + textwrap.dedent(
            f"""\
            import sys
            args = sys.argv[1:]
            if args == ["--version"]:
                print("py-spy 0.4.3")
                sys.exit(0)
            pid = args[args.index("--pid") + 1]
            header = f"Process {{pid}}: python3 stopped-child\\nPython v3.11.7 (/usr/bin/python3.11)\\n"
            if "--nonblocking" in args:
                print(header + f'\\nThread {{pid}} (idle): "MainThread"\\n    <module> (<string>:1)')
                sys.exit(0)
            print(header)
            sys.stderr.write({error!r}.replace("18278", pid).replace("5181", pid))
            sys.exit(1)
            """
        ),
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


@pytest.mark.skipif(sys.platform != "linux", reason="/proc and SIGSTOP: Linux only")
def test_a_stopped_target_is_recorded_and_read_back_as_stopped(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while "T (stopped)" not in procfs.read_status(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        out = tmp_path / "b"
        collect(
            CollectRequest(
                out=out,
                pids=(child.pid,),
                snapshots=2,
                interval=0.1,
                blocking=True,
                pyspy=str(_fake_pyspy(tmp_path)),
            ),
            progress=lambda _line: None,
            stop=threading.Event(),
        )
        files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
        for k in (0, 1):
            assert f"proc/pid{child.pid}-s{k}.status" in files
            assert f"pyspy/pid{child.pid}-s{k}.txt" in files
            assert f"pyspy/pid{child.pid}-s{k}-nonblocking.txt" in files
        status = (out / f"proc/pid{child.pid}-s0.status").read_text(encoding="utf-8")
        assert "State:\tT (stopped)" in status and status.endswith("Wchan:\tdo_signal_stop\n")
        analysis = analyze(bundle_io.load([out]))
        (process,) = analysis.processes
        assert process.state is RankState.STOPPED
        assert process.condition is not None
        assert process.condition.wchan == "do_signal_stop"
        assert process.condition.at == "<module> (<string>:1)"
    finally:
        child.kill()
        child.wait()
