"""Smoke test of the evaluation and sync benchmarks on tiny inputs (the real runs live in
benchmarks/)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
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


def test_real_evaluation_says_plainly_when_the_set_is_absent(
    benchmarks: dict[str, ModuleType], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as raised:
        benchmarks["eval"].main(["--real", str(tmp_path / "nowhere")])
    message = str(raised.value)
    assert "no pairs.jsonl or pool.jsonl there" in message
    assert "kept outside the repository" in message and "Tip:" in message


def _write_real_set(folder: Path) -> None:
    """A tiny set in the real set's format, written here (our own words): two pairs, one
    a re-submission, and a pool with distractors."""
    pool = [
        {
            "repo": "o/r",
            "number": 1,
            "title": "Scheduler hangs after OOM in prefill",
            "body": "The scheduler never answers once prefill runs out of memory.",
            "state": "open",
        },
        {
            "repo": "o/r",
            "number": 2,
            "title": "LoRA adapter fails to load",
            "body": "Loading a LoRA adapter from disk raises KeyError.",
            "state": "closed",
        },
        {
            "repo": "o/r",
            "number": 3,
            "title": "Docs typo in quickstart",
            "body": "There is a typo.",
            "state": "open",
            "role": "distractor",
        },
        {
            "repo": "o/r",
            "number": 4,
            "title": "Metrics endpoint returns 500",
            "body": "GET /metrics fails with an internal error.",
            "state": "open",
        },
    ]
    pairs = [
        {
            "repo": "o/r",
            "query": {
                "number": 10,
                "title": "Server stuck after prefill OOM",
                "body": "After running out of memory in prefill the scheduler hangs.",
            },
            "duplicates": [1],
            "evidence": "reporter says it is the same bug",
        },
        {
            "repo": "o/r",
            "query": {
                "number": 11,
                "title": "LoRA adapter fails to load",
                "body": "Loading a LoRA adapter from disk raises KeyError.",
            },
            "duplicates": [2],
            "evidence": "identical re-submission of #2",
        },
    ]
    folder.mkdir()
    (folder / "pool.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pool), "utf-8")
    (folder / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs), "utf-8")


def test_real_evaluation_runs_on_a_set_in_its_format(
    benchmarks: dict[str, ModuleType], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "set"
    _write_real_set(folder)
    pairs, pool = benchmarks["eval"].load_real(folder)
    assert [p.resubmission for p in pairs] == [False, True]
    assert [p.half for p in pairs] == ["even", "odd"]
    assert all("role" not in issue for issue in pool)
    benchmarks["eval"].main(["--real", str(folder), "--json"])
    document = json.loads(capsys.readouterr().out)["real"]
    assert document["all"]["all queries"]["bm25"]["queries"] == 2
    assert document["non-resubmission"]["all queries"]["bm25"]["queries"] == 1
    ours = document["all"]["all queries"]["ours-no-semantic"]
    assert ours["recall"]["10"] == 1.0 and ours["mrr"] > 0.5
