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

from reporter.analysis import analyze
from reporter.app.report import render_draft
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
    assert recovers.startswith("Not known: no command line, environment or set-up code in")
    assert "No timeout found" not in recovers
    assert [s.rule for s in built.steps if "timeout" in s.rule] == []


def test_without_a_timeout_set_torchs_own_default_is_said_with_its_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # tp_desync's --subprocesses dump holds the launcher's command line; no environment. The
    # ranks wait in torch.distributed's all_reduce, and the manifest names torch 2.13.0+cpu
    # (a CPU build: gloo), whose default collective timeout is 30 minutes.
    monkeypatch.chdir(ROOT)
    built = _build([Path("fixtures/bundles/tp_desync")])
    recovers = _line(built, "Recovers on its own")
    assert recovers.startswith("Probably, by timing out: torch's gloo default of 30 min")
    assert "torch 2.13.0+cpu" in recovers and "none is set in the command lines" in recovers
    assert "nothing seen ends the wait" not in recovers
    assert "timeout-set" in [s.rule for s in built.steps]


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
    # The only stacks are the clients: they lead (the title counts them and says what they
    # wait for), and the clients line adds what the title does not.
    assert built.title.startswith("34 Go client goroutines wait 2 minutes for an HTTP response")
    assert "No stacks in the evidence" not in built.title
    assert "a slow request rather than a hang" in _line(built, "What")
    clients = _line(built, "Clients affected")
    assert clients.startswith("34 of the dump's") and "do not wait on the server" in clients


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
    report = render_draft(loaded, analysis, now=datetime(2026, 7, 14, tzinfo=UTC))
    assert "[8261-8262]" not in report.split("## Ranks and classes")[0]


def test_timeouts_from_a_nul_separated_command_line_and_a_code_excerpt() -> None:
    """A setproctitle-padded `/proc/PID/cmdline` (NULs, trailing padding) still gives its
    options; a code excerpt's `init_process_group(..., timeout=timedelta(...))` gives the
    group's timeout and its length, over several lines."""
    from reporter.analysis.setupcalls import code_timeouts
    from reporter.render.answer.timeouts import cmdline_text, seconds_of

    raw = (
        "python\x00-m\x00sglang.launch_server\x00--watchdog-timeout\x00300\x00" + "\x00" * 40 + "  "
    )
    assert cmdline_text(raw) == "python -m sglang.launch_server --watchdog-timeout 300"
    code = (
        "    dist.init_process_group(",
        '        backend="gloo",',
        "        rank=rank, world_size=world_size, timeout=timedelta(seconds=900)",
        "    )",
        "    group = dist.new_group(ranks, timeout=COLLECTIVE_TIMEOUT, backend='gloo')",
        "    other = dist.new_group(ranks)",
    )
    assert code_timeouts(code, 40) == [
        ("init_process_group", "timedelta(seconds=900)", 40),
        ("new_group", "COLLECTIVE_TIMEOUT", 44),
    ]
    assert seconds_of("init_process_group(timeout=)", "timedelta(seconds=900)") == 900
    assert seconds_of("x", "datetime.timedelta(hours=2)") == 7200
    assert seconds_of("x", "timedelta(0, 90)") == 90
    assert seconds_of("x", "COLLECTIVE_TIMEOUT") is None


def test_a_timeout_that_fired_in_the_log_is_said_to_have_fired(tmp_path: Path) -> None:
    """gloo's "Timed out waiting 5000ms" in a log: the wait already ended, said with when."""
    from reporter.render.answer.since import recover_line
    from reporter.render.answer.timeouts import fired

    (tmp_path / "rank0.txt").write_text(
        (ROOT / "fixtures/bundles/tp_desync/snapshots/rank0_s0.txt").read_text(encoding="utf-8")
    )
    (tmp_path / "server.log").write_text(
        "2026-11-29 14:43:40,100 INFO scheduler started\n"
        "2026-11-29 14:43:50,512 ERROR RuntimeError: [../third_party/gloo/gloo/transport/tcp/"
        "unbound_buffer.cc:81] Timed out waiting 5000ms for recv operation to complete\n",
        encoding="utf-8",
    )
    loaded = bundle_io.load([tmp_path])
    went = fired(loaded)
    assert [(t.kind, t.seconds, t.at) for t in went] == [("fired", 5.0, "14:43:50 UTC")]
    assert went[0].source.endswith("server.log:2")
    from reporter.analysis import analyze

    text = recover_line(loaded, analyze(loaded), went).text
    assert text.startswith("It already timed out: `Timed out waiting 5000ms` (5 s) at 14:43:50")


@pytest.mark.parametrize(
    ("version", "environment", "expected"),
    [
        (
            "torch 2.13.0+cpu",
            "gloo on 127.0.0.1",
            "torch's gloo default of 30 min in torch 2.13.0+cpu",
        ),
        ("torch 2.4.1", "NCCL on 8 H100", "torch's NCCL default of 10 min in torch 2.4.1"),
        ("torch 2.1.2", "NCCL on 8 A100", "torch's NCCL default of 30 min in torch 2.1.2"),
        ("torch 2.4.1", "", "torch's default timeout (30 min for gloo, 10 min for NCCL"),
    ],
)
def test_the_library_default_follows_the_backend_and_version(
    version: str, environment: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gloo: 30 min in every version; NCCL: 10 min since torch 2.2, 30 before; neither
    named: both said, and that the backend is not known."""
    from dataclasses import replace

    from reporter.analysis import analyze
    from reporter.render.answer.since import timeout_text
    from reporter.render.answer.timeouts import library_default

    monkeypatch.chdir(ROOT)
    loaded = bundle_io.load([Path("fixtures/bundles/tp_desync")])
    manifest = replace(loaded.manifest, version=version, fields=(("environment", environment),))
    loaded = replace(loaded, manifest=manifest)
    default = library_default(loaded, analyze(loaded))
    assert default is not None and default.kind == "default"
    assert timeout_text(default).startswith(expected), timeout_text(default)


def test_what_timeouts_were_looked_for_is_worked_out_once_without_keeping_the_bundle() -> None:
    # The composer asks `captured` three times of one bundle: the answer is kept, by a weak
    # reference to the bundle, so a long-running `report watch` frees each round's bundle.
    import gc
    import weakref

    from reporter.render.answer import timeouts

    loaded = bundle_io.load([ROOT / "fixtures" / "bundles" / "tp_desync"])
    first = timeouts.captured(loaded)
    assert first and timeouts.captured(loaded) is first  # the same answer, not a new one
    gone = weakref.ref(loaded)
    del loaded
    gc.collect()
    assert gone() is None
