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


@pytest.mark.parametrize(
    ("size", "hint", "limit"),
    [
        (100, 100, 1000),  # the size fstat gave: one read, then the end
        (100, 40, 1000),  # grown since the fstat: read on to the end
        (100, 0, 1000),  # an empty file when stat'ed
        (100, 40, 60),  # grown past the limit: one byte beyond, never more
        (0, 0, 1000),
    ],
)
def test_read_fd_with_the_size_reads_what_it_reads_without(
    tmp_path: Path, size: int, hint: int, limit: int
) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256))[:size])
    reads = []
    for known in (None, hint):
        fd = _fd(path)
        try:
            reads.append(read_fd(fd, limit, size=known))
        finally:
            os.close(fd)
    assert reads[0] == reads[1] == bytes(range(256))[: min(size, limit + 1)]


def test_a_file_the_listing_says_is_regular_is_not_stat_ed_before_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.txt"
    path.write_bytes(b"x" * 5)
    (walked,) = fileio.walk(tmp_path).files
    assert walked.regular and not walked.link and walked.path == path
    stats: list[str] = []
    real_stat = os.stat

    def counting_stat(where: object, *args: object, **kwargs: object) -> os.stat_result:
        stats.append(str(where))
        return real_stat(where, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counting_stat)
    assert read_bytes_bounded(walked.where, max_bytes=10, listed_regular=True) == b"x" * 5
    assert stats == []
    assert read_bytes_bounded(walked.where, max_bytes=10) == b"x" * 5
    assert stats == [walked.where]  # unlisted: stat'ed first, as before


def test_a_fifo_the_listing_names_is_not_regular(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (walked,) = fileio.walk(tmp_path).files
    assert not walked.regular
    with pytest.raises(InputError, match="FIFO"):
        read_bytes_bounded(walked.where, max_bytes=10, listed_regular=walked.regular)
