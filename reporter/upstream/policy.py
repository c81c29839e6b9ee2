"""The one GitHub policy every call follows: the client's reads (`github.py`) and filing's
writes and marker lookups (`filing.py` over the same client, driven by `publish.py`).

* **Retries**: `RetryPolicy` bounds the tries; `backoff_delay` is exponential with jitter
  (never longer than the plain schedule, so a crowd of clients spreads out but none waits
  more than it was told).
* **Rate limits**: `read_rate_limit` reads GitHub's answer in its documented order:
  `Retry-After` (secondary limit), else `X-RateLimit-Remaining: 0` until
  `X-RateLimit-Reset` (primary), else a secondary limit without either header, waited
  out from `secondary_wait` seconds, doubling. `rate_limit_error` stops when the wait is
  longer than `max_wait`, saying when the limit resets.
* **Base URL**: `api_url` (in `auth.py`, with the token rules) is the one rule from
  `--base-url` / environment / config host to an API URL; nothing writes it back anywhere.
* **Errors**: `status_error` maps a refusal to `UpstreamError` with a `Tip:`, and
  `gave_up` says what failed after the last try.

Time and chance come from an injectable `Clock` (`now`, `sleep`, `random`), so tests run
the whole schedule without waiting and with a fixed draw.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from reporter.core.errors import RateLimitError, UpstreamError
from reporter.upstream.auth import api_url

__all__ = [
    "Clock",
    "RateLimitReading",
    "RetryPolicy",
    "SystemClock",
    "api_url",
    "gave_up",
    "rate_limit_error",
    "read_rate_limit",
    "status_error",
]

# A rate-limit header read as a number of seconds has at most this many digits (a
# 20-digit reset is no time at all); waits are capped at a year, past which "when it
# resets" is not a time worth printing.
_MAX_DIGITS = 12
MAX_READ_WAIT = 366 * 24 * 3600.0

# The most jitter added on top of a rate-limit wait: GitHub names the earliest moment to
# come back, so jitter only ever delays, and by a few seconds at most.
MAX_RATE_JITTER = 5.0


class Clock(Protocol):
    """Wall time in epoch seconds, a way to wait, and a draw in [0, 1) for jitter (tests pass
    a fake that only records and draws a fixed number)."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait `seconds`."""
        ...

    def random(self) -> float:
        """A number in [0, 1)."""
        ...


class SystemClock:
    """The real clock and the real random source."""

    def now(self) -> float:
        """`time.time()`."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        """`time.sleep()`."""
        time.sleep(seconds)

    def random(self) -> float:
        """`random.random()`: jitter needs spread, not secrecy."""
        return _random.random()


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How hard a command tries: `attempts` per call in all, the first included.

    Backoff after failure `n` is `backoff * 2**(n-1)` capped at `max_backoff`, shortened by
    up to `jitter` of itself. A rate-limit wait longer than `max_wait` is an error, not a
    wait; a secondary limit without headers waits `secondary_wait`, doubling.
    """

    attempts: int = 4
    backoff: float = 1.0
    max_backoff: float = 16.0
    max_wait: float = 60.0
    secondary_wait: float = 60.0
    jitter: float = 0.25

    def backoff_delay(self, failures: int, draw: float) -> float:
        """Seconds to wait after the `failures`-th failed try; `draw` is in [0, 1).

        >>> RetryPolicy().backoff_delay(3, 0.0), RetryPolicy().backoff_delay(3, 0.5)
        (4.0, 3.5)
        """
        plain = min(self.backoff * 2.0 ** (failures - 1), self.max_backoff)
        return plain * (1.0 - self.jitter * draw)

    def rate_delay(self, wait: float, draw: float) -> float:
        """`wait` (what GitHub asked for) plus jitter of at most `MAX_RATE_JITTER` seconds."""
        return wait + draw * min(wait * self.jitter, MAX_RATE_JITTER)


# Filing writes: longer backoff (a POST that failed may have landed; looking costs calls)
# and a longer allowed wait (a filed issue is worth two minutes).
FILING = RetryPolicy(attempts=4, backoff=2.0, max_backoff=30.0, max_wait=120.0)
# A filing dry run only reads: it gives up sooner on a GitHub it cannot reach.
FILING_DRY_RUN = RetryPolicy(attempts=2, backoff=1.0, max_backoff=30.0, max_wait=120.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimitReading:
    """What a refused answer says about the rate limit: `wait` seconds before asking again
    (jitter not included) and which limit (`core`, `search`, ...)."""

    wait: float
    resource: str


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in headers.items()}


def read_rate_limit(
    status: int,
    headers: Mapping[str, str],
    text: str,
    *,
    now: float,
    count: int,
    policy: RetryPolicy,
    known: bool = False,
) -> RateLimitReading | None:
    """The rate limit behind a 403/429 answer, or None when it is a plain refusal.

    `count` is how many rate-limit answers this call has had (the secondary back-off doubles
    with it); `known` is set when the client library already recognised a rate limit.

    >>> read_rate_limit(429, {"Retry-After": "7"}, "", now=0, count=1, policy=RetryPolicy())
    RateLimitReading(wait=7.0, resource='core')
    """
    if status not in (403, 429):
        return None
    fields = _lower(headers)
    remaining = fields.get("x-ratelimit-remaining", "").strip()
    retry_after = fields.get("retry-after", "").strip()
    limited = (
        known
        or status == 429
        or remaining == "0"
        or "retry-after" in fields
        or "rate limit" in text[:500].lower()
    )
    if not limited:
        return None
    resource = fields.get("x-ratelimit-resource", "core") or "core"
    reset = fields.get("x-ratelimit-reset", "").strip()
    if retry_after.isdigit():
        wait = float(retry_after) if len(retry_after) <= _MAX_DIGITS else MAX_READ_WAIT
    elif remaining == "0" and reset.isdigit():
        # A reset already past (clock skew) still waits a second: GitHub counts whole seconds.
        wait = max(0.0, int(reset) - now) + 1.0 if len(reset) <= _MAX_DIGITS else MAX_READ_WAIT
    else:
        wait = policy.secondary_wait * 2.0 ** (max(count, 1) - 1)
    return RateLimitReading(wait=min(wait, MAX_READ_WAIT), resource=resource[:40])


def rate_limit_error(
    what: str,
    reading: RateLimitReading,
    *,
    now: float,
    policy: RetryPolicy,
    tip: str,
    tail: str = "",
) -> RateLimitError:
    """The error for a limit that outlasts `policy.max_wait`: when it resets, and what to do.

    A reset GitHub puts a year or more away (a broken clock, a proxy's header) is said as
    such rather than as a date."""
    if reading.wait >= MAX_READ_WAIT:
        when = "it gives no reset time within a year (its X-RateLimit-Reset or Retry-After is out of range)"
    else:
        until = datetime.fromtimestamp(now + reading.wait, tz=UTC)
        day = "" if reading.wait < 20 * 3600 else f"{until:%Y-%m-%d} "
        when = (
            f"it resets at {day}{until:%H:%M:%S} UTC (in {reading.wait:.0f} s, longer than the "
            f"{policy.max_wait:.0f} s this command waits)"
        )
    return RateLimitError(
        f"{what}: GitHub rate limit reached for {reading.resource} requests; {when}{tail}",
        tip=tip,
    )


# One table for both stacks. 403 and 422 mean different things to a read and a write.
_TIPS = {
    401: "the token was refused: check it with `report auth status`, or run `gh auth login`",
    404: "check the repository name (owner/name), --base-url, and that the token can see it",
    410: "issues are disabled in this repository",
}
_READ_TIPS = {
    403: "the token lacks access to this repository",
    422: "GitHub refused the query; try fewer or simpler terms",
}
_WRITE_TIPS = {
    403: "the token lacks the right to do this (issues: write) in this repository",
    422: "GitHub refused the content; check the title, labels and body size",
}


_REDIRECT_TIP = (
    "the server answered with a redirect, which the API never does: point --base-url (or "
    "GH_HOST / GITHUB_API_URL) at the API itself, e.g. https://HOST/api/v3"
)
_OTHER_TIP = "check --base-url and the token (`report auth status`), then try again"


def status_error(what: str, status: int, message: str, *, write: bool = False) -> UpstreamError:
    """A definite refusal (3xx or 4xx other than a rate limit) as `UpstreamError` with a tip.

    >>> status_error("GET /x", 404, "Not Found").tip
    'check the repository name (owner/name), --base-url, and that the token can see it'
    """
    tips = _TIPS | (_WRITE_TIPS if write else _READ_TIPS)
    tip = tips.get(status) or (_REDIRECT_TIP if 300 <= status < 400 else _OTHER_TIP)
    return UpstreamError(
        f"{what}: GitHub answered {status}" + (f": {message}" if message else ""), tip=tip
    )


def gave_up(what: str, problem: str, policy: RetryPolicy, *, tip: str) -> UpstreamError:
    """The error after the last try: what went wrong the last time, and how often we tried.

    `problem` may already start with `what` (an exception's own message): it is said once.
    """
    if problem.startswith(f"{what}: "):
        problem = problem[len(what) + 2 :]
    return UpstreamError(f"{what}: {problem}; gave up after {policy.attempts} attempts", tip=tip)
