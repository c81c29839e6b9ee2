"""`to_json`: the `analyze --json` document."""

from __future__ import annotations

import json

from reporter.analysis import analyze, to_json
from reporter.model import Bundle, Location, ParseWarning

from .builders import ALL_REDUCE, BROADCAST, bundle, dump, failure, scheduler_stack

RECV = "Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)"
FORWARD = "Scheduler.forward_batch (sglang/srt/managers/scheduler.py:1400)"

REQUIRED = [
    "verdict",
    "confidence",
    "confidence_notes",
    "summary",
    "snapshots",
    "rank_unit",
    "classes",
    "branch_point",
    "missing_ranks",
    "laggards",
    "failed_dumps",
    "ranks",
    "idle_threads",
    "signature",
    "warnings",
]


def _bundle() -> Bundle:
    dumps = [
        dump(
            pid=100 + r,
            title=f"sglang::scheduler_TP{r}",
            main=scheduler_stack(*BROADCAST, RECV)
            if r < 2
            else scheduler_stack(*ALL_REDUCE, FORWARD),
            threads={"watchdog": ["watchdog_thread (sglang/srt/managers/scheduler.py:77)"]},
        )
        for r in (3, 0, 1)
    ]
    return bundle(
        *dumps,
        failures=[failure(pid=102, source="all.txt")],
        world_size=4,
        warnings=[ParseWarning(source=Location(path="all.txt", line=7), message="skipped a line")],
    )


def test_required_keys_and_shapes() -> None:
    data = to_json(analyze(_bundle()))
    assert [key for key in data if key in REQUIRED] == REQUIRED
    assert data["verdict"] == "collective-desync"
    assert data["rank_unit"] == "rank"
    classes = data["classes"]
    assert isinstance(classes, list)
    assert classes[0] == {
        "ranks": [0, 1],
        "label": "[0-1]",
        "collective": "broadcast",
        "wait": None,
        "state": "unknown",
        "frames": [
            "broadcast (torch/distributed/distributed_c10d.py)",
            "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py)",
            "broadcast_pyobj (sglang/srt/utils.py)",
            "Scheduler.recv_requests (sglang/srt/managers/scheduler.py)",
            "Scheduler.event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py)",
            "run_scheduler_process (sglang/srt/managers/scheduler.py)",
            "BaseProcess.run (multiprocessing/process.py)",
            "BaseProcess._bootstrap (multiprocessing/process.py)",
            "_main (multiprocessing/spawn.py)",
            "spawn_main (multiprocessing/spawn.py)",
            "<module> (<string>)",
        ],
        "pids": [100, 101],
        "instance": "1",
        "call_site": "recv_requests (scheduler.py:1012)",
    }
    assert data["branch_point"] == {
        "shared": "Scheduler.event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py)",
        "common": [
            "<module> (<string>)",
            "spawn_main (multiprocessing/spawn.py)",
            "_main (multiprocessing/spawn.py)",
            "BaseProcess._bootstrap (multiprocessing/process.py)",
            "BaseProcess.run (multiprocessing/process.py)",
            "run_scheduler_process (sglang/srt/managers/scheduler.py)",
            "Scheduler.event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py)",
        ],
        "branches": [
            {
                "label": "[0-1]",
                "ranks": [0, 1],
                "collective": "broadcast",
                "frames": [
                    "Scheduler.recv_requests (sglang/srt/managers/scheduler.py)",
                    "broadcast_pyobj (sglang/srt/utils.py)",
                    "broadcast (torch/distributed/distributed_c10d.py)",
                ],
            },
            {
                "label": "[3]",
                "ranks": [3],
                "collective": "all_reduce",
                "frames": [
                    "Scheduler.forward_batch (sglang/srt/managers/scheduler.py)",
                    "all_reduce (torch/distributed/distributed_c10d.py)",
                ],
            },
        ],
    }
    assert data["missing_ranks"] == [2]
    # Rank 3 is in another collective, not outside one: no laggard.
    assert data["laggards"] == []
    assert data["failed_dumps"] == [
        {
            "pid": 102,
            "rank": None,
            "reason": "Error: No such process",
            "source": "all.txt:1",
            "state": "gone",
        }
    ]
    assert data["idle_threads"] == [
        {
            "ranks": [0, 1, 3],
            "label": "[0-1,3]",
            "thread_name": "watchdog",
            "why": "watchdog: idle in watchdog_thread (managers/scheduler.py)",
        }
    ]
    ranks = data["ranks"]
    assert isinstance(ranks, list)
    assert ranks[0] == {
        "rank": 0,
        "pid": 100,
        "role": "scheduler",
        "source": "process-title",
        "detail": "rank 0 from TP0 (process title sglang::scheduler_TP0)",
        "state": "unknown",
        "title": "sglang::scheduler_TP0",
        "key": "rank:0",
        "dims": {"TP": 0},
        "snapshots": 1,
        "instance": "1",
        "host": None,
        "condition": None,
    }
    assert data["hosts"] == []
    assert data["warnings"] == ["all.txt:7: skipped a line"]
    signature = data["signature"]
    assert isinstance(signature, dict) and set(signature) == {"hash", "text"}


def test_byte_stable() -> None:
    first = json.dumps(to_json(analyze(_bundle())), sort_keys=False)
    second = json.dumps(to_json(analyze(_bundle())), sort_keys=False)
    assert first == second


def test_empty_bundle() -> None:
    data = to_json(analyze(bundle()))
    assert data["verdict"] == "inconclusive"
    assert data["classes"] == [] and data["branch_point"] is None
    assert data["tree"] == {"frame": None, "label": "[]", "children": []}
    json.dumps(data)


def test_waits_for_instances_and_failed_dump_state() -> None:
    data = to_json(analyze(_bundle()))
    edges = data["waits_for"]
    assert isinstance(edges, list) and edges
    for edge in edges:
        assert set(edge["waiting"]) >= {"ranks", "pids", "collective", "at"}
        assert set(edge["for"]) == {"ranks", "pids", "hosts", "state", "at"}
        assert edge["for"]["state"] in {"idle", "stuck", "moving", "unknown", "gone", "missing"}
    waiting = {(tuple(e["waiting"]["ranks"]), tuple(e["for"]["ranks"])) for e in edges}
    assert ((0, 1), (3,)) in waiting
    # One server: no instance list, and every class says instance "1".
    assert data["instances"] == []
    classes = data["classes"]
    failed = data["failed_dumps"]
    assert isinstance(classes, list) and isinstance(failed, list)
    assert {c["instance"] for c in classes} == {"1"}
    assert all("state" in f for f in failed)
