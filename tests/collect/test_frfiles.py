"""Flight Recorder dumps on disk are read without trusting their names (issue 21)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reporter.collect import frfiles

DUMP = b'{"version": "2.10", "pg_config": {}, "entries": []}\n'
ME = frozenset({os.getuid()})


def _dump(folder: Path, name: str = "nccl_trace_rank_0") -> frfiles.DumpFile:
    found = frfiles.find_prefixed(str(folder / "nccl_trace_rank_"))
    return next(d for d in found if d.source.name == name)


def test_a_regular_dump_is_read(tmp_path: Path) -> None:
    (tmp_path / "nccl_trace_rank_0").write_bytes(DUMP)
    assert frfiles.read_dump(_dump(tmp_path), owners=ME, max_bytes=1 << 20) == DUMP


def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "nccl_trace_rank_0").symlink_to("/proc/self/environ")
    with pytest.raises(frfiles.RefusedError, match="symbolic link"):
        frfiles.read_dump(_dump(tmp_path), owners=ME, max_bytes=1 << 20)


def test_a_folder_reached_through_a_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "nccl_trace_rank_0").write_bytes(DUMP)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(frfiles.RefusedError, match="symbolic link"):
        frfiles.find_prefixed(str(tmp_path / "link" / "nccl_trace_rank_"))


def test_a_file_of_another_user_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nccl_trace_rank_0").write_bytes(DUMP)
    with pytest.raises(frfiles.RefusedError, match="not by the target's user"):
        frfiles.read_dump(_dump(tmp_path), owners=frozenset({os.getuid() + 1}), max_bytes=1 << 20)


def test_a_hard_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "other").write_bytes(DUMP)
    os.link(tmp_path / "other", tmp_path / "nccl_trace_rank_0")
    with pytest.raises(frfiles.RefusedError, match="hard links"):
        frfiles.read_dump(_dump(tmp_path), owners=ME, max_bytes=1 << 20)


def test_a_file_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    with (tmp_path / "nccl_trace_rank_0").open("wb") as handle:
        handle.truncate(6 << 30)  # sparse
    with pytest.raises(frfiles.RefusedError, match=r"larger than the 1\.0 MiB cap"):
        frfiles.read_dump(_dump(tmp_path), owners=ME, max_bytes=1 << 20)


def test_a_fifo_is_not_a_dump(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "nccl_trace_rank_0")
    with pytest.raises(frfiles.RefusedError, match="not a regular file"):
        frfiles.read_dump(_dump(tmp_path), owners=ME, max_bytes=1 << 20)


def test_links_in_a_user_named_folder_are_not_sniffed(tmp_path: Path) -> None:
    (tmp_path / "rank0.json").write_bytes(DUMP)
    (tmp_path / "rank1.json").symlink_to(tmp_path / "rank0.json")
    assert [d.source.name for d in frfiles.find_in_dir(tmp_path)] == ["rank0.json"]
