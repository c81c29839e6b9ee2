"""Folder walks without recursion, loops or unbounded depth; manifest globs over them (issue 21)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reporter.core import fileio


def test_links_are_listed_never_followed_into_folders(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("x", encoding="utf-8")
    (tmp_path / "loop").symlink_to(tmp_path)
    (tmp_path / "self").symlink_to("self")
    walked = fileio.walk(tmp_path)
    assert [w.rel for w in walked.files] == ["a/f.txt", "loop", "self"]
    assert [w.link for w in walked.files] == [False, True, True]


def test_depth_is_capped_and_said(tmp_path: Path) -> None:
    folder = tmp_path
    for _ in range(10):
        folder = folder / "x"
    folder.mkdir(parents=True)
    (folder / "deep.txt").write_text("x", encoding="utf-8")
    walked = fileio.walk(tmp_path, max_depth=4)
    assert walked.files == []
    assert walked.skipped == [("x/x/x/x/x", "nested deeper than 4 folders")]
    assert [w.rel for w in fileio.walk(tmp_path).files] == ["x/" * 10 + "deep.txt"]


def test_hidden_folders_and_skipped_prefixes(tmp_path: Path) -> None:
    for rel in (".git/c", "baseline/b.txt", "keep/k.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x", encoding="utf-8")
    walked = fileio.walk(tmp_path, skip=("baseline/",))
    assert [w.rel for w in walked.files] == ["keep/k.txt"]
    assert ".git/c" in [w.rel for w in fileio.walk(tmp_path, hidden=True).files]


@pytest.mark.skipif(os.getuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder_is_skipped_with_why(tmp_path: Path) -> None:
    (tmp_path / "locked").mkdir(mode=0)
    try:
        assert fileio.walk(tmp_path).skipped[0][0] == "locked"
    finally:
        (tmp_path / "locked").chmod(0o755)


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("snapshots/rank*.txt", "snapshots/rank0.txt", True),
        ("snapshots/rank*.txt", "snapshots/a/rank0.txt", False),
        ("snapshots/**/rank*.txt", "snapshots/a/b/rank0.txt", True),
        ("snapshots/**/rank*.txt", "snapshots/rank0.txt", True),
        ("rank?.txt", "rank12.txt", False),
        ("rank[0-3].txt", "rank2.txt", True),
        ("rank[!0-3].txt", "rank2.txt", False),
        ("a.b/*", "a.b/c", True),
    ],
)
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(fileio.glob_regex(pattern).match(path)) is matches


def test_markdown_files_of_a_folder(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.md").write_text("x", encoding="utf-8")
    (tmp_path / "b.md").symlink_to(tmp_path / "r" / "a.md")
    (tmp_path / "broken.md").symlink_to(tmp_path / "nowhere.md")
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    assert [p.name for p in fileio.markdown_files(tmp_path)] == ["b.md", "a.md"]
