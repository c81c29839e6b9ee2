"""Capture on other hosts through engines that already reach them: OpenSSH, or a command template.

`report collect --ssh node-a --ssh node-b --match 'sglang::scheduler_TP'` runs the capture on
each host with the system's `ssh` (its config, agent, jump hosts and known_hosts apply;
`BatchMode=yes`, so it never asks for a password or a host key). `--exec TEMPLATE --host NAME`
runs it through any command that runs its arguments somewhere else, `{host}` replaced by the
name: `kubectl exec -n prod {host} --`, `srun --jobid 4242 --overlap -w {host}`,
`docker exec {host}`.

What runs there is `probe.py`, sent as one argument (`python3 -c '<bootstrap>'`: the program
and this run's options, compressed and base64-encoded), so a host needs `python3` and py-spy but
never `reporter`, nothing is installed or left behind, and no port or daemon is involved. An
argument rather than stdin: `kubectl exec` and `docker exec` pass stdin only with `-i`, and
`srun` hands it to one task, while every engine passes its arguments on. ssh (also as a
template's command) joins them into one shell line, so it gets them shell-quoted; other
engines get them as they are.

Bounded fan-out: at most `parallel` hosts at once (default 16), each under a deadline (its
ssh or exec process group is killed at the deadline; what came back before it is kept, and the
probe stops starting dumps itself before then). A host that cannot be reached, or whose capture
failed, is recorded with the reason in `[[collect.remote]]`; the rest of the bundle stands.

Bundle layout: `hosts/<host>/pyspy/pid4711-s0.txt`, `hosts/<host>/env/pid4711.environ`,
`hosts/<host>/proc/pid4711-s0.fds`, `hosts/<host>/logs/kernel.log`, ...,
each `[[evidence]]` with `host = "<host>"`. Everything that comes back goes through the same
secret policy as a local capture before it is written (environments, command lines, locals).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import shlex
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reporter.collect import dumps as dumping
from reporter.collect import envcap, logtail, plan, probe
from reporter.collect.dumps import DumpResult, DumpStatus
from reporter.collect.envcap import PACKAGES_SCRIPT
from reporter.collect.manifest import ProcessEntry, RemoteNote, TargetNote
from reporter.collect.plan import CollectRequest, RemoteRequest
from reporter.collect.runner import Finished, run_bounded
from reporter.collect.state import WAIT_S, SessionState
from reporter.core import hostnames, inert
from reporter.core.errors import OutputError, UsageError
from reporter.core.fileio import human_size
from reporter.core.text import plural
from reporter.model import EvidenceKind

# Seconds ssh may take to connect (ConnectTimeout); the deadline covers the rest.
CONNECT_TIMEOUT = 10
# Seconds the probe stops before the host's deadline, for its last records to come back.
RETURN_MARGIN = 5.0
# Seconds a host gets by default beyond the minimum (a slow login, a loaded host).
DEADLINE_SLACK = 15.0
# Seconds between two rewrites of bundle.toml while hosts come back (see `record_host`).
SAVE_EVERY = 2.0

# What one host may send (a broken or hostile host must not fill the collector's memory,
# disk or time). Bytes: `--max-size` per host (`run_host`). The probe sends about ten
# records and files per target and snapshot, so these leave room for hundreds of targets.
MAX_HOST_RECORDS = 20_000
MAX_HOST_FILES = 5_000
# Skip notes kept per host; the rest are counted in one note.
MAX_HOST_NOTES = 200
# Seconds a host's records may take to be written once its command ended, when its
# deadline has already passed (the deadline covers writing too, past this floor).
WRITE_FLOOR = 5.0
# The largest hosts file, also on stdin (`--hosts-file -`).
HOSTS_FILE_MAX = 16 << 20
# The most hosts at once: each is a thread and an ssh (or engine) process with two pipes.
MAX_PARALLEL = 256
# The kernel's largest PID (PID_MAX_LIMIT): a record's PID above it is not a PID.
PID_MAX = 1 << 22
# The kinds of record the probe sends; any other line is not kept.
RECORD_KINDS = frozenset(
    {"hello", "target", "process", "passed", "skip", "nomatch", "file", "pyspy", "dump",
     "round", "envscript", "packages", "log", "end"}
)  # fmt: skip


# -- hosts and commands --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteHost:
    """One host to capture on: its name in the bundle, and the command that reaches it."""

    name: str
    """The name in paths and the manifest: the ssh destination without `user@`, or the
    template's `{host}` value."""
    prefix: tuple[str, ...]
    """The command before the remote program: `ssh ... -- node-a`, `kubectl exec ... pod-3 --`."""
    shell: bool
    """True for ssh: the remote program travels as one shell command line."""

    via: str = ""
    """How the host is reached, for people: `ssh root@node-a:2222`, or the template's command."""

    def argv(self, program: Sequence[str]) -> tuple[str, ...]:
        """The full command that runs `program` on the host."""
        if self.shell:
            return (*self.prefix, shlex.join(program))
        return (*self.prefix, *program)


def parse_ssh(spec: str) -> tuple[str | None, str, int | None]:
    """`[USER@]HOST[:PORT]` -> (user, host, port); `[v6]:port` and bare IPv6 work too. The
    grammar is `hostnames.split_host`, the loader's too; an error never repeats `spec`."""
    user, host, port, problem = hostnames.split_host(spec)
    if not problem and "/" in host:
        problem = "an ssh destination has no '/'"
    if problem:
        raise UsageError(
            f"--ssh: not [USER@]HOST[:PORT]: {problem}",
            tip="write it like node-3 or root@node-3:2222",
        )
    return user, host, port


def ssh_host(spec: str, remote: RemoteRequest) -> RemoteHost:
    """The ssh command for one destination: batch mode, the user's config and known_hosts."""
    user, host, port = parse_ssh(spec)
    prefix = ["ssh", "-T", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}"]
    if remote.ssh_config is not None:
        prefix += ["-F", str(remote.ssh_config)]
    for option in remote.ssh_options:
        prefix += ["-o", option]
    if port is not None:
        prefix += ["-p", str(port)]
    if user is not None:
        prefix += ["-l", user]
    name = host if port is None else (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return RemoteHost(name=name, prefix=(*prefix, "--", host), shell=True, via=f"ssh {spec}")


# Engines that hand their command to a login shell as one line, as ssh does; every other
# engine (kubectl exec, docker exec, srun, nsenter) passes its arguments through as they are.
_SHELL_ENGINES = frozenset({"ssh", "autossh"})


# Commands that run the rest of their arguments as a command (`timeout 60 ssh {host}`):
# name -> how many plain arguments come before that command (timeout's duration).
_WRAPPERS = {"timeout": 1, "env": 0, "nice": 0, "ionice": 0, "stdbuf": 0, "setsid": 0,
             "nohup": 0, "sudo": 0, "doas": 0, "chrt": 1, "taskset": 1}  # fmt: skip
# Their options that take the next word as a value.
_VALUED = frozenset({"-s", "-k", "-n", "-c", "-u", "-g", "-C", "-p", "-o", "-e", "-i", "-S"})


def engine_of(words: Sequence[str]) -> str:
    """The engine a template runs, past wrappers: `timeout 60 ssh {host}` -> `ssh`,
    `env KUBECONFIG=x kubectl exec {host} --` -> `kubectl`."""
    i = 0
    while i < len(words):
        name = Path(words[i]).name
        if name not in _WRAPPERS:
            return name
        i += 1
        while i < len(words) and words[i].startswith("-") and words[i] != "--":
            i += 2 if words[i] in _VALUED else 1
        if i < len(words) and words[i] == "--":
            i += 1
        if name == "env":
            while i < len(words) and "=" in words[i]:
                i += 1
        i += _WRAPPERS[name]
    return ""


def exec_host(template: str, name: str) -> RemoteHost:
    """The template's command for one host name: `{host}` replaced in every word."""
    words = shlex.split(template)
    prefix = tuple(w.replace("{host}", name) for w in words)
    return RemoteHost(
        name=name,
        prefix=prefix,
        shell=engine_of(words) in _SHELL_ENGINES,
        via=shlex.join(prefix),
    )


def parse_hosts_file(text: str, *, source: str) -> tuple[str, ...]:
    """Hosts from a file, one per line; blank lines and `#` comments are skipped."""
    out: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        # The line is never shown: a file of the wrong kind (a secrets file, /etc/shadow)
        # must not have its first line printed.
        if len(line.split()) > 1:
            raise UsageError(
                f"{source}:{number}: more than one word on the line",
                tip="write one host per line ([USER@]HOST[:PORT] for ssh, a name for --exec)",
            )
        problem = hostnames.host_problem(line)
        if problem:
            raise UsageError(
                f"{source}:{number}: not a host name ({problem})",
                tip="write one host per line ([USER@]HOST[:PORT] for ssh, a name for --exec)",
            )
        out.append(line)
    if not out:
        raise UsageError(f"{source}: no host in the file", tip="write one host per line")
    return tuple(out)


def remote_hosts(remote: RemoteRequest) -> tuple[RemoteHost, ...]:
    """Every host of the request, in the order named."""
    if remote.exec_template is not None:
        return tuple(exec_host(remote.exec_template, h) for h in remote.hosts)
    hosts = [ssh_host(h, remote) for h in remote.hosts]
    counts: dict[str, int] = {}
    for host in hosts:
        counts[host.name] = counts.get(host.name, 0) + 1
    # `root@good` and `good` are two captures (two users' views): each keeps its user in
    # its name then, so their files and notes never merge.
    return tuple(
        replace(h, name=_with_user(spec, h.name)) if counts[h.name] > 1 else h
        for spec, h in zip(remote.hosts, hosts, strict=True)
    )


def _with_user(spec: str, name: str) -> str:
    user, _host, _port = parse_ssh(spec)
    return f"{user}@{name}" if user else name


def validate_remote(request: CollectRequest) -> None:
    """Raise `UsageError` for a remote request that cannot be carried out as asked."""
    remote = request.remote
    assert remote is not None
    if not remote.hosts:
        raise UsageError(
            "no host to collect from", tip="name hosts with --ssh, --host or --hosts-file"
        )
    if not request.wants_processes:
        raise UsageError(
            "remote collection needs processes to capture",
            tip="add --match REGEX, --pid PID or --children-of PID (they apply on each host)",
        )
    for option, given in (
        ("--unit", bool(request.units)),
        ("--fr-dir", bool(request.fr_dirs)),
        ("--py-spy", request.pyspy is not None),
    ):
        if given:
            tip = (
                "use --remote-py-spy PATH for py-spy on the hosts"
                if option == "--py-spy"
                else f"run `report collect {option} ...` on that host itself"
            )
            raise UsageError(
                f"{option} reads this host; it does not apply with --ssh/--exec", tip=tip
            )
    if remote.parallel < 1:
        raise UsageError("--parallel must be at least 1")
    if remote.parallel > MAX_PARALLEL:
        raise UsageError(
            f"--parallel {remote.parallel} is more than {MAX_PARALLEL} hosts at once",
            tip=f"use --parallel {MAX_PARALLEL} or less (each host at once is a thread and an "
            "ssh or engine process)",
        )
    if remote.deadline is not None and remote.deadline <= 0:
        raise UsageError("--host-timeout must be positive")
    if remote.deadline is not None and remote.deadline < minimum_host_timeout(request):
        need = minimum_host_timeout(request)
        raise UsageError(
            f"--host-timeout {remote.deadline:g}s is too short: each host needs at least "
            f"{need:g} s ({_budget_words(request)})",
            tip=f"use --host-timeout {math.ceil(need)}s or more, or fewer --snapshots or a "
            "shorter --timeout",
        )
    if remote.exec_template is not None and "{host}" not in remote.exec_template:
        raise UsageError(
            f"--exec {remote.exec_template!r} has no {{host}}",
            tip="e.g. --exec 'kubectl exec -n prod {host} --'",
        )
    try:
        python = shlex.split(remote.python)
        if remote.exec_template is not None:
            shlex.split(remote.exec_template)
    except ValueError as err:
        raise UsageError(f"--exec or --remote-python: {err}", tip="check the quotes") from err
    if not python:
        raise UsageError("--remote-python is empty", tip="e.g. --remote-python /usr/bin/python3")
    for name in remote.exec_env:
        if not _ENV_NAME.fullmatch(name):
            raise UsageError(
                "--exec-env takes a variable's name, not its value",
                tip="e.g. --exec-env KUBECONFIG (its value is taken from this environment)",
            )
    seen: set[str] = set()
    for number, host in enumerate(remote.hosts, start=1):
        problem = hostnames.host_problem(host)
        if problem:
            # Not repeated: a mistyped secret must not reach the terminal or a log.
            raise UsageError(
                f"host {number} of {len(remote.hosts)} is not a host name ({problem})",
                tip="one name per host: [USER@]NAME[:PORT], NAME a DNS name, an IP address "
                "or a pod or node name",
            )
        if remote.exec_template is None:
            parse_ssh(host)
        if host in seen:
            raise UsageError(f"host {host!r} is named twice", tip="name each host once")
        seen.add(host)


def probe_budget(request: CollectRequest) -> float:
    """Seconds the probe needs on a host: the snapshots' span, `--timeout` for each round of
    dumps, one for `py-spy --version`, one for the package listing, and one for the
    journal and kernel log when they are read (`probe.logs`)."""
    rounds = request.snapshots
    return (rounds - 1) * request.interval + (rounds + 2 + _log_rounds(request)) * request.timeout


def _log_rounds(request: CollectRequest) -> int:
    """1 when the probe runs journalctl or dmesg (they share one `--timeout`), else 0."""
    return 1 if request.journal or request.kernel_log else 0


def minimum_host_timeout(request: CollectRequest) -> float:
    """The shortest `--host-timeout` that leaves the probe its budget: connecting
    (`CONNECT_TIMEOUT`) and the way back (`RETURN_MARGIN`) come on top."""
    return probe_budget(request) + CONNECT_TIMEOUT + RETURN_MARGIN


def host_deadline(request: CollectRequest) -> float:
    """Seconds one host may take: `--host-timeout`, else the minimum and a margin."""
    remote = request.remote
    if remote is not None and remote.deadline is not None:
        return remote.deadline
    return minimum_host_timeout(request) + DEADLINE_SLACK


def _budget_words(request: CollectRequest) -> str:
    """How `minimum_host_timeout` adds up, in words."""
    rounds = request.snapshots
    span = (rounds - 1) * request.interval
    logs = _log_rounds(request)
    return (
        f"{span:g} s between the first and last of {plural(rounds, 'snapshot')}, "
        f"{rounds + 2 + logs} x --timeout {request.timeout:g}s for the dump rounds, py-spy "
        f"--version, {'the journal and kernel log, ' if logs else ''}and the package listing, "
        f"{CONNECT_TIMEOUT} s to connect and {RETURN_MARGIN:g} s for the way back"
    )


def probe_options(request: CollectRequest, deadline: float) -> dict[str, Any]:
    """What the probe is asked to do (see `probe.main`)."""
    remote = request.remote
    return {
        "match": request.match,
        "pids": list(request.pids),
        "children_of": request.children_of,
        "snapshots": request.snapshots,
        "interval": request.interval,
        "timeout": request.timeout,
        "blocking": request.blocking,
        "locals": request.with_locals,
        "parallel": plan.DEFAULT_PARALLEL,
        "pyspy": remote.pyspy if remote is not None else None,
        # The probe stops starting work this long before the collector gives up on it.
        "deadline": max(1.0, deadline - CONNECT_TIMEOUT - RETURN_MARGIN),
        "transient": list(dumping.TRANSIENT),
        "packages_script": PACKAGES_SCRIPT,
        # Who we are, so that a probe on this very host leaves us out.
        "collector": probe.whoami(),
        # The products' environment scripts, run as locally (`envcap.run_env_script`).
        "env_scripts": [list(e) for e in envcap.ENV_SCRIPTS],
        "env_script_timeout": max(request.timeout, envcap.ENV_SCRIPT_TIMEOUT),
        "env_script_max_chars": envcap.ENV_SCRIPT_MAX_CHARS,
        # Read after each round of dumps, as a local capture does (`probe.ROUND_READS`).
        "round_reads": list(probe.ROUND_READS),
        # The logs, read on the host by the local code (`logtail`, `probe.logs`).
        "logs": list(request.logs),
        "log_lines": request.log_lines,
        "log_bytes": request.log_bytes,
        "journal": request.journal,
        "kernel_log": request.kernel_log,
    }


HOST_MODULES = ("reporter.collect.procread", "reporter.collect.logtail", "reporter.collect.probe")
"""The modules the probe program carries to each host, in import order: each standard
library only and Python 3.8+ (a test holds them to it). On the host they are importable
under their usual names (`from reporter.collect import probe`), so the same code reads
`/proc` here and there: a per-round read added to such a module for a local capture
comes to remote hosts by naming the module here and calling it from `probe.round_reads`."""

# Runs first on the host: makes each carried module importable by its name, then starts
# the probe. A `reporter` installed on the host is never imported instead.
_LOADER = """\
import json, sys, types
def _carry(modules):
    for name, source in modules:
        parts = name.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            if package not in sys.modules:
                made = types.ModuleType(package)
                made.__path__ = []
                sys.modules[package] = made
                if i > 1:
                    setattr(sys.modules[".".join(parts[: i - 1])], parts[i - 1], made)
        module = types.ModuleType(name)
        module.__file__ = "<carried " + name + ">"
        sys.modules[name] = module
        setattr(sys.modules[".".join(parts[:-1])], parts[-1], module)
        exec(compile(source, module.__file__, "exec"), module.__dict__)
"""


def probe_program(python: str, options: dict[str, Any]) -> list[str]:
    """`python3 -c '<bootstrap>'`: the carried modules, the probe's start and its options in
    one shell-safe argument."""
    here = Path(__file__).resolve().parents[2]
    modules = [
        (name, (here / Path(*name.split("."))).with_suffix(".py").read_text(encoding="utf-8"))
        for name in HOST_MODULES
    ]
    source = (
        _LOADER
        + f"_carry(json.loads({json.dumps(json.dumps(modules))}))\n"
        + "sys.modules['reporter.collect.probe'].main("
        + f"json.loads({json.dumps(json.dumps(options))}))\n"
    )
    blob = base64.b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii")
    boot = f'import base64,zlib;exec(zlib.decompress(base64.b64decode("{blob}")))'
    return [*shlex.split(python), "-c", boot]


# -- one host ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HostRun:
    """What came back from one host: the probe's records and how the command ended."""

    host: RemoteHost
    records: tuple[dict[str, Any], ...]
    finished: Finished
    noise: tuple[str, ...] = ()
    """Lines on stdout that were not the probe's (a login script's greeting), first few."""
    capped: str = ""
    """Why the host's output was cut (a cap it went past, named), "" when it was not."""
    ended_at: float = 0.0
    """`time.monotonic()` when its command ended; its deadline counts from the start."""

    @property
    def began_at(self) -> float:
        """`time.monotonic()` when its command started."""
        return self.ended_at - self.finished.seconds


# What every engine process gets from our environment; `--exec-env NAME` adds more. The
# rest (GH_TOKEN, cloud keys) stays here: srun and some kubectl plugins forward it onwards.
ENGINE_ENV = ("PATH", "HOME", "LANG", "SSH_AUTH_SOCK")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def engine_env(
    extra: Sequence[str] = (), environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment an engine process (ssh, kubectl, srun) runs with: `ENGINE_ENV` and
    `extra`, from `environ` (ours by default), nothing else."""
    source = os.environ if environ is None else environ
    return {name: source[name] for name in (*ENGINE_ENV, *extra) if name in source}


class _RecordSink:
    """Parses a host's stdout into records as it arrives, within the host's caps: at most
    `max_bytes` read and `MAX_HOST_RECORDS` kept; only the probe's kinds are kept (never
    the raw text), so what a host sends costs at most about `max_bytes` of memory."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.read = 0
        self.parts: list[bytes] = []
        """The line not yet ended."""
        self.records: list[dict[str, Any]] = []
        self.noise: list[str] = []
        self.capped = ""

    def __call__(self, chunk: bytes) -> bool:
        self.read += len(chunk)
        if self.read > self.max_bytes:
            self.capped = (
                f"it sent more than {human_size(self.max_bytes)} (--max-size, per host); "
                "the rest was not read"
            )
            return False
        if b"\n" not in chunk:  # a long line: joined once it ends (never chunk by chunk)
            self.parts.append(chunk)
            return True
        *lines, tail = b"".join((*self.parts, chunk)).split(b"\n")
        self.parts = [tail]
        for line in lines:
            self.line(line)
            if self.capped:
                return False
        return True

    def line(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
        except ValueError:
            text = raw.decode("utf-8", "replace").strip()
            if text and len(self.noise) < 5:
                self.noise.append(inert.one_line(text, limit=200))
            return
        if not (isinstance(record, dict) and record.get("t") in RECORD_KINDS):
            return
        if len(self.records) >= MAX_HOST_RECORDS:
            self.capped = (
                f"it sent more than {MAX_HOST_RECORDS:,} records (the cap per host); "
                "the rest was not read"
            )
            return
        self.records.append(record)

    def close(self) -> None:
        """The last line, when the output did not end with a newline."""
        tail = b"".join(self.parts)
        if tail and not self.capped:
            self.line(tail)
        self.parts = []


def run_host(
    host: RemoteHost,
    program: Sequence[str],
    *,
    deadline: float,
    stop: threading.Event | None,
    env: Mapping[str, str] | None = None,
    max_bytes: int = 64 << 20,
) -> HostRun:
    """Run the probe on one host and read its records (also those before a timeout), at
    most `max_bytes` of them (`--max-size`): past it, or past `MAX_HOST_RECORDS`, the
    host's command is ended and the host is `capped`."""
    sink = _RecordSink(max_bytes)
    if stop is not None and stop.is_set():  # stopped before its turn came: never started
        done = Finished(argv=tuple(host.argv(program)), returncode=None, stopped=True)
        return HostRun(host=host, records=(), finished=done, ended_at=time.monotonic())
    done = run_bounded(
        host.argv(program),
        timeout=deadline,
        stop=stop,
        env=env if env is not None else engine_env(),
        on_stdout=sink,
        # stderr is read for the reason of a failure: its last lines are enough.
        max_output=min(max_bytes, 1 << 20),
    )
    sink.close()
    capped = sink.capped
    if done.flooded and not capped:
        capped = "it wrote more than 1 MiB of errors (stderr); the rest was not read"
    return HostRun(
        host=host,
        records=tuple(sink.records),
        finished=done,
        noise=tuple(sink.noise),
        capped=capped,
        ended_at=time.monotonic(),
    )


def failure_reason(run: HostRun) -> str:
    """Why a host gave no usable answer, in one line (ssh's or the engine's own words)."""
    done = run.finished
    if done.launch_error:
        return done.launch_error
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if done.returncode == 127 or ("not found" in last and "python" in last.lower()):
        return f"the remote Python was not found ({last or 'exit status 127'}); name it with --remote-python"
    if last:
        return last[:300]
    if run.noise:
        return f"the remote side printed {run.noise[0]!r} and no capture"
    return f"exit status {done.returncode}, no output"


# -- the step ------------------------------------------------------------------------------------


class RemoteSteps(SessionState):
    """The remote fan-out step, over the shared session state."""

    lock: threading.Lock
    saved_at: float
    save_cost: float
    folders: dict[str, str]
    """Each host's folder under `hosts/` (`host_folders`)."""

    def remote_capture(self, hosts: Sequence[RemoteHost]) -> None:
        """Capture on every host, `parallel` at a time; record each as it finishes."""
        request = self.request
        remote = request.remote
        assert remote is not None
        self.lock = threading.Lock()
        self.saved_at = 0.0
        self.save_cost = 0.0
        self.folders = host_folders([h.name for h in hosts])
        deadline = host_deadline(request)
        program = probe_program(remote.python, probe_options(request, deadline))
        environment = engine_env(remote.exec_env)
        done_hosts = 0
        started = time.monotonic()
        with ThreadPoolExecutor(
            max_workers=min(remote.parallel, len(hosts)), thread_name_prefix="remote"
        ) as pool:
            pending: dict[Future[HostRun], RemoteHost] = {
                pool.submit(
                    run_host,
                    h,
                    program,
                    deadline=deadline,
                    stop=self.stop,
                    env=environment,
                    max_bytes=request.max_size,
                ): h
                for h in hosts
            }
            try:
                while pending:
                    finished, _ = wait(list(pending), timeout=WAIT_S, return_when=FIRST_COMPLETED)
                    for future in finished:
                        pending.pop(future)
                        self.record_host(future.result())
                        done_hosts += 1
                        if self.tick is not None:
                            self.tick("hosts", done_hosts, len(hosts))
            except BaseException:
                self.stop.set()  # the running ssh commands watch it
                raise
        order = {h.name: i for i, h in enumerate(hosts)}
        notes = tuple(sorted(self.w.state.remotes, key=lambda n: order.get(n.host, len(order))))
        self.w.update(remotes=notes)
        ok = sum(1 for n in notes if n.status == "complete")
        self.say(
            f"hosts: {ok} of {len(hosts)} complete in {time.monotonic() - started:.1f} s"
            + "".join(
                f"; {n.host}: {n.status} ({n.reason})" for n in notes if n.status != "complete"
            )
        )
        self.w.update(summary=self.summary_text(self.w.state.status))
        self.w.save()

    def write_until(self, run: HostRun) -> float:
        """When writing `run`'s records must stop (`time.monotonic()`): the host's deadline,
        counted from its start, but at least `WRITE_FLOOR` seconds from now."""
        return max(run.began_at + host_deadline(self.request), time.monotonic() + WRITE_FLOOR)

    def record_host(self, run: HostRun) -> None:
        """Write what one host sent (secrets redacted) and its `[[collect.remote]]` note.

        `bundle.toml` is rewritten here at most every `SAVE_EVERY` seconds, and never more
        often than ten times its own rendering time (it is always rewritten at the end):
        rendering costs time in proportion to the files listed so far (about 1 ms per file),
        so a rewrite after each of a thousand hosts would cost time in proportion to hosts
        squared. A hard kill loses at most that much of the manifest, never a file."""
        with self.lock:
            _Recorder(self, run, until=self.write_until(run)).record()
            began = time.monotonic()
            if began - self.saved_at >= max(SAVE_EVERY, 10 * self.save_cost):
                self.w.save()
                self.saved_at = time.monotonic()
                self.save_cost = self.saved_at - began


class BadRecordError(ValueError):
    """A value in a host's record that is not what the probe sends (the value is never
    repeated: it is the host's text)."""


def _pid(r: Mapping[str, Any], key: str = "pid") -> int:
    value = r.get(key)
    if type(value) is not int or not 0 <= value <= PID_MAX:
        raise BadRecordError(f"{key!r} is not a PID")
    return value


def _small_int(r: Mapping[str, Any], key: str, *, default: int | None = None) -> int | None:
    """An optional whole number that fits everywhere it goes (TOML, a file name)."""
    value = r.get(key)
    if value is None:
        return default
    if type(value) is not int or not -(1 << 31) <= value < 1 << 32:
        raise BadRecordError(f"{key!r} is not a small whole number")
    return value


def _snapshot(r: Mapping[str, Any], rounds: int) -> int:
    value = r.get("snapshot")
    if type(value) is not int or not 0 <= value < max(rounds, 1):
        raise BadRecordError("'snapshot' is not one of the snapshots asked for")
    return value


def _text(r: Mapping[str, Any], key: str, *, limit: int = 1 << 30, required: bool = False) -> str:
    value = r.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadRecordError(f"{key!r} is not text")
    return value[:limit]


def _seconds(r: Mapping[str, Any], key: str) -> float:
    value = r.get(key, 0.0)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecordError(f"{key!r} is not a number")
    number = float(value)
    if not math.isfinite(number) or not 0 <= number <= 1e7:
        raise BadRecordError(f"{key!r} is not a duration")
    return number


def _when(r: Mapping[str, Any], key: str) -> datetime:
    """A UTC time the probe stamped: ISO 8601, years 1970 to 9999."""
    text = _text(r, key, limit=64, required=True)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRecordError(f"{key!r} is not a time") from None
    if moment.tzinfo is None or not 1970 <= moment.year <= 9999:
        raise BadRecordError(f"{key!r} is not a time with a zone after 1970")
    return moment.astimezone(UTC)


def _pids(r: Mapping[str, Any]) -> list[int]:
    value = r.get("pids")
    if not isinstance(value, list) or not 1 <= len(value) <= 4096:
        raise BadRecordError("'pids' is not a list of PIDs")
    return [_pid({"pid": p}) for p in value]


def _strings(r: Mapping[str, Any], key: str, *, limit: int = 4096) -> list[str]:
    value = r.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRecordError(f"{key!r} is not a list of text")
    return [v[:limit] for v in value[:limit]]


def host_folders(names: Sequence[str]) -> dict[str, str]:
    """Each host's folder under `hosts/`, unique in the run: the name itself when it is
    already a safe file name (`node-0`), `node-1-22102` for `node-1:22102`, else its slug
    plus the first 8 hex digits of the name's SHA-256 (`normal-1-3f2a9c01` for
    `normal.1`), so `normal.1`, `normal_1` and `normal-1`, or two long pod names that
    share their first 80 characters, never share a folder."""
    out: dict[str, str] = {}
    for name in names:
        host, _sep, port = name.rpartition(":")
        if _FOLDER_RE.fullmatch(name):
            out[name] = name
        elif port.isdigit() and _FOLDER_RE.fullmatch(host) and len(name) <= 80:
            out[name] = f"{host}-{port}"
        else:
            out[name] = _hashed(name)
    taken: dict[str, list[str]] = {}
    for name, folder in out.items():
        taken.setdefault(folder, []).append(name)
    for folder, owners in taken.items():
        for name in owners:
            # The one kept as it is: the name that is that folder; the others get the hash.
            if len(owners) > 1 and name != folder:
                out[name] = _hashed(name)
    return out


# Names kept as folder names as they are: letters, digits, `-`, not starting with one,
# at most 80 characters.
_FOLDER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,79}")


def _hashed(name: str) -> str:
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{plan.slug(name, limit=71)}-{digest}"


def _ignore(_record: Mapping[str, Any]) -> None:
    """Records with nothing to write (`hello`, `end`): read where they are needed."""


class _Recorder:
    """Turns one host's records into bundle files, manifest entries and its outcome.

    Every value in a record is checked before it is used (`_pid`, `_text`, `_when`...): a
    record that does not pass costs that record only, with one skip note that never
    repeats the value. Writing stops at `MAX_HOST_FILES` files or at `until` (the host's
    deadline), and the host is then `incomplete` with the cap named."""

    def __init__(self, session: RemoteSteps, run: HostRun, *, until: float) -> None:
        self.s = session
        self.run = run
        self.until = until
        self.name = run.host.name
        folders = getattr(session, "folders", None) or {}
        self.base = f"hosts/{folders.get(self.name) or host_folders([self.name])[self.name]}"
        self.titles: dict[int, str] = {}
        self.ok = 0
        self.failed = 0
        self.files = 0
        self.notes = 0
        self.bad: dict[str, int] = {}
        """Records not understood, by kind."""
        self.capped = run.capped
        self.reasons: list[str] = []
        self.lost: list[int] = []
        """Snapshots the probe did not take (its deadline would have passed first)."""
        self.logs_taken: set[str] = set()
        """The `logs/` paths used on this host (`keep_log`)."""

    def skip(self, what: str, reason: str) -> None:
        """A skip note for this host, at most `MAX_HOST_NOTES` of them (then counted)."""
        self.notes += 1
        if self.notes <= MAX_HOST_NOTES:
            # The host's text, inert: no escape sequence or bidi override in bundle.toml.
            self.s.note_skip(inert.for_document(what), inert.for_document(reason))

    def record(self) -> None:
        run, s = self.run, self.s
        kinds = {r["t"] for r in run.records}
        hello = next((r for r in run.records if r["t"] == "hello"), None)
        targets = 0
        for number, record in enumerate(run.records, start=1):
            if time.monotonic() > self.until:
                self.capped = self.capped or (
                    f"its deadline (--host-timeout) passed while its records were written; "
                    f"{len(run.records) - number + 1:,} of {len(run.records):,} were not"
                )
                break
            if self.files >= MAX_HOST_FILES:
                self.capped = (self.capped + "; " if self.capped else "") + (
                    f"it sent more than {MAX_HOST_FILES:,} files (the cap per host); the rest "
                    "were not written"
                )
                break
            kind = record["t"]
            try:
                getattr(self, f"on_{kind}", _ignore)(record)
            except Exception as err:  # one bad record costs that record, never the run
                self.bad[kind] = self.bad.get(kind, 0) + 1
                if isinstance(err, OutputError):
                    why = f"not written: {err}"
                    self.reasons.append(why)
                else:
                    known = isinstance(err, BadRecordError)
                    why = f"not understood: {err if known else type(err).__name__}"
                self.skip(f"record {number} ({kind}) from {self.name}", why)
            else:
                targets += kind == "target"
        if self.bad:
            self.notes -= 1  # this summary is always kept
            self.skip(
                f"records from {self.name}",
                f"{sum(self.bad.values())} left out ("
                + ", ".join(f"{n} {k}" for k, n in sorted(self.bad.items()))
                + "); the others are kept",
            )
        if self.notes > MAX_HOST_NOTES:
            s.note_skip(
                f"notes on {self.name}",
                f"{self.notes - MAX_HOST_NOTES} more notes not listed (at most "
                f"{MAX_HOST_NOTES} per host)",
            )
        hostname = ""
        if hello is not None and isinstance(hello.get("hostname"), str):
            hostname = inert.one_line(hello["hostname"], limit=255)
        done = run.finished
        if done.stopped:
            status, reason = "interrupted", "report collect was interrupted"
        elif self.capped:
            status, reason = "incomplete", f"{self.capped}; what came before is kept"
        elif done.timed_out and "end" not in kinds:
            status = "timeout"
            reason = f"no answer within {done.seconds:.0f} s (--host-timeout)" + (
                "; what came before is kept" if hello is not None else ""
            )
        elif hello is None:
            status, reason = "failed", failure_reason(run)
        elif "end" not in kinds:
            status, reason = "failed", f"the capture ended early: {failure_reason(run)}"
        elif not self.ok:
            status = "incomplete"
            reason = "; ".join(dict.fromkeys(self.reasons)) or "no stack came back"
        elif self.bad:
            status = "partial"
            reason = (
                f"{plural(sum(self.bad.values()), 'record')} of {len(run.records)} left out "
                "(not understood or not written: see the skip notes); the others are kept"
            )
        elif self.lost:
            status = "partial"
            rounds = self.s.request.snapshots
            taken = rounds - len(set(self.lost))
            reason = (
                f"{taken} of {plural(rounds, 'snapshot')} taken: the host's deadline would "
                "have passed before the next one (--host-timeout; see `report collect --help`)"
            )
        else:
            status, reason = "complete", ""
        reason = inert.one_line(self.s.masked(reason), limit=2000)
        note = RemoteNote(
            host=self.name,
            via=run.host.via,
            status=status,
            reason=reason,
            hostname=hostname,
            targets=targets,
            dumps=self.ok,
            failed_dumps=self.failed,
            seconds=done.seconds,
        )
        s.w.update(remotes=(*s.w.state.remotes, note))
        if status != "complete":
            s.note_skip(f"host {self.name}", f"{status}: {reason}")
        s.say(
            f"{self.name}: {status}"
            + (f" ({reason})" if reason else "")
            + f"; {plural(targets, 'process')}, {plural(self.ok, 'dump')} in {done.seconds:.1f} s"
        )

    def keep(self, rel: str, text: str, kind: EvidenceKind, description: str, **kw: Any) -> None:
        """As a local capture keeps a file (`SessionState.keep`), under `hosts/<host>/`."""
        self.files += 1
        self.s.keep(f"{self.base}/{rel}", text, kind, description, host=self.name, **kw)

    def on_target(self, r: dict[str, Any]) -> None:
        pid = _pid(r)
        note = TargetNote(
            pid=pid,
            ppid=_pid(r, "ppid"),
            uid=_small_int(r, "uid"),
            title=_text(r, "title", limit=4096),
            selected_by=_text(r, "selected_by", limit=200),
            pgid=_small_int(r, "pgid"),
            launcher=_small_int(r, "launcher"),
            host=self.name,
        )
        self.titles[pid] = note.title
        self.s.w.update(targets=(*self.s.w.state.targets, note))

    def on_process(self, r: dict[str, Any]) -> None:
        argv = _strings(r, "argv", limit=1 << 16)
        data = "\x00".join(argv).encode("utf-8", "replace") + b"\x00"
        text = envcap.cmdline_evidence(data, detector=self.s.detector).text
        entry = ProcessEntry(
            pid=_pid(r),
            ppid=_pid(r, "ppid"),
            pgid=_small_int(r, "pgid"),
            cmdline=" ".join(a for a in text.split("\x00") if a),
            host=self.name,
        )
        self.s.w.update(processes=(*self.s.w.state.processes, entry))

    def on_passed(self, r: dict[str, Any]) -> None:
        self.skip(
            f"PID {_pid(r)} on {self.name} ({_text(r, 'title', limit=60)})",
            _text(r, "reason", limit=2000, required=True),
        )

    def on_skip(self, r: dict[str, Any]) -> None:
        lost = r.get("lost") or []
        if not isinstance(lost, list):
            raise BadRecordError("'lost' is not a list of snapshots")
        rounds = self.s.request.snapshots
        self.lost += [_snapshot({"snapshot": k}, rounds) for k in lost[:rounds]]
        self.skip(
            f"{_text(r, 'what', limit=300, required=True)} on {self.name}",
            _text(r, "reason", limit=2000, required=True),
        )

    def on_nomatch(self, r: dict[str, Any]) -> None:
        request = self.s.request
        what = _text(r, "error", limit=2000) or (
            f"no process matches {request.match!r}" if request.match else "no process found"
        )
        similar = _strings(r, "similar", limit=80)[:20]
        self.reasons.append(
            what + (f" (Python processes there: {', '.join(similar)})" if similar else "")
        )

    def on_file(self, r: dict[str, Any]) -> None:
        kind, pid = _text(r, "kind", limit=20, required=True), _pid(r)
        if kind not in ("cmdline", "environ"):
            return
        try:
            data = base64.b64decode(_text(r, "b64", required=True), validate=True)
        except ValueError:
            raise BadRecordError("'b64' is not base64") from None
        detector = self.s.detector
        if kind == "cmdline":
            captured = envcap.cmdline_evidence(data, detector=detector)
        else:
            captured = envcap.environ_evidence(data, detector=detector)
        self.files += 1
        self.s.keep_proc_copy(
            pid, kind, captured, _text(r, "what", limit=300), base=f"{self.base}/", host=self.name
        )

    def on_pyspy(self, r: dict[str, Any]) -> None:
        refused = _strings(r, "refused", limit=1000)[:50]
        uid = _small_int(r, "uid")
        others = "someone other than root" + (f" or uid {uid}" if uid != 0 else "")
        path = _text(r, "path", limit=4096)
        if path:
            version = _text(r, "version", limit=200)
            if version:
                self.s.w.update(pyspy=inert.one_line(version, limit=200))
            if refused:
                self.skip(
                    f"py-spy copies on {self.name}",
                    f"passed over, as {others} could have changed them (not run as uid "
                    f"{uid}): " + "; ".join(refused) + f"; {path} was used",
                )
            return
        where = _text(r, "searched", limit=2000)
        if refused:
            first = refused[0].split(" (", 1)[0]
            reason = (
                f"py-spy on {self.name} was found only where {others} could have changed "
                f"it, so it was not run as uid {uid}: "
                + "; ".join(refused)
                + f". Check it, then name it with --remote-py-spy {first} (or install py-spy "
                "in a root-owned folder on that host's PATH)"
            )
        else:
            reason = (
                f"py-spy not found on {self.name} (looked in {where}); install it there "
                "(pip install py-spy) or name it with --remote-py-spy PATH"
            )
        self.reasons.append(reason)
        self.skip(f"py-spy dumps on {self.name}", reason)

    def on_dump(self, r: dict[str, Any]) -> None:
        request = self.s.request
        pid, snapshot = _pid(r), _snapshot(r, request.snapshots)
        finished = Finished(
            argv=(),
            returncode=_small_int(r, "returncode"),
            stdout=_text(r, "stdout"),
            stderr=_text(r, "stderr", limit=1 << 16),
            seconds=_seconds(r, "seconds"),
            timed_out=r.get("timed_out") is True,
            launch_error=_text(r, "launch_error", limit=2000),
        )
        status, reason = dumping.outcome(finished, timeout=request.timeout)
        result = DumpResult(
            pid=pid,
            snapshot=snapshot,
            started_at=_when(r, "started_at"),
            seconds=finished.seconds,
            status=status,
            returncode=finished.returncode,
            stdout=finished.stdout,
            stderr=finished.stderr,
            reason=reason,
            attempts=_small_int(r, "attempts", default=1) or 1,
        )
        text = dumping.evidence_text(result)
        redacted = 0
        if status is DumpStatus.OK and request.with_locals:
            text, redacted = self.s.scrubbed_locals(text)
        title = self.titles.get(pid, "")[:80]
        mode = "blocking" if request.blocking else "--nonblocking"
        detail = (
            f"{mode}{' --locals' if request.with_locals else ''}, snapshot {snapshot + 1} of "
            f"{request.snapshots}, {result.seconds:.2f} s"
            + (f", {result.attempts} attempts" if result.attempts > 1 else "")
            + (f", {redacted} secret locals redacted" if redacted else "")
        )
        if status is DumpStatus.OK:
            description = f"py-spy dump of PID {pid} ({title}) on {self.name}: {detail}"
        else:
            description = (
                f"py-spy failed for PID {pid} ({title}) on {self.name}: {reason}; {detail}"
            )
        self.keep(
            plan.dump_path(pid, snapshot),
            text,
            EvidenceKind.PYSPY_TEXT,
            description,
            captured_at=result.started_at,
        )
        # Counted once written: a dump that could not be written is not evidence.
        if status is DumpStatus.OK:
            self.ok += 1
            self.s.dumps_ok += 1
        else:
            self.failed += 1
            self.s.dumps_failed += 1
            self.reasons.append(f"PID {pid}: {reason}")
            self.skip(f"py-spy dump of PID {pid} on {self.name}, snapshot {snapshot + 1}", reason)

    def on_round(self, r: dict[str, Any]) -> None:
        pid, k = _pid(r), _snapshot(r, self.s.request.snapshots)
        name = _text(r, "name", limit=40, required=True)
        if name not in probe.ROUND_READS:
            raise BadRecordError("'name' is not a read the probe was asked for")
        title = self.titles.get(pid, "")
        if self.s.detector is not None:
            title = self.s.masked(title)
        self.files += 1
        self.s.keep_round_read(
            name, pid, k, _text(r, "text", required=True), title, base=f"{self.base}/",
            host=self.name,
        )  # fmt: skip

    def on_log(self, r: dict[str, Any]) -> None:
        source = _text(r, "source", limit=16, required=True)
        if source not in ("file", "journal", "kernel"):
            raise BadRecordError("'source' is not a kind of log")
        since = _when(r, "since") if r.get("since") else None
        got = logtail.Tail(
            text=_text(r, "text"),
            lines=_small_int(r, "lines", default=0) or 0,
            size=_small_int(r, "size", default=0) or 0,
            cut=_text(r, "cut", limit=4096),
            error=_text(r, "error", limit=4096),
        )
        self.files += 1
        self.s.keep_log(
            source,
            _text(r, "name", limit=4096),
            got,
            since=since,
            taken=self.logs_taken,
            base=f"{self.base}/",
            host=self.name,
        )

    def on_envscript(self, r: dict[str, Any]) -> None:
        pids = _pids(r)
        known = {e[1]: e for e in envcap.ENV_SCRIPTS}
        module_name = _text(r, "module", limit=200, required=True)
        if module_name not in known:  # only the scripts we asked for
            raise BadRecordError("'module' is not a script the probe was asked to run")
        _dist, module, kind, name = known[module_name]
        who = "PID " + ", ".join(map(str, pids[:20]))
        self.keep(
            plan.env_path(pids[0], name),
            self.s.masked(_text(r, "text", required=True)),
            EvidenceKind(kind),
            f"python -m {module} via {_text(r, 'via', limit=300)} on {self.name} ({who})",
        )

    def on_packages(self, r: dict[str, Any]) -> None:
        pids = _pids(r)
        text = _text(r, "text")
        run_as = _text(r, "as", limit=100)
        count = sum(1 for line in text.splitlines() if line.strip())
        self.keep(
            plan.env_path(pids[0], "packages.txt"),
            text,
            EvidenceKind.PACKAGES,
            f"{count} packages of the interpreter of PID {', '.join(map(str, pids[:20]))} on "
            f"{self.name} (importlib.metadata via {_text(r, 'via', limit=300)}"
            + (f", run as {run_as}" if run_as else "")
            + ")",
        )
