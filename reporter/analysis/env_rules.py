"""The compiled `reporter/data/env.toml`: which variables, packages and facts the
environment view shows, which it hides, and (with `reporter.secrets`) which are secret.

Read by the environment view (`environment.py`), the environment diff and the upstream
draft; kept apart from the view so that those can use the rules without the view.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from reporter.core import rules as data_files
from reporter.core.errors import ReporterError
from reporter.secrets import OPAQUE_MIN_LENGTH, SecretPolicy, policy_from
from reporter.secrets import REDACTED as REDACTED

# One secret policy for the whole tool (reporter.secrets); re-exported for old callers.
Secrets = SecretPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowRules:
    """The compiled `env.toml`."""

    show: re.Pattern[str]
    hide_names: re.Pattern[str]
    hide_values: tuple[re.Pattern[str], ...]
    secrets: Secrets

    def shows(self, name: str, values: Sequence[str]) -> bool:
        """True when a variable is allowlisted and not hidden (by name, or by all its values)."""
        if not self.show.match(name) or self.hide_names.match(name):
            return False
        return not (values and all(any(p.match(v) for p in self.hide_values) for v in values))

    key_packages: tuple[str, ...]
    key_facts: re.Pattern[str]


def parse_show_rules(text: str, *, source: str = "env.toml") -> ShowRules:
    """Compile an env.toml; a malformed file raises `ReporterError` naming what is wrong."""
    data = data_files.parse(text, data_files.SHAPES["env.toml"], source=source)

    def strings(table: str, key: str) -> list[str]:
        # The shape (reporter/core/rules.py) has checked that this is a list of strings.
        return list(data.get(table, {}).get(key, []))

    def regexes(table: str) -> tuple[re.Pattern[str], ...]:
        out: list[re.Pattern[str]] = []
        for pattern in strings(table, "values"):
            try:
                out.append(re.compile(pattern))
            except re.error as err:
                raise ReporterError(
                    f"{source}: [{table}] value pattern {pattern!r}: {err}"
                ) from err
        return tuple(out)

    opaque: int = data.get("secret", {}).get("opaque_min_length", OPAQUE_MIN_LENGTH)  # shape: >= 8
    secret_values = regexes("secret")
    return ShowRules(
        show=data_files.globs(strings("show", "names")),
        hide_names=data_files.globs(strings("hide", "names")),
        hide_values=regexes("hide"),
        secrets=policy_from(strings("secret", "names"), [p.pattern for p in secret_values], opaque),
        key_packages=tuple(strings("packages", "key")),
        key_facts=data_files.globs(strings("facts", "key"), ignore_case=True),
    )


@cache
def default_rules() -> ShowRules:
    """The rules shipped in `reporter/data/env.toml`."""
    return parse_show_rules(data_files.read_text("env.toml"), source="reporter/data/env.toml")
