"""The first screen of the wait verdicts, read as an on-call engineer would at 3 a.m.

Each claim rests on the evidence and is said once; "Recovers on its own" fits the kind of
wait (never for a lock copied locked across fork, only when the kernel call returns for a
wait in State D); steps fit the class ("restart together" only where ranks share a
collective group); a timeout set in the code is read even far from the waiting line.
Run on the real captures under `fixtures/bundles/`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.app.report import Options, load_and_analyze, render_draft

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)


def _draft(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles") / name], Options())
    return render_draft(bundle, analysis, now=NOW)


def _summary(text: str) -> str:
    return text[text.index("## Summary") : text.index("<!-- reporter:end id=summary -->")]


def _line(summary: str, topic: str) -> str:
    found = re.search(rf"^- \*\*{re.escape(topic)}:\*\* (.*)$", summary, re.MULTILINE)
    return found.group(1) if found else ""


def _steps(summary: str) -> list[str]:
    return re.findall(r"^\d+\. (.*)$", summary, re.MULTILINE)


def test_fork_lock_never_recovers_and_its_blocked_thread_is_not_an_open_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = _summary(_draft("fork_lock", monkeypatch))
    assert _line(summary, "Recovers on its own").startswith("No: ")
    assert "will ever release it" in _line(summary, "Recovers on its own")
    # The verdict explains the child's blocked thread: no "not proven a deadlock" beside it.
    assert not _line(summary, "Blocked threads")
    assert "Not proven a deadlock" not in summary
    assert not any(s.startswith("Settle whether") for s in _steps(summary))
    assert _steps(summary)[0].startswith("Kill PID ")


def test_kernel_wait_recovers_with_the_kernel_call_and_says_its_reason_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = _summary(_draft("fuse_d_state", monkeypatch))
    assert "kernel call returns" in _line(summary, "Recovers on its own")
    reason = "the FUSE daemon serving the mount does not answer"
    assert reason in _line(summary, "Who waits for whom")
    assert reason not in _line(summary, "What")
    steps = _steps(summary)
    # The rule reads the kernel stack itself; the general State D step would repeat it.
    assert sum("/proc/" in s and "/stack" in s for s in steps) == 1, steps
    assert "Read the kernel stack of PID " in summary


def test_an_ended_hang_says_it_is_over_and_each_dump_failure_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _draft("ended_gloo_timeout", monkeypatch)
    summary = _summary(text)
    assert _line(summary, "Recovers on its own").startswith("No: the wait already ended")
    # The ranks exited because they timed out (the log says so), not for an unknown reason.
    assert not any("went away" in s for s in _steps(summary))
    verdict = text[text.index("## Verdict") : text.index("<!-- reporter:end id=verdict -->")]
    assert verdict.count("Check that the process is running.") == 1, verdict
    assert "rank 0, rank 1, rank 2 in 15 files" in verdict


def test_a_timeout_set_far_from_the_waiting_line_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # dataloader_broadcast sets `timeout=timedelta(seconds=900)` at line 60, 20 lines above
    # the broadcast that waits: not gloo's 30 min default, and not "no timeout".
    text = _draft("dataloader_broadcast", monkeypatch)
    recovers = _line(_summary(text), "Recovers on its own")
    assert "timedelta(seconds=900)" in recovers and "(15 min)" in recovers
    assert "default" not in recovers
    assert "**`init_process_group` with its timeout**" in text
    assert "> 55      dist.init_process_group(" in text


def test_a_work_wait_cycle_names_its_peers_so_no_step_asks_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _draft("pipeline_work_wait", monkeypatch)
    summary = _summary(text)
    assert "peers of the point-to-point waits are not in the evidence" not in text
    assert not any("`src`" in s for s in _steps(summary))
    assert "both sides of :" not in summary
    assert _line(summary, "Who waits for whom").count("(pipeline_work_wait.py:36)") == 1


@pytest.mark.parametrize(
    "name",
    [
        "fork_lock",
        "fuse_d_state",
        "pipe_deadlock",
        "dead_worker",
        "ray_actor_cycle",
        "child_stuck",
        "child_exited_pipe_held",
        "gil_held",
        "loop_blocked",
        "loop_idle",
        "cpu_busy",
    ],
)
def test_no_restart_together_without_a_collective_group(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _summary(_draft(name, monkeypatch))
    for step in _steps(summary):
        assert "together" not in step and "rejoin" not in step, step
    recovers = _line(summary, "Recovers on its own")
    assert recovers and "these dumps do not settle whether anything is stuck" not in recovers


def _cited(line: str) -> list[str]:
    """The citations closing a summary line: (`a:1`, `b:2`)."""
    found = re.search(r"\((`[^()]*`)\)$", line)
    return re.findall(r"`([^`]+)`", found.group(1)) if found else []


def test_dead_worker_lines_cite_the_waiting_consumer_not_the_live_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bundle's first stack class is the live worker's (PID 15013, idle in its job
    # loop); the claim is about PID 15011, waiting on a worker that died.
    summary = _summary(_draft("dead_worker", monkeypatch))
    for topic in ("What", "Who waits for whom", "Recovers on its own"):
        cited = _cited(_line(summary, topic))
        assert cited, topic
        assert all("15011" in place for place in cited), (topic, cited)
        assert cited[0].startswith("pyspy/pid15011-"), (topic, cited)


WAIT_RULE_BUNDLES = (
    "child_exited_pipe_held",
    "child_stuck",
    "dead_worker",
    "fork_lock",
    "fuse_d_state",
    "pipe_deadlock",
    "pipeline_work_wait",
    "ray_actor_cycle",
)


@pytest.mark.parametrize("name", WAIT_RULE_BUNDLES)
def test_a_wait_rules_lines_cite_the_edges_that_decided_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles") / name], Options())
    assert analysis.rule_evidence, analysis.rule
    # Places only (`path:line`), no notes, and every one a file of the bundle.
    root = Path("fixtures/bundles") / name
    for place in analysis.rule_evidence:
        path, _, line = place.rpartition(":")
        assert line.isdigit() and " " not in path, place
        assert list(root.rglob(Path(path).name)), place
    summary = _summary(render_draft(bundle, analysis, now=NOW))
    # "Recovers" is the rule's own answer only where it has one; else the timeouts answer.
    topics = ["What", "Who waits for whom"] + (["Recovers on its own"] if analysis.recovers else [])
    for topic in topics:
        assert _cited(_line(summary, topic)) == list(analysis.rule_evidence), topic


def test_a_child_that_waits_in_turn_is_cited_where_the_who_line_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The Who line says the child (PID 31902) waits in turn for an HTTP reply: that claim
    # rests on the child's own dump and /proc lines, not only on the parent's.
    summary = _summary(_draft("child_stuck", monkeypatch))
    who = _line(summary, "Who waits for whom")
    assert "in turn for 127.0.0.1:48881" in who
    cited = _cited(who)
    assert "native/child.txt:4" in cited
    assert "proc/pid31902-s2.sockets:3" in cited
