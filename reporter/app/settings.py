"""Settings for the commands: flags > environment > the config file; `auth status`, `config show`.

The CLI resolves one `Context` per command (`Context.resolve`) and hands it to the use
cases; below the CLI nothing reads `os.environ`, the config file or the real clock.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from reporter.core import config
from reporter.core.errors import UpstreamError

if TYPE_CHECKING:
    from reporter.core.config import Settings
    from reporter.upstream.auth import Token
    from reporter.upstream.github import RateLimit


def clock(env: Mapping[str, str] | None = None) -> datetime:
    """Now: `SOURCE_DATE_EPOCH` when set (reproducible output), else the real time (UTC)."""
    epoch = (os.environ if env is None else env).get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), tz=UTC)
    return datetime.now(tz=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What a command takes from outside its arguments, resolved once at the CLI edge.

    Flags beat environment variables, which beat the config file. Example::

        Context(env={"GH_HOST": "ghe.corp.example", ...}, config=Settings(path=...),
                now=datetime(2026, 12, 1, tzinfo=UTC), cache_dir=Path("~/.cache/reporter"),
                base_url=None)
    """

    env: Mapping[str, str]
    """The environment the upstream code reads (a read-only copy): the process's, with
    the config's `host` as `GH_HOST`'s default."""
    config: Settings
    """The config file's values (`reporter.core.config`); empty when the command reads none."""
    now: datetime
    """The clock (`clock`): report dates and default file names."""
    cache_dir: Path
    """The user cache dir: the default issue index, cached issue forms."""
    base_url: str | None = None
    """`--base-url`, when the command has it."""

    @classmethod
    def resolve(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        base_url: str | None = None,
        read_config: bool = True,
    ) -> Context:
        """The context for one command. `read_config=False` for the commands that use no
        setting from the config file (a malformed file must not break `report analyze`)."""
        import platformdirs

        env = dict(os.environ if env is None else env)
        conf = config.load(env) if read_config else config.Settings(path=config.config_path(env))
        return cls(
            env=MappingProxyType(config.with_defaults(env, conf)),
            config=conf,
            now=clock(env),
            cache_dir=platformdirs.user_cache_path("reporter"),
            base_url=base_url,
        )

    @property
    def config_dir(self) -> Path:
        """The folder of the config file (`REPORTER_CONFIG` or the platform's)."""
        return self.config.path.parent

    def db(self, flag: Path | None = None) -> Path | None:
        """The issue index: `--db`, else the config's `index`, else None (the cache dir's)."""
        return flag or self.config.index

    @property
    def api_url(self) -> str:
        """The GitHub API base URL: `--base-url`, `GITHUB_API_URL`, `GH_HOST` (or the
        config's `host`), else api.github.com."""
        # Lazy: start-up; `report config show` must not load reporter.upstream.
        from reporter.upstream.auth import api_url

        return api_url(self.env, self.base_url)

    @property
    def host(self) -> str:
        """The web host of `api_url` (`github.com`, `ghe.corp.example`)."""
        # Lazy: start-up; `report config show` must not load reporter.upstream.
        from reporter.upstream.auth import host_of

        return host_of(self.api_url)

    def token(self) -> Token | None:
        """The token for `host` and where it came from (may ask the gh program), or None."""
        # Lazy: start-up; `report config show` must not load reporter.upstream.
        from reporter.upstream.auth import find_token

        return find_token(self.env, base_url=self.api_url)


# --- the pre-Context helpers: kept until every use case takes a Context ---------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthStatus:
    """`report auth status`: the host, where its token came from, and the limit left."""

    host: str
    api_url: str
    token_source: str | None
    rate_limit: RateLimit | None
    error: str | None = None


def auth_status(ctx: Context, *, check: bool = True) -> AuthStatus:
    """Which GitHub host the upstream commands use, its token's source and the limit left.

    With `check`, asks `GET /rate_limit` (free); a failure is reported, not raised.
    """
    # Lazy: start-up; `report config show` must not load reporter.upstream.
    from reporter.upstream.github import GitHubClient, RetryPolicy

    url = ctx.api_url
    token = ctx.token()
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
        host=ctx.host,
        api_url=url,
        token_source=token.source if token else None,
        rate_limit=limit,
        error=error,
    )
