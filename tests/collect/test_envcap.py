"""Environment capture from live children: /proc copies, the interpreter's packages, systemctl."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from reporter.collect import envcap, procfs, runner
from reporter.collect.procfs import ProcessInfo
from reporter.secrets import scrub

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
DETECTOR = scrub.default_detector()


def _wait_for(pid: int, marker: str) -> ProcessInfo:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        info = procfs.read_process(pid)
        if info is not None and marker in info.title:
            return info
        time.sleep(0.02)
    raise AssertionError(f"PID {pid} never showed {marker!r}")


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "HF_TOKEN": "hf_" + "x" * 30, "NCCL_DEBUG": "INFO"}
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "--api-key", GH, "--tp", "2"], env=env
    )
    _wait_for(proc.pid, "--tp")
    yield proc
    proc.kill()
    proc.wait()


def test_cmdline_and_environ_are_redacted(child: subprocess.Popen[bytes]) -> None:
    cmdline = envcap.capture_cmdline(child.pid, detector=DETECTOR)
    assert cmdline.redacted == 1
    assert cmdline.text.split("\x00")[-5:] == ["--api-key", "[redacted]", "--tp", "2", ""]
    environ = envcap.capture_environ(child.pid, detector=DETECTOR)
    assert environ.error == "" and environ.redacted >= 1
    assert envcap.environ_value(environ.text, "HF_TOKEN") == "[redacted]"
    assert envcap.environ_value(environ.text, "NCCL_DEBUG") == "INFO"
    raw = envcap.capture_environ(child.pid, detector=None)
    assert envcap.environ_value(raw.text, "HF_TOKEN") == "hf_" + "x" * 30
    assert GH in envcap.capture_cmdline(child.pid, detector=None).text


def test_a_title_overwrites_the_environment() -> None:
    pytest.importorskip("setproctitle")
    # The title is built at run time, so the original command line does not hold it.
    code = "import setproctitle, time; setproctitle.setproctitle('collect-test' + '::titled'); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        info = _wait_for(proc.pid, "collect-test::titled")
        assert info.argv == ("collect-test::titled",)
        captured = envcap.capture_environ(proc.pid, detector=DETECTOR)
        assert "holds no variables" in captured.error and captured.text == ""
    finally:
        proc.kill()
        proc.wait()


def test_environ_of_a_missing_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert envcap.capture_environ(proc.pid, detector=DETECTOR).error.startswith(
        "cannot read /proc/PID/environ"
    )
    assert envcap.capture_cmdline(proc.pid, detector=DETECTOR).error.startswith(
        "cannot read /proc/PID/cmdline"
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv (symlinked interpreter) holding one fake distribution."""
    root = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    site = next(root.glob("lib/python*/site-packages"))
    info = site / "collect_fixture_pkg-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: collect-fixture-pkg\nVersion: 1.2.3\n"
    )
    return root


def test_packages_of_a_venv_process(venv: Path) -> None:
    python = venv / "bin" / "python"
    proc = subprocess.Popen([str(python), "-c", "import time; time.sleep(60)", "venv-marker"])
    try:
        info = _wait_for(proc.pid, "venv-marker")
        cwd, real = envcap.read_cwd_and_exe(proc.pid)
        assert real is not None and not real.startswith(str(venv))  # /proc/PID/exe: the base binary
        interpreter = envcap.choose_interpreter(info, None, environ=None, cwd=cwd, real_exe=real)
        assert interpreter.argv0 == str(python)
        assert interpreter.executable == f"/proc/{proc.pid}/exe"
        listed = envcap.list_packages(interpreter, timeout=60, stop=None)
        assert listed.error == ""
        assert "collect-fixture-pkg==1.2.3" in listed.text.splitlines()
        assert not any(line.startswith("typer==") for line in listed.text.splitlines())
    finally:
        proc.kill()
        proc.wait()


def test_a_titled_child_uses_its_parents_launch_path(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    real = str(Path(python).resolve())
    target = ProcessInfo(
        pid=11,
        ppid=10,
        state="S",
        comm="sglang::schedul",
        argv=("sglang::scheduler_TP0",),
        exe=real,
    )
    parent = ProcessInfo(
        pid=10,
        ppid=1,
        state="S",
        comm="python",
        argv=(python, "-m", "sglang.launch_server"),
        exe=real,
    )
    chosen = envcap.choose_interpreter(
        target,
        parent,
        environ="PYTHONPATH=/srv/a:/srv/b\x00HOME=/home/u\x00",
        cwd="/",
        real_exe=real,
    )
    assert (chosen.argv0, chosen.pythonpath, chosen.home) == (
        python,
        ("/srv/a", "/srv/b"),
        "/home/u",
    )
    # Another binary in the parent: it is not the target's interpreter.
    stranger = ProcessInfo(
        pid=10, ppid=1, state="S", comm="bash", argv=("/bin/bash",), exe="/bin/bash"
    )
    assert (
        envcap.choose_interpreter(target, stranger, environ=None, cwd="/", real_exe=real).argv0
        == real
    )
    # $VIRTUAL_ENV names it too.
    venv_env = f"VIRTUAL_ENV={venv}\x00"
    assert (
        envcap.choose_interpreter(target, None, environ=venv_env, cwd="/", real_exe=real).argv0
        == python
    )


def test_packages_of_this_interpreter() -> None:
    real = str(Path(sys.executable).resolve())
    interpreter = envcap.Interpreter(argv0=sys.executable, executable=sys.executable, real=real)
    listed = envcap.list_packages(interpreter, timeout=60, stop=None)
    lines = listed.text.splitlines()
    assert any(line.startswith("typer==") for line in lines)
    assert lines == sorted(
        lines, key=lambda line: line.split("=")[0].split(" @ ")[0].lower().replace("_", "-")
    )
    broken = envcap.Interpreter(
        argv0="/nonexistent/python", executable="/nonexistent/python", real="/x"
    )
    assert (
        "cannot run /nonexistent/python" in envcap.list_packages(broken, timeout=5, stop=None).error
    )


def _script(folder: Path, body: str) -> str:
    path = folder / "systemctl"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_systemctl_show(tmp_path: Path) -> None:
    assert (
        "not installed"
        in envcap.systemctl_show("a.service", timeout=5, stop=None, systemctl=None).error
    )
    good = _script(
        tmp_path, 'echo "Id=$2"; echo "ExecMainStartTimestamp=Sun 2026-11-29 14:39:58 UTC"\n'
    )
    shown = envcap.systemctl_show("sglang.service", timeout=5, stop=None, systemctl=good)
    assert shown.text.startswith("Id=sglang.service\n") and shown.error == ""
    missing = _script(tmp_path, 'echo "Id=$2"; echo "LoadState=not-found"\n')
    assert (
        "LoadState=not-found"
        in envcap.systemctl_show("x.service", timeout=5, stop=None, systemctl=missing).error
    )
    no_systemd = _script(
        tmp_path,
        'echo "System has not been booted with systemd as init system (PID 1). Can\'t operate." >&2; exit 1\n',
    )
    error = envcap.systemctl_show("x.service", timeout=5, stop=None, systemctl=no_systemd).error
    assert (
        error
        == "systemctl show x.service: System has not been booted with systemd as init system (PID 1). Can't operate."
    )


# --- where py-spy is found ------------------------------------------------------------


def _program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho py-spy 0.0.0\n")
    path.chmod(0o755)
    return path


def test_pyspy_beside_the_interpreter_wins_over_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv called by path (pipx, uv tool): py-spy sits beside python, not on PATH."""
    venv_bin = tmp_path / "venv" / "bin"
    beside = _program(venv_bin / "py-spy")
    on_path = _program(tmp_path / "usr" / "bin" / "py-spy")
    monkeypatch.setenv("PATH", str(on_path.parent))
    found = envcap.find_pyspy(executable=str(venv_bin / "python"), scripts="")
    assert found.path == str(beside)
    # The scripts folder (sysconfig) is next, then PATH.
    scripts = _program(tmp_path / "scripts" / "py-spy").parent
    found = envcap.find_pyspy(executable=str(tmp_path / "nowhere" / "python"), scripts=str(scripts))
    assert found.path == str(scripts / "py-spy")
    found = envcap.find_pyspy(executable=str(tmp_path / "nowhere" / "python"), scripts="")
    assert found.path == str(on_path)
    # --py-spy PATH overrides all of them.
    explicit = _program(tmp_path / "mine" / "py-spy")
    assert envcap.find_pyspy(str(explicit), executable=str(venv_bin / "python")).path == str(
        explicit
    )


def test_pyspy_missing_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = envcap.find_pyspy(executable=str(tmp_path / "venv" / "bin" / "python"), scripts="")
    assert found.path is None
    assert found.searched == f"{tmp_path / 'venv' / 'bin'} and PATH"
    missing = envcap.find_pyspy(str(tmp_path / "no-py-spy"))
    assert missing.path is None and missing.searched == str(tmp_path / "no-py-spy")


def test_this_interpreter_finds_its_own_pyspy() -> None:
    """The dev venv has py-spy as a dependency: it is found beside sys.executable."""
    beside = Path(sys.executable).parent / "py-spy"
    if not beside.is_file():
        pytest.skip("py-spy is not installed beside this interpreter")
    assert envcap.find_pyspy().path == str(beside)


# --- a root collector runs a target's own interpreter as the target's user -------------------

NOBODY = (65534, 65534)
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root can run a child as another user"
)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder any user can read and run files from (pytest's own tmp_path is owner-only)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="reporter-owner-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@needs_root
def test_run_bounded_runs_as_the_given_user() -> None:
    done = runner.run_bounded(["sh", "-c", "id -u; id -G"], timeout=10, user=NOBODY)
    assert done.ok, done.stderr
    uid, groups = done.stdout.split("\n", 1)
    # Root's supplementary groups are dropped, not inherited.
    assert uid == "65534" and groups.split() == ["65534"]


def test_run_as_is_the_target_user_only_when_we_are_root_and_it_is_not() -> None:
    base = envcap.Interpreter(argv0="/x/python", executable="/x/python", real="/x/python")
    assert base.run_as is None  # owner unknown: run as ourselves
    assert replace(base, owner=(0, 0)).run_as is None  # a root target: nothing to drop
    expected = NOBODY if os.geteuid() == 0 else None
    assert replace(base, owner=NOBODY).run_as == expected


@needs_root
def test_a_targets_interpreter_never_runs_as_root(open_folder: Path) -> None:
    """A target running as another user: its interpreter (which that user may have changed)
    lists packages and runs the product's environment script as that user, not as root."""
    fake = open_folder / "python"
    fake.write_text('#!/bin/sh\necho "uid-check==$(id -u)"\n')
    fake.chmod(0o755)
    target = subprocess.Popen(["sleep", "60"], user=NOBODY[0], group=NOBODY[1], extra_groups=[])
    try:
        deadline = time.monotonic() + 10
        while (info := procfs.read_process(target.pid)) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert info is not None
        chosen = envcap.choose_interpreter(info, None, environ=None, cwd="/", real_exe=None)
        assert chosen.owner == NOBODY
        interpreter = replace(chosen, argv0=str(fake), executable=str(fake), real=str(fake))
        listed = envcap.list_packages(interpreter, timeout=30, stop=None)
        assert listed.text.strip() == "uid-check==65534", listed.error
        script = envcap.run_env_script(interpreter, "sglang.check_env", timeout=30, stop=None)
        assert script.text.strip() == "uid-check==65534", script.error
    finally:
        target.kill()
        target.wait()
