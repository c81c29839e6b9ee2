"""bundle.toml in parts during a many-host collection: each host's tables written once, the
head alone rewritten, one file joined at the end; a cut-short run and a person's edit."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.collect import manifest
from reporter.collect.manifest import (
    CollectStatus,
    EvidenceEntry,
    ManifestState,
    ManifestWriter,
    RemoteNote,
    SkipNote,
    TargetNote,
)
from reporter.core.errors import ManifestError
from reporter.load import bundle as bundle_io
from reporter.load.manifest import TomlDocument, parse_manifest
from reporter.load.parts import PARTS_DIR, join_parts
from reporter.model import EvidenceKind

AT = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)
FILES = 3


def _dump(host: str, pid: int) -> str:
    return (
        f"Process {pid}: sglang::scheduler_TP0 on {host}\nPython v3.11.7 (/usr/bin/python3)\n\n"
        f'Thread {pid} (idle): "MainThread"\n    all_reduce (torch/distributed/c10d.py:2501)\n'
    )


def _writer(root: Path) -> ManifestWriter:
    state = ManifestState(
        title="fan-out", started_at=AT, command="report collect --ssh ...", host="jump", tool="x"
    )
    return ManifestWriter(root=root, state=state)


def _host(writer: ManifestWriter, n: int, *, seal: bool = True) -> str:
    """One host's files on disk and its entries, as `record_host` records them."""
    host = f"node-{n}"
    since = writer.mark()
    for f in range(FILES):
        rel = f"hosts/{host}/pyspy/pid{100 + f}-s0.txt"
        (writer.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (writer.root / rel).write_text(_dump(host, 100 + f), encoding="utf-8")
        writer.add_evidence(
            EvidenceEntry(path=rel, kind=EvidenceKind.PYSPY_TEXT, captured_at=AT, host=host)
        )
    writer.add_target(
        TargetNote(
            pid=100, ppid=1, uid=0, title="sglang::scheduler_TP0", selected_by="m", host=host
        )
    )
    writer.add_remote(RemoteNote(host=host, via=f"ssh {host}", status="complete", dumps=FILES))
    writer.skip(SkipNote(what=f"environment of PID 100 on {host}", reason="blank", at=AT))
    if seal:
        writer.seal(host, host, since=since)
    return host


def _paths(root: Path) -> list[str]:
    return sorted(f.path for f in bundle_io.load([root]).files)


def test_a_rewrite_renders_only_the_new_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = _writer(tmp_path)
    for n in range(20):
        _host(writer, n)
        writer.save()
    parts = sorted((tmp_path / PARTS_DIR).iterdir())
    stamps = {p.name: p.stat().st_mtime_ns for p in parts}
    head_before = (tmp_path / "bundle.toml").read_text(encoding="utf-8")
    rendered: list[object] = []
    real = manifest._evidence_table

    def counting(doc: TomlDocument, item: object) -> None:
        rendered.append(item)
        real(doc, item)

    monkeypatch.setattr(manifest, "_BUILDERS", (("evidence", counting), *manifest._BUILDERS[1:]))
    _host(writer, 20)
    writer.save()
    # The new host's files only, rendered once; the old parts are not written again.
    assert [getattr(e, "host", "") for e in rendered] == ["node-20"] * FILES
    assert {p.name: p.stat().st_mtime_ns for p in parts} == stamps
    head = (tmp_path / "bundle.toml").read_text(encoding="utf-8")
    # The head does not grow with the hosts: it lists none of them (the skip summary in
    # [fields] names a few, and counts the rest).
    assert "[[" not in head.split("[collect]")[1] and "[[evidence]]" not in head
    assert len(head) < len(head_before) + 100
    assert tomllib.loads(head)["collect"]["parts"] == PARTS_DIR
    assert (tmp_path / PARTS_DIR / "node-20.toml").is_file()


def test_a_run_cut_short_leaves_a_readable_bundle(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    hosts = [_host(writer, n) for n in range(4)]
    writer.save()
    _host(writer, 4, seal=False)  # its files written, the run killed before its part
    # Debris of a write cut short, and a part a power cut left empty: both pass.
    (tmp_path / PARTS_DIR / ".node-9.toml.1a2b3c4d.tmp").write_text("[[evid", encoding="utf-8")
    (tmp_path / PARTS_DIR / "node-3.toml").write_text("", encoding="utf-8")
    loaded = bundle_io.load([tmp_path])
    assert [h.name for h in loaded.manifest.hosts] == hosts[:3]
    # Every file is read: the listed ones and, by walking, those of node-3 and node-4.
    assert len(loaded.files) == 5 * FILES
    listed = [w for w in loaded.warnings if "not listed" in w.message]
    assert sorted({w.source.path.split("/")[1] for w in listed}) == ["node-3", "node-4"]


def test_join_writes_the_one_file_form_and_the_loader_reads_both(tmp_path: Path) -> None:
    parts_root, one_root = tmp_path / "parts", tmp_path / "one"
    for root in (parts_root, one_root):
        root.mkdir()
        writer = _writer(root)
        for n in (2, 0, 1):
            _host(writer, n)
        # The hosts in the order named (remote_capture sorts them so at the end).
        writer.update(
            remotes=sorted(writer.state.remotes, key=lambda r: r.host),
            status=CollectStatus.COMPLETE,
        )
        writer.save()
        if root == one_root:
            writer.join()
    assert (parts_root / PARTS_DIR).is_dir() and not (one_root / PARTS_DIR).exists()
    data = tomllib.loads((one_root / "bundle.toml").read_text(encoding="utf-8"))
    assert "parts" not in data["collect"] and "host" not in data
    assert [r["host"] for r in data["collect"]["remote"]] == ["node-0", "node-1", "node-2"]
    assert len(data["evidence"]) == 3 * FILES and len(data["collect"]["skipped"]) == 3
    joined, split = bundle_io.load([one_root]), bundle_io.load([parts_root])
    assert joined.manifest == split.manifest
    assert _paths(one_root) == _paths(parts_root)
    assert [f.host for f in joined.files] == [f.host for f in split.files]
    assert joined.warnings == split.warnings == ()


def test_the_old_one_file_form_still_reads(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    for n in range(2):
        _host(writer, n, seal=False)
    writer.join()  # nothing sealed: one file, as before parts existed
    assert not (tmp_path / PARTS_DIR).exists()
    loaded = bundle_io.load([tmp_path])
    assert [h.name for h in loaded.manifest.hosts] == ["node-0", "node-1"]
    assert len(loaded.files) == 2 * FILES and loaded.warnings == ()


def test_an_edit_to_bundle_toml_is_never_written_over(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    _host(writer, 0)
    writer.save()
    path = tmp_path / "bundle.toml"
    edited = path.read_text(encoding="utf-8").replace(
        'title = "fan-out"', 'title = "NCCL hang on rack 7"'
    )
    path.write_text(edited, encoding="utf-8")
    _host(writer, 1)
    writer.save()
    writer.update(status=CollectStatus.COMPLETE)
    writer.join()
    assert path.read_text(encoding="utf-8") == edited
    assert writer.kept_edit
    side = tomllib.loads((tmp_path / manifest.SIDE_NAME).read_text(encoding="utf-8"))
    assert side["collect"]["status"] == "complete" and side["collect"]["parts"] == PARTS_DIR
    # The person's file still names the parts: both hosts are read, with their title.
    loaded = bundle_io.load([tmp_path])
    assert loaded.manifest.title == "NCCL hang on rack 7"
    assert [h.name for h in loaded.manifest.hosts] == ["node-0", "node-1"]


def test_sealed_files_leave_memory(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    for n in range(50):
        _host(writer, n)
        writer.save()
    # What a host costs the writer once in its part: its target, outcome and notes, not
    # its files and not their rendered text.
    assert writer.state.evidence == () and writer.files_listed == 50 * FILES
    assert len(writer.state.remotes) == 50 and not writer._pieces
    assert writer._head().remotes == () and writer._head().evidence == ()


def test_a_host_recorded_twice_keeps_both_parts(tmp_path: Path) -> None:
    writer = _writer(tmp_path)
    _host(writer, 0)
    since = writer.mark()
    writer.add_remote(RemoteNote(host="node-0", via="ssh node-0", status="failed"))
    writer.seal("node-0", "node-0", since=since)
    assert sorted(p.name for p in (tmp_path / PARTS_DIR).iterdir()) == [
        "node-0.1.toml",
        "node-0.toml",
    ]
    writer.join()
    data = tomllib.loads((tmp_path / "bundle.toml").read_text(encoding="utf-8"))
    assert [r["status"] for r in data["collect"]["remote"]] == ["complete", "failed"]
    assert len(data["evidence"]) == FILES


def test_a_part_that_does_not_read_is_named(tmp_path: Path) -> None:
    head = '[collect]\nparts = "bundle.d"\n'
    with pytest.raises(ManifestError, match=r"bundle\.d/node-1\.toml"):
        join_parts(
            head, [("bundle.d/node-0.toml", "[[evidence]]\n"), ("bundle.d/node-1.toml", "[[x")]
        )
    # A part that redefines a table of the head does not fit after it.
    with pytest.raises(ManifestError, match="with its parts"):
        join_parts(head, [("bundle.d/node-0.toml", "[collect]\nstatus = 'x'\n")])


@pytest.mark.parametrize("folder", ["../elsewhere", "/etc", ""])
def test_parts_outside_the_bundle_are_refused(tmp_path: Path, folder: str) -> None:
    with pytest.raises(ManifestError, match=r"collect\.parts"):
        parse_manifest(f'[collect]\nparts = "{folder}"\n', root=tmp_path)
