"""The loader with the per-round `/proc` kinds, log events, status copies read in capture
order (the latest wins), and cmdline copies padded by setproctitle."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from reporter.analysis.procstate import condition
from reporter.load import bundle
from reporter.model import EvidenceKind

STATUS = "Name:\tpython3\nState:\t{state}\nTgid:\t4711\nPid:\t4711\nPPid:\t1\nThreads:\t2\n"
THREADS = (
    "# report-proc: threads pid=4711 snapshot={k}\n"
    "# tid\tstate\twchan\tutime\tstime\tcomm\n"
    "4711\t{state}\t{wchan}\t1\t1\tpython3\n"
)


def _touch(path: Path, when: float) -> None:
    os.utime(path, (when, when))


def test_status_copies_latest_by_snapshot_index_then_mtime(tmp_path: Path) -> None:
    # File names sort s0 < s1 < s2 but the mtimes are reversed: the snapshot index wins.
    for k, state in enumerate(["S (sleeping)", "S (sleeping)", "D (disk sleep)"]):
        path = tmp_path / f"pid4711-s{k}.status"
        path.write_text(STATUS.format(state=state))
        _touch(path, 2_000_000_000 - k * 100)
    loaded = bundle.load([tmp_path])
    assert [s.snapshot for s in loaded.proc_states] == [0, 1, 2]
    assert loaded.proc_states[-1].state == "D"
    cond = condition((), (), (), loaded.proc_states)
    assert cond is not None and cond.state.value == "uninterruptible"


def test_loose_copies_without_an_index_go_by_mtime(tmp_path: Path) -> None:
    old, new = tmp_path / "b.status", tmp_path / "a.status"
    old.write_text(STATUS.format(state="S (sleeping)"))
    new.write_text(STATUS.format(state="D (disk sleep)"))
    _touch(old, 1_900_000_000)
    _touch(new, 1_900_000_100)
    loaded = bundle.load([tmp_path])
    assert [s.state for s in loaded.proc_states] == ["S", "D"]


def test_manifest_time_comes_before_the_index(tmp_path: Path) -> None:
    for k, state in ((0, "D (disk sleep)"), (1, "S (sleeping)")):
        (tmp_path / f"pid4711-s{k}.status").write_text(STATUS.format(state=state))
    (tmp_path / "bundle.toml").write_text(
        '[[evidence]]\npath = "pid4711-s0.status"\ncaptured_at = 2026-12-07T12:00:09Z\n'
        '[[evidence]]\npath = "pid4711-s1.status"\ncaptured_at = 2026-12-07T12:00:01Z\n'
    )
    loaded = bundle.load([tmp_path])
    assert [s.state for s in loaded.proc_states] == ["S", "D"]
    assert loaded.proc_states[-1].captured_at == datetime(2026, 12, 7, 12, 0, 9, tzinfo=UTC)


def test_proc_kinds_are_merged_with_host_and_order(tmp_path: Path) -> None:
    for k, (state, wchan) in enumerate([("S", "pipe_write"), ("R", "")]):
        (tmp_path / f"pid4711-s{k}.threads").write_text(
            THREADS.format(k=k, state=state, wchan=wchan)
        )
    (tmp_path / "bundle.toml").write_text('host = "node-1"\n')
    loaded = bundle.load([tmp_path])
    assert {f.kind for f in loaded.files} == {EvidenceKind.PROC_THREADS}
    assert [(t.snapshot, t.state, t.wchan, t.host) for t in loaded.thread_states] == [
        (0, "S", "pipe_write", "node-1"),
        (1, "R", "", "node-1"),
    ]


def test_log_events_reach_the_bundle(tmp_path: Path) -> None:
    (tmp_path / "app.log").write_text(
        "2026-12-07 12:00:00,100 INFO serving\n"
        "2026-12-07 12:00:05,000 ERROR Out of memory: Killed process 4242 (python3)\n"
    )
    loaded = bundle.load([tmp_path])
    (event,) = loaded.log_events
    assert (event.pid, event.kind.value) == (4242, "oom-kill")


def test_setproctitle_padding_is_a_cmdline_not_binary(tmp_path: Path) -> None:
    padded = tmp_path / "pid4711.cmdline"
    padded.write_bytes(b"sglang::scheduler_TP0" + b"\x00" * 300)
    loaded = bundle.load([padded])
    assert loaded.files[0].kind is EvidenceKind.CMDLINE
    assert [c.argv for c in loaded.environment.cmdlines] == [("sglang::scheduler_TP0",)]
