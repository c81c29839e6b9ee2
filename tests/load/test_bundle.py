"""The bundle loader: manifests, sniffing, loose files, and bad input with clear errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.core.errors import EvidenceError, ManifestError, UsageError
from reporter.load import bundle
from reporter.model import EvidenceKind

DUMP = """\
Process 4242: sglang::scheduler_TP{rank}
Python v3.11.7 (/usr/local/bin/python3.11)

Thread 4242 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)
    run_scheduler_process (sglang/srt/managers/scheduler.py:2710)
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_folder_without_manifest_is_sniffed_in_path_order(tmp_path: Path) -> None:
    _write(tmp_path, "b/rank1.txt", DUMP.format(rank=1))
    _write(tmp_path, "a/rank0.txt", DUMP.format(rank=0))
    _write(tmp_path, "notes.md", "# not evidence")
    _write(tmp_path, "capture.sh", "py-spy dump --pid 1")
    loaded = bundle.load([tmp_path])
    assert [f.path for f in loaded.files] == ["a/rank0.txt", "b/rank1.txt"]
    assert all(f.sniffed and f.kind is EvidenceKind.PYSPY_TEXT for f in loaded.files)
    assert [d.cmdline for d in loaded.dumps] == ["sglang::scheduler_TP0", "sglang::scheduler_TP1"]


def test_manifest_fields_hints_and_capture_times(tmp_path: Path) -> None:
    _write(tmp_path, "dumps/r0.txt", DUMP.format(rank=0))
    _write(tmp_path, "dumps/r1.txt", DUMP.format(rank=1))
    _write(tmp_path, "extra.txt", DUMP.format(rank=2))
    _write(
        tmp_path,
        "bundle.toml",
        """
title = "Desync"
upstream = ["sgl-project/sglang"]
world_size = 4
[fields]
summary = "clients hang"
[[evidence]]
path = "dumps/r*.txt"
kind = "pyspy-text"
captured_at = 2026-07-14T08:34:44Z
role = "scheduler"
""",
    )
    loaded = bundle.load([tmp_path])
    assert loaded.manifest.title == "Desync"
    assert loaded.manifest.upstream == ("sgl-project/sglang",)
    assert loaded.manifest.world_size == 4
    assert loaded.manifest.fields == (("summary", "clients hang"),)
    assert [f.path for f in loaded.files] == ["dumps/r0.txt", "dumps/r1.txt", "extra.txt"]
    assert loaded.files[0].sniffed is False and loaded.files[2].sniffed is True
    when = datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)
    assert [d.captured_at for d in loaded.dumps] == [when, when, None]
    assert [p for p, _ in loaded.rank_hints] == ["dumps/r0.txt", "dumps/r1.txt"]
    assert any("extra.txt" in str(w) and "not listed" in w.message for w in loaded.warnings)


def test_loose_files_keep_command_line_order(tmp_path: Path) -> None:
    second = _write(tmp_path, "z.txt", DUMP.format(rank=0))
    first = _write(tmp_path, "a.txt", DUMP.format(rank=0))
    loaded = bundle.load([second, first])
    assert loaded.root is None
    assert [d.source.path for d in loaded.dumps] == [str(second), str(first)]


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ('[[evidence]]\npath = "../secret.txt"\n', "outside the bundle"),
        ('[[evidence]]\npath = "/etc/passwd"\n', "outside the bundle"),
        ('[[evidence]]\npath = "missing.txt"\n', "does not exist"),
        ('[[evidence]]\npath = "r.txt"\nkind = "pdf"\n', "unknown evidence kind"),
        ('[[evidence]]\npath = "r.txt"\nrank = -1\n', "an integer from 0"),
        ('[[evidence]]\npath = "r.txt"\ncaptured_at = "yesterday"\n', "not a date-time"),
        ('upstream = ["not a repo"]\n', "owner/name"),
        ("title = \n", "bundle.toml"),
        ("world_size = 0\n", "an integer from 1"),
    ],
)
def test_bad_manifests_name_the_problem(tmp_path: Path, manifest: str, message: str) -> None:
    _write(tmp_path, "r.txt", DUMP.format(rank=0))
    _write(tmp_path, "bundle.toml", manifest)
    with pytest.raises(ManifestError, match=message) as err:
        bundle.load([tmp_path])
    assert err.value.message.startswith("bundle.toml")


def test_symlink_escaping_the_bundle_is_refused(tmp_path: Path) -> None:
    outside = _write(tmp_path, "outside/r.txt", DUMP.format(rank=0))
    inside = tmp_path / "b"
    inside.mkdir()
    (inside / "link.txt").symlink_to(outside)
    _write(inside, "bundle.toml", '[[evidence]]\npath = "link.txt"\n')
    with pytest.raises(ManifestError, match="resolves outside"):
        bundle.load([inside])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"\n \n", "empty"),
        (b"\x7fELF\x00\x00\x01binary", "binary"),
        (b"hello, this is not a dump\n", "not a py-spy dump"),
    ],
)
def test_bad_loose_files_are_one_line_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    with pytest.raises(EvidenceError, match=message) as err:
        bundle.load([path])
    assert str(path) in err.value.message and "\n" not in err.value.message
    assert err.value.tip


def test_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as handle:
        handle.truncate(3 * 1024**3)  # sparse: costs no disk
    with pytest.raises(EvidenceError, match=r"3\.0 GiB is larger than"):
        bundle.load([path])


def test_unreadable_files_in_a_folder_are_skipped_with_a_warning(tmp_path: Path) -> None:
    _write(tmp_path, "rank0.txt", DUMP.format(rank=0))
    _write(tmp_path, "empty.txt", "")
    _write(tmp_path, "junk.log", "nothing to see\n")
    loaded = bundle.load([tmp_path])
    assert [f.path for f in loaded.files] == ["rank0.txt"]
    skipped = sorted(str(w) for w in loaded.warnings)
    assert any(w.startswith("empty.txt") and "empty" in w for w in skipped)
    assert any(w.startswith("junk.log") and "not recognised" in w for w in skipped)


def test_folder_with_no_evidence_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, "notes.txt", "hello\n")
    with pytest.raises(EvidenceError, match="no py-spy or faulthandler dump"):
        bundle.load([tmp_path])


def test_folder_must_come_alone(tmp_path: Path) -> None:
    path = _write(tmp_path, "r.txt", DUMP.format(rank=0))
    with pytest.raises(UsageError, match="alone"):
        bundle.load([tmp_path, path])


def test_draft_manifest_round_trips(tmp_path: Path) -> None:
    _write(tmp_path, "rank3.txt", DUMP.format(rank=3))
    _write(tmp_path, "junk.txt", "nothing\n")
    text = bundle.draft_manifest(tmp_path)
    assert "# rank = 3" in text and "# skipped junk.txt" in text
    (tmp_path / "bundle.toml").write_text(text)
    loaded = bundle.load([tmp_path])
    assert [f.path for f in loaded.files] == ["rank3.txt"]
    assert loaded.files[0].sniffed is False
