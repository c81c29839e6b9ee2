"""The PyGithub adapter: read issues and comments, create them, and say how a call failed.

Input: a base URL (`https://api.github.com`, or `https://HOST/api/v3` for GitHub
Enterprise), a token, a timeout. Output: plain frozen records (`RemoteIssue`,
`RemoteComment`) and three kinds of failure the use-case layer acts on:

* `RateLimitedError(reading)`: GitHub refused the call (primary or secondary limit, 403 or
  429, read by `policy.read_rate_limit`); nothing happened, and it may be tried again after
  `reading.wait` seconds;
* `AmbiguousError`: a write may or may not have happened (a timeout or a dropped connection
  after the request was sent, a 5xx to a POST): look before trying again;
* `UpstreamError`: a definite refusal (bad token, no access, unknown repository, a body
  GitHub finds invalid) with a tip from `policy.status_error`.

PyGithub's own retries are switched off (`retry=None`): a retried POST is exactly how an
issue gets filed twice, so retries live in `reporter.upstream.publish`, which checks for
its marker first, with the same `policy.RetryPolicy` the reads use. `Tracker` is the seam: tests may pass any object with these methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from github.Issue import Issue

from reporter.core.errors import UpstreamError
from reporter.upstream.policy import RateLimitReading, RetryPolicy, read_rate_limit, status_error

T = TypeVar("T")
# How many recently created issues are read when looking for a draft's marker.
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
        """The most recently created issues (any state), newest first."""
        ...

    def create_issue(
        self, repo: str, *, title: str, body: str, labels: tuple[str, ...]
    ) -> RemoteIssue:
        """`POST /repos/{repo}/issues`."""
        ...

    def create_comment(self, repo: str, number: int, body: str) -> RemoteComment:
        """`POST /repos/{repo}/issues/{number}/comments`."""
        ...


def _remote(repo: str, issue: Issue) -> RemoteIssue:
    return RemoteIssue(
        repo=repo,
        number=issue.number,
        url=issue.html_url,
        title=issue.title or "",
        body=issue.body or "",
        state=issue.state or "open",
        state_reason=issue.state_reason,
    )


class PyGithubTracker:
    """`Tracker` over PyGithub 2.x: `Github(auth=Auth.Token(...), base_url=..., retry=None)`."""

    def __init__(
        self,
        *,
        base_url: str,
        token: str | None,
        timeout: int = 15,
        pace: bool = True,
        now: Callable[[], float] = time.time,
        policy: RetryPolicy | None = None,
    ) -> None:
        # GitHub asks for serial requests and a pause between writes (secondary limits);
        # PyGithub's pacing does that. Tests on 127.0.0.1 switch it off.
        self._github = Github(
            auth=Auth.Token(token) if token else None,
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            retry=None,
            per_page=100,
            lazy=True,
            seconds_between_requests=0.25 if pace else None,
            seconds_between_writes=1.0 if pace else None,
        )
        self._now = now
        self._policy = policy or RetryPolicy()
        self._limited = 0

    def close(self) -> None:
        """Close PyGithub's connections."""
        self._github.close()

    def _call(self, what: str, action: Callable[[], T]) -> T:
        try:
            return action()
        except GithubException as err:
            data = err.data if isinstance(err.data, dict) else {}
            message = err.message or str(data.get("message") or "")
            reading = read_rate_limit(
                err.status,
                err.headers or {},
                message,
                now=self._now(),
                count=self._limited + 1,
                policy=self._policy,
                known=isinstance(err, RateLimitExceededException),
            )
            if reading is not None:
                # Counted per tracker: a secondary limit hit again waits twice as long.
                self._limited += 1
                raise RateLimitedError(
                    f"{what}: GitHub rate limit ({err.status})", reading=reading
                ) from err
            if err.status >= 500:
                # A 5xx to a POST may come after the write: the caller looks before retrying.
                raise AmbiguousError(f"{what}: GitHub answered {err.status}") from err
            raise status_error(what, err.status, message, write=True) from err
        except requests.exceptions.RequestException as err:
            raise AmbiguousError(f"{what}: {type(err).__name__}: no complete answer") from err
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            # PyGithub could not read the answer (garbage, not GitHub's JSON): after a POST
            # it may have landed, so it is ambiguous, and the caller looks before retrying.
            raise AmbiguousError(
                f"{what}: GitHub's answer could not be read ({type(err).__name__})"
            ) from err

    def issue(self, repo: str, number: int) -> RemoteIssue:
        """`GET /repos/{repo}/issues/{number}`."""

        def get() -> RemoteIssue:
            found = self._github.get_repo(repo).get_issue(number)
            found.update()  # lazy objects fetch on first use; make the GET happen here
            return _remote(repo, found)

        return self._call(f"GET {repo}#{number}", get)

    def comments(self, repo: str, number: int) -> tuple[RemoteComment, ...]:
        """`GET /repos/{repo}/issues/{number}/comments`, every page."""

        def get() -> tuple[RemoteComment, ...]:
            issue = self._github.get_repo(repo).get_issue(number)
            out: list[RemoteComment] = []
            for c in issue.get_comments():
                if len(out) >= MAX_COMMENTS:
                    raise UpstreamError(
                        f"GET {repo}#{number} comments: more than {MAX_COMMENTS:,} comments "
                        "(GitHub's pagination does not end); stopped",
                        tip="check --base-url points at a GitHub API; or file with --force-new",
                    )
                out.append(RemoteComment(id=c.id, url=c.html_url, body=c.body or ""))
            return tuple(out)

        return self._call(f"GET {repo}#{number} comments", get)

    def recent_issues(self, repo: str, limit: int = RECENT_ISSUES) -> tuple[RemoteIssue, ...]:
        """`GET /repos/{repo}/issues?state=all&sort=created&direction=desc`, first `limit`."""

        def get() -> tuple[RemoteIssue, ...]:
            listing = self._github.get_repo(repo).get_issues(
                state="all", sort="created", direction="desc"
            )
            out: list[RemoteIssue] = []
            for issue in listing:
                out.append(_remote(repo, issue))
                if len(out) >= limit:
                    break
            return tuple(out)

        return self._call(f"GET {repo} recent issues", get)

    def create_issue(
        self, repo: str, *, title: str, body: str, labels: tuple[str, ...]
    ) -> RemoteIssue:
        """`POST /repos/{repo}/issues` (labels are dropped by GitHub without push access)."""

        def post() -> RemoteIssue:
            created = self._github.get_repo(repo).create_issue(
                title=title, body=body, labels=list(labels)
            )
            return _remote(repo, created)

        return self._call(f"POST {repo} issue", post)

    def create_comment(self, repo: str, number: int, body: str) -> RemoteComment:
        """`POST /repos/{repo}/issues/{number}/comments`."""

        def post() -> RemoteComment:
            issue = self._github.get_repo(repo).get_issue(number)
            comment = issue.create_comment(body)
            return RemoteComment(id=comment.id, url=comment.html_url, body=comment.body or "")

        return self._call(f"POST {repo}#{number} comment", post)
