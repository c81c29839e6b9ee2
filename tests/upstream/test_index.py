"""The SQLite issue index: upsert, full-text and frame lookups, import/export, safety."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from reporter.errors import InputError, UsageError
from reporter.render.lint import IssueIndex
from reporter.upstream.index import Index
from reporter.upstream.query import match_expression
from reporter.upstream.records import (
    IssueRecord,
    SyncState,
    record_from_api,
    record_from_json,
    record_to_json,
    validate_repo,
)

STACK = """```
Thread 1 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2806)
    check_hicache_events (sglang/srt/managers/scheduler.py:1602)
```"""


def _record(number: int, title: str = "", body: str = "", **extra: object) -> IssueRecord:
    return IssueRecord(
        repo="sgl-project/sglang",
        number=number,
        title=title or f"issue {number}",
        body=body,
        **extra,  # type: ignore[arg-type]
    )


def test_upsert_then_lookups(index: Index) -> None:
    index.upsert(
        [
            _record(1, "Scheduler hangs in all_reduce", STACK),
            _record(2, "Tokenizer crash on emoji"),
            _record(3, "PR: fix hang", is_pull=True),
        ]
    )
    assert index.count() == 2
    assert index.has("sgl-project/sglang", 3)
    assert index.has("SGL-Project/SGLang", 1)
    assert not index.has("sgl-project/sglang", 4)
    hits = index.text_candidates(match_expression(["hang"]), ["sgl-project/sglang"], 10)
    # Pull requests are stored for link checks but never searched.
    assert [issue_id for issue_id, _ in hits] == [1]
    assert index.frame_df(["check_hicache_events", "nope"]) == {
        "check_hicache_events": 1,
        "nope": 0,
    }
    assert index.frame_postings(["all_reduce"], []) == [(1, "all_reduce")]
    stored = index.stored([1])[1]
    assert stored.stacks == (("all_reduce", "check_hicache_events"),)


def test_an_updated_issue_replaces_its_text_and_frames(index: Index) -> None:
    index.upsert([_record(7, "segfault in detokenizer", STACK, updated_at="2025-01-01T00:00:00Z")])
    index.upsert([_record(7, "OOM in prefill", "", updated_at="2025-02-01T00:00:00Z")])
    assert index.text_candidates('"segfault"', [], 10) == []
    assert [i for i, _ in index.text_candidates('"prefill"', [], 10)] == [1]
    assert index.frame_df(["all_reduce"]) == {"all_reduce": 0}
    assert index.term_df(["segfault", "prefill"]) == {"segfault": 0, "prefill": 1}
    assert index.count() == 1


def test_an_unchanged_record_is_not_rewritten(index: Index) -> None:
    record = _record(1, "a", "b", updated_at="2025-01-01T00:00:00Z")
    assert index.upsert([record]) == 1
    assert index.upsert([record]) == 0


def test_repo_filter_is_case_insensitive(index: Index) -> None:
    index.upsert(
        [_record(1, "hang"), IssueRecord(repo="vllm-project/vllm", number=1, title="hang")]
    )
    assert index.count(["SGL-PROJECT/sglang"]) == 1
    assert len(index.text_candidates('"hang"', ["vllm-project/vllm"], 10)) == 1
    assert index.repos() == [("sgl-project/sglang", 1), ("vllm-project/vllm", 1)]


def test_a_failed_write_leaves_nothing_behind(index: Index) -> None:
    index.upsert([_record(1, "kept")])

    def records() -> object:
        yield _record(2, "half written")
        raise RuntimeError("connection lost mid-page")

    with pytest.raises(RuntimeError):
        index.save_page(records(), SyncState(repo="sgl-project/sglang", resume_since="x"))  # type: ignore[arg-type]
    assert index.count() == 1
    assert index.sync_state("sgl-project/sglang") is None
    assert index.text_candidates('"half"', [], 10) == []


def test_sync_state_round_trip(index: Index) -> None:
    state = SyncState(repo="a/b", since="2025-01-01T00:00:00Z", etag='W/"x"', complete=True)
    index.save_state(state)
    assert index.sync_state("A/B") == state
    assert index.sync_state("c/d") is None


def test_import_skips_bad_lines_with_their_numbers(index: Index) -> None:
    lines = [
        json.dumps({"repo": "a/b", "number": 1, "title": "ok", "body": "x", "state": "open"}),
        "{not json",
        json.dumps({"repo": "a/b", "number": 2, "title": "no state"}),
        "",
        json.dumps({"repo": "a", "number": 3, "title": "t", "body": "", "state": "open"}),
        json.dumps({"repo": "a/b", "number": -4, "title": "t", "state": "open"}),
        json.dumps({"repo": "a/b", "number": 5, "title": "t", "state": "merged"}),
        json.dumps(["a", "list"]),
        json.dumps(
            {
                "repo": "a/b",
                "number": 6,
                "title": "t",
                "body": None,
                "state": "closed",
                "labels": [{"name": "bug"}],
                "extra": 1,
            }
        ),
    ]
    result = index.import_jsonl(lines, source="in.jsonl")
    assert result.imported == 2
    assert [s.split(":")[1] for s in result.skipped] == ["2", "3", "5", "6", "7", "8"]
    assert "missing 'state'" in result.skipped[1]
    assert [r.labels for r in index.records()] == [(), ("bug",)]


def test_export_round_trips_through_import(index: Index, tmp_path: Path) -> None:
    original = _record(
        9,
        "Ünïcode title",
        STACK,
        state="closed",
        state_reason="completed",
        labels=("bug", "hicache"),
        created_at="2025-01-01T00:00:00Z",
        updated_at="2025-01-02T00:00:00Z",
        closed_at="2025-01-02T00:00:00Z",
        comments=3,
        url="https://github.com/sgl-project/sglang/issues/9",
    )
    index.upsert([original])
    lines = [json.dumps(record_to_json(r)) for r in index.records()]
    with Index(tmp_path / "copy.sqlite3") as copy:
        assert copy.import_jsonl(lines, source="x").imported == 1
        assert list(copy.records()) == [original]


def test_record_from_api_reads_github_shapes() -> None:
    item = {
        "number": 12,
        "title": "t",
        "body": None,
        "state": "closed",
        "state_reason": "not_planned",
        "labels": [{"name": "z"}, {"name": "a"}],
        "comments": 4,
        "html_url": "https://github.com/a/b/issues/12",
        "created_at": "2025-01-01T00:00:00Z",
        "updated_at": "2025-01-03T00:00:00Z",
        "closed_at": "2025-01-03T00:00:00Z",
        "pull_request": {},
    }
    record = record_from_api(item, "a/b")
    assert (record.body, record.labels, record.is_pull, record.state_reason) == (
        "",
        ("a", "z"),
        True,
        "not_planned",
    )


def test_record_from_json_rejects_booleans_as_numbers() -> None:
    with pytest.raises(ValueError, match="number"):
        record_from_json({"repo": "a/b", "number": True, "title": "t", "state": "open"})


@pytest.mark.parametrize(
    ("given", "expected"),
    [("sgl-project/sglang", "sgl-project/sglang"), ("https://github.com/a/b/", "a/b")],
)
def test_validate_repo(given: str, expected: str) -> None:
    assert validate_repo(given) == expected


@pytest.mark.parametrize("bad", ["sglang", "a/b/c", "", "-x/y"])
def test_validate_repo_rejects(bad: str) -> None:
    with pytest.raises(UsageError, match="owner/name"):
        validate_repo(bad)


def test_a_file_that_is_not_an_index_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="not a usable issue index"):
        Index(junk)
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t(x)")
    with pytest.raises(InputError, match="not a reporter issue index"):
        Index(other)


def test_an_index_of_another_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    Index(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    with pytest.raises(InputError, match="format"):
        Index(path)


def test_a_missing_index_is_not_created_when_asked_not_to(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such issue index"):
        Index(tmp_path / "absent.sqlite3", create=False)
    assert not (tmp_path / "absent.sqlite3").exists()


def test_index_satisfies_the_lint_protocol(index: Index) -> None:
    index.upsert([_record(5)])
    checker: IssueIndex = index
    assert checker.has("sgl-project/sglang", 5)
