"""Where py-spy and a target's interpreter are looked for, and which copies are never run
(`probe.operator_places`, `probe.find_pyspy`, `probe.writable_by_others`: shared by the local
collector and the remote probe)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reporter.collect import envcap, probe, procfs


def _venv(root: Path, *, pyspy: bool = True) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (root / "bin" / "python").symlink_to(sys.executable)
    if pyspy:
        tool = root / "bin" / "py-spy"
        tool.write_text("#!/bin/sh\n", encoding="utf-8")
        tool.chmod(0o755)
    return root


def _environ(**values: str) -> str:
    return "".join(f"{k}={v}\x00" for k, v in values.items())


def test_a_titled_process_is_found_through_its_parents_venv(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "venv")
    pythons, folders = probe.operator_places(
        ["sglang::scheduler_TP0"],
        [str(venv / "bin" / "python"), "-m", "sglang.launch_server"],
        "",
        "/",
        sys.executable,
    )
    assert pythons[0] == str(venv / "bin" / "python")
    assert folders[0] == str(venv / "bin")
    assert probe.pick_interpreter(pythons, os.path.realpath(sys.executable)) == pythons[0]


def test_virtual_env_conda_prefix_and_path_follow_argv0(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "venv")
    conda = tmp_path / "conda"
    environ = _environ(
        VIRTUAL_ENV=str(venv), CONDA_PREFIX=str(conda), PATH=f"/opt/tools/bin:{venv}/bin"
    )
    _pythons, folders = probe.operator_places(["python3", "serve.py"], [], environ, "/", None)
    assert folders == [str(venv / "bin"), str(conda / "bin"), "/opt/tools/bin"]


def test_a_relative_argv0_is_read_from_the_processes_cwd(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "venv")
    pythons, _folders = probe.operator_places(
        ["venv/bin/python", "x.py"], [], "", str(tmp_path), None
    )
    assert pythons == [str(venv / "bin" / "python")]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_a_py_spy_another_user_could_change_is_never_chosen(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    venv = _venv(tmp_path / "venv")
    os.chown(venv / "bin", 65534, 65534)
    found, _where, refused = probe.find_pyspy(None, [str(venv / "bin")], path="")
    assert found != str(venv / "bin" / "py-spy")
    assert refused == [f"{venv / 'bin' / 'py-spy'} ({venv / 'bin'} belongs to uid 65534)"]
    # Named by the operator, it is used as given.
    named = str(venv / "bin" / "py-spy")
    assert probe.find_pyspy(named, [], path="")[0] == named


def test_who_could_change_a_path(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    tool = tmp_path / "tool"
    tool.write_text("", encoding="utf-8")
    tool.chmod(0o755)
    if all(p.stat().st_uid in (0, os.geteuid()) for p in (tool, *tool.parents)):
        assert probe.writable_by_others(str(tool)) == ""  # /tmp is sticky: allowed
    tool.chmod(0o757)
    assert probe.writable_by_others(str(tool)) == f"{tool} is writable by everyone"
    tool.chmod(0o775)
    if os.geteuid() == 0:
        os.chown(tool, 0, 12345)
        assert probe.writable_by_others(str(tool)) == f"{tool} is writable by group 12345"
    link = tmp_path / "link"
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    (open_folder / "py-spy").write_text("", encoding="utf-8")
    link.symlink_to(open_folder / "py-spy")
    assert probe.writable_by_others(str(link)) == f"{open_folder} is writable by everyone"


def test_a_bare_remote_py_spy_name_is_looked_up_on_path(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "venv")
    found, where, _ = probe.find_pyspy("py-spy", [], path=str(venv / "bin"))
    assert found == str(venv / "bin" / "py-spy")
    assert where.startswith("py-spy on PATH")
    assert probe.find_pyspy("py-spy", [], path=str(tmp_path))[0] is None


def test_dropping_to_a_user_clears_the_groups() -> None:
    assert probe.as_user(None) == {}
    assert probe.as_user((65534, 65534)) == {"user": 65534, "group": 65534, "extra_groups": []}
    assert probe.run_as(None) is None
    assert probe.run_as((0, 0)) is None
    expected = (65534, 65534) if os.geteuid() == 0 else None
    assert probe.run_as((65534, 65534)) == expected


def test_a_local_capture_looks_in_the_targets_venv_too(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    venv = _venv(tmp_path / "venv")
    child = subprocess.Popen(
        [str(venv / "bin" / "python"), "-c", "import time; time.sleep(30)"],
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        deadline = time.monotonic() + 10
        target = procfs.read_process(child.pid)
        while target is None or target.exe is None or "python" not in target.exe:
            assert time.monotonic() < deadline
            time.sleep(0.05)
            target = procfs.read_process(child.pid)
        found = envcap.find_pyspy_near([target], {}, "beside report and PATH")
        if probe.writable_by_others(str(venv / "bin" / "py-spy")):
            pytest.skip("the temporary folder is not one only root (or we) may change")
        assert found.path == str(venv / "bin" / "py-spy")
        assert found.searched.startswith("beside report and PATH, ")
        if os.geteuid() == 0:
            os.chown(venv / "bin" / "py-spy", 65534, 65534)
            refused = envcap.find_pyspy_near([target], {}, "PATH")
            assert refused.path != str(venv / "bin" / "py-spy")
            assert refused.refused[0].startswith(f"{venv / 'bin' / 'py-spy'} (")
    finally:
        child.kill()
        child.wait()
