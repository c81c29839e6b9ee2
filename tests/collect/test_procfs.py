"""`/proc` readers: the pure text parsers, a fake `/proc` tree, and this test's own process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reporter.collect import procfs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4711 (python3) S 4700 4711 4711 0 -1", ("python3", "S", 4700)),
        # A title may hold spaces and parentheses; the last ")" ends it.
        ("4712 (sglang::schedul) R 4700 1 1", ("sglang::schedul", "R", 4700)),
        ("4713 (a) b (c)) Z 1 1 1", ("a) b (c)", "Z", 1)),
    ],
)
def test_parse_stat(text: str, expected: tuple[str, str, int]) -> None:
    assert procfs.parse_stat(text) == expected


def test_parse_status() -> None:
    text = "Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t000001ffffffffff\n"
    assert procfs.parse_status_uid(text) == 1000
    assert procfs.parse_cap_eff(text) == 0x1FFFFFFFFFF
    assert procfs.parse_status_uid("Name:\tx\n") is None
    assert procfs.parse_cap_eff("") == 0


@pytest.mark.parametrize(
    ("data", "argv"),
    [
        (
            b"/usr/bin/python3\x00-m\x00sglang.launch_server\x00--tp\x004\x00",
            ("/usr/bin/python3", "-m", "sglang.launch_server", "--tp", "4"),
        ),
        (b"sglang::scheduler_TP0" + b"\x00" * 300, ("sglang::scheduler_TP0",)),
        (b"a\x00\x00b\x00", ("a", "", "b")),  # an empty argument in the middle stays
        (b"", ()),
    ],
)
def test_split_cmdline(data: bytes, argv: tuple[str, ...]) -> None:
    assert procfs.split_cmdline(data) == argv


def test_environ_blank() -> None:
    assert procfs.environ_blank(b"\x00" * 500)
    assert procfs.environ_blank(b"")
    assert procfs.environ_blank(b"sglang::scheduler_TP0\x00\x00")
    assert not procfs.environ_blank(b"A=1\x00")


@pytest.mark.parametrize(
    ("exe", "expected"),
    [
        ("/usr/bin/python3.11", True),
        ("/opt/venv/bin/python", True),
        ("/usr/local/bin/python3.12d", True),
        ("/usr/bin/pypy3", True),
        ("/usr/bin/python3.11 (deleted)", True),
        ("/usr/bin/tail", False),
        ("/usr/bin/pythonista-helper", False),
    ],
)
def test_is_python_exe(exe: str, expected: bool) -> None:
    assert procfs.is_python_exe(exe) is expected


def _fake_proc(
    root: Path, pid: int, *, ppid: int, comm: str, cmdline: bytes, uid: int, maps: str = ""
) -> None:
    base = root / str(pid)
    base.mkdir()
    (base / "stat").write_text(f"{pid} ({comm}) S {ppid} {pid} {pid} 0 -1\n")
    (base / "cmdline").write_bytes(cmdline)
    (base / "status").write_text(f"Name:\t{comm}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    (base / "maps").write_text(maps)


def test_list_processes_from_a_fake_tree(tmp_path: Path) -> None:
    _fake_proc(
        tmp_path,
        20,
        ppid=1,
        comm="uwsgi",
        cmdline=b"uwsgi\x00--ini\x00app.ini\x00",
        uid=33,
        maps="7f00 r-xp /usr/lib/libpython3.11.so.1.0\n",
    )
    _fake_proc(
        tmp_path,
        7,
        ppid=1,
        comm="sglang::schedul",
        cmdline=b"sglang::scheduler_TP0\x00\x00\x00",
        uid=0,
    )
    (tmp_path / "self").mkdir()  # not a PID
    (tmp_path / "99").mkdir()  # exited while listed: no files
    found = procfs.list_processes(proc=tmp_path)
    assert [p.pid for p in found] == [7, 20]
    sched, uwsgi = found
    assert sched.title == "sglang::scheduler_TP0" and sched.uid == 0 and sched.exe is None
    assert uwsgi.uid == 33 and uwsgi.argv == ("uwsgi", "--ini", "app.ini")
    # No exe link in the fake tree: the maps decide, and libpython is mapped in uwsgi.
    assert procfs.looks_like_python(uwsgi, proc=tmp_path) is True
    assert procfs.looks_like_python(sched, proc=tmp_path) is None


def test_read_a_real_child() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "marker-arg"],
        env={**os.environ, "COLLECT_TEST": "1"},
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            info = procfs.read_process(child.pid)
            if (info is not None and "marker-arg" in info.argv) or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert info is not None
        assert info.ppid == os.getpid()
        assert info.uid == os.getuid()
        assert info.argv[-1] == "marker-arg"
        assert info.exe is not None and procfs.looks_like_python(info)
        assert b"COLLECT_TEST=1" in procfs.read_bytes(child.pid, "environ")
    finally:
        child.kill()
        child.wait()
    assert procfs.read_process(child.pid) is None
