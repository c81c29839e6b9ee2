"""May this process read another one's memory (what py-spy needs), and if not, why and what to do.

py-spy reads a target with `process_vm_readv` (`--nonblocking`) or after
stopping it with ptrace; both pass the kernel's ptrace access check:

* **same user**, or the capability `CAP_SYS_PTRACE` (root normally has it; a
  container's root does not unless started with `--cap-add SYS_PTRACE`);
* **Yama** (`/proc/sys/kernel/yama/ptrace_scope`, when the module is loaded):
  0 classic (the rule above), 1 restricted (only an ancestor of the target may
  read it, unless `CAP_SYS_PTRACE`), 2 admin-only (`CAP_SYS_PTRACE` needed),
  3 nobody, until the next reboot.

`assess` applies these rules to facts (`PtraceFacts`, read once by `read_facts`)
and a target's uid; `advice` turns a denial into the steps that lift it. Both are
pure. Example::

    assess(PtraceFacts(euid=1000, cap_sys_ptrace=False, yama_scope=1, container=""),
           target_uid=1000, descendant=False)
    -> Assessment(allowed=False, reason="kernel.yama.ptrace_scope is 1 (restricted): ...")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from reporter.collect import procfs

CAP_SYS_PTRACE = 19
YAMA_PATH = Path("/proc/sys/kernel/yama/ptrace_scope")
_YAMA_MEANING = {
    0: "classic: a user may read their own processes",
    1: "restricted: only a process's ancestors may read it",
    2: "admin-only: CAP_SYS_PTRACE is needed",
    3: "disabled: no process may be read until the next reboot",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PtraceFacts:
    """Who the collector runs as, and the kernel's ptrace policy."""

    euid: int
    cap_sys_ptrace: bool
    yama_scope: int | None
    """None when Yama is not loaded (the file does not exist)."""
    container: str
    """"docker", "podman", "kubernetes", "container" or "" (not in one, as far as we can tell)."""

    def describe(self) -> str:
        """One line for the manifest and the progress output."""
        scope = (
            f"kernel.yama.ptrace_scope={self.yama_scope} ({_YAMA_MEANING.get(self.yama_scope, '?')})"
            if self.yama_scope is not None
            else "no Yama (kernel.yama.ptrace_scope absent)"
        )
        cap = "with CAP_SYS_PTRACE" if self.cap_sys_ptrace else "without CAP_SYS_PTRACE"
        where = f", in a {self.container} container" if self.container else ""
        return f"uid {self.euid} {cap}; {scope}{where}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Assessment:
    """The rules' answer for one target: allowed or not, and the rule that decided."""

    allowed: bool
    reason: str


def assess(facts: PtraceFacts, *, target_uid: int | None, descendant: bool) -> Assessment:
    """Whether py-spy, run by this process, may read a target owned by `target_uid`."""
    scope = facts.yama_scope
    if scope is not None and scope >= 3:
        return Assessment(
            allowed=False,
            reason="kernel.yama.ptrace_scope is 3: no process may be read until the next reboot",
        )
    if facts.cap_sys_ptrace:
        return Assessment(allowed=True, reason="CAP_SYS_PTRACE")
    if scope == 2:
        return Assessment(
            allowed=False,
            reason="kernel.yama.ptrace_scope is 2 (admin-only) and this process lacks CAP_SYS_PTRACE",
        )
    if target_uid is not None and target_uid != facts.euid:
        return Assessment(
            allowed=False,
            reason=f"the target runs as uid {target_uid}, report collect as uid {facts.euid}, "
            "without CAP_SYS_PTRACE",
        )
    if scope == 1 and not descendant:
        return Assessment(
            allowed=False,
            reason="kernel.yama.ptrace_scope is 1 (restricted): only an ancestor of the target may "
            "read it without CAP_SYS_PTRACE",
        )
    return Assessment(allowed=True, reason="same user")


def advice(
    facts: PtraceFacts, assessment: Assessment, *, target_uid: int | None
) -> tuple[str, ...]:
    """What to do about a denial, most direct step first."""
    steps: list[str] = []
    scope = facts.yama_scope
    if scope is not None and scope >= 3:
        return (
            "ptrace stays disabled until a reboot; use the dumps the service writes itself "
            "(faulthandler tracebacks, SGLang's watchdog py-spy dumps in its log)",
        )
    if target_uid is not None and target_uid != facts.euid and not facts.cap_sys_ptrace:
        steps.append(
            f"run as the target's user (`sudo -u '#{target_uid}' report collect ...`) or as root "
            '(`sudo env "PATH=$PATH" report collect ...`)'
        )
    # Only root gains from the container's capability set; other users need the uid step.
    if facts.container and not facts.cap_sys_ptrace and facts.euid == 0:
        steps.append(
            f"this is a {facts.container} container without CAP_SYS_PTRACE: restart it with "
            "`--cap-add SYS_PTRACE` (Kubernetes: securityContext.capabilities.add: [SYS_PTRACE]), "
            "or run report collect from the host or from a debug container that shares the "
            "target's PID namespace (`kubectl debug -it POD --target=CONTAINER`)"
        )
    if scope in (1, 2) and not facts.cap_sys_ptrace:
        if facts.euid != 0:
            steps.append(
                'run as root (`sudo env "PATH=$PATH" report collect ...`), or give py-spy the '
                "capability once (`sudo setcap cap_sys_ptrace+ep $(command -v py-spy)`)"
            )
        if scope == 1:
            steps.append(
                "relax Yama for the session, on the host: `sudo sysctl kernel.yama.ptrace_scope=0` "
                "(set it back to 1 afterwards)"
            )
    if not steps and not assessment.allowed:
        steps.append(
            'run as root (`sudo env "PATH=$PATH" report collect ...`) with CAP_SYS_PTRACE kept'
        )
    if not steps:
        # The rules allowed it, yet py-spy was refused: a security module or seccomp filter.
        steps.append(
            "the usual rules allow this, so a security module (SELinux, AppArmor) or a seccomp "
            "profile forbids ptrace here; run as root on the host, or allow ptrace in that policy"
        )
    return tuple(steps)


def parse_yama(text: str) -> int | None:
    """The scope number in the Yama file's text; None if it is not a number."""
    value = text.strip()
    return int(value) if value.isdigit() else None


def container_kind(*, dockerenv: bool, containerenv: bool, cgroup: str, env_container: str) -> str:
    """Which container runtime the process seems to run under ("" when none)."""
    if containerenv or env_container == "podman":
        return "podman"
    if "kubepods" in cgroup:
        return "kubernetes"
    if dockerenv or "docker" in cgroup:
        return "docker"
    if env_container or "containerd" in cgroup or "lxc" in cgroup:
        return "container"
    return ""


def read_facts() -> PtraceFacts:
    """The facts for this process, from `/proc` (I/O)."""
    try:
        yama = parse_yama(YAMA_PATH.read_text(encoding="utf-8"))
    except OSError:
        yama = None
    try:
        cgroup = Path("/proc/1/cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        cgroup = ""
    caps = procfs.parse_cap_eff(procfs.read_status("self"))
    return PtraceFacts(
        euid=os.geteuid(),
        cap_sys_ptrace=bool(caps >> CAP_SYS_PTRACE & 1),
        yama_scope=yama,
        container=container_kind(
            dockerenv=Path("/.dockerenv").exists(),
            containerenv=Path("/run/.containerenv").exists(),
            cgroup=cgroup,
            # systemd-nspawn and podman set the lower-case `container` variable.
            env_container=os.environ.get("container", ""),  # noqa: SIM112
        ),
    )


def is_permission_error(stderr: str) -> bool:
    """True when py-spy's error text says it was not allowed to read the target."""
    return "Permission Denied" in stderr or "Operation not permitted" in stderr
