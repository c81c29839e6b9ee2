"""faulthandler crash reports: verdict `crashed`, or the cause of a wait for a dead rank.

Real captures: `fixtures/crashes/` (SIGSEGV from `ctypes.string_at(0)` in the main thread
and in a worker thread, `os.abort()`, SIGBUS, SIGFPE), `fixtures/bundles/crashed_rank/`
(a gloo job whose rank 1 segfaults while the others wait), and `dump_traceback_later`
Timeout dumps, which are hang snapshots and never crashes. Edge cases built here: a report
with no `Current thread`, a fatal error the interpreter raises itself, a crash beside
ranks that keep moving, and a crash in a process that holds a proven lock cycle.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reporter.analysis import Analysis, Confidence, RankState, Verdict, analyze, to_json
from reporter.app.report import render_draft
from reporter.evidence import faulthandler
from reporter.load.bundle import load

from .builders import bundle, dump, scheduler_stack

ROOT = Path(__file__).resolve().parents[2]
CRASHES = ROOT / "fixtures" / "crashes"


@pytest.mark.parametrize(
    ("name", "what", "signal", "function"),
    [
        ("segfault_main.txt", "Segmentation fault", "SIGSEGV", "copy_blocks_to_host"),
        ("segfault_thread.txt", "Segmentation fault", "SIGSEGV", "copy_blocks_to_host"),
        ("abort.txt", "Aborted", "SIGABRT", "check_invariants"),
        ("sigbus.txt", "Bus error", "SIGBUS", "load_weights"),
        ("sigfpe.txt", "Floating point exception", "SIGFPE", "load_weights"),
    ],
)
def test_real_crash_reports(name: str, what: str, signal: str, function: str) -> None:
    analysis = analyze(load([CRASHES / name]))
    assert analysis.verdict is Verdict.CRASHED
    assert analysis.confidence is Confidence.HIGH
    (crash,) = _doc(analysis)["crashes"]
    assert (crash["what"], crash["signal"]) == (what, signal)
    assert crash["at"].startswith(f"{function} (")
    # The crashing thread is the one faulthandler marked `Current thread`.
    text = (CRASHES / name).read_text(encoding="utf-8")
    current = next(line for line in text.splitlines() if line.startswith("Current thread"))
    assert crash["thread"] == current.split()[2]
    assert crash["frames"][0].startswith("string_at" if "segfault" in name else function)
    assert "crash" in analysis.summary and "take two more dumps" not in analysis.summary.lower()
    assert analysis.processes[0].state is RankState.CRASHED


def _doc(analysis: Analysis) -> dict[str, Any]:
    """`analyze --json` as a dict to index into."""
    return to_json(analysis)


def test_a_worker_thread_crash_is_named_by_its_own_stack() -> None:
    analysis = analyze(load([CRASHES / "segfault_thread.txt"]))
    (crash,) = _doc(analysis)["crashes"]
    assert any(f.startswith("offload_worker") for f in crash["frames"])
    # The main thread waited in queue.get: not where it crashed.
    assert not any(f.startswith("event_loop") for f in crash["frames"])


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "fixtures/samples/faulthandler/faulthandler_py3.11_dump_traceback_later_timeout.txt",
        ROOT / "fixtures/bundles/thread_deadlock_timeouts/stderr.txt",
    ],
)
def test_timeout_dumps_are_snapshots_not_crashes(path: Path) -> None:
    analysis = analyze(load([path]))
    assert analysis.verdict is not Verdict.CRASHED
    assert to_json(analysis)["crashes"] == []
    assert "crash" not in analysis.summary


def test_rank_crash_while_the_others_wait() -> None:
    bundle_ = load([ROOT / "fixtures/bundles/crashed_rank/pyspy"])
    analysis = analyze(bundle_)
    assert analysis.verdict is Verdict.ALL_STUCK
    data = to_json(analysis)
    ((waiting, waited, state),) = [
        (e["waiting"]["ranks"], e["for"]["ranks"], e["for"]["state"]) for e in data["waits_for"]
    ]
    assert (waiting, waited, state) == ([0, 2, 3], [1], "crashed")
    text = render_draft(bundle_, analysis, now=datetime(2026, 12, 1, tzinfo=UTC))
    summary = text.split("## Summary", 1)[1].split("## ", 1)[0]
    # The title is the verdict's headline (the bundle's own title, if any, goes under it).
    first = next(line for line in text.splitlines() if line.startswith("# "))
    assert first.startswith("# Ranks [0,2-3] wait in all_reduce (forward_batch) for rank 1 crashed")
    assert "Segmentation fault" in first
    assert "Start from the crash" in summary
    assert "went away" not in summary  # the crash says why: no OOM-killer hunt


def test_the_gone_rank_is_on_the_first_screen_without_any_stack() -> None:
    bundle_ = load([ROOT / "fixtures/bundles/crashed_rank/pyspy/snapshots/rank1_s0.txt"])
    text = render_draft(bundle_, analyze(bundle_), now=datetime(2026, 12, 1, tzinfo=UTC))
    summary = text.split("## Summary", 1)[1].split("## ", 1)[0]
    assert "nothing here shows a hang" not in summary
    assert "gone" in next(line for line in text.splitlines() if line.startswith("# "))
    assert "the process no longer exists" in summary
    assert "Look for why the process of " in summary and "went away" in summary


_NO_CURRENT = """\
Fatal Python error: Segmentation fault

Thread 0x00007f0000000001 (most recent call first):
  File "/srv/app/worker.py", line 12 in copy
  File "/usr/lib/python3.11/threading.py", line 982 in run
"""
_INTERPRETER = """\
Fatal Python error: PyThreadState_Get: the function must be called with the GIL held, but the GIL is released
Python runtime state: initialized

Current thread 0x00007f0000000002 (most recent call first):
  File "/srv/app/ext.py", line 40 in call_native
  File "/srv/app/main.py", line 9 in <module>
"""


def test_no_current_thread_is_not_guessed() -> None:
    analysis = analyze(bundle(*faulthandler.parse(_NO_CURRENT, source="x.txt").dumps))
    assert analysis.verdict is Verdict.CRASHED
    assert analysis.confidence is Confidence.MEDIUM
    (crash,) = _doc(analysis)["crashes"]
    assert (crash["thread"], crash["at"], crash["frames"]) == ("", "", [])
    assert "which thread crashed is not known" in analysis.summary
    assert "0x00007f0000000001 at copy (worker.py:12)" in analysis.summary


def test_fatal_error_of_the_interpreter_names_no_signal() -> None:
    analysis = analyze(bundle(*faulthandler.parse(_INTERPRETER, source="x.txt").dumps))
    (crash,) = _doc(analysis)["crashes"]
    assert crash["signal"] == ""
    assert crash["what"].startswith("PyThreadState_Get")
    assert crash["at"] == "call_native (ext.py:40)"


def test_a_crash_beside_moving_ranks_is_the_verdict() -> None:
    moving = [
        dump(pid=101, title="sglang::scheduler_TP1", main=scheduler_stack(f), source=f"s{k}.txt")
        for k, f in enumerate(("Scheduler.a (s.py:1)", "Scheduler.b (s.py:2)"))
    ]
    crashed = faulthandler.parse(
        (CRASHES / "segfault_main.txt").read_text(encoding="utf-8"), source="rank0.log"
    ).dumps
    from reporter.model import RankHint

    analysis = analyze(bundle(*moving, *crashed, rank_hints=(("rank0.log", RankHint(rank=0)),)))
    assert analysis.verdict is Verdict.CRASHED
    assert analysis.summary.startswith("Rank 0 crashed")
    assert "The rest of the evidence: " in analysis.summary
    assert "rank 1 keeps moving" in analysis.summary
