"""The one GitHub policy: backoff with jitter, rate-limit reading, capped waits, error tips,
for the client's reads and filing's writes alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reporter.core.errors import RateLimitError, UpstreamError
from reporter.upstream.filing import AmbiguousError, HttpTracker, RateLimitedError
from reporter.upstream.policy import (
    MAX_RATE_JITTER,
    RateLimitReading,
    RetryPolicy,
    SystemClock,
    read_rate_limit,
    status_error,
)
from reporter.upstream.publish import call_with_retries

from .conftest import FakeClock
from .ghserver import Fault, GitHubServer

NOW = 1_750_000_000.0


class DrawClock(FakeClock):
    """A fake clock whose jitter draws come from a list."""

    def __init__(self, draws: list[float]) -> None:
        super().__init__(start=NOW)
        self.draws = draws

    def random(self) -> float:
        return self.draws.pop(0)


# --- backoff ---------------------------------------------------------------------------


def test_plain_schedule_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=16.0)
    assert [policy.backoff_delay(n, 0.0) for n in range(1, 8)] == [1, 2, 4, 8, 16, 16, 16]


@given(
    failures=st.integers(min_value=1, max_value=40),
    draw=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    jitter=st.floats(min_value=0.0, max_value=1.0),
)
def test_jitter_only_shortens_and_by_at_most_its_share(
    failures: int, draw: float, jitter: float
) -> None:
    policy = RetryPolicy(backoff=2.0, max_backoff=30.0, jitter=jitter)
    plain = min(2.0 * 2 ** (failures - 1), 30.0)
    delay = policy.backoff_delay(failures, draw)
    assert plain * (1 - jitter) - 1e-9 <= delay <= plain


def test_jitter_spreads_two_clients_apart() -> None:
    policy = RetryPolicy()
    assert policy.backoff_delay(3, 0.1) != policy.backoff_delay(3, 0.9)
    assert policy.backoff_delay(3, 0.9) == pytest.approx(4.0 * (1 - 0.25 * 0.9))


@given(
    wait=st.floats(min_value=0.0, max_value=4000.0),
    draw=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_rate_waits_are_never_shortened_and_get_a_few_seconds_at_most(
    wait: float, draw: float
) -> None:
    delay = RetryPolicy().rate_delay(wait, draw)
    assert wait <= delay <= wait + MAX_RATE_JITTER


def test_the_system_clock_draws_in_the_unit_interval() -> None:
    draws = [SystemClock().random() for _ in range(200)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert len(set(draws)) > 100


# --- rate-limit reading ----------------------------------------------------------------


def _read(status: int, headers: dict[str, str], text: str = "", count: int = 1) -> float | None:
    reading = read_rate_limit(
        status, headers, text, now=NOW, count=count, policy=RetryPolicy(secondary_wait=60.0)
    )
    return None if reading is None else reading.wait


def test_retry_after_wins_over_the_reset_time() -> None:
    headers = {"Retry-After": "7", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "2000000000"}
    assert _read(403, headers) == 7.0


def test_primary_limit_waits_until_reset_plus_a_second() -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 20)}
    assert _read(403, headers) == 21.0


def test_a_reset_in_the_past_still_waits_one_second() -> None:
    # The local clock runs ahead of GitHub's: never a negative wait.
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) - 300)}
    assert _read(429, headers) == 1.0


def test_a_secondary_limit_without_headers_doubles_from_the_policy() -> None:
    text = '{"message": "You have exceeded a secondary rate limit"}'
    assert [_read(403, {}, text, count=n) for n in (1, 2, 3)] == [60.0, 120.0, 240.0]


@pytest.mark.parametrize(
    ("status", "headers", "text"),
    [
        (403, {}, '{"message": "Resource not accessible by integration"}'),
        (403, {"X-RateLimit-Remaining": "12"}, ""),
        (404, {"Retry-After": "5"}, ""),
        (500, {}, "rate limit"),
    ],
)
def test_plain_refusals_are_not_rate_limits(
    status: int, headers: dict[str, str], text: str
) -> None:
    assert _read(status, headers, text) is None


def test_the_resource_named_by_github_is_kept() -> None:
    reading = read_rate_limit(
        429,
        {"X-RateLimit-Resource": "search", "Retry-After": "3"},
        "",
        now=NOW,
        count=1,
        policy=RetryPolicy(),
    )
    assert reading == RateLimitReading(wait=3.0, resource="search")


# --- waits capped: the write side's retry loop -----------------------------------------


def _limited(wait: str) -> Callable[[], str]:
    calls: list[int] = []

    def action() -> str:
        calls.append(1)
        if len(calls) == 1:
            reading = read_rate_limit(
                429, {"Retry-After": wait}, "", now=NOW, count=1, policy=RetryPolicy()
            )
            assert reading is not None
            raise RateLimitedError("POST a/b issue: GitHub rate limit (429)", reading=reading)
        return "sent"

    return action


def test_a_short_limit_is_waited_out_with_jitter_within_bounds() -> None:
    clock = DrawClock([0.5])
    got = call_with_retries(
        "POST a/b issue", _limited("30"), clock=clock, policy=RetryPolicy(max_wait=60)
    )
    assert got == "sent"
    assert clock.sleeps == [30.0 + 0.5 * min(30.0 * 0.25, MAX_RATE_JITTER)]


def test_a_reset_beyond_the_cap_is_an_error_saying_when_without_waiting() -> None:
    clock = DrawClock([])
    with pytest.raises(RateLimitError) as caught:
        call_with_retries(
            "POST a/b issue", _limited("3600"), clock=clock, policy=RetryPolicy(max_wait=120)
        )
    assert clock.sleeps == []
    assert "resets at" in caught.value.message and "3600 s" in caught.value.message
    assert "120 s this command waits" in caught.value.message
    assert caught.value.tip


def test_ambiguous_failures_back_off_with_jitter_then_give_up() -> None:
    clock = DrawClock([0.0, 0.5, 0.999])

    def action() -> str:
        raise AmbiguousError("POST a/b issue: ReadTimeout: no complete answer")

    policy = RetryPolicy(attempts=4, backoff=2.0, max_backoff=30.0)
    with pytest.raises(UpstreamError, match="gave up after 4 attempts") as caught:
        call_with_retries("POST a/b issue", action, clock=clock, policy=policy)
    assert clock.sleeps == pytest.approx([2.0, 4.0 * (1 - 0.125), 8.0 * (1 - 0.25 * 0.999)])
    assert caught.value.tip


# --- error mapping ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "write", "tip"),
    [
        (401, False, "gh auth login"),
        (401, True, "gh auth login"),
        (403, False, "lacks access"),
        (403, True, "issues: write"),
        (404, True, "owner/name"),
        (410, True, "disabled"),
        (422, False, "simpler terms"),
        (422, True, "body size"),
    ],
)
def test_refusals_map_to_upstream_errors_with_a_tip(status: int, write: bool, tip: str) -> None:
    err = status_error("GET /repos/a/b", status, "Bad credentials", write=write)
    assert isinstance(err, UpstreamError)
    assert err.message == f"GET /repos/a/b: GitHub answered {status}: Bad credentials"
    assert tip in err.tip


def test_an_unknown_status_gets_the_general_tip_and_a_redirect_its_own() -> None:
    assert status_error("GET /x", 418, "").tip.startswith("check --base-url and the token")
    assert status_error("GET /x", 418, "").message == "GET /x: GitHub answered 418"
    redirect = status_error("GET /x", 302, "")
    assert "redirect" in redirect.tip and "/api/v3" in redirect.tip


def test_a_reset_centuries_away_is_said_not_overflowed() -> None:
    from reporter.upstream.policy import rate_limit_error, read_rate_limit

    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "9" * 30}
    reading = read_rate_limit(403, headers, "", now=1e9, count=1, policy=RetryPolicy())
    assert reading is not None
    error = rate_limit_error("GET /x", reading, now=1e9, policy=RetryPolicy(), tip="wait")
    assert "no reset time within a year" in error.message
    far = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(10**11)}
    reading = read_rate_limit(403, far, "", now=1e9, count=1, policy=RetryPolicy())
    assert reading is not None
    assert (
        "within a year"
        in rate_limit_error("GET /x", reading, now=1e9, policy=RetryPolicy(), tip="").message
    )


# --- filing's calls read limits and errors as the reads do (one client, one server) -------


_OPEN: list[HttpTracker] = []


@pytest.fixture(autouse=True)
def _close_trackers() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _tracker(server: GitHubServer, **options: Any) -> HttpTracker:
    tracker = HttpTracker(base_url=server.url, token="t0k", pace=False, **options)
    _OPEN.append(tracker)
    return tracker


def test_a_primary_limit_on_a_write_is_read_like_the_reads(ghserver: GitHubServer) -> None:
    ghserver.add_issue("a/b", 1)
    ghserver.inject(Fault("rate-limit", method="POST", reset_in=40))
    with pytest.raises(RateLimitedError) as caught:
        _tracker(ghserver).create_issue("a/b", title="t", body="b", labels=())
    assert 38 <= caught.value.wait <= 42
    assert [i["number"] for i in ghserver.issues["a/b"]] == [1], "refused: nothing stored"


def test_secondary_limits_wait_what_github_says(ghserver: GitHubServer) -> None:
    ghserver.add_issue("a/b", 1)
    ghserver.inject(Fault("secondary", method="POST", retry_after=7))
    with pytest.raises(RateLimitedError) as caught:
        _tracker(ghserver).create_comment("a/b", 1, "hello")
    assert caught.value.wait == 7.0


def test_refusals_server_errors_and_unreadable_answers(ghserver: GitHubServer) -> None:
    tracker = _tracker(ghserver)
    ghserver.add_issue("a/b", 1)
    with pytest.raises(UpstreamError) as caught:
        tracker.issue("a/b", 99)
    assert caught.value.message.startswith("GET a/b#99: GitHub answered 404")
    ghserver.inject(Fault("502", method="POST"))
    with pytest.raises(AmbiguousError):
        tracker.create_comment("a/b", 1, "x")
    ghserver.inject(Fault("malformed", match="/issues/1"))
    with pytest.raises(AmbiguousError):
        tracker.issue("a/b", 1)


def test_a_write_that_stalls_after_it_landed_is_ambiguous_within_the_deadline(
    ghserver: GitHubServer,
) -> None:
    from reporter.upstream.github import GitHubClient

    ghserver.issues["a/b"] = []
    ghserver.stall = 3.0
    ghserver.inject(Fault("timeout", method="POST"))
    client = GitHubClient(base_url=ghserver.url, timeout=0.5, deadline=1.0)
    tracker = _tracker(ghserver, client=client)
    with pytest.raises(AmbiguousError):
        tracker.create_issue("a/b", title="t", body="b", labels=())
    # It did land: filing looks for its marker before sending again (publish.send).
    assert len(ghserver.issues["a/b"]) == 1


def test_the_marker_is_found_among_the_token_users_own_issues(ghserver: GitHubServer) -> None:
    # 150 newer issues by others push ours out of the newest 100; `creator=` still finds it.
    ghserver.issues["a/b"] = []
    ours = _tracker(ghserver).create_issue(
        "a/b", title="t", body="x\n<!-- reporter-upstream signature=abc bundle=def -->", labels=()
    )
    for n in range(2, 152):
        item = ghserver.add_issue("a/b", n)
        item["created_at"] = f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z"
    newest = ghserver.issues["a/b"]
    assert ours.number not in [
        i["number"] for i in sorted(newest, key=lambda i: i["created_at"])[-100:]
    ]
    found = _tracker(ghserver).recent_issues("a/b")
    assert ours.number in {i.number for i in found}
    assert any(r.query.get("creator") == "reporter-bot" for r in ghserver.requests)
    assert any(r.path == "/search/issues" for r in ghserver.requests)
