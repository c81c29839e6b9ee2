"""Filing's GitHub calls: read issues and comments, find a marker, create issues and
comments, and say how a call failed.

Input: a `GitHubClient` (`reporter.upstream.github`), the one client every GitHub call
goes through, reads and writes alike: one deadline for connect, headers and body, one
body cap, one host check (a token never follows a link to another host), one error
tree (`reporter.core.errors` plus the three kinds below). Output: plain frozen records
(`RemoteIssue`, `RemoteComment`) and three kinds of failure the use-case layer acts on:

* `RateLimitedError(reading)`: GitHub refused the call (primary or secondary limit, 403 or
  429, read by `policy.read_rate_limit`); nothing happened, and it may be tried again after
  `reading.wait` seconds;
* `AmbiguousError`: a write may or may not have happened (a timeout or a dropped connection
  after the request was sent, a 5xx to a POST, an answer that cannot be read): look
  before trying again;
* `UpstreamError`: a definite refusal (bad token, no access, unknown repository, a body
  GitHub finds invalid) with a tip from `policy.status_error`.

Each call here is one request (`GitHubClient.exchange`): a retried POST is exactly how an
issue gets filed twice, so retries live in `reporter.upstream.publish`, which looks for
its marker first, with the same `policy.RetryPolicy` the reads use. `Tracker` is the
seam: tests may pass any object with these methods, or point the client at a local
server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from reporter.core.errors import UpstreamError
from reporter.upstream.auth import Token, host_of
from reporter.upstream.github import Answer, ExchangeError, GitHubClient
from reporter.upstream.policy import RateLimitReading, RetryPolicy, read_rate_limit, status_error

T = TypeVar("T")
# How many recently created issues are read when looking for a draft's marker (each of
# the newest, the token user's own, and the marker search).
RECENT_ISSUES = 100
# The most comments read on one issue (30 pages of 100): a pagination that does not end
# stops here with an error instead of reading for ever.
MAX_COMMENTS = 3000


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteIssue:
    """An issue as GitHub returned it."""

    repo: str
    number: int
    url: str
    title: str
    body: str
    state: str
    state_reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteComment:
    """A comment as GitHub returned it."""

    id: int
    url: str
    body: str


class RateLimitedError(Exception):
    """GitHub refused the call for its rate limit; nothing happened."""

    def __init__(self, message: str, *, reading: RateLimitReading) -> None:
        super().__init__(message)
        self.reading = reading

    @property
    def wait(self) -> float:
        """Seconds before GitHub takes the call again (jitter not included)."""
        return self.reading.wait


class AmbiguousError(Exception):
    """The call may have taken effect (a write that timed out after it was sent)."""


class Tracker(Protocol):
    """What filing needs from GitHub."""

    def issue(self, repo: str, number: int) -> RemoteIssue:
        """One issue."""
        ...

    def comments(self, repo: str, number: int) -> tuple[RemoteComment, ...]:
        """All comments of an issue, oldest first."""
        ...

    def recent_issues(self, repo: str, limit: int = RECENT_ISSUES) -> tuple[RemoteIssue, ...]:
        """The issues that may carry a marker (any state), newest first: the most recently
        created, the token user's own recent ones and what a search for the marker finds."""
        ...

    def create_issue(
        self, repo: str, *, title: str, body: str, labels: tuple[str, ...]
    ) -> RemoteIssue:
        """`POST /repos/{repo}/issues`."""
        ...

    def create_comment(self, repo: str, number: int, body: str) -> RemoteComment:
        """`POST /repos/{repo}/issues/{number}/comments`."""
        ...


def _remote(repo: str, item: dict[str, Any]) -> RemoteIssue:
    try:
        return RemoteIssue(
            repo=repo,
            number=int(item["number"]),
            url=str(item["html_url"]),
            title=str(item.get("title") or ""),
            body=str(item.get("body") or ""),
            state=str(item.get("state") or "open"),
            state_reason=item.get("state_reason"),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise AmbiguousError(f"an issue in GitHub's answer cannot be read ({err})") from err


class HttpTracker:
    """`Tracker` over `GitHubClient.exchange`: the client the reads use, one request a call."""

    def __init__(
        self,
        *,
        base_url: str,
        token: Token | str | None,
        timeout: float = 15,
        pace: bool = True,
        now: Callable[[], float] = time.time,
        policy: RetryPolicy | None = None,
        client: GitHubClient | None = None,
    ) -> None:
        if isinstance(token, str):
            token = Token(value=token, source="argument", host=host_of(base_url))
        self._client = client or GitHubClient(base_url=base_url, token=token, timeout=timeout)
        self._now = now
        self._policy = policy or RetryPolicy()
        self._limited = 0
        # GitHub asks for serial requests and a pause between writes (secondary limits).
        self._pace = pace
        self._last_write = 0.0
        self._login: str | None = None

    def close(self) -> None:
        """Close the client's connections."""
        self._client.close()

    def _call(self, what: str, method: str, url: str, **kw: Any) -> Answer:
        if method == "POST" and self._pace:
            wait = 1.0 - (time.monotonic() - self._last_write)
            if wait > 0:
                time.sleep(wait)
        try:
            answer = self._client.exchange(method, url, **kw)
        except ExchangeError as err:
            raise AmbiguousError(f"{what}: {err}") from err
        finally:
            if method == "POST":
                self._last_write = time.monotonic()
        if 200 <= answer.status < 300:
            if not answer.readable:
                # Not GitHub's JSON: after a POST it may have landed; look before retrying.
                raise AmbiguousError(f"{what}: GitHub's answer could not be read")
            return answer
        message = str(answer.data.get("message") or "") if isinstance(answer.data, dict) else ""
        reading = read_rate_limit(
            answer.status,
            answer.headers,
            message or answer.text,
            now=self._now(),
            count=self._limited + 1,
            policy=self._policy,
        )
        if reading is not None:
            # Counted per tracker: a secondary limit hit again waits twice as long.
            self._limited += 1
            raise RateLimitedError(f"{what}: GitHub rate limit ({answer.status})", reading=reading)
        if answer.status >= 500:
            # A 5xx to a POST may come after the write: the caller looks before retrying.
            raise AmbiguousError(f"{what}: GitHub answered {answer.status}")
        raise status_error(what, answer.status, message, write=method == "POST")

    def _listing(self, what: str, url: str, params: dict[str, str], limit: int) -> list[Any]:
        """Every item of a paginated listing, at most `limit`, following `Link: next` on the
        client's host only."""
        out: list[Any] = []
        seen: set[str] = set()
        next_url: str | None = url
        first = True
        while next_url is not None and len(out) < limit:
            if next_url in seen:
                raise UpstreamError(
                    f"{what}: GitHub's pagination points back to a page already read",
                    tip="check --base-url points at a GitHub API",
                )
            seen.add(next_url)
            answer = self._call(what, "GET", next_url, params=params if first else None)
            first = False
            items = answer.data.get("items") if isinstance(answer.data, dict) else answer.data
            if not isinstance(items, list):
                raise AmbiguousError(f"{what}: expected a list in GitHub's answer")
            out.extend(items)
            next_url = answer.links.get("next")
        return out[:limit]

    def _user(self) -> str | None:
        """The token user's login (`GET /user`), None without a token or when not known."""
        if self._login is None:
            try:
                answer = self._call("GET /user", "GET", "/user")
            except UpstreamError:
                return None
            login = answer.data.get("login") if isinstance(answer.data, dict) else None
            self._login = str(login) if login else ""
        return self._login or None

    def issue(self, repo: str, number: int) -> RemoteIssue:
        """`GET /repos/{repo}/issues/{number}`."""
        answer = self._call(f"GET {repo}#{number}", "GET", f"/repos/{repo}/issues/{number}")
        if not isinstance(answer.data, dict):
            raise AmbiguousError(f"GET {repo}#{number}: not an issue in GitHub's answer")
        return _remote(repo, answer.data)

    def comments(self, repo: str, number: int) -> tuple[RemoteComment, ...]:
        """`GET /repos/{repo}/issues/{number}/comments`, every page (at most `MAX_COMMENTS`)."""
        what = f"GET {repo}#{number} comments"
        items = self._listing(
            what,
            f"/repos/{repo}/issues/{number}/comments",
            {"per_page": "100"},
            MAX_COMMENTS + 1,
        )
        if len(items) > MAX_COMMENTS:
            raise UpstreamError(
                f"{what}: more than {MAX_COMMENTS:,} comments (GitHub's pagination does not "
                "end); stopped",
                tip="check --base-url points at a GitHub API; or file with --force-new",
            )
        try:
            return tuple(
                RemoteComment(
                    id=int(c["id"]), url=str(c["html_url"]), body=str(c.get("body") or "")
                )
                for c in items
            )
        except (KeyError, TypeError, ValueError) as err:
            raise AmbiguousError(f"{what}: a comment cannot be read ({err})") from err

    def recent_issues(self, repo: str, limit: int = RECENT_ISSUES) -> tuple[RemoteIssue, ...]:
        """The newest issues, the token user's own newest (`creator=`), and what the
        search finds for reporter's marker; newest first, each once. On a busy tracker
        the newest 100 are a few days: the user's own and the search reach further."""
        base = {"state": "all", "sort": "created", "direction": "desc", "per_page": "100"}
        found: dict[int, RemoteIssue] = {}
        for item in self._listing(
            f"GET {repo} recent issues", f"/repos/{repo}/issues", base, limit
        ):
            if isinstance(item, dict) and "pull_request" not in item:
                issue = _remote(repo, item)
                found.setdefault(issue.number, issue)
        login = self._user()
        if login:
            mine = self._listing(
                f"GET {repo} issues by {login}",
                f"/repos/{repo}/issues",
                {**base, "creator": login},
                limit,
            )
            for item in mine:
                if isinstance(item, dict) and "pull_request" not in item:
                    issue = _remote(repo, item)
                    found.setdefault(issue.number, issue)
        query = f'repo:{repo} is:issue in:body "reporter-upstream signature="'
        try:
            hits = self._listing(
                f"search {repo} for the marker",
                "/search/issues",
                {"q": query, "sort": "created", "order": "desc", "per_page": "100"},
                limit,
            )
        except RateLimitedError:
            hits = []  # the search limit (30/min) is not the listing's: the listings stand
        for item in hits:
            if isinstance(item, dict):
                issue = _remote(repo, item)
                found.setdefault(issue.number, issue)
        return tuple(sorted(found.values(), key=lambda i: i.number, reverse=True))

    def create_issue(
        self, repo: str, *, title: str, body: str, labels: tuple[str, ...]
    ) -> RemoteIssue:
        """`POST /repos/{repo}/issues` (labels are dropped by GitHub without push access)."""
        answer = self._call(
            f"POST {repo} issue",
            "POST",
            f"/repos/{repo}/issues",
            payload={"title": title, "body": body, "labels": list(labels)},
        )
        if not isinstance(answer.data, dict):
            raise AmbiguousError(f"POST {repo} issue: GitHub's answer is not an issue")
        return _remote(repo, answer.data)

    def create_comment(self, repo: str, number: int, body: str) -> RemoteComment:
        """`POST /repos/{repo}/issues/{number}/comments`."""
        what = f"POST {repo}#{number} comment"
        answer = self._call(
            what, "POST", f"/repos/{repo}/issues/{number}/comments", payload={"body": body}
        )
        data = answer.data
        try:
            return RemoteComment(
                id=int(data["id"]), url=str(data["html_url"]), body=str(data.get("body") or "")
            )
        except (KeyError, TypeError, ValueError) as err:
            raise AmbiguousError(f"{what}: GitHub's answer cannot be read ({err})") from err
