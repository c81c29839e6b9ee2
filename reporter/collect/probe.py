"""The capture program `report collect --ssh/--exec` runs on each remote host, for one run only.

Self-contained on purpose: it imports nothing but the standard library and the modules it
carries along (`procread`, `logtail`, `hostprocs`; `remote.HOST_MODULES`) and runs on
Python 3.8+, so a host needs `python3` and py-spy, never `reporter` itself. `remote.py`
sends this file's text with the run's options as one compressed argument (`python3 -c
'<bootstrap>'`), so nothing is installed or left behind, no port is opened and no daemon
runs; the command exits when the capture is done or its deadline passes.

It reads `/proc` (processes, command lines, environments), runs py-spy (`dump --pid P`,
`--nonblocking` unless asked, `--locals` when asked) and the targets' interpreters (package
listing, `importlib.metadata`, read only), and writes one JSON object per line on stdout:

    {"t": "hello", "hostname": "node-3", "python": "3.10.12", "uid": 0, "pid": 4242}
    {"t": "target", "pid": 4711, "ppid": 4700, "pgid": 4700, "uid": 0, "title": "...",
     "selected_by": "--match", "launcher": 4700}
    {"t": "process", "pid": 4700, "ppid": 1, "pgid": 4700, "argv": ["python3", "-m", ...]}
    {"t": "passed", "pid": 4720, "title": "tail -f x.log", "reason": "not a Python process"}
    {"t": "nomatch", "similar": ["sglang::scheduler_TP0", ...]}
    {"t": "file", "kind": "cmdline" | "environ", "pid": 4711, "what": "...", "data": "<raw>"}
    {"t": "skip", "what": "environment of PID 4711", "reason": "..."}
    {"t": "pyspy", "path": "/usr/local/bin/py-spy" | null, "version": "...", "searched": "..."}
    {"t": "dump", "pid": 4711, "snapshot": 0, "started_at": "2026-...Z", "seconds": 0.21,
     "returncode": 0, "stdout": "...", "stderr": "", "timed_out": false, "launch_error": "",
     "attempts": 1}
    {"t": "round", "pid": 4711, "snapshot": 0, "name": "status" | "threads" | "fds" |
     "sockets" | "family", "text": "..."}        ("" : gone, or that read failed)
    {"t": "log", "source": "file" | "journal" | "kernel", "name": "/var/log/x.log",
     "text": "...", "lines": 5000, "size": 81234, "cut": "...", "error": "", "since": null}
    {"t": "packages", "pids": [4711, 4712], "via": "/opt/venv/bin/python", "text": "..."}
    {"t": "end", "reason": ""}

Environments and command lines travel raw inside the ssh (or exec) channel; the collector
applies the secret policy (`reporter.secrets`) before anything is written to disk, exactly as
for a local capture. The selection mirrors `plan.select_targets` (a test holds them equal).
"""

# The lookup below works on path strings (they travel in JSON records and through
# shutil.which), so os.path is kept there on purpose.
# ruff: noqa: PTH100, PTH111, PTH113, PTH116, PTH118, PTH120

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reporter.collect import hostprocs, logtail, procread

_OUT = threading.Lock()
if TYPE_CHECKING:  # annotations only: `dict[...]` is no runtime expression on Python 3.8
    from collections.abc import Sequence

    Record = dict[str, Any]
    Chosen = list[tuple[Record, str]]


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


def emit(record: Record) -> None:
    """One JSON line on stdout; a closed pipe (the collector gave up) ends the program."""
    line = json.dumps(record, ensure_ascii=True) + "\n"
    with _OUT:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except OSError:
            os._exit(0)


def send_file(kind: str, pid: int, what: str) -> str | None:
    """Send `/proc/PID/<kind>` raw and return it; None (and a skip record) when there is none."""
    try:
        data = Path(f"/proc/{pid}/{kind}").read_bytes()
    except OSError as error:
        if kind == "environ" and error.errno in (1, 13):
            why = "another user's process: needs the same rights as ptrace"
        else:
            why = error.strerror or str(error)
        emit({"t": "skip", "what": what, "reason": f"cannot read /proc/PID/{kind} ({why})"})
        return None
    if kind == "environ" and not any(b"=" in e for e in data.split(b"\x00")):
        reason = (
            "/proc/PID/environ holds no variables (a process title set with setproctitle "
            "overwrites that memory)"
        )
        emit({"t": "skip", "what": what, "reason": reason})
        return None
    # The bytes as the kernel gave them (NULs, invalid UTF-8 and all): the collector turns
    # them into evidence with the same code as a local capture (`envcap.cmdline_evidence`).
    emit({"t": "file", "kind": kind, "pid": pid, "what": what, "b64": _b64(data)})
    return data.decode("utf-8", "replace")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def environment(targets: list[Record], by_pid: dict[int, Record]) -> dict[int, str]:
    """Command lines and environments of the targets (and of the parents a title hides),
    as `capture.ProcessSteps.environment`; returns the environments read, by PID."""
    environs: dict[int, str] = {}
    need_parent: set[int] = set()
    titled = []
    for proc in targets:
        pid = proc["pid"]
        if hostprocs.title_only(proc):
            titled.append(pid)
            need_parent.add(proc["ppid"])
        else:
            send_file("cmdline", pid, f"command line of PID {pid}")
        environ = send_file("environ", pid, f"environment of PID {pid}")
        if environ is None:
            need_parent.add(proc["ppid"])
        else:
            environs[pid] = environ
    if titled:
        reason = "replaced by the process title (setproctitle); the parent's is saved instead"
        what = "command line of PID " + ", ".join(map(str, titled))
        emit({"t": "skip", "what": what, "reason": reason})
    for ppid in sorted(p for p in need_parent if p > 1):
        parent = by_pid.get(ppid)
        label = f"PID {ppid}" + (f" ({hostprocs.title(parent)[:60]})" if parent else "")
        who = "parent of PID " + ", ".join(str(t["pid"]) for t in targets if t["ppid"] == ppid)
        send_file("cmdline", ppid, f"command line of {label}, {who}")
        what = (
            f"environment of {label}, {who} (what they inherited at start; later changes "
            "inside the parent are not visible here)"
        )
        environ = send_file("environ", ppid, what)
        if environ is not None:
            environs[ppid] = environ
    return environs


def _env_value(text: str, name: str) -> str | None:
    for entry in text.split("\x00"):
        if entry.startswith(name + "="):
            return entry[len(name) + 1 :]
    return None


# -- least privilege and the operator's lookup: shared with the local collector -----------------
# `envcap` and `runner` import these, so a local and a remote capture decide who runs what,
# and find py-spy and the interpreter, with one code.


def owner_of(pid: int) -> tuple[int, int] | None:
    """The process's effective (uid, gid): the owner of its `/proc/PID` folder."""
    try:
        info = os.stat(f"/proc/{pid}")
    except OSError:
        return None
    return (info.st_uid, info.st_gid)


def run_as(owner: tuple[int, int] | None) -> tuple[int, int] | None:
    """(uid, gid) to run a target's own code as (its interpreter, its environment script):
    the target's user when this process is root and the target is not; None to run it as
    ourselves. The interpreter, its site-packages and its `.pth` files belong to that
    user: run as root, anything that user planted there would run as root."""
    if owner is None or owner[0] == 0 or os.geteuid() != 0:
        return None
    return owner


def as_user(user: tuple[int, int] | None) -> dict[str, Any]:
    """`subprocess.Popen` options that run a program as `user` = (uid, gid) with no
    supplementary groups (none when `user` is None). Python 3.8 has no `user=`: there the
    switch happens in the child between fork and exec."""
    if user is None:
        return {}
    if sys.version_info >= (3, 9):  # noqa: UP036 - the probe runs on Python 3.8 too
        return {"user": user[0], "group": user[1], "extra_groups": []}
    uid, gid = user

    def drop() -> None:  # pragma: no cover - Python 3.8 only
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return {"preexec_fn": drop}


def writable_by_others(path: str) -> str:
    """ "" when `path`, and every folder above it up to `/` (before and after symlinks are
    followed), belongs to root or to us and no one else may write it, as sudo and sshd ask
    of what they run; else who could change it, in a few words."""
    me = os.geteuid()
    chains = []
    for each in (os.path.abspath(path), os.path.realpath(path)):
        chain = [each]
        while chain[-1] != "/":
            chain.append(os.path.dirname(chain[-1]))
        chains.append(chain)
    for chain in chains:
        for step in chain:
            try:
                info = os.stat(step)
            except OSError as error:
                return f"{step} cannot be checked ({error.strerror or error})"
            if info.st_uid not in (0, me):
                return f"{step} belongs to uid {info.st_uid}"
            # A sticky folder (/tmp) lets no one rename or remove another's entry, and the
            # entry below it is checked on its own.
            sticky = info.st_mode & 0o1000 and step != chain[0]
            if info.st_mode & 0o002 and not sticky:
                return f"{step} is writable by everyone"
            if info.st_mode & 0o020 and info.st_gid != 0:
                return f"{step} is writable by group {info.st_gid}"
    return ""


def _absolute(candidate: str, cwd: str | None, path: str | None) -> str | None:
    """An argv[0] as an absolute path: relative to the process's cwd, or found on its PATH."""
    if not candidate or candidate != candidate.strip():
        return None
    if "/" in candidate:
        if candidate.startswith("/"):
            return candidate
        return os.path.normpath(os.path.join(cwd, candidate)) if cwd else None
    return shutil.which(candidate, path=path) if path else None


def _venv_of(python: str) -> str | None:
    """The virtual environment a `bin/python` path belongs to (`pyvenv.cfg` one level up)."""
    root = os.path.dirname(os.path.dirname(python))
    return root if os.path.isfile(os.path.join(root, "pyvenv.cfg")) else None


def operator_places(
    argv: Sequence[str], parent_argv: Sequence[str], environ: str, cwd: str | None, exe: str | None
) -> tuple[list[str], list[str]]:
    """Where an operator would look for a target's interpreter and tools: (interpreter paths
    to try, in order; bin folders, in order).

    First the target's own environment: its argv[0] (unless a process title replaced it),
    its parent's argv[0] (a launcher started it from the venv; `/proc/PID/exe` of a venv
    resolves to the base interpreter), `VIRTUAL_ENV` and `CONDA_PREFIX` from its
    environment, a `pyvenv.cfg` beside its executable, the executable's own folder; then
    the folders on its PATH.
    `environ` is the target's (or, under a title, its parent's) NUL-separated environment."""
    path_var = _env_value(environ, "PATH") if environ else None
    pythons: list[str] = []
    folders: list[str] = []
    for words in (argv, parent_argv):
        if not words:
            continue
        found = _absolute(words[0], cwd, path_var)
        if found is None:
            continue
        root = _venv_of(found)
        pythons.append(found)
        folders.append(os.path.join(root, "bin") if root else os.path.dirname(found))
    for name in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        value = _env_value(environ, name) if environ else None
        if value and value.startswith("/"):
            bin_dir = os.path.join(value, "bin")
            pythons += [os.path.join(bin_dir, "python"), os.path.join(bin_dir, "python3")]
            folders.append(bin_dir)
    if exe and exe.startswith("/"):
        root = _venv_of(exe)
        if root:
            pythons.append(os.path.join(root, "bin", "python"))
            folders.append(os.path.join(root, "bin"))
        # The base interpreter's own bin folder: a venv with system site-packages, a conda
        # or pyenv install, keeps the tools installed with it there.
        folders.append(os.path.dirname(exe.replace(" (deleted)", "")))
    folders += [p for p in (path_var or "").split(":") if p.startswith("/")]
    return list(dict.fromkeys(pythons)), list(dict.fromkeys(folders))


def pick_interpreter(pythons: Sequence[str], real: str) -> str:
    """The launch path to run the target's interpreter under: the first of `pythons` that is
    the same binary as `real` (`/proc/PID/exe`), so a venv lists its own packages; else
    `real` itself."""
    for candidate in pythons:
        if _same_file(candidate, real):
            return candidate
    return real


def find_pyspy(
    explicit: str | None, folders: Sequence[str], *, path: str | None = None
) -> tuple[str | None, str, list[str]]:
    """py-spy as an operator finds it: (path or None, where it looked, refused copies).

    `--remote-py-spy` (a path, or a bare name looked up on PATH) is taken as given. Else the
    targets' environments and PATHs (`folders`, from `operator_places`), this host's PATH,
    beside this Python, `~/.local/bin`. A copy that someone other than root (or us) could
    have changed is never run: it is returned in the third item, with who could change it,
    so that the operator can check it and name it."""
    if explicit:
        if "/" in explicit:
            return (explicit if os.path.isfile(explicit) else None), explicit, []
        found = shutil.which(explicit, path=path)
        return found, f"{explicit} on PATH ({path or os.defpath})", []
    here = (path if path is not None else os.environ.get("PATH", os.defpath)).split(":")
    places = [*folders, *[p for p in here if p.startswith("/")]]
    places += [os.path.dirname(sys.executable), os.path.expanduser("~/.local/bin")]
    places = list(dict.fromkeys(places))
    refused: list[str] = []
    for folder in places:
        candidate = os.path.join(folder, "py-spy")
        if not os.path.isfile(candidate):
            continue
        why = writable_by_others(candidate)
        if not why:
            return candidate, ", ".join(places), refused
        refused.append(f"{candidate} ({why})")
    return None, ", ".join(places), refused


def run(
    argv: list[str],
    timeout: float,
    env: dict[str, str] | None = None,
    user: tuple[int, int] | None = None,
    **kw: Any,
) -> Record:
    """Run a helper in its own process group under a timeout (the group is killed after it),
    as `user` (uid, gid) when given (see `as_user`)."""
    began = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            **as_user(user),
            **kw,
        )
    except OSError as error:
        reason = f"cannot run {argv[0]}: {error.strerror or error}"
        return {"returncode": None, "stdout": "", "stderr": "", "timed_out": False,
                "launch_error": reason, "seconds": 0.0}  # fmt: skip
    timed_out = False
    try:
        out, errors = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, errors = proc.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:
            out, errors = b"", b""
    return {
        "returncode": None if timed_out else proc.returncode,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": errors.decode("utf-8", "replace"),
        "timed_out": timed_out,
        "launch_error": "",
        "seconds": round(time.monotonic() - began, 3),
    }


def one_dump(pyspy: str, pid: int, snapshot: int, opts: Record) -> None:
    """py-spy dump of one process, with one retry of a non-blocking read that raced it."""
    argv = [pyspy, "dump", "--pid", str(pid)]
    if not opts.get("blocking"):
        argv.append("--nonblocking")
    if opts.get("locals"):
        argv.append("--locals")
    drop = ("RUST_BACKTRACE", "RUST_LIB_BACKTRACE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # datetime.UTC is Python 3.11+; the probe runs on 3.8.
    started = datetime.now(tz=timezone.utc)  # noqa: UP017
    began = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        done = run(argv, float(opts["timeout"]), env=env)
        failed = done["returncode"] not in (0, None) or (
            done["returncode"] == 0 and "Thread " not in done["stdout"]
        )
        transient = failed and any(t in done["stderr"] for t in opts.get("transient", ()))
        if not (transient and attempts == 1 and not opts.get("blocking")):
            break
    done.update(
        t="dump",
        pid=pid,
        snapshot=snapshot,
        started_at=started.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        seconds=round(time.monotonic() - began, 3),
        attempts=attempts,
    )
    emit(done)


def round_reads(pids: list[int], snapshot: int, opts: Record, deadline: float) -> None:
    """The per-round `/proc` reads the collector asked for, one `round` record each."""
    names = [n for n in opts.get("round_reads") or () if n in procread.ROUND_READS]
    if not names:
        return
    for pid, name, text in procread.read_round(
        pids, snapshot, names=names, timeout=float(opts["timeout"]), deadline=deadline
    ):
        emit({"t": "round", "pid": pid, "snapshot": snapshot, "name": name, "text": text})


def proc_rounds(pids: list[int], opts: Record, deadline: float) -> None:
    """Without py-spy, the `/proc` reads of each round still (`capture.proc_rounds`): the
    states, threads, fds, sockets and family say much about a wait between processes."""
    start = time.monotonic()
    for k in range(int(opts["snapshots"])):
        delay = start + k * float(opts["interval"]) - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if time.monotonic() + 1.0 > deadline:
            emit({"t": "skip", "what": f"/proc reads of round {k + 1} and later",
                  "reason": "the host's deadline would pass first"})  # fmt: skip
            return
        round_reads(pids, k, opts, deadline)


def dumps(pyspy: str, pids: list[int], opts: Record, deadline: float) -> None:
    """`snapshots` rounds, `interval` apart, at most `parallel` py-spy runs at a time."""
    start = time.monotonic()
    workers = max(1, min(int(opts.get("parallel", 4)), len(pids)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for k in range(int(opts["snapshots"])):
            delay = start + k * float(opts["interval"]) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if time.monotonic() + float(opts["timeout"]) > deadline:
                reason = "the host's deadline would pass first"
                lost = list(range(k, int(opts["snapshots"])))
                emit({"t": "skip", "what": f"py-spy snapshot {k + 1} and later", "reason": reason,
                      "lost": lost})  # fmt: skip
                return
            list(pool.map(lambda pid, k=k: one_dump(pyspy, pid, k, opts), pids))
            round_reads(pids, k, opts, deadline)


def _log_run(argv: list[str], timeout: float, env: dict[str, str], max_bytes: int) -> logtail.Ran:
    """`logtail.Runner` on a host: `run`, its output cut at `max_bytes`."""
    done = run(argv, timeout, env=env)
    out = done["stdout"].encode("utf-8", "replace")
    flooded = len(out) if len(out) > max_bytes else 0
    return logtail.Ran(
        stdout=out[:max_bytes].decode("utf-8", "ignore"),
        stderr=done["stderr"][-65536:],
        returncode=done["returncode"],
        timed_out=done["timed_out"],
        launch_error=done["launch_error"],
        flooded=flooded,
    )


def _emit_log(source: str, name: str, got: logtail.Tail, since: datetime | None = None) -> None:
    emit({"t": "log", "source": source, "name": name, "text": got.text, "lines": got.lines,
          "size": got.size, "cut": got.cut, "error": got.error,
          "since": since.isoformat() if since is not None else None})  # fmt: skip


def _program(name: str) -> str | None:
    """A system program (`journalctl`, `dmesg`) on PATH or in the usual system folders."""
    here = os.environ.get("PATH", "")
    return shutil.which(name, path=":".join([here, "/usr/bin", "/bin", "/usr/sbin", "/sbin"]))


def _started(pids: Sequence[int], btime: float | None) -> datetime | None:
    """When the earliest of `pids` started (`procread`), or None."""
    ticks = [t for t in (procread.start_ticks(p) for p in pids) if t is not None]
    return procread.started(min(ticks), btime) if ticks and btime is not None else None


def logs(targets: list[Record], opts: Record, deadline: float) -> None:
    """The logs a local capture keeps (`services.ServiceSteps.logs`), read here by the same
    functions (`logtail`): each `--log` file's tail, the journal of the targets' systemd
    services since they started, the kernel's log since the earliest target started. The
    journal and dmesg share one `--timeout` (`remotehosts.probe_budget` counts it)."""
    lines, size = int(opts.get("log_lines") or 5000), int(opts.get("log_bytes") or 4 << 20)
    files, missing = logtail.expand(tuple(opts.get("logs") or ()))
    for pattern, why in missing:
        _emit_log("file", pattern, logtail.Tail(error=why))
    for path in files:
        _emit_log("file", str(path), logtail.tail(path, max_lines=lines, max_bytes=size))
    pids = [p["pid"] for p in targets]
    btime = procread.boot_time()
    end = min(deadline, time.monotonic() + float(opts["timeout"]))
    late = logtail.Tail(error="the host's deadline would pass first")

    def left() -> float:
        return end - time.monotonic()

    if opts.get("journal"):
        units: dict[str, list[int]] = {}
        for pid in pids:
            unit = logtail.unit_of(pid)
            if unit is not None:
                units.setdefault(unit, []).append(pid)
        journalctl = _program("journalctl") if units else None
        for unit, members in units.items():
            since = _started(members, btime)
            got = late if left() < 1 else logtail.journal(
                unit, since=since, journalctl=journalctl, max_lines=lines, max_bytes=size,
                timeout=left(), run=_log_run,
            )  # fmt: skip
            _emit_log("journal", unit, got, since)
    if opts.get("kernel_log") and pids:
        since = _started(pids, btime)
        got = late if left() < 1 else logtail.kernel_log(
            since=since, dmesg=_program("dmesg"), max_lines=lines, max_bytes=size,
            timeout=left(), run=_log_run,
        )  # fmt: skip
        _emit_log("kernel", "", got, since)


def interpreter_of(proc: Record, parent: Record | None, environ: str) -> Record | None:
    """How to run a target's interpreter (`envcap.choose_interpreter`): the launch path,
    the binary, the target's PYTHONPATH and HOME, and the user to run it as; None when its
    executable cannot be read."""
    pid = proc["pid"]
    try:
        real = os.path.realpath(f"/proc/{pid}/exe")
        os.stat(real)
    except OSError:
        return None
    try:
        cwd: str | None = os.readlink(f"/proc/{pid}/cwd")  # noqa: PTH115
    except OSError:
        cwd = None
    argv = [] if hostprocs.title_only(proc) else proc["argv"]
    parent_argv = parent["argv"] if parent is not None else []
    pythons, folders = operator_places(argv, parent_argv, environ, cwd, proc["exe"])
    extra = tuple(p for p in (_env_value(environ, "PYTHONPATH") or "").split(":") if p)
    return {
        "argv0": pick_interpreter(pythons, real),
        "real": real,
        "pythonpath": extra,
        "home": _env_value(environ, "HOME") or "",
        "user": run_as(owner_of(pid)),
        "folders": folders,
    }


def packages(
    targets: list[Record], interpreters: dict[int, Record], opts: Record, deadline: float
) -> None:
    """The targets' packages, once per interpreter, each listed by that interpreter run as
    the target's user (`envcap.list_packages`)."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    chosen: dict[tuple[Any, ...], Record] = {}
    for proc in targets:
        pid = proc["pid"]
        found = interpreters.get(pid)
        if found is None:
            reason = "its executable cannot be read (another user's process, or it exited)"
            emit({"t": "skip", "what": f"packages of PID {pid}", "reason": reason})
            continue
        key = (found["argv0"], found["real"], found["pythonpath"], found["user"])
        groups.setdefault(key, []).append(pid)
        chosen[key] = found
    for key, pids in groups.items():
        found = chosen[key]
        argv0 = found["argv0"]
        what = "packages of PID " + ", ".join(map(str, pids))
        if time.monotonic() + float(opts["timeout"]) > deadline:
            emit({"t": "skip", "what": what, "reason": "the host's deadline would pass first"})
            continue
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
        if found["home"]:
            env["HOME"] = found["home"]
        done = run(
            [argv0, "-E", "-B", "-c", opts["packages_script"], *found["pythonpath"]],
            float(opts["timeout"]),
            env=env,
            user=found["user"],
            cwd="/",
            executable=f"/proc/{pids[0]}/exe",
        )
        user = found["user"]
        who = f"uid {user[0]}" if user is not None else f"uid {os.geteuid()}"
        if done["returncode"] == 0 and done["stdout"].strip():
            emit({"t": "packages", "pids": pids, "via": argv0, "as": who, "text": done["stdout"]})
            env_script(found, pids, done["stdout"], env, opts, deadline)
            continue
        lines = done["stderr"].strip().splitlines() or [f"exit status {done['returncode']}"]
        why = done["launch_error"] or (
            f"no answer within {float(opts['timeout']):g} s" if done["timed_out"] else lines[-1]
        )
        emit(
            {"t": "skip", "what": what, "reason": f"could not list the packages of {argv0}: {why}"}
        )


def env_script(
    found: Record, pids: list[int], freeze: str, env: dict[str, str], opts: Record, deadline: float
) -> None:
    """The product's environment report (`python -m sglang.check_env`, vLLM's
    `collect_env`; `envcap.run_env_script`) by the target's interpreter, as the target's
    user, when its packages include the product and the deadline leaves room."""
    names = {
        line.partition("==")[0].strip().lower().replace("_", "-") for line in freeze.splitlines()
    }
    entry = next((e for e in opts.get("env_scripts") or () if e[0] in names), None)
    if entry is None:
        return
    _dist, module, kind, name = entry
    # Up to its own cap (it imports torch and asks the GPUs), within what the deadline leaves.
    left = deadline - time.monotonic()
    timeout = min(float(opts.get("env_script_timeout") or opts["timeout"]), left)
    what = f"python -m {module} for PID " + ", ".join(map(str, pids))
    if timeout < float(opts["timeout"]):
        reason = f"the host's deadline would pass first ({max(left, 0):.0f} s left)"
        emit({"t": "skip", "what": what, "reason": reason})
        return
    done = run(
        [found["argv0"], "-B", "-m", module],
        timeout,
        env=env,
        user=found["user"],
        cwd="/",
        executable=f"/proc/{pids[0]}/exe",
    )
    if done["returncode"] == 0 and done["stdout"].strip():
        text = done["stdout"][: int(opts.get("env_script_max_chars", 256 * 1024))]
        emit({"t": "envscript", "pids": pids, "module": module, "kind": kind, "name": name,
              "via": found["argv0"], "text": text})  # fmt: skip
        return
    lines = done["stderr"].strip().splitlines() or [f"exit status {done['returncode']}"]
    why = done["launch_error"] or (
        f"no answer within {timeout:g} s" if done["timed_out"] else lines[-1]
    )
    emit({"t": "skip", "what": what, "reason": f"python -m {module} via {found['argv0']}: {why}"})


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).samefile(b)
    except OSError:
        return False


def main(opts: Record) -> None:
    """Capture as `opts` asks (see `remote.probe_options`), writing records on stdout."""
    deadline = time.monotonic() + float(opts["deadline"])
    emit(
        {
            "t": "hello",
            "hostname": socket.gethostname(),
            "python": ".".join(str(n) for n in sys.version_info[:3]),
            "uid": os.getuid(),
            "pid": os.getpid(),
        }
    )
    processes = hostprocs.list_processes()
    targets, passed, error = hostprocs.select(processes, opts, os.getpid())
    for proc, reason in passed:
        emit({"t": "passed", "pid": proc["pid"], "title": hostprocs.title(proc), "reason": reason})
    if error or not targets:
        own = {os.getpid()} | hostprocs.ancestors_of(
            {p["pid"]: p["ppid"] for p in processes}, os.getpid()
        )
        similar = sorted(
            {
                hostprocs.title(p)[:80]
                for p in processes
                if p["pid"] not in own
                and p["argv"]
                and ("python" in hostprocs.title(p).lower() or "::" in hostprocs.title(p))
            }
        )[:8]
        emit({"t": "nomatch", "similar": similar, "error": error})
        emit({"t": "end", "reason": error or "no process matches"})
        return
    tops = hostprocs.launchers(processes, [p["pid"] for p, _ in targets])
    by_pid = {p["pid"]: p for p in processes}
    for proc, why in targets:
        emit({"t": "target", "pid": proc["pid"], "ppid": proc["ppid"], "pgid": proc["pgid"],
              "uid": proc["uid"], "title": hostprocs.title(proc), "selected_by": why,
              "launcher": tops.get(proc["pid"])})  # fmt: skip
    for pid in sorted(set(tops.values())):
        if pid in by_pid:
            p = by_pid[pid]
            emit({"t": "process", "pid": pid, "ppid": p["ppid"], "pgid": p["pgid"],
                  "argv": p["argv"]})  # fmt: skip
    chosen = [p for p, _ in targets]
    environs = environment(chosen, by_pid)
    interpreters: dict[int, Record] = {}
    for proc in chosen:
        environ = environs.get(proc["pid"]) or environs.get(proc["ppid"]) or ""
        found = interpreter_of(proc, by_pid.get(proc["ppid"]), environ)
        if found is not None:
            interpreters[proc["pid"]] = found
    folders = [f for found in interpreters.values() for f in found["folders"]]
    pyspy, searched, refused = find_pyspy(opts.get("pyspy"), folders)
    version = ""
    if pyspy is not None:
        shown = run([pyspy, "--version"], float(opts["timeout"]))["stdout"].strip()
        version = shown.splitlines()[0] if shown else ""
    emit({"t": "pyspy", "path": pyspy, "version": version, "searched": searched,
          "refused": refused, "uid": os.geteuid()})  # fmt: skip
    pids = [p["pid"] for p in chosen]
    if pyspy is not None:
        dumps(pyspy, pids, opts, deadline)
    else:
        proc_rounds(pids, opts, deadline)
    logs(chosen, opts, deadline)
    packages(chosen, interpreters, opts, deadline)
    emit({"t": "end", "reason": ""})
