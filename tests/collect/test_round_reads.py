"""What the manifest says of each per-round `/proc` read, as its kind's entry words it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from reporter.collect import CollectRequest
from reporter.collect.state import SessionState
from reporter.model import EvidenceKind


class _Recorder(SessionState):
    """A session that records what it would keep and skip instead of writing it."""

    def __init__(self, out: Path) -> None:
        super().__init__(CollectRequest(out=out), progress=lambda _: None, stop=threading.Event())
        self.kept: list[tuple[str, EvidenceKind, str, str]] = []
        self.skips: list[tuple[str, str]] = []

    def keep(self, rel: str, text: str, kind: EvidenceKind, description: str, **kw: Any) -> None:
        self.kept.append((rel, kind, description, kw.get("host", "")))

    def note_skip(self, what: str, reason: str) -> None:
        self.skips.append((what, reason))


STATUS = "Name:\tpython3\nState:\tT (stopped)\nPid:\t7\nWchan:\tdo_signal_stop\n"


def test_the_status_copy_names_the_state_locally_and_on_a_host(tmp_path: Path) -> None:
    s = _Recorder(tmp_path / "b")
    s.keep_round_read("status", 7, 1, STATUS, "python train.py --rank 3")
    s.keep_round_read("status", 7, 0, "Name:\tx\n", "x", base="hosts/gpu2/", host="gpu2")
    assert s.kept == [
        (
            "proc/pid7-s1.status",
            EvidenceKind.PROC_STATUS,
            "/proc/7/status after snapshot 2 (python train.py --rank 3): State T (stopped); "
            "the last line is /proc/7/wchan when the process sleeps",
            "",
        ),
        (
            "hosts/gpu2/proc/pid7-s0.status",
            EvidenceKind.PROC_STATUS,
            "/proc/7/status on gpu2 after snapshot 1 (x): State ?; "
            "the last line is /proc/7/wchan when the process sleeps",
            "gpu2",
        ),
    ]


def test_a_wait_read_says_what_it_holds(tmp_path: Path) -> None:
    s = _Recorder(tmp_path / "b")
    s.keep_round_read("fds", 7, 2, "# report-proc: fds pid=7 snapshot=2\n", "w")
    assert s.kept == [
        (
            "proc/pid7-s2.fds",
            EvidenceKind.PROC_FDS,
            "the fd table as link targets (/proc/7/fd) of PID 7 (w) after snapshot 3",
            "",
        )
    ]


def test_an_empty_read_is_noted_with_its_own_reason(tmp_path: Path) -> None:
    s = _Recorder(tmp_path / "b")
    s.keep_round_read("status", 7, 0, "", "w", host="gpu2", base="hosts/gpu2/")
    s.keep_round_read("threads", 7, 1, "", "w")
    assert s.kept == []
    assert s.skips == [
        ("/proc/7/status on gpu2 after snapshot 1", "the process is gone"),
        (
            "/proc/7 threads after snapshot 2",
            "could not be read (the process ended, or no permission)",
        ),
    ]


def test_a_name_no_entry_captures_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a per-round read"):
        _Recorder(tmp_path / "b").keep_round_read("environ", 7, 0, "x", "w")
