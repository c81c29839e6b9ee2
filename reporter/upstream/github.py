"""The GitHub REST client: issue listing with Link pagination and ETags, issue search, and
the contents API for a repository's issue forms (`list_folder`, `file_text`).

One `httpx.Client` behind an injectable base URL (GitHub Enterprise:
`https://HOST/api/v3`), timeout and clock; tests point the base URL at a GitHub-like server
on 127.0.0.1 (`tests/upstream/ghserver.py`), the one seam. Every read goes through `_send`,
which:

* sends `If-None-Match` when the caller has an ETag; a 304 costs no rate limit;
* waits out rate limits when the wait fits `RetryPolicy.max_wait`, else raises
  `RateLimitError` saying when the limit resets;
* retries 5xx answers, timeouts, resets and malformed JSON with exponential backoff and
  jitter, at most `RetryPolicy.attempts` tries in all, then raises `UpstreamError`;
* holds every request to one deadline for connect, headers and body together
  (`deadline`, default twice the timeout: a server that trickles bytes cannot hold the
  command, since a per-read timeout never fires on it) and reads the body streamed up
  to `max_body` bytes after decoding (a huge or gzip-bomb answer stops at the cap, and
  neither is retried).

Waits, rate-limit reading and error tips are the shared rules of
`reporter.upstream.policy`. Filing's writes and marker lookups (`reporter.upstream.filing`)
go through `exchange`: one request under the same deadline, body cap and host check,
never retried here (a retried POST files twice; publish looks for its marker first).

Pagination follows the `Link` header's `next` (httpx's `Response.links`) until it is
absent, refuses a `next` on another host (the token must not leave GitHub), stops with
an error when a `next` points back to a page already read, and bounds the pages of every
listing (`MAX_PAGES` for the issue listing, `MAX_LIST_PAGES` for timelines and tags).
`CallStats` counts what was sent.

Host and token discovery (`find_token`, `api_url`) follow the gh CLI's rules and live in
`reporter.upstream.auth`; they are re-exported here.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from reporter import __version__
from reporter.core.errors import RateLimitError, UpstreamError
from reporter.model.document import Count, document
from reporter.upstream.auth import (
    API_URL,
    Token,
    api_url,
    find_token,
    gh_hosts_path,
    host_of,
    missing_token_tip,
)
from reporter.upstream.policy import (
    Clock,
    RateLimitReading,
    RetryPolicy,
    SystemClock,
    gave_up,
    rate_limit_error,
    read_rate_limit,
    status_error,
)

__all__ = [
    "API_URL",
    "Clock",
    "RetryPolicy",
    "SystemClock",
    "Token",
    "api_url",
    "find_token",
    "gh_hosts_path",
    "host_of",
]
PER_PAGE = 100
MAX_PAGES = 5000
# Timelines and tags: 50 pages is 5,000 events or tags, far past any real issue or repo.
MAX_LIST_PAGES = 50
# The largest answer read: a page of 100 issues with 65,536-character bodies is ~7 MB.
MAX_BODY = 32 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One page of a listing. `not_modified`: a 304 for the ETag sent (then no items)."""

    url: str
    items: tuple[dict[str, Any], ...]
    etag: str | None
    next_url: str | None
    last_page: int | None
    not_modified: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    """One page of `GET /search/issues`."""

    total_count: int
    incomplete: bool
    items: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Folder:
    """A folder of a repository: (name, path) of its files, and the listing's ETag."""

    entries: tuple[tuple[str, str], ...]
    etag: str | None
    exists: bool = True
    not_modified: bool = False


@dataclass(slots=True)
class CallStats:
    """What a client sent: requests (retries included), 304s, retries and seconds waited."""

    requests: int = 0
    not_modified: int = 0
    retries: int = 0
    waited: float = 0.0
    rate_remaining: int | None = None
    rate_reset: int | None = None


def _page_number(url: str | None) -> int | None:
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get("page")
    if values and values[0].isdigit():
        return int(values[0])
    return None


@document
class RateLimit:
    """The core REST limit.

    Requests per hour, left now, and when it resets (epoch s). `report auth status --json`
    writes it as it is (`reporter.console.documents_auth`): its first line is the schema's
    description.
    """

    limit: Count
    remaining: Count
    reset: Count


class GitHubClient:
    """A small, serial GitHub REST client; see the module docstring for its rules."""

    def __init__(
        self,
        *,
        base_url: str = API_URL,
        token: Token | None = None,
        timeout: float = 15.0,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
        advanced_search: bool = True,
        deadline: float | None = None,
        max_body: int = MAX_BODY,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        # A token goes only to the host it belongs to: a github.com token never reaches an
        # Enterprise or test server, whatever the caller passed.
        self.token = token if token is not None and token.host == host_of(self.base_url) else None
        self.clock = clock or SystemClock()
        self.retry = retry or RetryPolicy()
        self.advanced_search = advanced_search
        self.stats = CallStats()
        self.notices: list[str] = []
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"hangreport/{__version__}",
        }
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token.value}"
        self._host = urlsplit(self.base_url).netloc
        self._timeout = timeout
        self._deadline = deadline if deadline is not None else 2.0 * timeout
        self._max_body = max_body
        # The socket of the connection in use (a serial client has one at a time): the
        # deadline shuts it down, which ends a read a trickling server keeps alive.
        self._socket: socket.socket | None = None
        self._http = httpx.Client(
            headers=headers,
            timeout=timeout,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list_issues(
        self, repo: str, *, since: str | None = None, etag: str | None = None
    ) -> Iterator[Page]:
        """Pages of `GET /repos/{repo}/issues?state=all`, oldest update first.

        Only the first request carries `If-None-Match: etag`; a 304 yields one page
        with `not_modified=True` and ends the listing.
        """
        params = {
            "state": "all",
            "sort": "updated",
            "direction": "asc",
            "per_page": str(PER_PAGE),
        }
        if since:
            params["since"] = since
        url: str | None = str(
            httpx.URL(f"{self.base_url}/repos/{repo}/issues").copy_merge_params(params)
        )
        seen: set[str] = set()
        first = True
        while url is not None:
            if url in seen:
                raise UpstreamError(
                    f"{repo}: GitHub's pagination points back to a page already read ({url})",
                    tip="try again later; if it persists, report it with --debug output",
                )
            if len(seen) >= MAX_PAGES:
                raise UpstreamError(
                    f"{repo}: more than {MAX_PAGES} pages of issues; stopped",
                    tip="the pages read so far are stored; run the sync again to go on",
                )
            seen.add(url)
            response, data = self._send(url, etag=etag if first else None)
            first = False
            if response.status_code == 304:
                yield Page(
                    url=url, items=(), etag=etag, next_url=None, last_page=1, not_modified=True
                )
                return
            if not isinstance(data, list):
                raise UpstreamError(f"{repo}: expected a list of issues from {url}")
            links = response.links
            next_url = links.get("next", {}).get("url")
            if next_url is not None:
                self._check_host(next_url)
            yield Page(
                url=url,
                items=tuple(item for item in data if isinstance(item, dict)),
                etag=response.headers.get("etag"),
                next_url=next_url,
                last_page=_page_number(links.get("last", {}).get("url")) or _page_number(url),
            )
            url = next_url

    def search_issues(self, query: str, *, per_page: int = 30) -> SearchResult:
        """One page of `GET /search/issues?q=...` (its own rate limit: 30/min, 10 without a token)."""
        params = {"q": query, "per_page": str(per_page)}
        if self.advanced_search:
            params["advanced_search"] = "true"
        url = str(httpx.URL(f"{self.base_url}/search/issues").copy_merge_params(params))
        _, data = self._send(url)
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise UpstreamError(f"search {query!r}: GitHub's answer has no `items` list")
        return SearchResult(
            total_count=int(data.get("total_count") or 0),
            incomplete=bool(data.get("incomplete_results")),
            items=tuple(item for item in data["items"] if isinstance(item, dict)),
        )

    def timeline(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Every event of `GET /repos/{repo}/issues/{number}/timeline` (closing commits,
        cross-references from pull requests), oldest first."""
        return self._all_pages(f"{self.base_url}/repos/{repo}/issues/{number}/timeline")

    def pull(self, repo: str, number: int) -> dict[str, Any] | None:
        """`GET /repos/{repo}/pulls/{number}` (its `merged_at`, `merge_commit_sha`), None
        when it is not a pull request."""
        _, data = self._send(f"{self.base_url}/repos/{repo}/pulls/{number}", missing_ok=True)
        return data if isinstance(data, dict) else None

    def tags(self, repo: str) -> list[str]:
        """The names of every tag of `GET /repos/{repo}/tags`."""
        items = self._all_pages(f"{self.base_url}/repos/{repo}/tags")
        return [str(item["name"]) for item in items if isinstance(item.get("name"), str)]

    def compare(self, repo: str, base: str, head: str) -> str:
        """`GET /repos/{repo}/compare/{base}...{head}`'s `status`: `ahead` or
        `identical` when `head` contains `base`; `behind` or `diverged` when not."""
        url = (
            f"{self.base_url}/repos/{repo}/compare/{quote(base, safe='')}...{quote(head, safe='')}"
        )
        _, data = self._send(str(httpx.URL(url).copy_merge_params({"per_page": "1"})))
        if not isinstance(data, dict) or not isinstance(data.get("status"), str):
            raise UpstreamError(f"{repo}: compare {base}...{head} has no status")
        return str(data["status"])

    def _all_pages(self, first: str) -> list[dict[str, Any]]:
        url: str | None = str(httpx.URL(first).copy_merge_params({"per_page": str(PER_PAGE)}))
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        while url is not None:
            if url in seen or len(seen) >= MAX_LIST_PAGES:
                raise UpstreamError(
                    f"GET {urlsplit(first).path}: GitHub's pagination does not end "
                    f"(more than {MAX_LIST_PAGES} pages, or a page seen twice); stopped",
                    tip="check --base-url points at a GitHub API; try again later",
                )
            seen.add(url)
            response, data = self._send(url)
            if not isinstance(data, list):
                raise UpstreamError(f"expected a list from {url}")
            out.extend(item for item in data if isinstance(item, dict))
            url = response.links.get("next", {}).get("url")
            if url is not None:
                self._check_host(url)
        return out

    def list_folder(self, repo: str, folder: str, *, etag: str | None = None) -> Folder:
        """`GET /repos/{repo}/contents/{folder}`: the folder's entries on the default branch.

        A folder that does not exist gives `exists=False` (not an error); a 304 for the
        ETag sent gives `not_modified=True`.
        """
        url = f"{self.base_url}/repos/{repo}/contents/{folder.strip('/')}"
        response, data = self._send(url, etag=etag, missing_ok=True)
        if response.status_code == 404:
            return Folder(entries=(), etag=None, exists=False)
        if response.status_code == 304:
            return Folder(entries=(), etag=etag, not_modified=True)
        if not isinstance(data, list):
            raise UpstreamError(f"{repo}: {folder} is not a folder")
        entries = tuple(
            (str(item["name"]), str(item.get("path") or f"{folder}/{item['name']}"))
            for item in data
            if isinstance(item, dict) and item.get("type") == "file" and "name" in item
        )
        return Folder(entries=entries, etag=response.headers.get("etag"))

    def file_text(self, repo: str, path: str) -> str:
        """`GET /repos/{repo}/contents/{path}`: one file's text (the API sends it base64)."""
        url = f"{self.base_url}/repos/{repo}/contents/{path.strip('/')}"
        _, data = self._send(url)
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            raise UpstreamError(f"{repo}: {path} has no content in GitHub's answer")
        try:
            if data.get("encoding", "base64") == "base64":
                return base64.b64decode(data["content"]).decode("utf-8")
            return str(data["content"])
        except (ValueError, UnicodeDecodeError) as err:
            raise UpstreamError(f"{repo}: {path} is not UTF-8 text ({err})") from err

    def rate_limit(self) -> RateLimit:
        """`GET /rate_limit` (free): the core limit left for this client's token."""
        _, data = self._send(f"{self.base_url}/rate_limit")
        core = data.get("resources", {}).get("core", {}) if isinstance(data, dict) else {}
        try:
            return RateLimit(
                limit=int(core["limit"]), remaining=int(core["remaining"]), reset=int(core["reset"])
            )
        except (KeyError, TypeError, ValueError) as err:
            raise UpstreamError(f"GET /rate_limit: an answer without core limits ({err})") from err

    # --- the one place that talks to the network ---------------------------------

    def _check_host(self, url: str) -> None:
        if urlsplit(url).netloc != self._host:
            raise UpstreamError(
                f"GitHub's pagination points to another host ({url}); not following it",
                tip="check --base-url / GitHub Enterprise settings",
            )

    def _send(
        self, url: str, *, etag: str | None = None, missing_ok: bool = False
    ) -> tuple[httpx.Response, Any]:
        """GET `url` with the retry rules; returns the response and its parsed JSON (None on
        304, and on 404 when `missing_ok`)."""
        headers = {"If-None-Match": etag} if etag else {}
        policy = self.retry
        path = urlsplit(url).path
        problem = "no answer"
        limited = 0
        for attempt in range(1, policy.attempts + 1):
            if attempt > 1:
                self.stats.retries += 1
            self.stats.requests += 1
            try:
                response = self._get(url, headers)
            except _TooLargeError as err:
                raise UpstreamError(
                    f"GET {path}: the answer is larger than {err.limit >> 20} MiB; "
                    "stopped reading (not retried)",
                    tip="check --base-url points at a GitHub API",
                ) from None
            except _TooSlowError as err:
                raise UpstreamError(
                    f"GET {path}: no complete answer within {self._deadline:g} s "
                    f"({err.received:,} bytes came); not retried",
                    tip="the server answers too slowly: check the network or --base-url, "
                    "or search the local index with --offline",
                ) from None
            except httpx.TimeoutException:
                problem = f"no answer within {self._timeout:g} s"
            except httpx.TransportError as err:
                problem = f"connection failed ({type(err).__name__}: {err})"
            else:
                self._note_headers(response)
                status = response.status_code
                if status == 304:
                    self.stats.not_modified += 1
                    return response, None
                if 200 <= status < 300:
                    try:
                        return response, response.json()
                    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                        problem = f"malformed JSON ({response.text[:60]!r})"
                elif (
                    reading := read_rate_limit(
                        status,
                        response.headers,
                        response.text,
                        now=self.clock.now(),
                        count=limited + 1,
                        policy=policy,
                    )
                ) is not None:
                    limited += 1
                    if reading.wait > policy.max_wait:
                        raise self._limit_error(path, reading)
                    if attempt < policy.attempts:
                        self._sleep(policy.rate_delay(reading.wait, self.clock.random()))
                        continue
                    problem = f"rate limited ({status}) after {attempt} attempts"
                elif status >= 500:
                    problem = f"GitHub answered {status}"
                elif status == 404 and missing_ok:
                    return response, None
                else:
                    raise status_error(f"GET {path}", status, _message(response))
            if attempt < policy.attempts:
                self._sleep(policy.backoff_delay(attempt, self.clock.random()))
        raise gave_up(
            f"GET {path}",
            problem,
            policy,
            tip="check the network (or --base-url), or search the local index with --offline",
        )

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: remember the socket of each new connection."""
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            self._socket = sock if isinstance(sock, socket.socket) else None

    def exchange(
        self,
        method: str,
        url: str,
        *,
        payload: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Answer:
        """One request, never retried here, under the same deadline, body cap and host
        check as every read: what filing's writes and marker lookups use (its retries
        look for the marker first: `reporter.upstream.publish.call_with_retries`).

        `url` is a path under the base URL or an absolute URL on its host. Raises
        `ExchangeError` when no complete answer came (`sent`: the request may have
        reached GitHub)."""
        if url.startswith("/"):
            url = f"{self.base_url}{url}"
        self._check_host(url)
        if params:
            url = str(httpx.URL(url).copy_merge_params(params))
        path = urlsplit(url).path
        self.stats.requests += 1
        try:
            response = self._request(method, url, {}, payload)
        except _TooLargeError as err:
            raise ExchangeError(
                f"{method} {path}: the answer is larger than {err.limit >> 20} MiB; stopped "
                "reading",
                sent=True,
            ) from None
        except _TooSlowError as err:
            raise ExchangeError(
                f"{method} {path}: no complete answer within {self._deadline:g} s "
                f"({err.received:,} bytes came)",
                sent=True,
            ) from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as err:
            raise ExchangeError(
                f"{method} {path}: connection failed ({type(err).__name__})", sent=False
            ) from None
        except httpx.TransportError as err:
            raise ExchangeError(
                f"{method} {path}: {type(err).__name__}: no complete answer", sent=True
            ) from None
        self._note_headers(response)
        data: Any = None
        readable = True
        if response.content:
            try:
                data = response.json()
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                readable = False
        links = {
            str(rel): str(v["url"]) for rel, v in response.links.items() if rel and v.get("url")
        }
        return Answer(
            status=response.status_code,
            headers=dict(response.headers),
            data=data,
            text=response.text[:2000],
            readable=readable,
            links=links,
        )

    def _get(self, url: str, headers: dict[str, str]) -> httpx.Response:
        """One GET under the deadline, its body read (decoded) up to `max_body`."""
        return self._request("GET", url, headers, None)

    def _request(
        self, method: str, url: str, headers: dict[str, str], payload: dict[str, Any] | None
    ) -> httpx.Response:
        """One request under the deadline, its body read (decoded) up to `max_body`."""
        expired = threading.Event()
        received = 0

        def expire() -> None:
            expired.set()
            sock = self._socket
            if sock is not None:
                # Already closed: the read ends anyway.
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self._deadline, expire)
        timer.daemon = True
        started = time.monotonic()
        timer.start()
        try:
            with self._http.stream(
                method, url, headers=headers, json=payload, extensions={"trace": self._trace}
            ) as response:
                chunks: list[bytes] = []
                for chunk in response.iter_bytes():
                    received += len(chunk)
                    if received > self._max_body:
                        raise _TooLargeError(self._max_body)
                    chunks.append(chunk)
                    if expired.is_set() or time.monotonic() - started > self._deadline:
                        raise _TooSlowError(received)
                body = b"".join(chunks)
            # The decoded body, kept on the response: `.json()`, `.text` and `.links` work.
            response._content = body
            return response
        except httpx.TransportError:
            if expired.is_set():
                raise _TooSlowError(received) from None
            raise
        finally:
            timer.cancel()

    def _sleep(self, seconds: float) -> None:
        self.stats.waited += seconds
        self.clock.sleep(seconds)

    def _note_headers(self, response: httpx.Response) -> None:
        remaining = response.headers.get("x-ratelimit-remaining")
        reset = response.headers.get("x-ratelimit-reset")
        if remaining is not None and remaining.isdigit():
            self.stats.rate_remaining = int(remaining)
        if reset is not None and reset.isdigit():
            self.stats.rate_reset = int(reset)
        for name in ("deprecation", "sunset"):
            value = response.headers.get(name)
            if value:
                notice = f"GitHub marks {urlsplit(str(response.url)).path} {name}: {value}"
                if notice not in self.notices:
                    self.notices.append(notice)

    def _limit_error(self, path: str, reading: RateLimitReading) -> RateLimitError:
        tip = (
            missing_token_tip(host_of(self.base_url)) + " for higher limits, or use --offline"
            if self.token is None
            else "wait, or search the local index with --offline"
        )
        return rate_limit_error(
            f"GET {path}", reading, now=self.clock.now(), policy=self.retry, tip=tip
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """One answer of `GitHubClient.exchange`: status, headers (lower-case names), the parsed
    JSON (None when empty or not JSON: then `readable` is False), the start of the text, and
    the `Link` header's URLs by relation."""

    status: int
    headers: dict[str, str]
    data: Any
    text: str
    readable: bool = True
    links: dict[str, str] = field(default_factory=dict)


class ExchangeError(Exception):
    """No complete answer; `sent`: the request may have reached GitHub (a write may have
    happened)."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class _TooLargeError(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class _TooSlowError(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


def _message(response: httpx.Response) -> str:
    """GitHub's `message` from an error answer, else the start of its text."""
    try:
        return str(response.json().get("message", ""))
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        return response.text[:120]
