"""Simulated hosts for the remote-collection tests: one real OpenSSH `sshd` per host on 127.0.0.1.

`ssh_lab(["node-a", "node-b"])` starts, per name, Debian's `/usr/sbin/sshd` on its own port
inside its own UTS, PID and mount namespaces (`unshare --uts --pid --fork --mount-proc`), so
`hostname` there says `node-a` and its processes have their own PIDs (both hosts' first
processes are PID 1, 2, ...), as on two machines. A throwaway host key and user key are made
for the lab; the ssh config it writes (`lab.config`) names each host as an alias
(`Host node-a` -> `127.0.0.1:<port>`) with that key and a known_hosts file holding the host
key: strict host key checking stays on. `down=["node-down"]` adds aliases to a port nothing
listens on (an unreachable host).

`lab.hosts["node-a"].spawn(argv)` runs a program on that host (`nsenter` into its
namespaces), the way the tests start gloo ranks there. Everything dies with the lab: each
namespace's PID 1 is its sshd, and `unshare --kill-child` takes the namespace down with it.

Needs root (the namespaces, and sshd's privilege separation directory) and the programs
`sshd`, `ssh`, `ssh-keygen`, `unshare`, `nsenter`; `require_lab()` names what is missing, for a
skip reason. `.ci/run` installs openssh-server.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
READY_TIMEOUT_S = 20.0


ROOT = Path(__file__).resolve().parents[2]


def report(
    *args: str, path: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`report ARGS` by this interpreter from the repository's root, as the lab's tests run
    it; `path` replaces PATH (None: ours)."""
    env = dict(os.environ) if path is None else {**os.environ, "PATH": path}
    return subprocess.run(
        [sys.executable, "-m", "reporter", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
        env=env,
    )


def require_lab() -> str | None:
    """Why the lab cannot run here (a skip reason), or None."""
    if os.geteuid() != 0:
        return (
            "the simulated hosts need root: a PID and UTS namespace per host (unshare --pid "
            "--uts) and sshd's privilege separation directory; CI runs the suite as root"
        )
    if not Path(SSHD).is_file():
        return "sshd is not installed (Debian package openssh-server; .ci/run installs it)"
    for program in ("ssh", "ssh-keygen", "unshare", "nsenter"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass(slots=True)
class SimHost:
    """One simulated host: its sshd (PID 1 of its namespaces) and how to run things there."""

    name: str
    port: int
    unshare: subprocess.Popen[bytes]
    init_pid: int = 0
    """The host PID of the namespace's PID 1 (its sshd), for nsenter."""
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        log: Path,
    ) -> subprocess.Popen[bytes]:
        """Run `argv` on this host (inside its namespaces), in a session of its own."""
        handle = log.open("wb")
        proc = subprocess.Popen(
            [
                "nsenter",
                "--target",
                str(self.init_pid),
                "--pid",
                "--mount",
                "--uts",
                f"--wd={cwd}",
                "--",
                *argv,
            ],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        handle.close()
        self.started.append(proc)
        return proc


@dataclass(frozen=True, slots=True, kw_only=True)
class Lab:
    """The running hosts and the ssh config that reaches them."""

    folder: Path
    config: Path
    hosts: dict[str, SimHost]
    user: str

    def ssh_args(self) -> list[str]:
        """`report collect` options that make its ssh use the lab's config."""
        return ["--ssh-config", str(self.config)]


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "reporter-test", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _sshd_config(folder: Path, port: int) -> Path:
    config = folder / f"sshd-{port}.conf"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {folder / 'host_key'}",
                f"AuthorizedKeysFile {folder / 'authorized_keys'}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                # The lab's files live in a temporary folder with the usual 0755/1777 modes.
                "StrictModes no",
                "PidFile none",
                "PrintMotd no",
                "PrintLastLog no",
                "LogLevel ERROR",
                # The fan-out benchmark opens many sessions at once.
                "MaxStartups 200:30:400",
                "MaxSessions 50",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return config


def _init_of(unshare_pid: int) -> int:
    """unshare's forked child: the namespace's PID 1."""
    for task in Path(f"/proc/{unshare_pid}/task").iterdir():
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    return 0


@contextlib.contextmanager
def ssh_lab(names: Sequence[str], *, down: Sequence[str] = ()) -> Iterator[Lab]:
    """Start one sshd per name (see the module docstring); stop them all on exit."""
    Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sshlab-") as tmp:
        folder = Path(tmp)
        _keygen(folder / "host_key")
        _keygen(folder / "user_key")
        shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
        host_key = (folder / "host_key.pub").read_text().split()
        user = pwd.getpwuid(os.getuid()).pw_name
        hosts: dict[str, SimHost] = {}
        try:
            for name in names:
                port = _free_port()
                config = _sshd_config(folder, port)
                script = f"hostname {name} && exec {SSHD} -D -e -f {config}"
                log = (folder / f"sshd-{name}.log").open("wb")
                proc = subprocess.Popen(
                    [
                        "unshare",
                        "--uts",
                        "--pid",
                        "--fork",
                        "--mount-proc",
                        "--kill-child",
                        "--",
                        "sh",
                        "-c",
                        script,
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                )
                log.close()
                hosts[name] = SimHost(name=name, port=port, unshare=proc)
            deadline = time.monotonic() + READY_TIMEOUT_S
            for host in hosts.values():
                while not _listening(host.port):
                    if host.unshare.poll() is not None or time.monotonic() > deadline:
                        said = (folder / f"sshd-{host.name}.log").read_text(errors="replace")
                        raise RuntimeError(f"sshd for {host.name} did not start: {said[-2000:]}")
                    time.sleep(0.05)
                host.init_pid = _init_of(host.unshare.pid)
            known = folder / "known_hosts"
            lines = [f"[127.0.0.1]:{h.port} {host_key[0]} {host_key[1]}" for h in hosts.values()]
            known.write_text("\n".join(lines) + "\n", encoding="utf-8")
            blocks = [
                f"Host {h.name}\n  HostName 127.0.0.1\n  Port {h.port}\n" for h in hosts.values()
            ]
            blocks += [
                f"Host {name}\n  HostName 127.0.0.1\n  Port {_free_port()}\n" for name in down
            ]
            blocks.append(
                "Host *\n"
                f"  User {user}\n"
                f"  IdentityFile {folder / 'user_key'}\n"
                "  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {known}\n"
                "  GlobalKnownHostsFile /dev/null\n"
                "  StrictHostKeyChecking yes\n"
                "  PasswordAuthentication no\n"
                "  LogLevel ERROR\n"
            )
            config = folder / "ssh_config"
            config.write_text("\n".join(blocks), encoding="utf-8")
            yield Lab(folder=folder, config=config, hosts=hosts, user=user)
        finally:
            for host in hosts.values():
                for proc in host.started:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(host.unshare.pid, signal.SIGKILL)
            for host in hosts.values():
                for proc in (*host.started, host.unshare):
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=10)
