"""Atomic writes keep either the old file or the new one, and backups when asked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reporter.core.errors import OutputError
from reporter.core.writer import write_atomic


def test_write_creates_folders_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "report.md"
    assert write_atomic(target, "hello\n") is None
    assert target.read_text() == "hello\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.md"]


def test_backup_keeps_previous_bytes(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    target.write_text("reviewer text\n")
    backup = write_atomic(target, "new\n", backup=True)
    assert backup == tmp_path / "report.md.bak"
    assert backup.read_text() == "reviewer text\n"
    assert target.read_text() == "new\n"


def test_unwritable_target_is_an_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="file"):
        write_atomic(blocker / "report.md", "text")


def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.md"
    old_umask = os.umask(0o022)
    try:
        write_atomic(fresh, "x")
    finally:
        os.umask(old_umask)
    assert fresh.stat().st_mode & 0o777 == 0o644
    kept = tmp_path / "kept.md"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert kept.stat().st_mode & 0o777 == 0o640
