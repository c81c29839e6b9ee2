"""Which hosts a remote capture reaches and how: names, engines, budgets, folders.

`remote_hosts` turns `--ssh`, `--exec TEMPLATE --host` and `--hosts-file` into `RemoteHost`s
(the argv that reaches each); `validate_remote` refuses a request that cannot be carried out
before anything runs; `host_deadline` and `minimum_host_timeout` say how long one host may
take; `host_folders` names each host's folder under `hosts/`. Used by `remote.py`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reporter.collect import plan
from reporter.collect.plan import CollectRequest, RemoteRequest
from reporter.core import hostnames
from reporter.core.errors import UsageError
from reporter.core.text import plural

# Seconds ssh may take to connect (ConnectTimeout); the deadline covers the rest.
CONNECT_TIMEOUT = 10


# Seconds the probe stops before the host's deadline, for its last records to come back.
RETURN_MARGIN = 5.0


# Seconds a host gets by default beyond the minimum (a slow login, a loaded host).
DEADLINE_SLACK = 15.0


# The largest hosts file, also on stdin (`--hosts-file -`).
HOSTS_FILE_MAX = 16 << 20


# The most hosts at once: each is a thread and an ssh (or engine) process with two pipes.
MAX_PARALLEL = 256


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
