"""Sync and online search over real sockets against the local GitHub-like server."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from reporter.app import issues
from reporter.app.issues import GitHubAccess
from reporter.core.errors import RateLimitError, UpstreamError
from reporter.upstream import sync
from reporter.upstream.auth import host_of
from reporter.upstream.github import GitHubClient, RetryPolicy, Token
from reporter.upstream.index import Index
from reporter.upstream.query import query_from_text

from .conftest import FakeClock, client_for
from .ghserver import Fault, GitHubServer

REPO = "sgl-project/sglang"


def _fill(server: GitHubServer, n: int, repo: str = REPO) -> None:
    for number in range(1, n + 1):
        server.add_issue(
            repo,
            number,
            title=f"issue {number} about scheduler {'hang' if number % 7 == 0 else 'latency'}",
            body=f"body of {number}",
            updated_at=f"2025-01-{1 + number // 100:02d}T{number % 24:02d}:{number % 60:02d}:00Z",
            pull=number % 50 == 0,
        )


def _client(server: GitHubServer, clock: FakeClock, **kwargs: object) -> GitHubClient:
    token = Token(value="t0k", source="test", host=host_of(server.url))
    client: GitHubClient = client_for(server, clock, token=token, **kwargs)
    return client


@pytest.fixture
def real_clock() -> FakeClock:
    """A fake clock that starts at the real time (the server computes resets from it)."""
    return FakeClock(start=time.time())


def test_full_sync_costs_one_request_per_page_and_a_resync_one(
    ghserver: GitHubServer, index: Index, clock: FakeClock
) -> None:
    _fill(ghserver, 250)
    client = _client(ghserver, clock)
    steps: list[sync.SyncProgress] = []
    report = sync.sync_repo(index, client, REPO, progress=steps.append)
    assert report.requests == math.ceil(250 / 100) == 3
    assert report.stored == 250
    assert index.count([REPO]) == 245  # pull requests are stored, not counted as issues
    assert index.has(REPO, 50)
    assert [s.page for s in steps] == [1, 2, 3, 3]
    assert steps[0].last_page == 3 and steps[-1].done
    assert ghserver.requests[0].headers["authorization"] == "Bearer t0k"

    # First resync: the boundary issue comes back (since is inclusive) and its ETag is kept.
    again = sync.sync_repo(index, client, REPO)
    assert (again.requests, again.not_modified) == (1, False)
    # From then on a no-change resync is one conditional request answered 304.
    settled = sync.sync_repo(index, client, REPO)
    assert (settled.requests, settled.not_modified) == (1, True)
    assert ghserver.requests[-1].status == 304
    assert ghserver.requests[-1].headers["if-none-match"].startswith('W/"')


def test_a_change_after_a_settled_sync_is_picked_up(
    ghserver: GitHubServer, index: Index, clock: FakeClock
) -> None:
    _fill(ghserver, 30)
    client = _client(ghserver, clock)
    for _ in range(3):
        sync.sync_repo(index, client, REPO)
    ghserver.add_issue(
        REPO, 3, title="renamed: deadlock in broadcast_pyobj", updated_at="2025-03-01T00:00:00Z"
    )
    ghserver.add_issue(
        REPO, 31, title="new issue about tokenizer", updated_at="2025-03-02T00:00:00Z"
    )
    report = sync.sync_repo(index, client, REPO)
    assert (report.requests, report.stored, report.not_modified) == (1, 2, False)
    assert index.text_candidates('"deadlock"', [REPO], 5) != []
    assert index.count([REPO]) == 31


def test_an_interrupted_sync_keeps_its_pages_and_resumes(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    _fill(ghserver, 320)
    ghserver.inject(Fault("500", match="page=3", times=4))
    path = tmp_path / "i.sqlite3"
    with Index(path) as index:
        with pytest.raises(UpstreamError, match="gave up after 4 attempts"):
            sync.sync_repo(index, _client(ghserver, clock), REPO)
        state = index.sync_state(REPO)
        assert state is not None and state.resume_since is not None and not state.complete
        kept = index.count([REPO])
        assert 190 <= kept <= 200
    with Index(path) as index:
        report = sync.sync_repo(index, _client(ghserver, clock), REPO)
        assert report.resumed
        assert index.count([REPO]) == 320 - 6
        state = index.sync_state(REPO)
        assert state is not None and state.complete and state.resume_since is None
        # The resumed run listed from the last stored update, not from the start.
        assert report.requests <= 3


@pytest.mark.parametrize(
    ("fault", "sleeps"),
    [
        (Fault("429", retry_after=5), [5.0]),
        (Fault("secondary", retry_after=3), [3.0]),
        (Fault("502", times=2), [1.0, 2.0]),
        (Fault("reset"), [1.0]),
        (Fault("malformed"), [1.0]),
    ],
    ids=["429", "secondary", "5xx", "connection-reset", "malformed-json"],
)
def test_transient_faults_are_retried(
    ghserver: GitHubServer, index: Index, real_clock: FakeClock, fault: Fault, sleeps: list[float]
) -> None:
    _fill(ghserver, 5)
    ghserver.inject(fault)
    report = sync.sync_repo(index, _client(ghserver, real_clock), REPO)
    assert report.stored == 5
    assert real_clock.sleeps == sleeps


def test_primary_rate_limit_waits_for_the_reset(
    ghserver: GitHubServer, index: Index, real_clock: FakeClock
) -> None:
    _fill(ghserver, 5)
    ghserver.inject(Fault("rate-limit", reset_in=10))
    sync.sync_repo(index, _client(ghserver, real_clock), REPO)
    assert len(real_clock.sleeps) == 1 and 9.0 <= real_clock.sleeps[0] <= 12.0


def test_a_long_rate_limit_fails_fast_and_leaves_the_index_alone(
    ghserver: GitHubServer, index: Index, real_clock: FakeClock
) -> None:
    _fill(ghserver, 5)
    ghserver.inject(Fault("rate-limit", reset_in=3600))
    with pytest.raises(RateLimitError):
        sync.sync_repo(index, _client(ghserver, real_clock), REPO)
    assert real_clock.sleeps == []
    assert index.count() == 0


def test_a_timeout_is_retried(ghserver: GitHubServer, index: Index, clock: FakeClock) -> None:
    _fill(ghserver, 5)
    ghserver.stall = 0.6
    ghserver.inject(Fault("timeout"))
    report = sync.sync_repo(index, _client(ghserver, clock, timeout=0.2), REPO)
    assert report.stored == 5
    assert clock.sleeps == [1.0]


def test_persistent_timeouts_end_in_a_clear_error(
    ghserver: GitHubServer, index: Index, clock: FakeClock
) -> None:
    _fill(ghserver, 5)
    ghserver.stall = 0.5
    ghserver.inject(Fault("timeout", times=2))
    client = _client(ghserver, clock, timeout=0.15, retry=RetryPolicy(attempts=2))
    with pytest.raises(UpstreamError, match=r"no answer within 0\.15 s"):
        sync.sync_repo(index, client, REPO)


def test_a_link_loop_stops_the_sync_with_an_error(
    ghserver: GitHubServer, index: Index, clock: FakeClock
) -> None:
    _fill(ghserver, 150)
    ghserver.inject(Fault("link-loop", match="page=2"))
    with pytest.raises(UpstreamError, match="points back"):
        sync.sync_repo(index, _client(ghserver, clock), REPO)
    # Pages read before the loop are kept, and the next run resumes after them.
    assert index.count() >= 98


def test_an_off_host_next_link_is_not_followed(
    ghserver: GitHubServer, index: Index, clock: FakeClock
) -> None:
    _fill(ghserver, 5)
    ghserver.inject(Fault("off-host"))
    with pytest.raises(UpstreamError, match="another host"):
        sync.sync_repo(index, _client(ghserver, clock), REPO)
    assert ghserver.count("/issues") == 1


def test_run_sync_reports_each_repo(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    _fill(ghserver, 120)
    _fill(ghserver, 3, repo="pytorch/pytorch")
    env = {"GITHUB_API_URL": ghserver.url, "HOME": str(tmp_path)}
    reports, notes, path = issues.run_sync(
        [REPO, "pytorch/pytorch"],
        db=tmp_path / "s.sqlite3",
        access=GitHubAccess(env=env, clock=clock),
    )
    assert [(r.repo, r.pages, r.stored) for r in reports] == [
        (REPO, 2, 120),
        ("pytorch/pytorch", 1, 3),
    ]
    assert len([n for n in notes if "no GitHub token" in n]) == 1
    assert "authorization" not in ghserver.requests[0].headers
    assert path == tmp_path / "s.sqlite3"


def test_online_search_asks_github_and_ranks_locally(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    ghserver.add_issue(
        REPO, 11, title="Scheduler hangs in check_hicache_events all_reduce", body="TP ranks split"
    )
    ghserver.add_issue(REPO, 12, title="Tokenizer is slow", body="nothing to see")
    query = query_from_text(
        "Scheduler hangs in check_hicache_events\n\nranks stuck in all_reduce", repos=[REPO]
    )
    env = {"GITHUB_API_URL": ghserver.url, "GH_ENTERPRISE_TOKEN": "x"}
    outcome = issues.run_search(
        query,
        db=tmp_path / "o.sqlite3",
        online=True,
        limit=5,
        access=GitHubAccess(env=env, clock=clock),
    )
    db = tmp_path / "o.sqlite3"
    assert f"{REPO}: not in the index at {db}; asking GitHub's search only" in "\n".join(
        outcome.notes
    )
    assert ghserver.count("/search/issues") >= 1
    assert all(
        r.query["q"].endswith(f"repo:{REPO} is:issue")
        for r in ghserver.requests
        if "search" in r.path
    )
    assert [c.issue.record.number for c in outcome.candidates][:1] == [11]


def test_online_search_fails_when_github_fails_and_keeps_the_index(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    """A search that could not ask GitHub is no result: it raises (the CLI exits 1), it
    never reads as "no duplicates", and the index it was given is kept as it was."""
    db = tmp_path / "f.sqlite3"
    with Index(db) as index:
        line = {"repo": REPO, "number": 5, "title": "hang in check_hicache_events", "state": "open"}
        index.import_jsonl([json.dumps(line)], source="x")
    ghserver.inject(Fault("503", times=100))
    query = query_from_text("hang in check_hicache_events", repos=[REPO])
    env = {"GITHUB_API_URL": ghserver.url, "GH_ENTERPRISE_TOKEN": "x"}
    with pytest.raises(UpstreamError, match="503; gave up after 4 attempts") as caught:
        issues.run_search(
            query, db=db, online=True, limit=5, access=GitHubAccess(env=env, clock=clock)
        )
    assert "--offline" in caught.value.tip
    with Index(db) as index:
        assert index.count() == 1


def test_failed_online_search_leaves_no_new_index_behind(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    """The default index did not exist: a failed online search does not create an empty
    one (which would then hide the example index from `--offline`)."""
    ghserver.inject(Fault("503", times=100))
    query = query_from_text("hang in check_hicache_events", repos=[REPO])
    env = {"GITHUB_API_URL": ghserver.url, "GH_ENTERPRISE_TOKEN": "x"}
    access = GitHubAccess(env=env, clock=clock, cache_dir=tmp_path / "cache")
    with pytest.raises(UpstreamError):
        issues.run_search(query, db=None, online=True, limit=5, access=access)
    assert not access.default_db().exists()
    assert list((tmp_path / "cache").glob("*.sqlite3*")) == []


def test_an_imported_index_is_named_not_called_never_synced(
    ghserver: GitHubServer, tmp_path: Path, clock: FakeClock
) -> None:
    from reporter.upstream.index import Index
    from reporter.upstream.records import IssueRecord

    db = tmp_path / "imported.sqlite3"
    with Index(db) as index:
        index.upsert(
            [
                IssueRecord(
                    repo=REPO,
                    number=5,
                    title="hang in all_reduce",
                    body="",
                    state="open",
                )
            ]
        )
    query = query_from_text("hang in all_reduce", repos=[REPO])
    env = {"GITHUB_API_URL": ghserver.url, "GH_ENTERPRISE_TOKEN": "x"}
    outcome = issues.run_search(
        query, db=db, online=True, limit=5, access=GitHubAccess(env=env, clock=clock)
    )
    text = "\n".join(outcome.notes)
    assert "never synced" not in text
    assert f"{REPO}: the index at {db} holds 1 of its issues (imported, not synced)" in text
