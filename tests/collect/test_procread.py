"""`procread.read_waits` on real processes started here: a child writing into a pipe
nobody reads, a zombie child, a listening socket; and its caps and deadline."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reporter.collect import procread
from reporter.evidence import sniff
from reporter.model import EvidenceKind, FdKind, ParseResult

WRITER = "import sys\nsys.stdout.write('x' * (1 << 20))\nsys.stdout.flush()\n"


def _parse(text: str) -> ParseResult:
    return sniff.parse(sniff.sniff(text), text, source="t")


@pytest.fixture
def blocked_writer() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            wchan = Path(f"/proc/{child.pid}/wchan").read_text().strip()
            if "pipe" in wchan:
                break
            time.sleep(0.05)
        yield child
    finally:
        child.kill()
        assert child.stdout is not None
        child.stdout.close()
        child.wait()


def test_a_writer_blocked_on_a_full_pipe_and_its_reader(
    blocked_writer: subprocess.Popen[bytes],
) -> None:
    read = procread.read_waits(blocked_writer.pid, snapshot=1)
    assert set(read) == set(procread.KINDS)
    threads = _parse(read["threads"]).thread_states
    assert threads[0].tid == blocked_writer.pid
    assert threads[0].state == "S" and "pipe" in threads[0].wchan
    out = next(e for e in _parse(read["fds"]).fd_entries if e.fd == 1)
    assert (out.kind, out.mode) == (FdKind.PIPE, "w")
    # This process holds the other end, for reading: the same inode.
    mine = _parse(procread.read_waits(os.getpid(), snapshot=1)["fds"]).fd_entries
    assert any(e.inode == out.inode and e.mode == "r" for e in mine)
    (family,) = _parse(read["family"]).process_relations
    assert family.ppid == os.getpid() and family.uid == os.getuid()
    assert family.start_ticks and family.started_at is not None


def test_a_zombie_child_is_listed_with_its_state() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] == "Z":
                break
            time.sleep(0.02)
        (family,) = _parse(procread.read_waits(os.getpid(), snapshot=0)["family"]).process_relations
        assert any(c.pid == child.pid and c.state == "Z" for c in family.children)
        # The same answer from a scan of PPids (kernels without task/*/children).
        parents = procread.parent_map()
        text = procread.read_family(os.getpid(), procread._Clock(2.0), parents=parents)
        assert f"Child:\t{child.pid}\tZ\t" in text
    finally:
        child.wait()


def test_a_listening_socket_has_its_row() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        read = procread.read_waits(os.getpid(), snapshot=0)
        assert sniff.sniff(read["sockets"]) is EvidenceKind.PROC_SOCKETS
        rows = _parse(read["sockets"]).socket_rows
        assert any(r.local == f"127.0.0.1:{port}" and r.state == "LISTEN" for r in rows)


def test_a_gone_process_gives_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert procread.read_waits(child.pid, snapshot=0) == {}


def test_a_passed_deadline_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    read = procread.read_waits(os.getpid(), snapshot=0, deadline=-1.0)
    assert "# truncated: deadline passed" in read["threads"]
    assert _parse(read["threads"]).warnings
    monkeypatch.setattr(procread, "MAX_FDS", 1)
    fds = procread.read_waits(os.getpid(), snapshot=0)["fds"]
    assert "# truncated: 1 fds listed" in fds


def test_socket_tables_are_read_once_per_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = procread._table

    def counted(path: str, column: int, clock: procread._Clock) -> tuple[dict[int, str], str]:
        calls.append(path)
        return real(path, column, clock)

    monkeypatch.setattr(procread, "_table", counted)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        cache: procread.NetCache = {}
        first = procread.read_waits(os.getpid(), snapshot=0, cache=cache)["sockets"]
        second = procread.read_waits(os.getpid(), snapshot=0, cache=cache)["sockets"]
    assert len(calls) == 3  # tcp, tcp6, unix: once for both reads
    assert first.split("\n", 1)[1] == second.split("\n", 1)[1]


def test_every_read_has_its_evidence_kind() -> None:
    from reporter.evidence import kinds

    assert set(kinds.CAPTURED) == set(procread.ROUND_READS)
