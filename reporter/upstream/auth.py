"""Which GitHub host to talk to, and which token belongs to it: the gh CLI's rules.

Host (`api_url`): `--base-url`, else `GITHUB_API_URL`, else `GH_HOST`
(`github.com` -> `https://api.github.com`, any other host -> `https://HOST/api/v3`),
else api.github.com.

Token (`find_token`), first found wins, and only ever for its own host:

    github.com            GH_TOKEN, GITHUB_TOKEN
    any other host        GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN
    either                gh's hosts.yml entry for that host (`oauth_token`, or the
                          active user's under `users`)
    either                `gh auth token --hostname HOST` when gh is on PATH: the token
                          gh keeps in the system keyring (the default since gh 2.26)

A github.com token is never offered to another host, so an Enterprise `--base-url`
(or a local test server) never sees it. `Token.source` says where the value came
from; messages print the source, never the value.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from reporter.core.errors import InputError
from reporter.core.fileio import read_text_bounded

API_URL = "https://api.github.com"
GITHUB_HOST = "github.com"
# `gh auth token` reads the keyring; a locked keyring may prompt, so it gets a bound.
GH_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Token:
    """A GitHub token and where it came from (for messages; the value is never printed)."""

    value: str
    source: str
    host: str = GITHUB_HOST
    """The web host the token belongs to (`github.com`, `ghe.corp.example`)."""


def api_url(env: Mapping[str, str], base_url: str | None = None) -> str:
    """The API base URL: `--base-url`, `GITHUB_API_URL`, `GH_HOST`, else api.github.com."""
    explicit = (base_url or env.get("GITHUB_API_URL", "")).strip().rstrip("/")
    if explicit:
        return explicit
    host = env.get("GH_HOST", "").strip().lower()
    if host and host != GITHUB_HOST:
        return f"https://{host}/api/v3"
    return API_URL


def host_of(base_url: str) -> str:
    """The web host a token belongs to: `api.github.com` -> `github.com`; ports kept.

    >>> host_of("https://ghe.corp.example/api/v3"), host_of("http://127.0.0.1:8123")
    ('ghe.corp.example', '127.0.0.1:8123')
    """
    parts = urlsplit(base_url)
    host = (parts.hostname or GITHUB_HOST).lower()
    if host == "api.github.com":
        return GITHUB_HOST
    return f"{host}:{parts.port}" if parts.port else host


def gh_hosts_path(env: Mapping[str, str]) -> Path:
    """Where the gh CLI keeps `hosts.yml`."""
    if env.get("GH_CONFIG_DIR"):
        return Path(env["GH_CONFIG_DIR"]) / "hosts.yml"
    if env.get("XDG_CONFIG_HOME"):
        return Path(env["XDG_CONFIG_HOME"]) / "gh" / "hosts.yml"
    return Path(env.get("HOME", str(Path.home()))) / ".config" / "gh" / "hosts.yml"


def env_names(host: str) -> tuple[str, ...]:
    """The environment variables whose token belongs to `host`, in gh's order."""
    if host == GITHUB_HOST:
        return ("GH_TOKEN", "GITHUB_TOKEN")
    return ("GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")


GhRunner = Callable[[list[str], Mapping[str, str]], str | None]


def run_gh(argv: list[str], env: Mapping[str, str]) -> str | None:
    """Run gh (bounded, no terminal prompts); its stdout, or None when it fails."""
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=GH_TIMEOUT_S,
            env={**env, "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def find_token(
    env: Mapping[str, str] | None = None,
    *,
    base_url: str = API_URL,
    hosts_path: Path | None = None,
    gh: GhRunner | None = run_gh,
) -> Token | None:
    """The token for `base_url`'s host (see the module docstring), or None.

    `gh=None` skips asking the gh program; gh is looked up on `env["PATH"]`.
    """
    env = os.environ if env is None else env
    host = host_of(base_url)
    for name in env_names(host):
        value = env.get(name, "").strip()
        if value:
            return Token(value=value, source=name, host=host)
    path = hosts_path or gh_hosts_path(env)
    from_file = _hosts_yml_token(path, host)
    if from_file:
        return Token(value=from_file, source=f"gh CLI ({path})", host=host)
    if gh is None:
        return None
    program = shutil.which("gh", path=env.get("PATH", "")) if env.get("PATH") else None
    if program is None:
        return None
    out = gh([program, "auth", "token", "--hostname", host], env)
    value = (out or "").strip()
    if not value or any(c.isspace() for c in value):
        return None
    return Token(value=value, source=f"gh auth token --hostname {host} (keyring)", host=host)


def _hosts_yml_token(path: Path, host: str) -> str | None:
    if not path.exists():
        return None
    try:
        # Regular files only, with a cap: a FIFO there must not hang every upstream command.
        text = read_text_bounded(path, max_bytes=1 << 20)
    except InputError:
        return None
    try:
        import yaml  # PyYAML: only needed when the gh CLI is the token's source.

        data = yaml.safe_load(text)
    except Exception:  # a broken gh config just means "no token from gh"
        return None
    entry = data.get(host) if isinstance(data, dict) else None
    if not isinstance(entry, dict):
        return None
    token = entry.get("oauth_token")
    if isinstance(token, str) and token:
        return token
    # gh >= 2.40 may list several accounts under `users`; the active one is `user`.
    users, user = entry.get("users"), entry.get("user")
    if isinstance(users, dict) and isinstance(user, str) and isinstance(users.get(user), dict):
        nested = users[user].get("oauth_token")
        if isinstance(nested, str) and nested:
            return nested
    return None


def missing_token_tip(host: str) -> str:
    """What to set or run to get a token for `host`."""
    names = " or ".join(env_names(host))
    login = "gh auth login" if host == GITHUB_HOST else f"gh auth login --hostname {host}"
    return f"set {names}, or run `{login}`"
