"""`--log` tails, the journal of a target's service, and the per-round `/proc` files of a
collection, on real files and real processes (py-spy left out: the `/proc` rounds run
without it)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.collect import logtail, plan
from reporter.collect.manifest import CollectStatus
from reporter.collect.plan import CollectRequest
from reporter.collect.session import collect
from reporter.evidence import logs
from reporter.load.bundle import load
from reporter.model import EvidenceKind, FdKind


def test_tail_keeps_the_last_lines_and_reads_from_the_end(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("".join(f"line {n}\n" for n in range(1000)))
    got = logtail.tail(log, max_lines=3, max_bytes=1 << 20)
    assert got.text == "line 997\nline 998\nline 999\n"
    assert got.cut == "last 3 lines of 1000"
    cut = logtail.tail(log, max_lines=100, max_bytes=30)
    # 30 bytes from the end, less the part line they start in the middle of.
    assert cut.text == "line 997\nline 998\nline 999\n"
    assert cut.cut.startswith("last 0.0 MiB of")
    whole = logtail.tail(log, max_lines=5000, max_bytes=1 << 20)
    assert whole.lines == 1000 and whole.cut == ""


def test_expand_globs_and_says_what_it_missed(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("a\n")
    (tmp_path / "b.log").write_text("b\n")
    (tmp_path / "dir.log").mkdir()
    files, missing = logtail.expand(
        (str(tmp_path / "*.log"), str(tmp_path / "a.log"), str(tmp_path / "none-*.log"), "/no/x")
    )
    assert files == [tmp_path / "a.log", tmp_path / "b.log"]
    assert [m[0] for m in missing] == [str(tmp_path / "none-*.log"), "/no/x"]
    assert "no regular file matches" in missing[0][1]


def test_log_paths_stay_apart() -> None:
    taken: set[str] = set()
    first = plan.log_path("/var/log/a/app.log", taken)
    taken.add(first)
    second = plan.log_path("/var/log/b/app.log", taken)
    taken.add(second)
    third = plan.log_path("/var/log/b/app.log", taken)
    assert (first, second, third) == ("logs/app.log", "logs/b-app.log", "logs/app-2.log")


@pytest.mark.parametrize(
    ("cgroup", "unit"),
    [
        ("0::/system.slice/sglang.service\n", "sglang.service"),
        (
            "12:pids:/system.slice/vllm@0.service\n0::/system.slice/vllm@0.service\n",
            "vllm@0.service",
        ),
        ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.service\n", None),
        ("0::/system.slice/docker-abc.scope\n", None),
        ("0::/\n", None),
    ],
)
def test_unit_of(tmp_path: Path, cgroup: str, unit: str | None) -> None:
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "cgroup").write_text(cgroup)
    assert logtail.unit_of(42, proc=str(tmp_path)) == unit


def test_journal_is_skipped_cleanly_without_journald(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = logtail.journal(
        "x.service", since=None, journalctl=None, max_lines=10, max_bytes=1024, timeout=1, stop=None
    )
    assert "not installed" in missing.error
    monkeypatch.setattr(logtail, "JOURNAL_SOCKETS", ("/nonexistent/journal",))
    idle = logtail.journal(
        "x.service",
        since=None,
        journalctl="/bin/true",
        max_lines=10,
        max_bytes=1024,
        timeout=1,
        stop=None,
    )
    assert "journald is not running" in idle.error


def test_a_collection_keeps_the_proc_rounds_and_the_log(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(
        "2026-12-07 12:00:00,000 INFO started\n"
        "2026-12-07 12:00:01,000 ERROR worker (pid 4242) exited with code 3\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * (1 << 20))"],
        stdout=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while "pipe" not in Path(f"/proc/{child.pid}/wchan").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        out = tmp_path / "bundle"
        summary = collect(
            CollectRequest(
                out=out,
                pids=(child.pid,),
                snapshots=2,
                interval=0.2,
                pyspy=str(tmp_path / "no-py-spy"),
                logs=(str(log),),
                kernel_log=False,
            ),
            progress=lambda _line: None,
            stop=threading.Event(),
        )
    finally:
        child.kill()
        assert child.stdout is not None
        child.stdout.close()
        child.wait()
    assert summary.status is CollectStatus.INCOMPLETE  # no stacks without py-spy
    manifest = tomllib.loads((out / "bundle.toml").read_text())
    kinds = {e["path"]: e["kind"] for e in manifest["evidence"]}
    for k in (0, 1):
        for what, kind in (
            ("threads", "proc-threads"),
            ("fds", "proc-fds"),
            ("sockets", "proc-sockets"),
            ("family", "proc-family"),
            ("status", "proc-status"),
        ):
            assert kinds[f"proc/pid{child.pid}-s{k}.{what}"] == kind
    assert kinds["logs/job.log"] == "log"
    bundle = load([out])
    assert {t.snapshot for t in bundle.thread_states} == {0, 1}
    assert all("pipe" in t.wchan for t in bundle.thread_states)
    stdout = [e for e in bundle.fd_entries if e.fd == 1]
    assert {(e.kind, e.mode) for e in stdout} == {(FdKind.PIPE, "w")}
    assert {r.snapshot for r in bundle.process_relations} == {0, 1}
    (event,) = bundle.log_events
    assert (event.pid, event.exit_code) == (4242, 3)
    assert EvidenceKind.PROC_FAMILY in {f.kind for f in bundle.files}


FAKE_DMESG = """#!/bin/sh
cat <<'END'
2026-12-07T12:00:00,000001+00:00 EXT4-fs (vda): mounted filesystem
2026-12-07T13:30:00,000001+01:00 before the target started (12:30 UTC)
2026-12-07T12:40:00,000001+00:00 Out of memory: Killed process 4711 (python3) total-vm:1kB
 a continuation line
2026-12-07T12:41:00,000001+00:00 INFO: task python3:4712 blocked for more than 120 seconds.
END
"""


def test_kernel_log_since_the_targets_started(tmp_path: Path) -> None:
    dmesg = tmp_path / "dmesg"
    dmesg.write_text(FAKE_DMESG)
    dmesg.chmod(0o755)
    since = datetime(2026, 12, 7, 12, 35, tzinfo=UTC)
    got = logtail.kernel_log(
        since=since, dmesg=str(dmesg), max_lines=100, max_bytes=1 << 20, timeout=10, stop=None
    )
    assert got.error == ""
    assert got.text.splitlines() == FAKE_DMESG.splitlines()[4:7]
    events = logs.parse(got.text, source="kernel.log").log_events
    assert [(e.kind.value, e.pid) for e in events] == [("oom-kill", 4711), ("hung-task", 4712)]
    refused = tmp_path / "refused"
    refused.write_text(
        "#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n"
    )
    refused.chmod(0o755)
    no = logtail.kernel_log(
        since=since, dmesg=str(refused), max_lines=100, max_bytes=1 << 20, timeout=10, stop=None
    )
    assert "Operation not permitted" in no.error
