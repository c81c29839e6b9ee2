"""Rank identity, snapshot grouping and compact rank sets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reporter.analysis.ranks import (
    TitleInfo,
    format_ranks,
    identify,
    parse_ranks,
    parse_title,
    rank_from_filename,
)
from reporter.core.errors import UsageError
from reporter.model import RankHint, RankSource

from .builders import bundle, dump, failure

IDLE = ["Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)"]


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("sglang::scheduler_TP3", TitleInfo(role="scheduler", dims=(("TP", 3),))),
        ("sglang::scheduler_DP1_TP3", TitleInfo(role="scheduler", dims=(("DP", 1), ("TP", 3)))),
        (
            "sglang::scheduler_DP0_PP1_TP2_EP0",
            TitleInfo(role="scheduler", dims=(("DP", 0), ("PP", 1), ("TP", 2), ("EP", 0))),
        ),
        (
            "sglang::scheduler_ATTN_CP1_TP2",
            TitleInfo(role="scheduler", dims=(("ATTN_CP", 1), ("TP", 2))),
        ),
        (
            "sglang::scheduler_DP0_MOE_DP1_TP2",
            TitleInfo(role="scheduler", dims=(("DP", 0), ("MOE_DP", 1), ("TP", 2))),
        ),
        ("sglang::scheduler", TitleInfo(role="scheduler")),
        ("sglang::scheduler_2", TitleInfo(role="scheduler", dims=(("DP", 2),))),
        ("sglang::detokenizer", TitleInfo(role="detokenizer")),
        ("sglang::data_parallel_controller", TitleInfo(role="data_parallel_controller")),
        ("VLLM::Worker_TP0_EP0", TitleInfo(role="Worker", dims=(("TP", 0), ("EP", 0)))),
        ("VLLM::Worker_PP1_TP2", TitleInfo(role="Worker", dims=(("PP", 1), ("TP", 2)))),
        ("VLLM::EngineCore_DP1", TitleInfo(role="EngineCore", dims=(("DP", 1),))),
        ("VllmWorker rank=3", TitleInfo(role="VllmWorker", rank=3)),
        ("ray::RayWorkerWrapper", TitleInfo(role="RayWorkerWrapper")),
        ("ray::RayWorkerWrapper.execute_method()", TitleInfo(role="RayWorkerWrapper")),
        ("/usr/bin/python3 train.py --tp 2 --model Qwen3-0.6B", TitleInfo()),
        ("/opt/venv/bin/python -m sglang.launch_server --tp 8", TitleInfo(role="launcher")),
        (
            "python -B -c from multiprocessing.resource_tracker import main;main(3)",
            TitleInfo(role="resource-tracker"),
        ),
        (
            "/usr/bin/python /usr/bin/torchrun --nproc-per-node 8 train.py",
            TitleInfo(role="launcher"),
        ),
        (None, TitleInfo()),
        ("", TitleInfo()),
    ],
)
def test_parse_title(title: str | None, expected: TitleInfo) -> None:
    assert parse_title(title) == expected


@pytest.mark.parametrize(
    ("path", "rank"),
    [
        ("rank3.txt", 3),
        ("rank_3.json", 3),
        ("tp3.txt", 3),
        ("worker-3.log", 3),
        ("TP6.log", 6),
        ("proc_2.txt", 2),
        ("bundle/rank-0007.txt", 7),
        ("dumps/rank12/pyspy.txt", 12),
        ("dump.txt", None),
        ("gpt3.txt", None),
        ("node1/pyspy.txt", None),
    ],
)
def test_rank_from_filename(path: str, rank: int | None) -> None:
    assert rank_from_filename(path) == rank


@pytest.mark.parametrize(
    ("ranks", "text"),
    [
        ([], "[]"),
        ([5], "[5]"),
        ([0, 1], "[0-1]"),
        ([3, 1, 2, 0, 7], "[0-3,7]"),
        ([0, 0, 2, 4, 5, 6], "[0,2,4-6]"),
    ],
)
def test_format_ranks(ranks: list[int], text: str) -> None:
    assert format_ranks(ranks) == text


@given(st.sets(st.integers(min_value=0, max_value=5000), max_size=200))
def test_format_parse_round_trip(ranks: set[int]) -> None:
    text = format_ranks(ranks)
    assert parse_ranks(text) == tuple(sorted(ranks))
    assert format_ranks(parse_ranks(text)) == text


def test_parse_ranks_accepts_spaces_and_no_brackets() -> None:
    assert parse_ranks(" 0 - 2 , 9 ") == (0, 1, 2, 9)


@pytest.mark.parametrize("text", ["[a]", "[1-]", "[3-1]", "[1,,2]"])
def test_parse_ranks_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_ranks(text)


def test_manifest_hint_wins() -> None:
    rank_map = identify(
        bundle(
            dump(pid=10, title="sglang::scheduler_TP1", main=IDLE, source="b/rank0.txt"),
            rank_hints=[("rank0.txt", RankHint(rank=5, role="scheduler", group="g1"))],
        )
    )
    (proc,) = rank_map.ranks
    assert (proc.identity.rank, proc.identity.source, proc.group) == (5, RankSource.MANIFEST, "g1")
    assert "manifest" in proc.identity.detail


@pytest.mark.parametrize(
    ("dump_path", "hint_path", "rank"),
    [
        ("rank0.txt", "rank0.txt", 5),
        ("bundle/s1/rank0.txt", "s1/rank0.txt", 5),
        ("s1/rank0.txt", "bundle/s1/rank0.txt", 5),
        # Not a path-part suffix: the file name rank stays.
        ("my_rank0.txt", "rank0.txt", 0),
        ("s2/rank0.txt", "s1/rank0.txt", 0),
    ],
)
def test_manifest_hint_path_matching(dump_path: str, hint_path: str, rank: int) -> None:
    rank_map = identify(
        bundle(
            dump(pid=10, main=IDLE, source=dump_path), rank_hints=[(hint_path, RankHint(rank=5))]
        )
    )
    assert rank_map.ranks[0].identity.rank == rank


def test_manifest_hint_for_a_shared_file_is_ignored() -> None:
    rank_map = identify(
        bundle(
            dump(pid=10, title="sglang::scheduler_TP0", main=IDLE, source="all.txt"),
            dump(pid=11, title="sglang::scheduler_TP1", main=IDLE, source="all.txt"),
            rank_hints=[("all.txt", RankHint(rank=5))],
        )
    )
    assert [p.identity.rank for p in rank_map.ranks] == [0, 1]
    assert any("holds 2 processes" in w for w in rank_map.warnings)


def test_locals_rank() -> None:
    main = [*IDLE, "run_worker (myapp/worker.py:10) [rank=3, world_size=4]"]
    rank_map = identify(bundle(dump(pid=10, title="python worker.py", main=main)))
    (proc,) = rank_map.ranks
    assert (proc.identity.rank, proc.identity.source) == (3, RankSource.LOCALS)
    assert rank_map.world_size == 4
    assert "rank=3" in proc.identity.detail


def test_locals_outermost_frame_wins() -> None:
    main = [
        "broadcast_helper (myapp/comm.py:3) [rank=0]",
        "run_worker (myapp/worker.py:10) [rank=2]",
    ]
    (proc,) = identify(bundle(dump(pid=10, main=main))).ranks
    assert proc.identity.rank == 2


def test_locals_fill_dims_missing_from_title() -> None:
    main = [
        *IDLE,
        "run_scheduler_process (sglang/srt/managers/scheduler.py:2500) [tp_rank=2, dp_rank=1]",
    ]
    rank_map = identify(
        bundle(
            dump(pid=10, title="sglang::scheduler", main=main),
            dump(pid=11, title="sglang::scheduler_DP0_TP3", main=IDLE),
        )
    )
    first = next(p for p in rank_map.ranks if p.pid == 10)
    assert first.identity.dims == (("DP", 1), ("TP", 2))
    assert first.identity.rank == 1 * 4 + 2
    assert first.identity.source is RankSource.LOCALS


def test_title_and_locals_disagree() -> None:
    main = [*IDLE, "run_scheduler_process (sglang/srt/managers/scheduler.py:2500) [tp_rank=2]"]
    rank_map = identify(bundle(dump(pid=10, title="sglang::scheduler_TP3", main=main)))
    assert rank_map.ranks[0].identity.rank == 3
    assert any("disagrees" in w for w in rank_map.warnings)


def test_mixed_radix_over_dp_and_tp() -> None:
    dumps = [
        dump(pid=100 + i, title=f"sglang::scheduler_DP{dp}_TP{tp}", main=IDLE)
        for i, (dp, tp) in enumerate([(1, 1), (0, 0), (1, 0), (0, 1)])
    ]
    rank_map = identify(bundle(*dumps))
    assert [(p.identity.rank, p.pid, p.group) for p in rank_map.ranks] == [
        (0, 101, "DP0"),
        (1, 103, "DP0"),
        (2, 102, "DP1"),
        (3, 100, "DP1"),
    ]
    assert "mixed radix" in rank_map.ranks[3].identity.detail
    assert rank_map.world_size == 4


def test_ep_does_not_change_the_rank() -> None:
    dumps = [dump(pid=10 + tp, title=f"VLLM::Worker_TP{tp}_EP{tp}", main=IDLE) for tp in range(2)]
    rank_map = identify(bundle(*dumps))
    assert [(p.identity.rank, p.identity.dims) for p in rank_map.ranks] == [
        (0, (("TP", 0), ("EP", 0))),
        (1, (("TP", 1), ("EP", 1))),
    ]
    assert rank_map.ranks[0].group == rank_map.ranks[1].group


def test_vllm_worker_rank_title() -> None:
    (proc,) = identify(bundle(dump(pid=10, title="VllmWorker rank=3", main=IDLE))).ranks
    assert (proc.identity.rank, proc.identity.role, proc.identity.source) == (
        3,
        "VllmWorker",
        RankSource.PROCESS_TITLE,
    )


def test_ray_worker_rank_from_locals() -> None:
    main = [*IDLE, "RayWorkerWrapper.execute_method (vllm/executor/ray_utils.py:100) [rank=2]"]
    (proc,) = identify(bundle(dump(pid=10, title="ray::RayWorkerWrapper", main=main))).ranks
    assert (proc.identity.rank, proc.identity.role, proc.identity.source) == (
        2,
        "RayWorkerWrapper",
        RankSource.LOCALS,
    )


def test_filename_rank() -> None:
    rank_map = identify(bundle(dump(pid=10, main=IDLE, source="dumps/rank_4.json")))
    (proc,) = rank_map.ranks
    assert (proc.identity.rank, proc.identity.source) == (4, RankSource.FILENAME)
    assert "rank_4.json" in proc.identity.detail


def test_filename_rank_needs_a_file_of_one_process() -> None:
    rank_map = identify(
        bundle(
            dump(pid=10, main=IDLE, source="rank3.txt"),
            dump(pid=11, main=IDLE, source="rank3.txt"),
        )
    )
    assert rank_map.unit == "pid"
    assert [p.unit for p in rank_map.ranks] == [10, 11]


def test_pid_fallback() -> None:
    rank_map = identify(bundle(dump(pid=22, main=IDLE), dump(pid=11, main=IDLE, source="b.txt")))
    assert rank_map.unit == "pid"
    assert [(p.unit, p.identity.rank, p.identity.source) for p in rank_map.ranks] == [
        (11, None, RankSource.PID),
        (22, None, RankSource.PID),
    ]
    assert rank_map.world_size is None


def test_pidless_dumps_are_numbered_by_position() -> None:
    rank_map = identify(
        bundle(dump(pid=None, main=IDLE, source="a.txt"), dump(pid=None, main=IDLE, source="b.txt"))
    )
    assert [p.identity.key for p in rank_map.ranks] == ["file:a.txt", "file:b.txt"]
    assert [p.unit for p in rank_map.ranks] == [0, 1]


def test_snapshots_of_one_pid_ordered_by_capture_time() -> None:
    late = datetime(2026, 7, 14, 8, 35, tzinfo=UTC)
    early = datetime(2026, 7, 14, 8, 34, tzinfo=UTC)
    first = dump(
        pid=10, title="sglang::scheduler_TP0", main=IDLE, captured_at=late, source="s2.txt"
    )
    second = dump(
        pid=10, title="sglang::scheduler_TP0", main=IDLE, captured_at=early, source="s1.txt"
    )
    (proc,) = identify(bundle(first, second)).ranks
    assert proc.snapshots == (second, first)


def test_snapshots_in_bundle_order_without_times() -> None:
    first = dump(pid=10, title="sglang::scheduler_TP0", main=IDLE, source="s1.txt")
    second = dump(
        pid=10,
        title="sglang::scheduler_TP0",
        main=IDLE,
        captured_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    (proc,) = identify(bundle(first, second)).ranks
    assert proc.snapshots == (first, second)


def test_same_rank_with_other_pids_in_other_files_is_never_merged() -> None:
    # Two processes never share one rank label: nothing separates them, so they are kept
    # apart by PID (one instance each) and the analysis says so.
    rank_map = identify(
        bundle(
            dump(pid=10, main=IDLE, source="s1/rank0.txt"),
            dump(pid=99, main=IDLE, source="s2/rank0.txt"),
        )
    )
    assert sorted(p.pid or 0 for p in rank_map.ranks) == [10, 99]
    assert [len(i.ranks) for i in rank_map.instances] == [1, 1]
    assert all(i.ambiguous for i in rank_map.instances)
    assert any("kept apart by PID" in w for w in rank_map.warnings)


def test_same_rank_twice_in_one_file_is_kept_apart() -> None:
    rank_map = identify(
        bundle(
            dump(pid=10, title="sglang::scheduler_TP0", main=IDLE, source="all.txt"),
            dump(pid=11, title="sglang::scheduler_TP0", main=IDLE, source="all.txt"),
        )
    )
    assert [[p.pid for p in i.ranks] for i in rank_map.instances] == [[10], [11]]
    assert {p.identity.key for p in rank_map.ranks} == {"instance:1/rank:0", "instance:2/rank:0"}


def test_non_rank_processes_are_listed_apart() -> None:
    rank_map = identify(
        bundle(
            dump(pid=1, title="/usr/bin/python -m sglang.launch_server --tp 2", main=IDLE),
            dump(pid=2, title="sglang::scheduler_TP0", main=IDLE),
            dump(pid=3, title="sglang::scheduler_TP1", main=IDLE),
            dump(pid=4, title="sglang::detokenizer", main=IDLE),
            dump(
                pid=5,
                title="python -c from multiprocessing.resource_tracker import main;main(3)",
                main=IDLE,
            ),
        )
    )
    assert [p.identity.rank for p in rank_map.ranks] == [0, 1]
    assert [(p.pid, p.identity.role) for p in rank_map.others] == [
        (1, "launcher"),
        (4, "detokenizer"),
        (5, "resource-tracker"),
    ]
    assert rank_map.unidentified == ()
    assert rank_map.warnings == ()


def test_unidentified_process_in_a_ranked_bundle_is_reported() -> None:
    rank_map = identify(
        bundle(
            dump(pid=2, title="sglang::scheduler_TP0", main=IDLE),
            dump(pid=7, title="python helper.py", main=IDLE),
        )
    )
    assert [p.pid for p in rank_map.others] == [7]
    assert rank_map.unidentified == ("PID 7 (python helper.py)",)
    assert any("no rank identity" in w for w in rank_map.warnings)


def test_engine_core_is_not_a_rank_when_workers_exist() -> None:
    rank_map = identify(
        bundle(
            dump(pid=1, title="VLLM::EngineCore_DP0", main=IDLE),
            dump(pid=2, title="VLLM::Worker_TP0", main=IDLE),
            dump(pid=3, title="VLLM::Worker_TP1", main=IDLE),
        )
    )
    assert [p.pid for p in rank_map.ranks] == [2, 3]
    assert [p.identity.role for p in rank_map.others] == ["EngineCore"]


@pytest.mark.parametrize(
    ("world", "main_args", "expected", "detail"),
    [
        (8, "", 8, "manifest"),
        (None, " [tp_size=4]", 4, "parallel sizes"),
        (None, "", 3, "parallel sizes"),
    ],
)
def test_world_size(world: int | None, main_args: str, expected: int, detail: str) -> None:
    dumps = [
        dump(
            pid=10 + tp,
            title=f"sglang::scheduler_TP{tp}",
            main=[*IDLE, f"run (myapp/r.py:1){main_args}"],
        )
        for tp in range(3)
    ]
    rank_map = identify(bundle(*dumps, world_size=world))
    assert rank_map.world_size == expected
    assert detail in rank_map.world_detail


def test_world_size_from_largest_rank() -> None:
    rank_map = identify(bundle(dump(pid=1, main=IDLE, source="rank5.txt")))
    assert (rank_map.world_size, rank_map.world_detail) == (6, "from the largest rank seen + 1")


def test_failed_dump_is_tied_to_its_rank() -> None:
    rank_map = identify(
        bundle(
            dump(pid=10, title="sglang::scheduler_TP0", main=IDLE, source="a.txt"),
            failures=[failure(pid=10, source="a.txt"), failure(pid=None, source="rank3.txt")],
        )
    )
    assert [f.rank for f in rank_map.failed] == [0, 3]


@pytest.mark.parametrize(
    ("layout", "ranks", "world", "groups"),
    [
        # SGLang DP attention (tp 4, dp 2): the TP index is global, DP the attention group.
        ([(0, 0), (0, 1), (1, 2), (1, 3)], [0, 1, 2, 3], 4, ["DP0", "DP0", "DP1", "DP1"]),
        # attention TP 1 (dp == tp): one rank per attention group.
        ([(d, d) for d in range(4)], [0, 1, 2, 3], 4, ["DP0", "DP1", "DP2", "DP3"]),
        # The standard layout restarts TP at 0 in every DP group: mixed radix as before.
        ([(0, 0), (0, 1), (1, 0), (1, 1)], [0, 1, 2, 3], 4, ["DP0", "DP0", "DP1", "DP1"]),
        ([(0, 0), (0, 1), (1, 1)], [0, 1, 3], 4, ["DP0", "DP0", "DP1"]),
    ],
)
def test_dp_attention_titles_carry_the_global_tp_rank(
    layout: list[tuple[int, int]], ranks: list[int], world: int, groups: list[str]
) -> None:
    dumps = [
        dump(pid=100 + i, title=f"sglang::scheduler_DP{d}_TP{t}", main=["f (a.py:1)"])
        for i, (d, t) in enumerate(layout)
    ]
    rank_map = identify(bundle(*dumps))
    assert [p.identity.rank for p in rank_map.ranks] == ranks
    assert [p.group for p in rank_map.ranks] == groups
    assert rank_map.world_size == world
