"""The user's settings file: defaults for the upstream commands, read once by the app layer.

Where: `$REPORTER_CONFIG` when set, else `config.toml` in the platform's config dir
(`~/.config/reporter/config.toml` on Linux, `~/Library/Application Support/reporter/`
on macOS, `%LOCALAPPDATA%\\reporter\\` on Windows). Every key is optional::

    repos = ["sgl-project/sglang"]   # searched when neither --repo nor the manifest names one
    index = "~/issues.sqlite3"       # the issue index (--db overrides)
    forms = "~/forms/sglang"         # issue forms folder (--forms overrides)
    host = "github.com"              # GitHub host when neither --base-url nor GH_HOST is set

A missing file is the empty configuration; a malformed one is a usage error naming
the file and line. Flags beat environment variables, which beat this file.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from reporter.core.errors import InputError, UsageError
from reporter.core.fileio import read_text_bounded

CONFIG_ENV = "REPORTER_CONFIG"
KEYS = ("repos", "index", "forms", "host")
# A settings file is a few lines; 1 MiB is far past any real one.
MAX_BYTES = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What the config file says (empty values when it says nothing), and where it is."""

    path: Path
    exists: bool = False
    repos: tuple[str, ...] = ()
    index: Path | None = None
    forms: Path | None = None
    host: str = ""


def config_path(env: Mapping[str, str]) -> Path:
    """`$REPORTER_CONFIG`, else `config.toml` in the platform's user config dir."""
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV]).expanduser()
    import platformdirs

    return platformdirs.user_config_path("reporter") / "config.toml"


def load(env: Mapping[str, str] | None = None) -> Settings:
    """Read the settings file; see the module docstring."""
    env = os.environ if env is None else env
    path = config_path(env)
    if not os.path.lexists(path):
        return Settings(path=path)
    try:
        # Regular files only, read with a cap: a FIFO or a device named here never hangs
        # or floods the command that reads its settings.
        text = read_text_bounded(path, display=f"{path} (the config file)", max_bytes=MAX_BYTES)
    except InputError as err:
        raise UsageError(
            err.message, tip=f"fix or remove it (or point {CONFIG_ENV} at another file)"
        ) from err
    return parse(text, path=path)


def parse(text: str, *, path: Path) -> Settings:
    """The settings in `text` (the file at `path`); a bad key or value is a `UsageError`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UsageError(
            f"{path}: not valid TOML ({err})", tip="see `report config show --help`"
        ) from err
    for key in data:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(KEYS)}"
            raise UsageError(f"{path}: unknown key `{key}`", tip=hint)
    repos = data.get("repos", [])
    if isinstance(repos, str):
        repos = [repos]
    if not isinstance(repos, list) or not all(isinstance(r, str) for r in repos):
        raise UsageError(f"{path}: `repos` must be a list of owner/name strings")
    for key in ("index", "forms", "host"):
        if key in data and not isinstance(data[key], str):
            raise UsageError(f"{path}: `{key}` must be a string")
    index, forms = data.get("index"), data.get("forms")
    return Settings(
        path=path,
        exists=True,
        repos=tuple(repos),
        index=Path(index).expanduser() if index else None,
        forms=Path(forms).expanduser() if forms else None,
        host=str(data.get("host", "")).strip().lower(),
    )


def with_defaults(env: Mapping[str, str], settings: Settings) -> dict[str, str]:
    """The environment the upstream code reads, with the config's host as `GH_HOST`'s default."""
    merged = dict(env)
    if settings.host and not merged.get("GH_HOST"):
        merged["GH_HOST"] = settings.host
    return merged
