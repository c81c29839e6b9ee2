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


def test_the_parsers_caches_do_not_outlive_a_load(tmp_path: Path) -> None:
    # They serve the files of one load (its snapshots repeat their lines); after it the
    # analysis, and the next load of a long-running `report watch`, start without them.
    from reporter.evidence import faulthandler
    from reporter.evidence.pyspy import frames, plain

    for rank in range(2):
        (tmp_path / f"rank{rank}.txt").write_text(_DUMP + "\n" + _DUMP, encoding="utf-8")
    (tmp_path / "crash.txt").write_text(
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/app/serve.py", line 12 in handle\n',
        encoding="utf-8",
    )
    first = bundle.load([tmp_path])
    assert len(first.dumps) == 5  # both kinds were parsed
    assert not plain.BLOCKS and not plain.THREAD_LINES and not frames.FRAME_CACHE
    assert not faulthandler._FRAME_CACHE
    # A second load parses the same without them.
    again = bundle.load([tmp_path])
    assert again.dumps == first.dumps
