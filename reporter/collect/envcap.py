"""Environment evidence of a live process: command line, environment, installed packages, unit state.

* `/proc/PID/cmdline` and `/proc/PID/environ` are copied with secret values
  redacted (`scrub.py`) unless the caller asks for raw copies.
* Package versions come from the target's own interpreter, run read-only with a
  timeout: `importlib.metadata` from a `-c` script (`PACKAGES_SCRIPT`; `-E -B`, no
  network, nothing imported from the packages), else `pip list --format=freeze`.
  The interpreter is `/proc/PID/exe`, started under the path the target was
  launched with when that path is the same binary, so that a virtualenv (found from
  the path, not the resolved binary) lists its own packages. A root collector runs it
  (and the product's environment script) as the target's user, never as root: the
  interpreter and its site-packages are that user's to change.
* `systemctl show UNIT` when systemctl exists.

Output: `Capture` values (text to save, or why there is none); the session saves them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reporter.collect import probe, procfs
from reporter.collect.procfs import ProcessInfo
from reporter.collect.runner import Finished, run_bounded
from reporter.secrets.scrub import SecretDetector, scrub_cmdline, scrub_environ

# Reads distribution metadata only; works on Python 3.8+. Paths given as arguments
# (the target's PYTHONPATH) are searched first, as they were in the target.
PACKAGES_SCRIPT = """\
import json, os, re, sys
sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
sys.path[:0] = sys.argv[1:]
from importlib import metadata
lines = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if not name:
        continue
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in lines:
        continue
    line = "%s==%s" % (name, dist.version)
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "null")
    except Exception:
        direct = None
    if isinstance(direct, dict) and isinstance(direct.get("vcs_info"), dict):
        vcs = direct["vcs_info"]
        line = "%s @ %s+%s@%s" % (name, vcs.get("vcs", "git"), direct.get("url", ""),
                                  vcs.get("commit_id", ""))
    lines[key] = line
sys.stdout.write("".join(lines[k] + "\\n" for k in sorted(lines)))
"""
_PIP_ARGS = ("-m", "pip", "list", "--format=freeze", "--disable-pip-version-check", "--no-input")
_PIP_ENV = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_NO_INDEX": "1"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture:
    """Text to save as evidence, a note on how it was made, or why nothing was captured."""

    text: str = ""
    note: str = ""
    error: str = ""
    redacted: int = 0


def capture_cmdline(pid: int, *, detector: SecretDetector | None) -> Capture:
    """`/proc/PID/cmdline`, secrets redacted unless `detector` is None (`--raw-env`)."""
    try:
        data = procfs.read_bytes(pid, "cmdline")
    except OSError as err:
        return Capture(error=f"cannot read /proc/PID/cmdline ({err.strerror})")
    return cmdline_evidence(data, detector=detector)


def cmdline_evidence(data: bytes, *, detector: SecretDetector | None) -> Capture:
    """The raw bytes of a `/proc/PID/cmdline` as evidence: NUL-separated, secrets redacted
    unless `detector` is None. A local capture and the remote probe's bytes both come here."""
    if detector is None:
        return Capture(text=data.rstrip(b"\x00").decode("utf-8", errors="replace") + "\x00")
    scrubbed, count = scrub_cmdline(data, detector)
    return Capture(text=scrubbed.decode("utf-8", errors="replace"), redacted=count)


def capture_environ(pid: int, *, detector: SecretDetector | None) -> Capture:
    """`/proc/PID/environ`, secrets redacted unless `detector` is None (`--raw-env`).

    An environment that holds no `NAME=value` entry is reported as an error: a
    process title set with setproctitle overwrites that memory.
    """
    try:
        data = procfs.read_bytes(pid, "environ")
    except OSError as err:
        why = (
            "another user's process: needs the same rights as ptrace"
            if err.errno in (1, 13)
            else err.strerror
        )
        return Capture(error=f"cannot read /proc/PID/environ ({why})")
    return environ_evidence(data, detector=detector)


def environ_evidence(data: bytes, *, detector: SecretDetector | None) -> Capture:
    """The raw bytes of a `/proc/PID/environ` as evidence (see `cmdline_evidence`)."""
    if procfs.environ_blank(data):
        return Capture(
            error="/proc/PID/environ holds no variables (a process title set with "
            "setproctitle overwrites that memory)"
        )
    if detector is None:
        return Capture(text=data.decode("utf-8", errors="replace"))
    scrubbed, count = scrub_environ(data, detector)
    return Capture(text=scrubbed.decode("utf-8", errors="replace"), redacted=count)


def environ_value(text: str, name: str) -> str | None:
    """One variable's value in a NUL-separated environ copy."""
    prefix = name + "="
    for entry in text.split("\x00"):
        if entry.startswith(prefix):
            return entry[len(prefix) :]
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Interpreter:
    """How to start a target's interpreter: `argv0` as launched, the binary to execute."""

    argv0: str
    executable: str
    real: str
    """The binary's real path: targets running the same one share a listing."""
    pythonpath: tuple[str, ...] = ()
    home: str | None = None
    owner: tuple[int, int] | None = None
    """The target's (uid, gid): the user its interpreter is run as when the collector is
    root, so code the target's user can change never runs with root's rights."""

    @property
    def key(self) -> tuple[str, str, tuple[str, ...], tuple[int, int] | None]:
        """Targets with the same key share one package listing."""
        return (self.argv0, self.real, self.pythonpath, self.owner)

    @property
    def run_as(self) -> tuple[int, int] | None:
        """(uid, gid) to run the interpreter as (`probe.run_as`, shared with the remote
        probe): the target's user when this process is root and the target is not."""
        return probe.run_as(self.owner)


def choose_interpreter(
    target: ProcessInfo,
    parent: ProcessInfo | None,
    *,
    environ: str | None,
    cwd: str | None,
    real_exe: str | None,
) -> Interpreter:
    """The interpreter to list packages with (see the module docstring).

    The launch path is the first place an operator would look (`probe.operator_places`,
    the code the remote probe runs: the target's argv[0], its parent's, `VIRTUAL_ENV`,
    a `pyvenv.cfg` beside its executable) that is the same file as the target's binary;
    otherwise `/proc/PID/exe` itself.
    """
    exe = f"/proc/{target.pid}/exe"
    pythons, _folders = probe.operator_places(
        target.argv, parent.argv if parent is not None else (), environ or "", cwd, target.exe
    )
    pythonpath = environ_value(environ, "PYTHONPATH") if environ else None
    real = real_exe or exe
    return Interpreter(
        argv0=probe.pick_interpreter(pythons, real_exe) if real_exe else exe,
        executable=exe,
        real=real,
        pythonpath=tuple(p for p in (pythonpath or "").split(os.pathsep) if p),
        home=environ_value(environ, "HOME") if environ else None,
        owner=probe.owner_of(target.pid),
    )


def read_cwd_and_exe(pid: int) -> tuple[str | None, str | None]:
    """`/proc/PID/cwd` and the real path of `/proc/PID/exe` (None where unreadable)."""
    out: list[str | None] = []
    for name in ("cwd", "exe"):
        try:
            out.append(str(Path(f"/proc/{pid}/{name}").readlink()))
        except OSError:
            out.append(None)
    return out[0], out[1]


def list_packages(
    interpreter: Interpreter, *, timeout: float, stop: threading.Event | None
) -> Capture:
    """The packages the interpreter sees, `name==version` per line, sorted by name."""
    argv = (interpreter.argv0, "-E", "-B", "-c", PACKAGES_SCRIPT, *interpreter.pythonpath)
    done = _run_as_target(interpreter, argv, timeout=timeout, stop=stop)
    if done.ok and done.stdout.strip():
        return Capture(text=done.stdout, note=f"importlib.metadata via {interpreter.argv0}")
    first = _why(done, timeout)
    pip = _run_as_target(
        interpreter,
        (interpreter.argv0, "-E", "-B", *_PIP_ARGS),
        timeout=timeout,
        stop=stop,
        extra_env=_PIP_ENV,
    )
    if pip.ok and pip.stdout.strip():
        return Capture(text=pip.stdout, note=f"pip list --format=freeze via {interpreter.argv0}")
    return Capture(
        error=f"could not list the packages of {interpreter.argv0}: importlib.metadata: {first}; "
        f"pip: {_why(pip, timeout)}"
    )


# The product's own environment report, which its bug form asks for, by the package that
# ships it: (distribution, module run with -m, evidence kind's value, file name).
ENV_SCRIPTS = (
    ("sglang", "sglang.check_env", "sglang-check-env", "check_env.txt"),
    ("vllm", "vllm.collect_env", "vllm-collect-env", "collect_env.txt"),
)
# Seconds an environment script may take (it imports torch and asks the GPUs) and the
# most of its output kept.
ENV_SCRIPT_TIMEOUT = 60.0
ENV_SCRIPT_MAX_CHARS = 256 * 1024


def env_script_for(freeze: str) -> tuple[str, str, str, str] | None:
    """The environment script of the first product in `name==version` lines, or None."""
    names = {
        line.partition("==")[0].strip().lower().replace("_", "-") for line in freeze.splitlines()
    }
    return next((entry for entry in ENV_SCRIPTS if entry[0] in names), None)


def run_env_script(
    interpreter: Interpreter, module: str, *, timeout: float, stop: threading.Event | None
) -> Capture:
    """`python -m sglang.check_env` (or vLLM's `collect_env`) in the target's interpreter:
    a separate process that reads versions and asks the GPU driver, never the target;
    its own process group, ended at `timeout`. Its output is raw: the session masks it
    (`SessionState.masked`)."""
    argv = (interpreter.argv0, "-B", "-m", module)
    done = _run_as_target(interpreter, argv, timeout=timeout, stop=stop)
    if done.ok and done.stdout.strip():
        text = done.stdout[:ENV_SCRIPT_MAX_CHARS]
        return Capture(text=text, note=f"python -m {module} via {interpreter.argv0}")
    return Capture(error=f"python -m {module} via {interpreter.argv0}: {_why(done, timeout)}")


def _run_as_target(
    interpreter: Interpreter,
    argv: tuple[str, ...],
    *,
    timeout: float,
    stop: threading.Event | None,
    extra_env: dict[str, str] | None = None,
) -> Finished:
    """`argv` run by the target's interpreter as the target's user, from `/`, with a plain
    environment (PATH, a C locale, the user's HOME): none of ours, none of the target's."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
    if interpreter.home:
        env["HOME"] = interpreter.home
    return run_bounded(
        argv,
        timeout=timeout,
        stop=stop,
        env={**env, **(extra_env or {})},
        cwd="/",
        executable=interpreter.executable,
        user=interpreter.run_as,
    )


def _why(done: Finished, timeout: float) -> str:
    if done.launch_error:
        return done.launch_error
    if done.stopped:
        return "interrupted"
    if done.timed_out:
        return f"no answer within {timeout:g} s"
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    if done.returncode == 0:
        return "printed nothing"
    return lines[-1] if lines else f"exit status {done.returncode}"


def systemctl_show(
    unit: str, *, timeout: float, stop: threading.Event | None, systemctl: str | None
) -> Capture:
    """`systemctl show UNIT` text, or why it could not be had."""
    if systemctl is None:
        return Capture(error="systemctl is not installed here (not a systemd host)")
    done = run_bounded(
        (systemctl, "show", unit, "--no-pager"), timeout=timeout, stop=stop, env=_plain_env()
    )
    if not done.ok:
        return Capture(error=f"systemctl show {unit}: {_why(done, timeout)}")
    if "LoadState=not-found" in done.stdout:
        return Capture(error=f"systemd knows no unit {unit!r} (LoadState=not-found)")
    return Capture(text=done.stdout)


def _plain_env() -> dict[str, str]:
    # No pager, no colour, stable wording.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "SYSTEMD_PAGER": ""}


def find_program(name: str, explicit: str | None = None) -> str | None:
    """`explicit` if it is a file, else `name` on PATH; None when missing.

    No `os.access` check: it ignores capabilities, so it can deny a program that runs.
    """
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return shutil.which(name)


def pyspy_candidates(
    *, executable: str | None = None, scripts: str | None = None
) -> tuple[Path, ...]:
    """Where py-spy is looked for before PATH: beside the running interpreter, then the
    environment's scripts folder.

    A venv called by path (`/opt/report/bin/report`), `pipx` and `uv tool` install py-spy
    next to the interpreter without putting that folder on PATH.
    """
    import sysconfig

    name = "py-spy.exe" if os.name == "nt" else "py-spy"
    folders = [Path(executable or sys.executable).parent]
    scripts_dir = scripts if scripts is not None else sysconfig.get_path("scripts")
    if scripts_dir:
        folders.append(Path(scripts_dir))
    return tuple(dict.fromkeys(folder / name for folder in folders))


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """A program's path, or None and the places that were searched (for the message)."""

    path: str | None
    searched: str
    refused: tuple[str, ...] = ()
    """Copies passed over because someone other than root (or us) could change them."""


def find_pyspy(
    explicit: str | None = None, *, executable: str | None = None, scripts: str | None = None
) -> Found:
    """py-spy: `--py-spy PATH`, else beside the interpreter, else the scripts dir, else PATH."""
    if explicit:
        return Found(path=explicit if Path(explicit).is_file() else None, searched=explicit)
    candidates = pyspy_candidates(executable=executable, scripts=scripts)
    for candidate in candidates:
        if candidate.is_file():
            return Found(path=str(candidate), searched=str(candidate))
    on_path = shutil.which("py-spy")
    where = ", ".join(str(c.parent) for c in candidates) + " and PATH"
    return Found(path=on_path, searched=where)


def program_version(program: str, *, timeout: float) -> str:
    """`program --version`, first line, or "" when it says nothing."""
    done = run_bounded((program, "--version"), timeout=timeout)
    return next((line.strip() for line in done.stdout.splitlines() if line.strip()), "")


def find_pyspy_near(
    targets: Sequence[ProcessInfo], processes: Mapping[int, ProcessInfo], searched: str
) -> Found:
    """py-spy where an operator would look next, when it is neither beside this collector
    nor on its PATH: the targets' environments (`probe.operator_places`, as on a remote
    host), used only where no one but root (or us) could have changed it."""
    folders: list[str] = []
    for target in targets:
        parent = processes.get(target.ppid)
        environ = ""
        for pid in (target.pid, target.ppid):
            with contextlib.suppress(OSError):
                data = procfs.read_bytes(pid, "environ")
                if not procfs.environ_blank(data):
                    environ = data.decode("utf-8", errors="replace")
                    break
        cwd, _exe = read_cwd_and_exe(target.pid)
        parent_argv = parent.argv if parent is not None else ()
        folders += probe.operator_places(target.argv, parent_argv, environ, cwd, target.exe)[1]
    path, where, refused = probe.find_pyspy(None, list(dict.fromkeys(folders)))
    return Found(path=path, searched=f"{searched}, {where}", refused=tuple(refused))
