"""`report auth status --json`: the host, where its token came from, and the limit left.

The limit is the GitHub client's own record (`reporter.upstream.github.RateLimit`),
written as it is. It lives apart from `documents_upstream` because importing the client
loads httpx, which `report config show` must not load; `report auth status` has loaded
it already (`reporter.app.settings.auth_status`, `--offline` too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reporter.model.document import document, spec
from reporter.upstream.github import RateLimit

if TYPE_CHECKING:
    from reporter.app.settings import AuthStatus


@document
class AuthDocument:
    """Which host, where its token came from (never the token) and the limit left."""

    host: str
    api_url: str
    authenticated: bool
    token_source: str | None = spec("e.g. GH_TOKEN, or gh auth token (keyring)")
    rate_limit: RateLimit | None
    error: str | None


def auth_document(status: AuthStatus) -> AuthDocument:
    """`report auth status --json` (never the token)."""
    return AuthDocument(
        host=status.host,
        api_url=status.api_url,
        authenticated=status.token_source is not None,
        token_source=status.token_source,
        rate_limit=status.rate_limit,
        error=status.error,
    )
