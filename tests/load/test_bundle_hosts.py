"""Hosts in bundles: `host` in bundle.toml (top level and per [[evidence]]), [[collect.remote]],
and several bundle folders loaded as hosts of one job."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reporter.analysis import Verdict, analyze
from reporter.core.errors import ManifestError, UsageError
from reporter.load import bundle

SNAPSHOTS = Path(__file__).resolve().parents[2] / "fixtures" / "bundles" / "tp_desync" / "snapshots"


def _host_folder(root: Path, name: str, ranks: list[int], manifest: str | None) -> Path:
    folder = root / name
    folder.mkdir()
    for rank in ranks:
        for snap in range(2):
            shutil.copy(SNAPSHOTS / f"rank{rank}_s{snap}.txt", folder / f"rank{rank}_s{snap}.txt")
    if manifest is not None:
        (folder / "bundle.toml").write_text(manifest, encoding="utf-8")
    return folder


def test_two_folders_are_two_hosts_of_one_job(tmp_path: Path) -> None:
    a = _host_folder(tmp_path, "a", [0, 1], 'host = "node-a"\ntitle = "TP4 over two nodes"\n')
    b = _host_folder(tmp_path, "b", [2, 3], None)  # no manifest: the folder's name
    loaded = bundle.load([a, b])
    assert loaded.root is None
    assert loaded.folders == (str(a), str(b))
    assert loaded.manifest.title == "TP4 over two nodes"
    assert {d.host for d in loaded.dumps} == {"node-a", "b"}
    assert all(f.path.startswith((f"{a}/", f"{b}/")) for f in loaded.files)
    assert {f.host for f in loaded.files if f.path.startswith(str(b))} == {"b"}
    analysis = analyze(loaded)
    assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
    assert [p.identity.host for p in analysis.processes] == ["node-a", "node-a", "b", "b"]


def test_per_evidence_host_wins_over_the_manifest_host(tmp_path: Path) -> None:
    folder = _host_folder(
        tmp_path,
        "job",
        [0, 2],
        'host = "node-a"\n\n[[evidence]]\npath = "rank2_*.txt"\nhost = "node-b"\n\n'
        '[[evidence]]\npath = "rank0_*.txt"\n\n'
        '[[collect.remote]]\nhost = "node-c"\nstatus = "failed"\n'
        'reason = "ssh: connect to host node-c port 22: Connection refused"\nvia = "ssh node-c"\n',
    )
    loaded = bundle.load([folder])
    hosts = {d.source.path.split("_")[0]: d.host for d in loaded.dumps}
    assert hosts == {"rank0": "node-a", "rank2": "node-b"}
    (note,) = loaded.manifest.hosts
    assert (note.name, note.status, note.missing) == ("node-c", "failed", True)
    assert "Connection refused" in note.reason


def test_a_folder_given_twice_or_mixed_with_files_is_refused(tmp_path: Path) -> None:
    a = _host_folder(tmp_path, "a", [0], None)
    with pytest.raises(UsageError, match="given twice"):
        bundle.load([a, tmp_path / "a" / ".." / "a"])
    with pytest.raises(UsageError, match="cannot be mixed"):
        bundle.load([a, a / "rank0_s0.txt"])


@pytest.mark.parametrize("value", ['""', "3", '"two words"', '"a\\nb"'])
def test_a_host_that_is_no_name_is_a_manifest_error(tmp_path: Path, value: str) -> None:
    folder = _host_folder(tmp_path, "x", [0], f"host = {value}\n")
    with pytest.raises(ManifestError, match="must be a host name"):
        bundle.load([folder])
