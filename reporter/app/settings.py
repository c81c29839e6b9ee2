"""Settings for the commands: flags > environment > the config file; `auth status`, `config show`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reporter.config import Settings
    from reporter.upstream.github import RateLimit


# --- settings: flags > environment > the config file ---------------------------------


def settings() -> Settings:
    """The user's config file (`reporter.config`), read once per command."""
    from reporter import config

    return config.load(os.environ)


def upstream_env(conf: Settings | None = None) -> dict[str, str]:
    """The environment the upstream code reads, with the config's host as a default."""
    from reporter import config

    return config.with_defaults(os.environ, conf or settings())


def default_db(db: Path | None, conf: Settings | None = None) -> Path | None:
    """`--db`, else the config's `index`, else None (the user cache dir's index)."""
    return db or (conf or settings()).index


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthStatus:
    """`report auth status`: the host, where its token came from, and the limit left."""

    host: str
    api_url: str
    token_source: str | None
    rate_limit: RateLimit | None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """The `auth status --json` document (never the token)."""
        limit = self.rate_limit
        return {
            "host": self.host,
            "api_url": self.api_url,
            "authenticated": self.token_source is not None,
            "token_source": self.token_source,
            "rate_limit": None
            if limit is None
            else {"limit": limit.limit, "remaining": limit.remaining, "reset": limit.reset},
            "error": self.error,
        }


def auth_status(*, base_url: str | None = None, check: bool = True) -> AuthStatus:
    """Which GitHub host the upstream commands use, its token's source and the limit left.

    With `check`, asks `GET /rate_limit` (free); a failure is reported, not raised.
    """
    from reporter.errors import UpstreamError
    from reporter.upstream.auth import api_url, find_token, host_of
    from reporter.upstream.github import GitHubClient, RetryPolicy

    env = upstream_env()
    url = api_url(env, base_url)
    token = find_token(env, base_url=url)
    limit = None
    error = None
    if check:
        try:
            with GitHubClient(
                base_url=url, token=token, timeout=10.0, retry=RetryPolicy(attempts=2)
            ) as client:
                limit = client.rate_limit()
        except UpstreamError as err:
            error = err.message
    return AuthStatus(
        host=host_of(url),
        api_url=url,
        token_source=token.source if token else None,
        rate_limit=limit,
        error=error,
    )


def auth_status_text(status: AuthStatus, *, now: float | None = None) -> str:
    """`report auth status` for a terminal."""
    import time

    lines = [f"{status.host} ({status.api_url})"]
    if status.token_source:
        lines.append(f"  token: from {status.token_source}")
    else:
        from reporter.upstream.auth import missing_token_tip

        lines.append(f"  token: none ({missing_token_tip(status.host)})")
    if status.rate_limit is not None:
        limit = status.rate_limit
        minutes = max(0, round((limit.reset - (now or time.time())) / 60))
        lines.append(
            f"  rate limit: {limit.remaining} of {limit.limit} requests left "
            f"(resets in {minutes} min)"
        )
    if status.error:
        lines.append(f"  rate limit: not checked: {status.error}")
    return "\n".join(lines)


def config_show_text(conf: Settings) -> str:
    """`report config show` for a terminal: the path, then each key."""
    from reporter.config import KEYS

    where = f"{conf.path}" + ("" if conf.exists else " (not created; every key unset)")
    lines = [f"config file: {where}"]
    values = conf.to_json()["settings"]
    assert isinstance(values, dict)
    for key in KEYS:
        value = values[key]
        shown = json.dumps(value) if value not in (None, []) else "(unset)"
        lines.append(f"  {key} = {shown}")
    return "\n".join(lines)
