"""Smoke test of the evaluation and sync benchmarks on tiny inputs (the real runs live in
benchmarks/)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from .conftest import ROOT


@pytest.fixture(scope="module")
def benchmarks() -> Iterator[dict[str, ModuleType]]:
    """benchmarks/eval_search.py and bench_sync.py, importable for the length of the module."""
    folder = str(ROOT / "benchmarks")
    sys.path.insert(0, folder)
    try:
        import bench_sync
        import eval_search
        import upstream_corpus

        yield {"eval": eval_search, "sync": bench_sync, "corpus": upstream_corpus}
    finally:
        sys.path.remove(folder)


def test_the_generator_is_seeded_and_labelled(benchmarks: dict[str, ModuleType]) -> None:
    generate = benchmarks["corpus"].generate
    one = generate(3, families=6, distractors=300)
    two = generate(3, families=6, distractors=300)
    assert one.issues == two.issues
    assert len(one.queries) == 6
    numbers = {(i["repo"], i["number"]) for i in one.issues}
    assert len(numbers) == len(one.issues)
    for query in one.queries:
        assert query.relevant and query.relevant <= numbers
    assert len(one.issues) - sum(len(q.relevant) for q in one.queries) >= 300


def test_evaluation_runs_and_scores_are_sane(
    benchmarks: dict[str, ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    benchmarks["eval"].main(["--seed", "5", "--families", "8", "--distractors", "300", "--json"])
    figures = json.loads(capsys.readouterr().out)
    for name in ("ours", "bm25", "github-keywords", "ours-candidates-bm25"):
        recall = {int(k): v for k, v in figures[name]["recall"].items()}
        assert 0.0 <= recall[1] <= recall[5] <= recall[10] <= 1.0
    assert figures["ours"]["recall"]["5"] >= 0.5
    assert figures["ours"]["mrr"] >= figures["github-keywords"]["mrr"]


def test_sync_benchmark_counts_calls(
    benchmarks: dict[str, ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    assert benchmarks["sync"].main(["--issues", "250"]) == 0
    out = capsys.readouterr().out
    assert "full sync                         3" in out
