"""What loading a folder asks of the file system: one listing, then per file an open and an
`fstat` (no `stat`, `lstat` or symlink test for a file the listing showed regular)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reporter.load import bundle

_DUMP = (
    "Process 4711: python app.py\n"
    "Python v3.11.7 (/usr/bin/python3.11)\n"
    "\n"
    'Thread 4711 (idle): "MainThread"\n'
    "    wait (threading.py:320)\n"
)


def test_walked_files_are_not_stat_ed_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for rank in range(3):
        (tmp_path / f"rank{rank}.txt").write_text(_DUMP + "\n" + _DUMP, encoding="utf-8")
    (tmp_path / "target.txt").write_text(_DUMP, encoding="utf-8")
    (tmp_path / "link.txt").symlink_to(tmp_path / "target.txt")
    asked: list[str] = []
    real_stat, real_lstat = os.stat, os.lstat

    def stat(where: object, *args: object, **kwargs: object) -> os.stat_result:
        asked.append(os.fspath(where))  # type: ignore[call-overload]
        return real_stat(where, *args, **kwargs)  # type: ignore[arg-type]

    def lstat(where: object, *args: object, **kwargs: object) -> os.stat_result:
        asked.append(os.fspath(where))  # type: ignore[call-overload]
        return real_lstat(where, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "lstat", lstat)
    loaded = bundle.load([tmp_path])
    assert len(loaded.dumps) == 8  # the link is a file of the bundle too
    # Two snapshots per file, the second moved from the first: each at its own lines.
    assert [d.source.line for d in loaded.dumps if d.source.path == "rank1.txt"] == [1, 7]
    regular = {str(tmp_path / f"rank{rank}.txt") for rank in range(3)}
    assert not regular & set(asked)
    # The link is still held to the bundle (resolved) and stat'ed before it is opened.
    assert str(tmp_path / "link.txt") in asked
