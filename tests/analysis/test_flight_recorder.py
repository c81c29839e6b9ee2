"""Flight Recorder alignment and the joined verdict, on the real gloo fixtures and side by side
with torch's own analyser (`torch.distributed.flight_recorder`, "fr_trace")."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from reporter.analysis import analyze, export_context, flight_recorder
from reporter.analysis.classify import default_classifier
from reporter.analysis.export import to_json
from reporter.analysis.result import Verdict
from reporter.evidence.flight_recorder import load_plain_pickle, op_name
from reporter.load import bundle
from reporter.model import Frame, FrEntry, FrGroupStatus, FrOrigin, FrTrace, Location
from reporter.model.document import data

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"

# fixture -> (group, seq_id, by_op, missing) the first mismatch must have; None: no mismatch.
EXPECTED: dict[str, tuple[str, int, dict[str, list[int]], list[int]] | None] = {
    "fr_different_ops": ("1", 5, {"all_reduce": [0, 1], "broadcast": [2, 3]}, []),
    "fr_skipped": ("1", 5, {"all_reduce": [0, 1, 2]}, [3]),
    "fr_sizes": ("1", 5, {"all_reduce": [0, 1, 2, 3]}, []),
    "fr_healthy": None,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_trace_set_of_the_fixtures_finds_the_injected_mismatch(name: str) -> None:
    loaded = bundle.load([BUNDLES / name])
    sets = sorted({t.trace_set for t in loaded.flight_recorder})
    assert "torch-debug/fr_trace" in sets  # fetched from the debug server during the hang
    for trace_set in sets:
        traces = [t for t in loaded.flight_recorder if t.trace_set == trace_set]
        found = flight_recorder.analyze_set(trace_set, traces)
        assert found.ranks == (0, 1, 2, 3)
        fm = export_context.flight_recorder(found)
        mismatch = None if fm is None else data(fm)["first_mismatch"]
        expected = EXPECTED[name]
        if expected is None:
            assert mismatch is None, trace_set
            continue
        assert mismatch is not None, trace_set
        assert (mismatch["group"], mismatch["seq_id"], mismatch["by_op"], mismatch["missing"]) == (
            expected
        ), trace_set


def test_mismatched_sizes_name_both_sides() -> None:
    found = flight_recorder.analyze(bundle.load([BUNDLES / "fr_sizes"]).flight_recorder)
    assert found is not None and found.first_mismatch is not None
    mismatch = found.first_mismatch
    assert mismatch.kind == "sizes"
    assert [(s.sizes, s.ranks) for s in mismatch.sides] == [("[[4]]", (0, 2, 3)), ("[[8]]", (1,))]


@pytest.mark.parametrize(
    ("name", "pieces"),
    [
        (
            "fr_different_ops",
            [
                "first mismatch (op) at #5 on group 1",
                "ranks [0-1] issued all_reduce #5 on group 1 and wait at `Work.wait()` in "
                "`ModelRunner.forward_batch`",
                "ranks [2-3] issued broadcast #5 on group 1 and wait at `Work.wait()`",
                "The stacks alone cannot decide",
            ],
        ),
        (
            "fr_skipped",
            [
                "first mismatch (missing) at #5 on group 1",
                "ranks [0-2] issued all_reduce #5 on group 1 and wait at `Work.wait()`",
                "rank 3 never issued #5 (last issued all_reduce #4 on group 1) and sits in "
                "`Scheduler.poll_requests`",
            ],
        ),
        (
            "fr_sizes",
            [
                "first mismatch (sizes) at #5 on group 1",
                "ranks [0,2-3] issued all_reduce [[4]] #5 on group 1",
                "rank 1 issued all_reduce [[8]] #5 on group 1 and waits at `Work.wait()`",
            ],
        ),
        ("fr_healthy", ["Flight Recorder (", ": no mismatch; every group agrees"]),
    ],
)
def test_the_joined_verdict_names_collective_seq_group_and_both_sides(
    name: str, pieces: list[str]
) -> None:
    result = analyze(bundle.load([BUNDLES / name]))

    for piece in pieces:
        assert piece in result.summary
    if EXPECTED[name] is not None:
        assert result.verdict is Verdict.COLLECTIVE_DESYNC
    else:
        assert result.verdict is not Verdict.COLLECTIVE_DESYNC


def test_analyze_json_has_ranks_and_first_mismatch() -> None:
    data = to_json(analyze(bundle.load([BUNDLES / "fr_different_ops"])))
    fr = data["flight_recorder"]
    assert isinstance(fr, dict)
    assert fr["first_mismatch"]["by_op"] == {"all_reduce": [0, 1], "broadcast": [2, 3]}
    rank2 = next(r for r in fr["ranks"] if r["rank"] == 2)
    tp = next(g for g in rank2["groups"] if g["group"] == "1")
    assert (tp["last_issued"], tp["last_issued_op"]) == (5, "broadcast")
    assert data["flight_recorder"] is not None
    assert to_json(analyze(bundle.load([BUNDLES / "tp_desync"])))["flight_recorder"] is None


# --- side by side with torch's fr_trace


def _torch_fr_trace() -> Any:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    from torch.distributed.flight_recorder.components import builder, config_manager

    return builder, config_manager


def _details(folder: Path) -> dict[str, dict[str, Any]]:
    """fr_trace's per-rank input, read with our restricted unpickler (same dicts as pickle's)."""
    details: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.iterdir()):
        dump = load_plain_pickle(path.read_bytes(), source=path.name)
        assert isinstance(dump, dict)
        rank = int(path.name.rsplit("_", 1)[1])
        details[path.name] = {
            "rank": rank,
            "host_name": f"host{rank}",
            "entries": dump["entries"],
            "version": dump["version"],
            "pg_config": dump["pg_config"],
        }
    return details


def _normalised(details: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A copy whose pg_config lists every group with its members, as NCCL dumps do."""
    fixed = copy.deepcopy(details)
    members: dict[tuple[str, str], set[int]] = {}
    for dump in fixed.values():
        for entry in dump["entries"]:
            name, desc = entry["process_group"]
            members.setdefault((name, desc), set()).add(dump["rank"])
    for dump in fixed.values():
        dump["pg_config"] = {
            name: {"name": name, "desc": desc, "ranks": str(sorted(ranks))}
            for (name, desc), ranks in members.items()
        }
    return fixed


def _fr_trace_finding(details: dict[str, dict[str, Any]]) -> Any:
    """fr_trace's first finding: (group, seq_id, by_op, missing), or None."""
    builder, config_manager = _torch_fr_trace()
    args = config_manager.JobConfig().parse_args([])
    version = next(iter(details.values()))["version"]
    db = builder.build_db(details, args, version)
    for coll in db.collectives:
        culprits = coll.mismatch_collectives or {}
        missing = set(coll.missing_ranks or ())
        if coll.pass_check and not missing:
            continue
        by_op: dict[str, list[int]] = {}
        for rank in sorted(coll.expected_ranks):
            if rank in missing:
                continue
            name = culprits[rank].collective_name if rank in culprits else coll.collective_name
            by_op.setdefault(op_name(name), []).append(rank)
        return (coll.group_id, coll.collective_seq_id, by_op, sorted(missing))
    return None


@pytest.mark.parametrize("name", ["fr_different_ops", "fr_skipped"])
def test_fr_trace_cannot_read_gloo_dumps_and_ours_can(name: str) -> None:
    builder, config_manager = _torch_fr_trace()
    details = _details(BUNDLES / name / "fr_timeout")
    args = config_manager.JobConfig().parse_args([])

    # torch 2.13's gloo recorder writes pg_config under "" with no ranks: fr_trace stops.
    with pytest.raises(KeyError):
        builder.build_db(copy.deepcopy(details), args, "2.10")

    traces = bundle.load([BUNDLES / name]).flight_recorder
    ours = flight_recorder.analyze_set(
        "fr_timeout", [t for t in traces if t.trace_set == "fr_timeout"]
    )
    assert ours.first_mismatch is not None


@pytest.mark.parametrize("name", ["fr_different_ops", "fr_skipped", "fr_sizes"])
def test_ours_agrees_with_fr_trace_on_a_normalised_copy(name: str) -> None:
    theirs = _fr_trace_finding(_normalised(_details(BUNDLES / name / "fr_timeout")))
    traces = bundle.load([BUNDLES / name]).flight_recorder
    ours = flight_recorder.analyze_set(
        "fr_timeout", [t for t in traces if t.trace_set == "fr_timeout"]
    ).first_mismatch
    assert ours is not None
    mine = (ours.group, ours.seq_id, {op: list(r) for op, r in ours.by_op}, list(ours.missing))
    if name == "fr_sizes":
        # fr_trace groups by operation only; sizes show in its error text, not by_op.
        assert theirs is not None and theirs[:2] == mine[:2]
        assert theirs[2] == {"all_reduce": [0, 1, 2, 3]}
        return
    assert theirs == mine


# --- synthetic edge cases


def _entry(
    seq: int, op: str, *, rank: int, record: int, group: str = "0", state: str = ""
) -> FrEntry:
    return FrEntry(
        record_id=record,
        group=group,
        group_desc="default_pg" if group == "0" else "",
        seq_id=seq,
        op=op,
        profiling_name=f"nccl:{op}",
        input_sizes=((4,),),
        output_sizes=((4,),),
        state=state,
        source=Location(path=f"rank{rank}", line=record + 1),
    )


def _trace(rank: int, ops: list[tuple[int, str, str]], **kw: Any) -> FrTrace:
    entries = tuple(
        _entry(seq, op, rank=rank, record=i, state=state) for i, (seq, op, state) in enumerate(ops)
    )
    return FrTrace(
        rank=rank,
        trace_set="d",
        origin=FrOrigin.PICKLE,
        backend="nccl",
        entries=entries,
        source=Location(path=f"d/rank{rank}"),
        **kw,
    )


def test_a_rank_whose_dump_was_taken_earlier_is_no_mismatch() -> None:
    a = _trace(
        0, [(1, "all_reduce", "completed"), (2, "all_reduce", "completed"), (3, "broadcast", "")]
    )
    b = _trace(1, [(1, "all_reduce", "completed")])
    found = flight_recorder.analyze_set("d", [a, b])
    assert found.first_mismatch is None
    assert any("dumps were taken earlier" in n for n in found.groups[0].notes)


def test_a_rank_that_never_issued_and_ranks_that_never_completed() -> None:
    a = _trace(0, [(1, "all_reduce", "completed"), (2, "all_reduce", "started")])
    b = _trace(1, [(1, "all_reduce", "completed")])
    found = flight_recorder.analyze_set("d", [a, b])
    mismatch = found.first_mismatch
    assert mismatch is not None
    assert (mismatch.seq_id, mismatch.missing, mismatch.not_completed) == (2, (1,), (0,))
    assert mismatch.previous == ((1, "all_reduce", 1),)
    progress = {(p.rank, p.group): (p.last_issued, p.last_completed) for p in found.progress}
    assert progress == {(0, "0"): (2, 1), (1, "0"): (1, 1)}


def test_ids_evicted_from_one_ring_buffer_are_not_compared() -> None:
    a = _trace(0, [(s, "all_reduce", "completed") for s in range(1, 6)])
    b = _trace(1, [(s, "all_reduce", "completed") for s in range(4, 6)])
    found = flight_recorder.analyze_set("d", [a, b])
    assert found.first_mismatch is None
    assert found.groups[0].first_seq == 4
    assert "older entries left the ring buffer" in found.groups[0].notes[0]


def test_status_without_entries_makes_a_member() -> None:
    a = _trace(0, [(1, "all_reduce", "completed")])
    b = FrTrace(
        rank=1,
        trace_set="d",
        origin=FrOrigin.JSON,
        status=(FrGroupStatus(group="7", last_enqueued=3, last_completed=3),),
        entries=(_entry(1, "all_reduce", rank=1, record=0, group="7"),),
        source=Location(path="d/rank1"),
    )
    c = _trace(2, [(1, "all_reduce", "completed")])
    c = FrTrace(
        rank=2,
        trace_set="d",
        origin=FrOrigin.JSON,
        status=(FrGroupStatus(group="7", last_enqueued=0),),
        entries=c.entries,
        source=c.source,
    )
    found = flight_recorder.analyze_set("d", [a, b, c])
    group7 = next(g for g in found.groups if g.group == "7")
    assert group7.members == (1, 2)
    assert group7.mismatch is not None and group7.mismatch.missing == (2,)


@pytest.mark.parametrize(
    ("frame", "name"),
    [
        (
            Frame(function="synchronize", file="/x/torch/cuda/__init__.py", line=9),
            "torch.cuda.synchronize()",
        ),
        (
            Frame(function="Event.synchronize", file="torch/cuda/streams.py", line=3),
            "a CUDA event wait",
        ),
        (
            Frame(
                function="at::native::_local_scalar_dense_cuda(at::Tensor const&)",
                file="libtorch_cuda.so",
                native=True,
            ),
            ".item()",
        ),
        (Frame(function="THPVariable_tolist", file="libtorch_python.so", native=True), ".tolist()"),
        (
            Frame(function="cudaStreamSynchronize", file="libcudart.so.12", native=True),
            "cudaStreamSynchronize",
        ),
        (Frame(function="c10d::Work::wait", file="libtorch_cpu.so", native=True), "Work.wait()"),
        (
            Frame(
                function="c10d::ProcessGroupNCCL::WorkNCCL::synchronize()",
                file="libtorch_cuda.so",
                native=True,
            ),
            "Work.wait()",
        ),
    ],
)
def test_gpu_sync_points_come_from_frames_toml(frame: Frame, name: str) -> None:
    app = Frame(
        function="ModelRunner.forward_batch",
        file="sglang/srt/model_executor/model_runner.py",
        line=1,
    )
    place = flight_recorder.stack_place((frame, app), default_classifier())
    assert place.sync == name
    assert place.function == "ModelRunner.forward_batch"


def test_without_a_dump_the_verdict_says_stacks_cannot_decide_and_what_would(
    tmp_path: Path,
) -> None:
    text = (BUNDLES / "fr_different_ops" / "snapshots" / "rank0_s0.txt").read_text(encoding="utf-8")
    (tmp_path / "rank0.txt").write_text(text, encoding="utf-8")
    result = analyze(bundle.load([tmp_path / "rank0.txt"]))
    assert result.flight_recorder is None
    assert "Stacks alone cannot tell which collective" in result.summary
    assert "waits at `Work.wait()` in `ModelRunner.forward_batch`" in result.summary
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" in result.summary
    assert "report collect --torch-debug" in result.summary


def test_watchdog_lines_alone_give_the_mismatch_of_nccl_1409() -> None:
    loaded = bundle.load([ROOT / "fixtures" / "watchdog" / "nvidia-nccl-1409.log"])
    found = flight_recorder.analyze(loaded.flight_recorder)
    assert found is not None and found.first_mismatch is not None
    mismatch = found.first_mismatch
    assert (mismatch.group, mismatch.seq_id, mismatch.kind) == ("0", 80078, "op")
    assert mismatch.by_op == (("all_reduce", (3,)), ("broadcast", (7,)))


def test_a_collective_issued_just_before_the_dump_is_in_flight_not_a_mismatch() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    dumped = datetime(2026, 12, 1, 5, 0, 0, tzinfo=UTC)
    at = int(dumped.timestamp() * 1e9)

    def stamped(trace: FrTrace, ages: list[float]) -> FrTrace:
        entries = tuple(
            replace(e, time_created_ns=at - int(age * 1e9), timeout_ms=600_000)
            for e, age in zip(trace.entries, ages, strict=True)
        )
        return replace(trace, entries=entries, captured_at=dumped)

    a = _trace(0, [(1, "all_reduce", ""), (2, "all_reduce", "")])
    b = _trace(1, [(1, "all_reduce", "")])
    healthy = flight_recorder.analyze_set("d", [stamped(a, [0.2, 0.05]), stamped(b, [0.2])])
    assert healthy.first_mismatch is None
    assert "in flight" in healthy.groups[0].notes[0]

    hung = flight_recorder.analyze_set("d", [stamped(a, [61.0, 60.0]), stamped(b, [61.0])])
    assert hung.first_mismatch is not None
    assert hung.first_mismatch.missing == (1,)
