"""The ptrace rules and the advice for each way of being refused (pure)."""

from __future__ import annotations

import pytest

from reporter.collect import ptrace
from reporter.collect.ptrace import PtraceFacts


def _facts(
    *, euid: int = 1000, cap: bool = False, yama: int | None = None, container: str = ""
) -> PtraceFacts:
    return PtraceFacts(euid=euid, cap_sys_ptrace=cap, yama_scope=yama, container=container)


@pytest.mark.parametrize(
    ("facts", "target_uid", "descendant", "allowed", "why"),
    [
        (_facts(), 1000, False, True, "same user"),
        (_facts(yama=0), 1000, False, True, "same user"),
        (_facts(yama=1), 1000, False, False, "ptrace_scope is 1"),
        (_facts(yama=1), 1000, True, True, "same user"),
        (_facts(yama=2), 1000, True, False, "ptrace_scope is 2"),
        (_facts(yama=3, cap=True, euid=0), 0, True, False, "ptrace_scope is 3"),
        (_facts(), 0, False, False, "runs as uid 0"),
        (_facts(euid=0, cap=True, yama=1), 1000, False, True, "CAP_SYS_PTRACE"),
        (_facts(euid=0, cap=True, yama=2), 1000, False, True, "CAP_SYS_PTRACE"),
        # Root in a container without the capability: same uid, but Yama still applies.
        (_facts(euid=0, yama=1, container="docker"), 0, False, False, "ptrace_scope is 1"),
        (_facts(), None, False, True, "same user"),
    ],
)
def test_assess(
    facts: PtraceFacts, target_uid: int | None, descendant: bool, allowed: bool, why: str
) -> None:
    verdict = ptrace.assess(facts, target_uid=target_uid, descendant=descendant)
    assert verdict.allowed is allowed
    assert why in verdict.reason


def _advice(facts: PtraceFacts, target_uid: int) -> str:
    verdict = ptrace.assess(facts, target_uid=target_uid, descendant=False)
    return "\n".join(ptrace.advice(facts, verdict, target_uid=target_uid))


def test_advice_names_the_fix() -> None:
    assert "--cap-add SYS_PTRACE" in _advice(_facts(euid=0, yama=1, container="docker"), 0)
    assert "kubectl debug" in _advice(_facts(euid=0, yama=1, container="kubernetes"), 0)
    assert "sudo -u '#0'" in _advice(_facts(), 0)
    # An ordinary user in a container: the container's capabilities would not help them.
    in_container = _advice(_facts(container="docker"), 0)
    assert "sudo -u '#0'" in in_container and "--cap-add" not in in_container
    # Root without the capability: "run as root" would be no advice at all.
    assert "run as root (" not in _advice(_facts(euid=0, yama=1, container="docker"), 0)
    scope1 = _advice(_facts(yama=1), 1000)
    assert "kernel.yama.ptrace_scope=0" in scope1 and "setcap cap_sys_ptrace" in scope1
    assert "kernel.yama.ptrace_scope=0" not in _advice(_facts(yama=2), 1000)
    assert "reboot" in _advice(_facts(yama=3), 1000)
    # Allowed by the rules yet refused: blame a security module, not the user.
    assert "SELinux" in _advice(_facts(), 1000)


def test_describe() -> None:
    text = _facts(euid=0, cap=False, yama=1, container="docker").describe()
    assert text == (
        "uid 0 without CAP_SYS_PTRACE; kernel.yama.ptrace_scope=1 (restricted: only a process's "
        "ancestors may read it), in a docker container"
    )
    assert "no Yama" in _facts().describe()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"dockerenv": True, "containerenv": False, "cgroup": "0::/", "env_container": ""},
            "docker",
        ),
        ({"dockerenv": False, "containerenv": True, "cgroup": "", "env_container": ""}, "podman"),
        (
            {
                "dockerenv": False,
                "containerenv": False,
                "cgroup": "0::/kubepods/burstable/pod1",
                "env_container": "",
            },
            "kubernetes",
        ),
        (
            {
                "dockerenv": False,
                "containerenv": False,
                "cgroup": "0::/",
                "env_container": "systemd-nspawn",
            },
            "container",
        ),
        (
            {
                "dockerenv": False,
                "containerenv": False,
                "cgroup": "0::/init.scope",
                "env_container": "",
            },
            "",
        ),
    ],
)
def test_container_kind(kwargs: dict[str, object], expected: str) -> None:
    assert ptrace.container_kind(**kwargs) == expected  # type: ignore[arg-type]


def test_parse_yama_and_permission_text() -> None:
    assert ptrace.parse_yama("1\n") == 1
    assert ptrace.parse_yama("x") is None
    assert ptrace.is_permission_error(
        "Permission Denied: Try running again with elevated permissions"
    )
    assert not ptrace.is_permission_error(
        "Error: Failed to find python version from target process"
    )


def test_read_facts_matches_this_process() -> None:
    facts = ptrace.read_facts()
    assert facts.euid >= 0
    assert facts.yama_scope in (None, 0, 1, 2, 3)
