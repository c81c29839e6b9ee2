"""The GitHub client's logic against the GitHub-like server on 127.0.0.1 (the one test seam):
headers, retries, limits, links. Scripted answers (`ghserver.Canned`) say exactly what the
server sends; the client reads them over a real socket."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

from .conftest import FakeClock, client_for
from .ghserver import Canned, GitHubServer


def _client(server: GitHubServer, clock: FakeClock, **kwargs: Any) -> GitHubClient:
    client: GitHubClient = client_for(server, clock, **kwargs)
    return client


def _ok(document: Any = None, headers: dict[str, str] | None = None) -> Canned:
    return Canned(200, [] if document is None else document, headers or {})


def test_headers_token_and_listing_parameters(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(_ok([{"number": 1}], {"ETag": 'W/"a"'}))
    token = Token(value="s3cret", source="GH_ENTERPRISE_TOKEN", host=host_of(ghserver.url))
    client = _client(ghserver, clock, token=token)
    (page,) = list(client.list_issues("a/b", since="2025-01-01T00:00:00Z"))
    request = ghserver.requests[0]
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.query == {
        "state": "all",
        "sort": "updated",
        "direction": "asc",
        "per_page": "100",
        "since": "2025-01-01T00:00:00Z",
    }
    assert page.items == ({"number": 1},)
    assert page.etag == 'W/"a"'
    assert page.next_url is None


def test_no_token_sends_no_authorization(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(_ok())
    list(_client(ghserver, clock).list_issues("a/b"))
    assert "authorization" not in ghserver.requests[0].headers


def test_a_token_for_another_host_is_never_sent(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(_ok())
    token = Token(value="gho_dotcom", source="GH_TOKEN")  # github.com's, not this server's
    list(_client(ghserver, clock, token=token).list_issues("a/b"))
    assert "authorization" not in ghserver.requests[0].headers


def test_pagination_follows_next_links(ghserver: GitHubServer, clock: FakeClock) -> None:
    link1 = '<{url}/repositories/1/issues?page=2>; rel="next", <{url}/repositories/1/issues?page=3>; rel="last"'
    link2 = '<{url}/repositories/1/issues?page=3>; rel="next", <{url}/repositories/1/issues?page=3>; rel="last"'
    ghserver.answer_with(
        _ok([{"number": 1}], {"Link": link1}),
        _ok([{"number": 2}], {"Link": link2}),
        _ok([{"number": 3}]),
    )
    pages = list(_client(ghserver, clock).list_issues("a/b"))
    assert [p.items[0]["number"] for p in pages] == [1, 2, 3]
    assert pages[0].last_page == 3
    third = ghserver.requests[2]
    assert (third.path, third.query) == ("/repositories/1/issues", {"page": "3"})


def test_etag_is_sent_once_and_304_ends_the_listing(
    ghserver: GitHubServer, clock: FakeClock
) -> None:
    ghserver.answer_with(Canned(304, b"", {"ETag": 'W/"a"'}))
    client = _client(ghserver, clock)
    (page,) = list(client.list_issues("a/b", since="x", etag='W/"a"'))
    assert ghserver.requests[0].headers["if-none-match"] == 'W/"a"'
    assert page.not_modified
    assert client.stats.not_modified == 1


def test_a_link_loop_is_an_error(ghserver: GitHubServer, clock: FakeClock) -> None:
    loop = '<{url}/repos/a/b/issues?page=1>; rel="next"'
    ghserver.answer_with(_ok([{"number": 1}], {"Link": loop}), repeat=True)
    client = _client(ghserver, clock)
    with pytest.raises(UpstreamError, match="points back"):
        list(client.list_issues("a/b"))
    assert client.stats.requests == 2


def test_a_next_link_to_another_host_is_refused(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(_ok(None, {"Link": '<https://evil.test/x?page=2>; rel="next"'}))
    with pytest.raises(UpstreamError, match="another host"):
        list(_client(ghserver, clock).list_issues("a/b"))


def test_5xx_is_retried_with_backoff_then_succeeds(
    ghserver: GitHubServer, clock: FakeClock
) -> None:
    ghserver.answer_with(Canned(502), Canned(503), _ok([{"number": 1}]))
    client = _client(ghserver, clock)
    (page,) = list(client.list_issues("a/b"))
    assert page.items
    assert clock.sleeps == [1.0, 2.0]
    assert client.stats.retries == 2
    assert len(ghserver.requests) == 3


@pytest.mark.parametrize(
    "failure",
    [
        Canned(500),
        Canned(stall=0.6),
        Canned(fault="reset"),
        Canned(200, b"{broken"),
    ],
    ids=["500", "timeout", "reset", "malformed-json"],
)
def test_bounded_retries_then_a_clear_error(
    ghserver: GitHubServer, clock: FakeClock, failure: Canned
) -> None:
    ghserver.answer_with(failure, repeat=True)
    client = _client(ghserver, clock, retry=RetryPolicy(attempts=3, backoff=0.5), timeout=0.3)
    with pytest.raises(UpstreamError, match="gave up after 3 attempts") as caught:
        list(client.list_issues("a/b"))
    assert client.stats.requests == 3
    assert clock.sleeps == [0.5, 1.0]
    assert "--offline" in caught.value.tip


def test_a_refused_connection_is_retried_then_a_clear_error(clock: FakeClock) -> None:
    # Port 1 on the loopback: refused at once, nothing leaves the machine.
    client = GitHubClient(
        base_url="http://127.0.0.1:1", clock=clock, retry=RetryPolicy(attempts=3, backoff=0.5)
    )
    with client, pytest.raises(UpstreamError, match="gave up after 3 attempts"):
        list(client.list_issues("a/b"))
    assert clock.sleeps == [0.5, 1.0]


def test_429_waits_for_retry_after(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(Canned(429, {}, {"Retry-After": "7"}), _ok([{"number": 1}]))
    list(_client(ghserver, clock).list_issues("a/b"))
    assert clock.sleeps == [7.0]


def test_primary_rate_limit_waits_until_reset(ghserver: GitHubServer, clock: FakeClock) -> None:
    reset = int(clock.now()) + 20
    limited = Canned(
        403,
        {"message": "API rate limit exceeded"},
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)},
    )
    ghserver.answer_with(limited, _ok())
    client = _client(ghserver, clock)
    list(client.list_issues("a/b"))
    assert clock.sleeps == [21.0]
    assert client.stats.waited == 21.0


def test_a_rate_limit_longer_than_the_allowed_wait_is_an_error(
    ghserver: GitHubServer, clock: FakeClock
) -> None:
    reset = int(clock.now()) + 3000
    limited = Canned(
        403,
        {"message": "API rate limit exceeded"},
        {
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Resource": "core",
        },
    )
    ghserver.answer_with(limited)
    with pytest.raises(RateLimitError, match="resets at") as caught:
        list(_client(ghserver, clock).list_issues("a/b"))
    assert clock.sleeps == []
    assert len(ghserver.requests) == 1
    # 127.0.0.1 is not github.com: the tip names the Enterprise variables.
    assert "GH_ENTERPRISE_TOKEN" in caught.value.tip


def test_secondary_limit_without_headers_backs_off_from_60s(
    ghserver: GitHubServer, clock: FakeClock
) -> None:
    secondary = Canned(403, {"message": "You have exceeded a secondary rate limit"})
    ghserver.answer_with(secondary, secondary, _ok())
    client = _client(ghserver, clock, retry=RetryPolicy(max_wait=200))
    list(client.list_issues("a/b"))
    assert clock.sleeps == [60.0, 120.0]


def test_a_plain_403_is_not_retried(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(Canned(403, {"message": "Resource not accessible"}))
    with pytest.raises(UpstreamError, match="403: Resource not accessible"):
        list(_client(ghserver, clock).list_issues("a/b"))
    assert len(ghserver.requests) == 1


@pytest.mark.parametrize(
    ("status", "tip"), [(401, "gh auth login"), (404, "repository name"), (422, "simpler")]
)
def test_client_errors_say_what_to_do(
    ghserver: GitHubServer, clock: FakeClock, status: int, tip: str
) -> None:
    ghserver.answer_with(Canned(status, {"message": "nope"}))
    with pytest.raises(UpstreamError) as caught:
        _client(ghserver, clock).search_issues("x")
    assert tip in caught.value.tip


def test_search_parameters_and_result(ghserver: GitHubServer, clock: FakeClock) -> None:
    body = {"total_count": 1, "incomplete_results": True, "items": [{"number": 4}]}
    ghserver.answer_with(_ok(body, {"Deprecation": "true"}))
    client = _client(ghserver, clock)
    result = client.search_issues('"check_hicache_events" repo:a/b is:issue')
    params = ghserver.requests[0].query
    assert params["q"] == '"check_hicache_events" repo:a/b is:issue'
    assert params["advanced_search"] == "true"
    assert (result.total_count, result.incomplete, result.items) == (1, True, ({"number": 4},))
    assert client.notices and "deprecation" in client.notices[0]


def test_rate_headers_are_recorded(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(
        _ok(None, {"X-RateLimit-Remaining": "42", "X-RateLimit-Reset": "1700000000"})
    )
    client = _client(ghserver, clock)
    list(client.list_issues("a/b"))
    assert (client.stats.rate_remaining, client.stats.rate_reset) == (42, 1700000000)


@pytest.mark.parametrize(
    ("header", "pages", "last"),
    [
        ('<{url}/x?page=2>; rel="next", <{url}/x?page=9>; rel="last"', 2, 9),
        ('<{url}/x?page=2>;rel=next;type="json"', 2, None),
        ("", 1, None),
        ("garbage, <no-rel>", 1, None),
    ],
)
def test_link_headers_drive_pagination(
    ghserver: GitHubServer, clock: FakeClock, header: str, pages: int, last: int | None
) -> None:
    # The Link header is read by httpx (`Response.links`); a malformed one ends the listing.
    ghserver.answer_with(
        Canned(200, [{"number": 1}], {"Link": header} if header else {}),
        Canned(200, [{"number": 2}]),
    )
    got = list(_client(ghserver, clock).list_issues("a/b"))
    assert len(got) == len(ghserver.requests) == pages
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


def test_json_bodies_are_parsed_only_on_success(ghserver: GitHubServer, clock: FakeClock) -> None:
    ghserver.answer_with(Canned(200, {"items": "nope"}))
    with pytest.raises(UpstreamError, match="no `items` list"):
        _client(ghserver, clock).search_issues("x")
