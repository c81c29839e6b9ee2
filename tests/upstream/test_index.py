"""The SQLite issue index: upsert, full-text and frame lookups, import/export, safety."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from reporter.core.errors import InputError, UsageError
from reporter.render.lint import IssueIndex
from reporter.upstream import terms
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
from reporter.upstream.schema import TOKENIZER_VERSION

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
    assert [i for i, _ in index.text_candidates('"prefil"', [], 10)] == [1]
    assert index.frame_df(["all_reduce"]) == {"all_reduce": 0}
    assert index.term_df(["segfault", "prefil"]) == {"segfault": 0, "prefil": 1}
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


NATIVE_STACK = """```
Thread 1 (idle): "MainThread"
    pthread_cond_wait (libc.so.6)
    all_reduce (torch/distributed/distributed_c10d.py:2806)
    check_hicache_events (sglang/srt/managers/scheduler.py:1602)
```"""


def test_terms_and_signals_are_stored_at_write_time(index: Index) -> None:
    from reporter.upstream import terms

    body = f"RuntimeError: NCCL timeout with sglang==0.4.6\n{STACK}"
    index.upsert([_record(1, "Scheduler hangs in check_hicache_events", body)])
    (stored,) = index.stored([1]).values()
    title = "Scheduler hangs in check_hicache_events"
    assert stored.title_terms == tuple(terms.tokens(title))
    assert stored.terms == frozenset(terms.tokens(title)) | frozenset(terms.tokens(body))
    assert "checkhicacheevents" in stored.terms  # identifiers' compounds too
    assert stored.signals.exceptions == ("runtimeerror",)
    assert stored.signals.versions == (("sglang", "0.4.6"),)
    assert "hang" in stored.signals.classes


def test_ranking_a_candidate_never_tokenises_it_again(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: most of a query was spent tokenising each candidate's text again."""
    from reporter.upstream import rank, search, terms
    from reporter.upstream.query import query_from_text

    index.upsert(
        _record(n, f"hang number {n} in check_hicache_events", f"all_reduce hang {n} " * 50)
        for n in range(1, 41)
    )
    query = query_from_text(
        "hang in check_hicache_events all_reduce", repos=("sgl-project/sglang",)
    )
    seen: list[str] = []
    real = terms.tokens

    def counting(text: str) -> list[str]:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(terms, "tokens", counting)
    found = search.find_duplicates(index, query, limit=50, include_weak=True, embedder=False)
    assert len(found) == 40
    # The query's own title and text only: no candidate's body is read for its words.
    assert not any("all_reduce hang 7 " in text for text in seen)
    assert len(seen) < 10
    assert rank._candidate_terms(next(iter(index.stored([1]).values())))


def test_a_schema_2_index_is_upgraded_in_place(tmp_path: Path) -> None:
    from reporter.upstream.schema import SCHEMA_VERSION

    path = tmp_path / "v2.sqlite3"
    with Index(path) as index:
        index.upsert([_record(1, "hang in check_hicache_events", NATIVE_STACK)])
    # What a schema 2 reporter left: no terms or signals columns, no body vectors, and a
    # native frame stored without its mark.
    db = sqlite3.connect(path)
    db.executescript(
        "DROP TABLE body_vectors; ALTER TABLE issues DROP COLUMN terms;"
        "ALTER TABLE issues DROP COLUMN signals;"
        'UPDATE issues SET stacks = \'[["pthread_cond_wait", "all_reduce", '
        '"check_hicache_events"]]\';'
        "DELETE FROM issue_frames; INSERT INTO issue_frames(key, issue) VALUES "
        "('pthread_cond_wait', 1), ('all_reduce', 1), ('check_hicache_events', 1);"
        "UPDATE meta SET value = '2' WHERE key = 'schema';"
    )
    db.commit()
    db.close()
    with Index(path) as index:
        assert index.meta("schema") == SCHEMA_VERSION == "3"
        (stored,) = index.stored([1]).values()
        assert "checkhicacheevents" in stored.terms
        assert stored.title_terms is not None and "hang" in stored.title_terms
        assert "hang" in stored.signals.classes
        assert stored.stacks == (("~pthread_cond_wait", "all_reduce", "check_hicache_events"),)
        assert index.frame_df(["~pthread_cond_wait", "pthread_cond_wait"]) == {
            "~pthread_cond_wait": 1,
            "pthread_cond_wait": 0,
        }
        assert index.vectors(["sgl-project/sglang"], "m", kind="body") == [(b"", b"")]
    # Opened again: nothing left to upgrade, the same answers.
    with Index(path) as index:
        assert index.meta("schema") == "3"
        assert index.stored([1])[1].stacks == stored.stacks


def test_document_frequencies_follow_every_write(index: Index) -> None:
    """`term_df` is kept at write time; it must say what the full-text index says."""
    index.upsert(
        [
            _record(1, "hang in all_reduce", "NCCL watchdog"),
            _record(2, "hang in broadcast", "NCCL"),
            _record(3, "pull request", "hang", is_pull=True),
        ]
    )
    index.upsert([_record(2, "crash in broadcast", "segfault", updated_at="2025-02-01")])
    index.upsert([_record(4, "tokenizer question", "how to")])

    def by_fts() -> dict[str, int]:
        rows = index._db.execute("SELECT term, doc FROM issue_terms WHERE doc > 0")
        return {str(t): int(n) for t, n in rows}

    ours = dict(index._db.execute("SELECT term, n FROM term_df").fetchall())
    assert ours == by_fts()
    assert ours["hang"] == 1 and ours["broadcast"] == 1 and ours["crash"] == 1
    assert "nccl" in ours and "watchdog" in ours
    assert index.term_df(["hang", "nccl", "unseen"]) == {"hang": 1, "nccl": 1, "unseen": 0}


def test_an_index_of_the_old_tokenizer_is_retokenised_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with Index(path) as index:
        index.upsert([_record(1, "Writing stalls", "cached pages deadlocked")])
    # What the light stemmer of tokenizer 1 stored: other stems, version "1".
    db = sqlite3.connect(str(path))
    db.execute("UPDATE meta SET value = '1' WHERE key = 'tokenizer'")
    db.execute("UPDATE issues SET terms = 'writ stall\twrit stall cached page deadlocked'")
    db.execute("DELETE FROM term_df")
    db.execute("INSERT INTO term_df(term, n) VALUES ('writ', 1), ('cached', 1)")
    db.commit()
    db.close()
    with Index(path) as index:
        assert index.meta("tokenizer") == TOKENIZER_VERSION
        assert index.term_df(["write", "cach", "writ", "cached"]) == {
            "write": 1,
            "cach": 1,
            "writ": 0,
            "cached": 0,
        }
        assert [i for i, _ in index.text_candidates('"write" AND "deadlock"', [], 10)] == [1]
        # writing/write and cached/caching meet now.
        assert terms.tokens("writing caching") == terms.tokens("write cached")
