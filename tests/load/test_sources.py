"""Local source roots: finding a frame's file by path suffix, and hashing a tree."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reporter.core.errors import UsageError
from reporter.load.sources import SourceRoots, hash_tree


def _tree(root: Path) -> Path:
    (root / "sglang" / "srt").mkdir(parents=True)
    (root / "sglang" / "srt" / "x.py").write_text("a = 1\nb = 2\n")
    (root / "sglang" / "__pycache__").mkdir()
    (root / "sglang" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\x00")
    (root / "notes.txt").write_text("not source")
    return root


@pytest.mark.parametrize(
    ("frame_file", "found"),
    [
        ("/usr/lib/python3.11/site-packages/sglang/srt/x.py", "sglang/srt/x.py"),
        ("sglang/srt/x.py", "sglang/srt/x.py"),
        # Suffixes of the frame's path are tried under the root, not the other way round.
        ("srt/x.py", None),
        ("x.py", None),
        ("<string>", None),
        ("../sglang/srt/x.py", None),
        ("", None),
    ],
)
def test_find(tmp_path: Path, frame_file: str, found: str | None) -> None:
    roots = SourceRoots([_tree(tmp_path)])
    result = roots.find(frame_file)
    assert (result.path if result else None) == found
    if result is not None:
        assert result.lines == ("a = 1", "b = 2")
        assert result.sha256 == hashlib.sha256(b"a = 1\nb = 2\n").hexdigest()
        assert roots.find(frame_file) is result  # cached


def test_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.py").symlink_to(outside)
    assert SourceRoots([root]).find("link.py") is None


def test_hash_tree(tmp_path: Path) -> None:
    hashes = hash_tree(_tree(tmp_path))
    assert list(hashes) == ["sglang/srt/x.py"]
    assert hashes["sglang/srt/x.py"] == hashlib.sha256(b"a = 1\nb = 2\n").hexdigest()


def test_missing_roots_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a folder"):
        SourceRoots([tmp_path / "nope"])
    with pytest.raises(UsageError, match="not a folder"):
        hash_tree(tmp_path / "nope")
