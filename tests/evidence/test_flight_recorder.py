"""Flight Recorder parsing: real gloo dumps (pickle and JSON), refused pickles, watchdog lines."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from reporter.core.errors import EvidenceError
from reporter.evidence import flight_recorder as fr
from reporter.evidence import sniff
from reporter.load import bundle
from reporter.model import EvidenceKind, FrOrigin

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
WATCHDOG = ROOT / "fixtures" / "watchdog"
DIFFERENT = BUNDLES / "fr_different_ops"


def test_gloo_pickle_dump_reads_entries_status_and_the_empty_group_config() -> None:
    path = DIFFERENT / "fr_timeout" / "nccl_trace_rank_2"
    result = fr.parse_pickle(path.read_bytes(), source="fr_timeout/nccl_trace_rank_2")

    assert result.warnings == ()
    (trace,) = result.flight_recorder
    assert trace.rank == 2
    assert trace.origin is FrOrigin.PICKLE
    assert trace.trace_set == "fr_timeout"
    assert trace.backend == "gloo"
    assert trace.version.startswith("2.")
    # torch 2.13's gloo recorder: pg_config under an empty name, no ranks.
    assert [(g.name, g.ranks) for g in trace.groups] == [("", ())]
    tp = [e for e in trace.entries if e.group == "1"]
    assert [e.seq_id for e in tp] == [1, 2, 3, 4, 5]
    assert tp[-1].op == "broadcast"
    assert tp[-1].profiling_name == "gloo:broadcast"
    assert tp[-1].input_sizes == ((4,),)
    assert tp[-1].frames[0].function == "broadcast"
    assert any(f.function == "forward_batch" for f in tp[-1].frames)
    assert {s.group for s in trace.status} == {"0", "1"}


def test_json_form_from_the_debug_server_matches_the_pickle_entries() -> None:
    path = DIFFERENT / "torch-debug" / "fr_trace" / "rank0.json"
    text = path.read_text(encoding="utf-8")
    assert sniff.sniff(text) is EvidenceKind.FLIGHT_RECORDER

    result = fr.parse_json(text, source="torch-debug/fr_trace/rank0.json")

    (trace,) = result.flight_recorder
    assert trace.rank == 0
    assert trace.origin is FrOrigin.JSON
    tp = [e for e in trace.entries if e.group == "1"]
    assert tp[-1].seq_id == 5
    assert tp[-1].op == "all_reduce"
    status = {s.group: s for s in trace.status}
    # Taken during the hang: the TP all_reduce #5 is enqueued, not completed.
    assert status["1"].last_enqueued == 5
    assert status["1"].last_completed == 4


class _RunsCode:
    """Pickles to a call of os.system: what a hostile "dump" looks like."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(
    tmp_path: Path, protocol: int
) -> None:
    marker = tmp_path / "ran"
    folder = tmp_path / "bundle"
    folder.mkdir()
    hostile = pickle.dumps(
        {"version": "2.10", "entries": [_RunsCode(f"touch {marker}")]}, protocol=protocol
    )
    (folder / "nccl_trace_rank_0").write_bytes(hostile)

    with pytest.raises(fr.RefusedPickleError) as caught:
        bundle.load([folder])

    message = str(caught.value.message)
    assert "\n" not in message
    assert "nccl_trace_rank_0: refused" in message
    assert "system" in message  # names what it asked for (posix.system)
    assert not marker.exists()


def test_the_cli_refuses_a_hostile_pickle_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "rank0.pkl").write_bytes(pickle.dumps(_RunsCode(f"touch {marker}")))

    done = subprocess.run(
        [sys.executable, "-m", "reporter", "analyze", str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=120,
    )

    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, done.stderr
    assert "rank0.pkl: refused" in errors[0]
    assert "Traceback" not in done.stderr
    assert not marker.exists()


def test_a_damaged_pickle_is_one_error_naming_the_file() -> None:
    data = pickle.dumps({"version": "2.10", "entries": []})[:-5]
    with pytest.raises(EvidenceError, match=r"^x/rank1: not a readable pickle"):
        fr.parse_pickle(data, source="x/rank1")


def test_tolerant_reading_warns_with_file_and_entry_and_keeps_the_rest() -> None:
    dump = {
        "version": "2.10",
        "entries": [
            {
                "process_group": ["0", "default_pg"],
                "collective_seq_id": 1,
                "profiling_name": "nccl:all_reduce",
                "state": "completed",
            },
            "not an entry",
            {"process_group": ["0", "default_pg"], "profiling_name": "nccl:broadcast"},
            {"collective_seq_id": 3, "profiling_name": "nccl:broadcast"},
        ],
        "pg_status": {"0": {"last_enqueued_collective": "3", "last_completed_collective": -1}},
    }
    result = fr.parse_json(json.dumps(dump), source="dumps/rank5.json")

    (trace,) = result.flight_recorder
    assert trace.rank == 5
    assert [e.seq_id for e in trace.entries] == [1]
    assert trace.status[0].last_enqueued == 3
    assert trace.status[0].last_completed is None
    assert [str(w) for w in result.warnings] == [
        "dumps/rank5.json:2: entry 1: a str, not an entry (a dict); skipped",
        "dumps/rank5.json:3: entry 2: no collective_seq_id (version 2.10); skipped",
        "dumps/rank5.json:4: entry 3: no `process_group`; skipped",
    ]


@pytest.mark.parametrize(
    ("dump", "warning"),
    [
        ({"entries": []}, "no `version` field; read as the 2.x format"),
        ({"version": "3.0", "entries": []}, "version 3.0 is newer than the 2.x format"),
    ],
)
def test_the_version_field_is_honoured(dump: dict[str, object], warning: str) -> None:
    result = fr.parse_json(json.dumps(dump), source="rank0.json")
    assert any(warning in w.message for w in result.warnings)


def test_dumps_before_2_2_number_collectives_in_seq_id() -> None:
    dump = {
        "version": "2.1",
        "entries": [{"process_group": ["0", ""], "seq_id": 7, "profiling_name": "nccl:all_reduce"}],
    }
    (trace,) = fr.parse_json(json.dumps(dump), source="rank0.json").flight_recorder
    assert trace.entries[0].seq_id == 7


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("/tmp/nccl_trace_rank_3", 3),
        ("fr/rank12.json", 12),
        ("dump_rank_0.pkl", 0),
        ("trace.json", None),
    ],
)
def test_rank_from_file_name(name: str, rank: int | None) -> None:
    assert fr.rank_from_name(name) == rank


@pytest.mark.parametrize(
    ("name", "ranks", "group", "op"),
    [
        ("nvidia-nccl-1409.log", {3: "all_reduce", 7: "broadcast"}, "0", None),
        ("llamafactory-7396.log", {0: "all_reduce", 4: "all_reduce"}, "1", None),
        ("vlm-r1-294.log", {2: "all_reduce", 4: "all_reduce"}, "1", None),
        ("basicsr-737.log", {0: "all_reduce", 1: "all_reduce"}, "0", "default_pg"),
        ("ofa-271.log", {1: "all_reduce", 2: "all_reduce", 3: "all_reduce"}, "?", None),
        ("diffusers-12422.log", {1: "all_reduce", 7: "all_reduce"}, "?", None),
    ],
)
def test_watchdog_lines_from_public_threads(
    name: str, ranks: dict[int, str], group: str, op: str | None
) -> None:
    text = (WATCHDOG / name).read_text(encoding="utf-8")
    assert fr.sniff_watchdog(text)

    traces = fr.parse_watchdog(text, source=name).flight_recorder

    assert {t.rank: t.entries[0].op for t in traces} == ranks
    assert all(len(t.entries) == 1 for t in traces)  # blocking-wait repeats count once
    assert {t.entries[0].group for t in traces} == {group}
    assert all(t.origin is FrOrigin.WATCHDOG_LOG for t in traces)
    if op is not None:
        assert {t.entries[0].group_desc for t in traces} == {op}


def test_watchdog_progress_comes_from_the_process_group_line() -> None:
    text = (WATCHDOG / "llamafactory-7396.log").read_text(encoding="utf-8")
    traces = {t.rank: t for t in fr.parse_watchdog(text, source="x.log").flight_recorder}

    status = traces[0].status[0]
    assert (status.group, status.last_enqueued, status.last_completed) == ("1", 1582, 1579)
    entry = traces[0].entries[0]
    assert (entry.seq_id, entry.numel_in, entry.timeout_ms, entry.state) == (
        1580,
        466119168,
        600000,
        "timed-out",
    )
    assert entry.source.line == 1


def test_a_watchdog_log_in_a_bundle_is_sniffed_and_feeds_the_bundle(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "train.log").write_bytes((WATCHDOG / "nvidia-nccl-1409.log").read_bytes())

    loaded = bundle.load([folder])

    assert [f.kind for f in loaded.files] == [EvidenceKind.LOG]
    assert sorted(t.rank or 0 for t in loaded.flight_recorder) == [3, 7]


def test_a_folder_of_per_rank_dumps_is_one_trace_set() -> None:
    loaded = bundle.load([DIFFERENT])
    sets: dict[str, list[int | None]] = {}
    for trace in loaded.flight_recorder:
        sets.setdefault(trace.trace_set, []).append(trace.rank)

    assert sets == {"fr_timeout": [0, 1, 2, 3], "torch-debug/fr_trace": [0, 1, 2, 3]}
    kinds = {f.path: f.kind for f in loaded.files}
    assert kinds["fr_timeout/nccl_trace_rank_0"] is EvidenceKind.FLIGHT_RECORDER
    assert kinds["torch-debug/fr_trace/rank3.json"] is EvidenceKind.FLIGHT_RECORDER
