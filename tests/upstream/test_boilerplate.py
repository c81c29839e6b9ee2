"""Issue-form boilerplate learned from the index, the schema 1 -> 2 upgrade, and scores
that compare across repositories (the best of each searched repo is shown)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reporter.upstream import boilerplate, search
from reporter.upstream.index import Index
from reporter.upstream.query import query_from_text
from reporter.upstream.records import IssueRecord
from reporter.upstream.schema import SCHEMA_VERSION

FORM = (
    "### Checklist\n\n"
    "- [x] 1. I have searched related issues but cannot get the expected help.\n"
    "- [ ] 2. The bug has not been fixed in the latest version.\n\n"
    "### Environment\n\nPython: 3.11.{minor}\nCUDA available: True\n"
    "PyTorch: 2.{torch}.0+cu124\n\n### Describe the bug\n\n{text}\n"
)


def _form(n: int, text: str) -> str:
    return FORM.format(minor=n % 9, torch=n % 6, text=text)


def test_line_shapes_ignore_ticks_digits_and_spacing() -> None:
    a = boilerplate.line_key("- [X] 2. The bug has not been fixed in the latest version.")
    b = boilerplate.line_key("-  [ ] 2. The bug has not been fixed in the latest version. ")
    assert a is not None and a == b
    assert boilerplate.line_key("PyTorch: 2.5.1") == boilerplate.line_key("PyTorch: 2.4.0")
    assert boilerplate.line_key("PyTorch: 2.5.1") != boilerplate.line_key("Python: 2.5.1")
    assert boilerplate.line_key("```") is None


def test_threshold_grows_with_the_repo() -> None:
    assert boilerplate.threshold(10) == boilerplate.COMMON_LINE_MIN
    assert boilerplate.threshold(1000) == 20


def test_strip_title_drops_form_tags_only() -> None:
    assert boilerplate.strip_title("[Bug]: engine hangs") == "engine hangs"
    assert boilerplate.strip_title("[Bug][Usage] x") == "x"
    assert boilerplate.strip_title("[Bug]") == "[Bug]"
    assert boilerplate.strip_title("hang in [0-3] ranks") == "hang in [0-3] ranks"


def _repo(index: Index, repo: str, topics: list[str], start: int = 1) -> None:
    index.upsert(
        IssueRecord(
            repo=repo,
            number=n,
            title=f"[Bug] {topic}",
            body=_form(n, f"When I {topic.lower()} it fails."),
        )
        for n, topic in enumerate(topics, start=start)
    )


TOPICS = [
    "Load LoRA adapter",
    "Run speculative decoding",
    "Use the OpenAI chat endpoint",
    "Quantize with AWQ",
    "Start two nodes",
    "Enable prefix caching",
    "Call the embeddings route",
]


def test_the_index_learns_a_repo_s_form(tmp_path: Path) -> None:
    with Index(tmp_path / "b.sqlite3") as index:
        _repo(index, "sgl-project/sglang", TOPICS)
        body = _form(99, "The router drops every second request under load.")
        stripped = index.strip_boilerplate(body, ["sgl-project/sglang"])
        assert stripped == "The router drops every second request under load."
        # Another repo's issues share none of these lines: nothing is stripped for it.
        _repo(index, "vllm-project/vllm", ["Other thing"], start=500)
        assert "Checklist" in index.strip_boilerplate(body, ["vllm-project/vllm"])
        # Counts follow edits: rewriting the issues without the form forgets it.
        index.upsert(
            IssueRecord(repo="sgl-project/sglang", number=n, title=t, body="plain")
            for n, t in enumerate(TOPICS, start=1)
        )
        assert "Checklist" in index.strip_boilerplate(body, ["sgl-project/sglang"])


def test_the_form_does_not_make_every_issue_a_candidate(tmp_path: Path) -> None:
    with Index(tmp_path / "b.sqlite3") as index:
        _repo(index, "sgl-project/sglang", TOPICS)
        query = query_from_text(
            "Router drops requests\n" + _form(3, "The router drops every second request."),
            repos=("sgl-project/sglang",),
        )
        found = search.find_duplicates(index, query, limit=10, embedder=False)
        # Only the form connects the query to these issues: none is worth showing.
        assert found == []


def test_a_schema_1_index_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with Index(path) as index:
        _repo(index, "sgl-project/sglang", TOPICS)
    db = sqlite3.connect(path)
    db.executescript(
        "DROP TABLE line_df; DROP TABLE issue_vectors; DROP TABLE issue_fixes;"
        "DROP TABLE body_vectors; ALTER TABLE issues DROP COLUMN terms;"
        "ALTER TABLE issues DROP COLUMN signals;"
        "UPDATE meta SET value = '1' WHERE key = 'schema';"
    )
    db.commit()
    db.close()
    with Index(path) as index:
        assert index.meta("schema") == SCHEMA_VERSION == "3"
        assert index.count() == len(TOPICS)
        assert "Checklist" not in index.strip_boilerplate(_form(1, "x"), ["sgl-project/sglang"])
        assert index.fix("sgl-project/sglang", 1) is None


def test_each_searched_repo_keeps_its_best_candidate(tmp_path: Path) -> None:
    """One repo with many close matches must not push the other repo's best one out."""
    with Index(tmp_path / "r.sqlite3") as index:
        index.upsert(
            IssueRecord(
                repo="sgl-project/sglang",
                number=n,
                title=f"NCCL all_reduce timeout hang in scheduler variant {n}",
                body="all_reduce NCCL watchdog timeout hang scheduler " * 3,
            )
            for n in range(1, 13)
        )
        index.upsert(
            [
                IssueRecord(
                    repo="pytorch/pytorch",
                    number=7,
                    title="all_reduce hangs with NCCL after timeout",
                    body="A hang in all_reduce.",
                ),
                IssueRecord(repo="pytorch/pytorch", number=8, title="Docs typo", body="typo"),
            ]
        )
        query = query_from_text(
            "NCCL all_reduce timeout hang in the scheduler",
            repos=("sgl-project/sglang", "pytorch/pytorch"),
        )
        found = search.find_duplicates(index, query, limit=5, embedder=False)
        repos = [c.issue.record.repo for c in found]
        assert len(found) == 5
        assert "pytorch/pytorch" in repos
        best = next(c for c in found if c.issue.record.repo == "pytorch/pytorch")
        assert best.issue.record.number == 7
        # BM25 is relative to the best candidate of the same repo.
        assert best.reasons.scores.bm25 == 1.0
