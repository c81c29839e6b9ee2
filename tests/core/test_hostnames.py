"""The one host-name grammar of `report collect` and the bundle loader (`core/hostnames.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.collect import plan, remotehosts
from reporter.collect.plan import CollectRequest, RemoteRequest
from reporter.core import hostnames
from reporter.core.errors import ManifestError, UsageError
from reporter.load import bundle

GOOD = [
    "node-3",
    "node-3.cluster.local",
    "root@node-3:2222",
    "ops.user@gpu_node_07",
    "10.0.0.7",
    "10.0.0.7:22",
    "fe80::1",
    "fe80::1%eth0",
    "[fe80::1]:2222",
    "sglang-decode-7d9f8c6b5-x2x4q",
    "deploy/sglang",
    "22102",
    "a" * 63 + "." + "b" * 63,
]
# Secret-shaped and hostile names: refused, and never echoed in the error.
BAD = [
    "GH_TOKEN=ghp_" + "A" * 36,
    "https://admin:pw@host",
    "admin:hunter2@node-3",
    "node+1",
    "node=1",
    "node%1",
    "-oProxyCommand=evil",
    "two words",
    "node\x1b[31m",
    "node\u202e",
    "-node",
    "node-",
    "a/b/c",
    "node:ssh",
    "node:70000",
    "[node]:22",
    "a" * 64,
    "",
]


@pytest.mark.parametrize("name", GOOD)
def test_names_people_use_are_hosts(name: str) -> None:
    assert hostnames.host_problem(name) == ""


@pytest.mark.parametrize("name", BAD)
def test_other_names_are_refused_without_being_repeated(name: str) -> None:
    problem = hostnames.host_problem(name)
    assert problem
    assert name not in problem or not name


def test_the_parts() -> None:
    assert hostnames.split_host("root@node-3:2222") == ("root", "node-3", 2222, "")
    assert hostnames.split_host("[fe80::1]:22") == (None, "fe80::1", 22, "")
    assert "password" in hostnames.split_host("u:pw@node")[3]


@pytest.mark.parametrize("name", BAD[:4])
def test_collect_refuses_them_without_echo(tmp_path: Path, name: str) -> None:
    request = CollectRequest(
        out=tmp_path / "b", match="x", remote=RemoteRequest(hosts=("node-a", name))
    )
    with pytest.raises(UsageError) as caught:
        remotehosts.validate_remote(request)
    assert "host 2 of 2 is not a host name" in str(caught.value)
    assert name not in str(caught.value) and "ghp_" not in str(caught.value)
    with pytest.raises(UsageError) as caught:
        remotehosts.parse_hosts_file(f"node-a\n{name}\n", source="hosts.txt")
    assert str(caught.value).startswith("hosts.txt:2: not a host name")
    assert name not in str(caught.value)


def test_credentials_in_ssh_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="password") as caught:
        remotehosts.parse_ssh("root:s3cret@node-3")
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize("name", GOOD)
def test_what_collect_takes_the_loader_reads_back(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "rank0.txt").write_text(
        'Thread 1 (idle): "MainThread"\n    wait (threading.py:320)\n', encoding="utf-8"
    )
    (folder / "bundle.toml").write_text(
        f'host = "{name}"\n[[evidence]]\npath = "rank0.txt"\nkind = "pyspy-text"\nhost = "{name}"\n',
        encoding="utf-8",
    )
    loaded = bundle.load([folder])
    assert {f.host for f in loaded.files} == {name}
    assert plan.slug(name, limit=80)


@pytest.mark.parametrize("name", BAD[:3])
def test_the_loader_refuses_them_without_echo(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "bundle.toml").write_text(f'host = "{name}"\n', encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        bundle.load([folder])
    assert name not in str(caught.value)
