"""The GitHub client's logic against `httpx.MockTransport`: headers, retries, limits, links."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from reporter.core.errors import RateLimitError, UpstreamError
from reporter.upstream.github import (
    GitHubClient,
    RetryPolicy,
    Token,
    find_token,
    gh_hosts_path,
    host_of,
)

from .conftest import FakeClock

BASE = "https://api.example.test"
Handler = Callable[[httpx.Request], httpx.Response]


def _client(handler: Handler, clock: FakeClock, **kwargs: object) -> GitHubClient:
    return GitHubClient(
        base_url=BASE,
        transport=httpx.MockTransport(handler),
        clock=clock,
        **kwargs,  # type: ignore[arg-type]
    )


def _sequence(*responses: httpx.Response | Exception) -> tuple[Handler, list[httpx.Request]]:
    """A handler answering with `responses` in order (exceptions are raised)."""
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler, seen


def _ok(
    document: list[dict[str, object]] | dict[str, object] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return httpx.Response(200, json=[] if document is None else document, headers=headers)


def test_headers_token_and_listing_parameters(clock: FakeClock) -> None:
    handler, seen = _sequence(_ok([{"number": 1}], {"ETag": 'W/"a"'}))
    client = _client(
        handler,
        clock,
        token=Token(value="s3cret", source="GH_ENTERPRISE_TOKEN", host="api.example.test"),
    )
    (page,) = list(client.list_issues("a/b", since="2025-01-01T00:00:00Z"))
    request = seen[0]
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert dict(request.url.params) == {
        "state": "all",
        "sort": "updated",
        "direction": "asc",
        "per_page": "100",
        "since": "2025-01-01T00:00:00Z",
    }
    assert page.items == ({"number": 1},)
    assert page.etag == 'W/"a"'
    assert page.next_url is None


def test_no_token_sends_no_authorization(clock: FakeClock) -> None:
    handler, seen = _sequence(_ok())
    list(_client(handler, clock).list_issues("a/b"))
    assert "authorization" not in seen[0].headers


def test_pagination_follows_next_links(clock: FakeClock) -> None:
    link1 = f'<{BASE}/repositories/1/issues?page=2>; rel="next", <{BASE}/repositories/1/issues?page=3>; rel="last"'
    link2 = f'<{BASE}/repositories/1/issues?page=3>; rel="next", <{BASE}/repositories/1/issues?page=3>; rel="last"'
    handler, seen = _sequence(
        _ok([{"number": 1}], {"Link": link1}),
        _ok([{"number": 2}], {"Link": link2}),
        _ok([{"number": 3}]),
    )
    pages = list(_client(handler, clock).list_issues("a/b"))
    assert [p.items[0]["number"] for p in pages] == [1, 2, 3]
    assert pages[0].last_page == 3
    assert str(seen[2].url) == f"{BASE}/repositories/1/issues?page=3"


def test_etag_is_sent_once_and_304_ends_the_listing(clock: FakeClock) -> None:
    handler, seen = _sequence(httpx.Response(304, headers={"ETag": 'W/"a"'}))
    client = _client(handler, clock)
    (page,) = list(client.list_issues("a/b", since="x", etag='W/"a"'))
    assert seen[0].headers["if-none-match"] == 'W/"a"'
    assert page.not_modified
    assert client.stats.not_modified == 1


def test_a_link_loop_is_an_error(clock: FakeClock) -> None:
    loop = f'<{BASE}/repos/a/b/issues?page=1>; rel="next"'

    def handler(request: httpx.Request) -> httpx.Response:
        return _ok([{"number": 1}], {"Link": loop})

    client = _client(handler, clock)
    with pytest.raises(UpstreamError, match="points back"):
        list(client.list_issues("a/b"))
    assert client.stats.requests == 2


def test_a_next_link_to_another_host_is_refused(clock: FakeClock) -> None:
    handler, _ = _sequence(_ok(None, {"Link": '<https://evil.test/x?page=2>; rel="next"'}))
    with pytest.raises(UpstreamError, match="another host"):
        list(_client(handler, clock).list_issues("a/b"))


def test_5xx_is_retried_with_backoff_then_succeeds(clock: FakeClock) -> None:
    handler, seen = _sequence(httpx.Response(502), httpx.Response(503), _ok([{"number": 1}]))
    client = _client(handler, clock)
    (page,) = list(client.list_issues("a/b"))
    assert page.items
    assert clock.sleeps == [1.0, 2.0]
    assert client.stats.retries == 2
    assert len(seen) == 3


@pytest.mark.parametrize(
    "failure",
    [
        httpx.Response(500),
        httpx.ReadTimeout("slow"),
        httpx.ConnectError("refused"),
        httpx.RemoteProtocolError("reset"),
        httpx.Response(200, content=b"{broken"),
    ],
    ids=["500", "timeout", "connect", "reset", "malformed-json"],
)
def test_bounded_retries_then_a_clear_error(
    clock: FakeClock, failure: httpx.Response | Exception
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(failure, Exception):
            raise failure
        return failure

    client = _client(handler, clock, retry=RetryPolicy(attempts=3, backoff=0.5))
    with pytest.raises(UpstreamError, match="gave up after 3 attempts") as caught:
        list(client.list_issues("a/b"))
    assert client.stats.requests == 3
    assert clock.sleeps == [0.5, 1.0]
    assert "--offline" in caught.value.tip


def test_429_waits_for_retry_after(clock: FakeClock) -> None:
    handler, _ = _sequence(httpx.Response(429, headers={"Retry-After": "7"}), _ok([{"number": 1}]))
    list(_client(handler, clock).list_issues("a/b"))
    assert clock.sleeps == [7.0]


def test_primary_rate_limit_waits_until_reset(clock: FakeClock) -> None:
    reset = int(clock.now()) + 20
    limited = httpx.Response(
        403,
        json={"message": "API rate limit exceeded"},
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
    )
    handler, _ = _sequence(limited, _ok())
    client = _client(handler, clock)
    list(client.list_issues("a/b"))
    assert clock.sleeps == [21.0]
    assert client.stats.waited == 21.0


def test_a_rate_limit_longer_than_the_allowed_wait_is_an_error(clock: FakeClock) -> None:
    reset = int(clock.now()) + 3000
    limited = httpx.Response(
        403,
        json={"message": "API rate limit exceeded"},
        headers={
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Resource": "core",
        },
    )
    handler, seen = _sequence(limited)
    with pytest.raises(RateLimitError, match="resets at") as caught:
        list(_client(handler, clock).list_issues("a/b"))
    assert clock.sleeps == []
    assert len(seen) == 1
    # api.example.test is not github.com: the tip names the Enterprise variables.
    assert "GH_ENTERPRISE_TOKEN" in caught.value.tip


def test_secondary_limit_without_headers_backs_off_from_60s(clock: FakeClock) -> None:
    secondary = httpx.Response(403, json={"message": "You have exceeded a secondary rate limit"})
    handler, _ = _sequence(secondary, secondary, _ok())
    client = _client(handler, clock, retry=RetryPolicy(max_wait=200))
    list(client.list_issues("a/b"))
    assert clock.sleeps == [60.0, 120.0]


def test_a_plain_403_is_not_retried(clock: FakeClock) -> None:
    handler, seen = _sequence(httpx.Response(403, json={"message": "Resource not accessible"}))
    with pytest.raises(UpstreamError, match="403: Resource not accessible"):
        list(_client(handler, clock).list_issues("a/b"))
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("status", "tip"), [(401, "gh auth login"), (404, "repository name"), (422, "simpler")]
)
def test_client_errors_say_what_to_do(clock: FakeClock, status: int, tip: str) -> None:
    handler, _ = _sequence(httpx.Response(status, json={"message": "nope"}))
    with pytest.raises(UpstreamError) as caught:
        _client(handler, clock).search_issues("x")
    assert tip in caught.value.tip


def test_search_parameters_and_result(clock: FakeClock) -> None:
    body = {"total_count": 1, "incomplete_results": True, "items": [{"number": 4}]}
    handler, seen = _sequence(_ok(body, {"Deprecation": "true"}))
    client = _client(handler, clock)
    result = client.search_issues('"check_hicache_events" repo:a/b is:issue')
    params = dict(seen[0].url.params)
    assert params["q"] == '"check_hicache_events" repo:a/b is:issue'
    assert params["advanced_search"] == "true"
    assert (result.total_count, result.incomplete, result.items) == (1, True, ({"number": 4},))
    assert client.notices and "deprecation" in client.notices[0]


def test_rate_headers_are_recorded(clock: FakeClock) -> None:
    handler, _ = _sequence(
        _ok(None, {"X-RateLimit-Remaining": "42", "X-RateLimit-Reset": "1700000000"})
    )
    client = _client(handler, clock)
    list(client.list_issues("a/b"))
    assert (client.stats.rate_remaining, client.stats.rate_reset) == (42, 1700000000)


@pytest.mark.parametrize(
    ("header", "pages", "last"),
    [
        ('<{base}/x?page=2>; rel="next", <{base}/x?page=9>; rel="last"', 2, 9),
        ('<{base}/x?page=2>;rel=next;type="json"', 2, None),
        ("", 1, None),
        ("garbage, <no-rel>", 1, None),
    ],
)
def test_link_headers_drive_pagination(
    clock: FakeClock, header: str, pages: int, last: int | None
) -> None:
    # The Link header is read by httpx (`Response.links`); a malformed one ends the listing.
    handler, seen = _sequence(
        httpx.Response(200, json=[{"number": 1}], headers={"link": header.format(base=BASE)}),
        httpx.Response(200, json=[{"number": 2}]),
    )
    got = list(_client(handler, clock).list_issues("a/b"))
    assert len(got) == len(seen) == pages
    assert got[0].last_page == last


# --- tokens ---------------------------------------------------------------------------


def test_token_from_environment_first(tmp_path: Path) -> None:
    # gh's order: GH_TOKEN before GITHUB_TOKEN.
    env = {"GITHUB_TOKEN": " t1 ", "GH_TOKEN": "t2", "HOME": str(tmp_path)}
    assert find_token(env) == Token(value="t2", source="GH_TOKEN")
    assert find_token({"GITHUB_TOKEN": " t1 ", "HOME": str(tmp_path)}) == Token(
        value="t1", source="GITHUB_TOKEN"
    )
    assert find_token({"HOME": str(tmp_path)}) is None


@pytest.mark.parametrize(
    ("yaml_text", "base_url", "expected"),
    [
        (
            "github.com:\n    user: me\n    oauth_token: gho_old\n",
            "https://api.github.com",
            "gho_old",
        ),
        (
            "github.com:\n    user: me\n    users:\n        me:\n            oauth_token: gho_new\n",
            "https://api.github.com",
            "gho_new",
        ),
        ("ghe.corp.test:\n    oauth_token: ghe_tok\n", "https://ghe.corp.test/api/v3", "ghe_tok"),
        ("github.com:\n    user: me\n    git_protocol: https\n", "https://api.github.com", None),
        ("{{{ not yaml", "https://api.github.com", None),
    ],
    ids=["oauth_token", "users-map", "enterprise", "keyring", "broken"],
)
def test_token_from_gh_hosts_yml(
    tmp_path: Path, yaml_text: str, base_url: str, expected: str | None
) -> None:
    config = tmp_path / "gh"
    config.mkdir()
    (config / "hosts.yml").write_text(yaml_text)
    token = find_token({"GH_CONFIG_DIR": str(config)}, base_url=base_url)
    assert (token.value if token else None) == expected
    if token:
        assert "gh CLI" in token.source


def test_gh_hosts_path_order(tmp_path: Path) -> None:
    assert gh_hosts_path({"GH_CONFIG_DIR": "/c"}) == Path("/c/hosts.yml")
    assert gh_hosts_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/gh/hosts.yml")
    assert gh_hosts_path({"HOME": "/h"}) == Path("/h/.config/gh/hosts.yml")
    assert host_of("https://api.github.com") == "github.com"


def test_json_bodies_are_parsed_only_on_success(clock: FakeClock) -> None:
    handler, _ = _sequence(httpx.Response(200, content=json.dumps({"items": "nope"}).encode()))
    with pytest.raises(UpstreamError, match="no `items` list"):
        _client(handler, clock).search_issues("x")
