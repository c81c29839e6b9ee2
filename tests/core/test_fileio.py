"""`read_fd`: the one bounded read loop behind `read_bytes_bounded` and the FR dump reader."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reporter.core import fileio
from reporter.core.errors import InputError
from reporter.core.fileio import read_bytes_bounded, read_fd


def _fd(path: Path) -> int:
    return os.open(path, os.O_RDONLY)


@pytest.mark.parametrize(
    ("size", "limit", "past", "want"),
    [
        (0, 10, True, 0),
        (10, 10, True, 10),  # exactly at the limit: nothing beyond to read
        (11, 10, True, 11),  # over: one byte beyond tells the caller
        (500, 10, True, 11),  # never more than limit + 1
        (500, 10, False, 11),  # a head stops at the first read that reaches the limit
        (5, 10, False, 5),
    ],
)
def test_read_fd_reads_to_end_or_one_past_the_limit(
    tmp_path: Path, size: int, limit: int, past: bool, want: int
) -> None:
    path = tmp_path / "f"
    data = bytes(range(256)) * 2
    path.write_bytes(data[:size])
    fd = _fd(path)
    try:
        got = read_fd(fd, limit, past=past)
    finally:
        os.close(fd)
    assert got == data[:want]


def test_read_fd_reads_in_chunks_across_the_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fileio, "_CHUNK", 4)
    path = tmp_path / "f"
    path.write_bytes(b"0123456789abcdef")
    fd = _fd(path)
    try:
        whole = read_fd(fd, 100)
    finally:
        os.close(fd)
    assert whole == b"0123456789abcdef"
    fd = _fd(path)
    try:
        head = read_fd(fd, 6, past=False)
    finally:
        os.close(fd)
    # chunks of 4: 4 then min(4, 7 - 4) = 3, and the head stops there
    assert head == b"0123456"


def test_read_bytes_bounded_refuses_a_file_over_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    assert read_bytes_bounded(path, max_bytes=11) == b"x" * 11
    with pytest.raises(InputError) as err:
        read_bytes_bounded(path, max_bytes=10)
    assert "big.txt" in str(err.value)
