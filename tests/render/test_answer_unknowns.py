"""Honest unknowns: what the summary says only with evidence behind it, and "not known" otherwise.

- "No timeout found" only where command lines or environments were captured; timeouts
  are also read from the Flight Recorder's `timeout_ms` and from `--locals` of
  `init_process_group` (`timeout=`).
- "Went away" only with evidence of leaving (a dump that failed because the process was
  gone), never for ranks merely absent from an excerpt.
- Go clients waiting many minutes are a symptom for the first line.
- Two PIDs are listed, never written as a range.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter import app
from reporter.analysis import analyze
from reporter.load import bundle as bundle_io
from reporter.render import answer
from reporter.render.answer import find_timeouts

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"


def _line(built: answer.Answer, topic: str) -> str:
    return next(line.text for line in built.lines if line.topic == topic)


def _build(paths: list[Path]) -> answer.Answer:
    loaded = bundle_io.load(paths)
    return answer.build(loaded, analyze(loaded))


def test_no_command_line_or_environment_means_not_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    built = _build([Path("fixtures/bundles/wedge_metrics_query_range")])
    recovers = _line(built, "Recovers on its own")
    assert recovers.startswith("Not known: no command line or environment in the evidence")
    assert "No timeout found" not in recovers
    assert [s.rule for s in built.steps if "timeout" in s.rule] == []


def test_a_command_line_without_a_timeout_is_no_timeout_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tp_desync's --subprocesses dump holds the launcher's command line; no environment.
    monkeypatch.chdir(ROOT)
    built = _build([Path("fixtures/bundles/tp_desync")])
    recovers = _line(built, "Recovers on its own")
    assert recovers.startswith("No timeout found: no collective timeout or watchdog in the command")
    assert "(the environment was not captured)" in recovers
    assert "no-timeout" in [s.rule for s in built.steps]


def test_flight_recorder_timeout_ms_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    built = _build([Path("fixtures/bundles/fr_skipped")])
    recovers = _line(built, "Recovers on its own")
    assert recovers.startswith("Only by timing out: the Flight Recorder's collective timeout")
    assert "`timeout_ms=60000`, 60 s" in recovers
    assert "timeout-set" in [s.rule for s in built.steps]


_LOCALS_DUMP = """Process 4242: python train.py --world 2
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    _store_based_barrier (torch/distributed/distributed_c10d.py:4702)
        Arguments:
            rank: 1
            store: <torch._C._distributed_c10d.PrefixStore at 0x7f>
            timeout: datetime.timedelta(seconds=600)
    init_process_group (torch/distributed/distributed_c10d.py:1520)
        Arguments:
            backend: "gloo"
            init_method: None
            timeout: datetime.timedelta(seconds=600)
            world_size: 2
            rank: 1
    main (train.py:12)
        Locals:
            timeout: 5
    <module> (train.py:30)
"""


def test_init_process_group_timeout_from_locals(tmp_path: Path) -> None:
    dump = tmp_path / "rank1.txt"
    dump.write_text(_LOCALS_DUMP, encoding="utf-8")
    loaded = bundle_io.load([dump])
    found = find_timeouts(loaded)
    # Only the frame that sets up the group counts, not any local called `timeout`.
    assert [(t.name, t.value) for t in found] == [
        ("init_process_group(timeout=)", "datetime.timedelta(seconds=600)")
    ]
    assert all(t.name != "timeout" for t in found)
    assert found[0].source.startswith(str(dump))


def test_ranks_absent_from_an_excerpt_never_went_away(monkeypatch: pytest.MonkeyPatch) -> None:
    # A public thread's one-rank excerpt (rank 7 of 8): ranks 0-6 are not in it, and
    # nothing says they left.
    monkeypatch.chdir(ROOT)
    built = _build([Path("fixtures/realworld/sglang-12076-1.txt")])
    text = " ".join(
        [line.text for line in built.lines] + [s.action + " " + s.why for s in built.steps]
    )
    assert "went away" not in text and "gone" not in text
    rules = [s.rule for s in built.steps]
    assert "missing-rank" in rules and "gone-rank" not in rules
    assert "ranks [0-6]" in next(s.action for s in built.steps if s.rule == "missing-rank")


def test_a_failed_dump_of_a_gone_process_is_leaving(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    built = _build([Path("fixtures/bundles/dead_rank")])
    assert "for rank 3, gone" in _line(built, "Who waits for whom")
    assert built.steps[0].rule == "gone-rank" and "rank 3 went away" in built.steps[0].action


def _go_dump(tmp_path: Path, minutes: int) -> Path:
    """The agents' real `debug=2` dump, its waits rewritten to `minutes` (the same
    goroutines, waiting longer)."""
    source = BUNDLES / "full_incident" / "goroutines" / "agents_debug2.txt"
    text = re.sub(r", [23] minutes\]", f", {minutes} minutes]", source.read_text(encoding="utf-8"))
    out = tmp_path / "agents.txt"
    out.write_text(text, encoding="utf-8")
    return out


def test_go_clients_waiting_many_minutes_are_the_first_line(tmp_path: Path) -> None:
    built = _build([_go_dump(tmp_path, 31)])
    assert built.title == "Clients wait 31 minutes for an HTTP response; no server stacks"
    what = _line(built, "What")
    assert what.startswith("Clients hang: 34 Go goroutines wait for an HTTP response")
    assert "the longest for 31 minutes" in what
    assert "nothing here shows a hang" not in what


def test_go_clients_waiting_briefly_are_not_a_hang(tmp_path: Path) -> None:
    built = _build([_go_dump(tmp_path, 2)])
    assert not _line(built, "What").startswith("Clients hang")
    assert "34 client goroutines wait for an HTTP response" in _line(built, "Clients affected")


def test_two_pids_are_listed_never_ranged(tmp_path: Path) -> None:
    # Two loose dumps without ranks: the unit is the PID.
    texts = {
        8261: (BUNDLES / "tp_desync" / "snapshots" / "rank0_s0.txt"),
        8262: (BUNDLES / "tp_desync" / "snapshots" / "rank1_s0.txt"),
        8263: (BUNDLES / "tp_desync" / "snapshots" / "rank2_s0.txt"),
    }
    paths = []
    for pid, source in texts.items():
        text = source.read_text(encoding="utf-8")
        text = re.sub(r"sglang::scheduler_TP\d", "python serve.py", text)
        text = re.sub(r"\b2603\d\b", str(pid), text)
        path = tmp_path / f"dump{pid}.txt"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    loaded = bundle_io.load(paths)
    analysis = analyze(loaded)
    assert analysis.rank_unit == "pid"
    built = answer.build(loaded, analysis)
    everything = " ".join([built.title, *(line.text for line in built.lines)])
    assert "PIDs 8261, 8262" in everything
    assert not re.search(r"\[\d{4}-\d{4}\]", everything)
    report = app.render_draft(loaded, analysis, now=datetime(2026, 7, 14, tzinfo=UTC))
    assert "[8261-8262]" not in report.split("## Ranks and classes")[0]
