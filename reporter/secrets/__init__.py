"""The one answer to "is this secret": names, shapes and masking, for every place text leaves us.

Used by `report collect` (the manifest, Tips, environ / cmdline / `--locals` copies), the
report's environment view, `report diff`, parser warnings, `--json` output, terminal
output, `report lint`, upstream drafts and the filing gate. Nothing else decides.

The API, by example::

    from reporter import secrets

    secrets.mask_text("redis://:hunter2@cache:6379 and --api-key sk-...")
    -> "redis://:[redacted]@cache:6379 and --api-key [redacted]"
    secrets.is_secret("MYSQL_PWD", "x")           -> True   (the name says so)
    secrets.is_secret("ANY", "ghp_...")            -> True   (the value has a token's shape)
    secrets.mask_value("VLLM_PASS", "pw")          -> "[redacted]"
    secrets.scan(text)                             -> [SecretHit(kind, name, value, start, end)]

* `names.is_secret_name`: a variable, option, key or header whose name says secret;
* `shapes.scan`: secret spans in any text (provider tokens, URL and query credentials,
  webhooks, connection strings, authorization headers, secret-named assignments and
  options), our patterns plus detect-secrets' offline plugins;
* `SecretPolicy`: whole-value decisions (name, shape, or an opaque token-like run),
  extendable by an `env.toml` `[secret]` table;
* `scrub`: the byte-level capture scrubbers of `report collect`.

`mask_text` is what a caller that shows evidence text wants: idempotent (masked text
scans clean) and linear in the text's length.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache

from reporter.secrets.names import is_secret_name
from reporter.secrets.shapes import (
    PLACEHOLDER_RE,
    SECRET_PATTERNS,
    SecretHit,
    SecretPattern,
    find_secrets,
    possible,
    scan,
)

__all__ = [
    "OPAQUE_MIN_LENGTH",
    "PLACEHOLDER_RE",
    "REDACTED",
    "SecretHit",
    "SecretPolicy",
    "default_policy",
    "find_secrets",
    "is_secret",
    "is_secret_name",
    "mask_data",
    "mask_text",
    "mask_value",
    "policy_from",
    "scan",
    "spans",
]

REDACTED = "[redacted]"
# A long run of mixed-case letters and digits with no path or word structure is a token
# too (hex-only strings, such as commit ids, are not).
OPAQUE_MIN_LENGTH = 32
# Texts longer than this are masked in pieces (the library detectors work per line; a
# pathological one-line megabyte would otherwise cost them quadratic time).
_CHUNK = 1 << 16

# Shapes found *inside* a value by its context (a header, a query, an assignment): the
# value is masked in place rather than replaced whole.
_IN_PLACE_KINDS = frozenset(
    {
        "authorization-header",
        "basic-auth",
        "query-secret",
        "connection-string",
        "secret-assignment",
        "secret-flag",
        "secret-short-flag",
        "user-password-option",
        "credential-tuple",
        "percent-encoded-bearer",
        "cookie",
        "azure-key",
        "aws-secret-access-key",
    }
)
_USER_PASSWORD_OPTIONS = frozenset({"-u", "--user", "--proxy-user", "--http-user"})
_OPAQUE_CHARS_RE = re.compile(r"[A-Za-z0-9+/=_-]+\Z")
_HEX_RE = re.compile(r"[0-9a-fA-F]+\Z")


def _opaque(value: str, min_length: int) -> bool:
    """A long token-like run: letters of both cases and digits, not hex, not a path."""
    if len(value) < min_length or not _OPAQUE_CHARS_RE.match(value) or _HEX_RE.match(value):
        return False
    return (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretPolicy:
    """Whole-value decisions: the shared rules plus optional extra names and value regexes."""

    extra_names: re.Pattern[str] | None = None
    extra_values: tuple[re.Pattern[str], ...] = field(default=())
    opaque_min_length: int = OPAQUE_MIN_LENGTH

    def is_secret_name(self, name: str) -> bool:
        """True when `name` says secret (shared rule, or an extra glob)."""
        return is_secret_name(name) or bool(self.extra_names and self.extra_names.match(name))

    def is_secret(self, name: str, value: str | None) -> bool:
        """True when `name` says secret, or `value` holds a credential anywhere."""
        if name and self.is_secret_name(name):
            return True
        if not value:
            return False
        if name.lower() in _USER_PASSWORD_OPTIONS and ":" in value:
            return True  # curl's `-u user:password`
        if any(p.search(value) for p in self.extra_values):
            return True
        if _opaque(value, self.opaque_min_length):
            return True
        # A value that *is* a credential (a token, a URL with a password) goes whole; a
        # value with a credential inside a longer text (`x=1,authorization=Basic ...`) is
        # masked in place by `shown` / `mask_text`.
        return any(hit.kind not in _IN_PLACE_KINDS for hit in scan(value[:_CHUNK]))

    def shown(self, name: str, value: str | None) -> str | None:
        """`value` with secrets masked: `[redacted]` whole when it is one; None stays None."""
        if value is None:
            return None
        return REDACTED if self.is_secret(name, value) else mask_text(value)


def policy_from(
    names: Iterable[str] = (), values: Iterable[str] = (), opaque: int = OPAQUE_MIN_LENGTH
) -> SecretPolicy:
    """A policy with extra name globs (case-insensitive) and value regexes (may raise re.error)."""
    globs = [fnmatch.translate(p) for p in names]
    return SecretPolicy(
        extra_names=re.compile("|".join(globs), re.IGNORECASE) if globs else None,
        extra_values=tuple(re.compile(v) for v in values),
        opaque_min_length=opaque,
    )


@cache
def default_policy() -> SecretPolicy:
    """The shared policy with no extras."""
    return SecretPolicy()


def is_secret(name: str, value: str | None) -> bool:
    """True when `name` says secret or `value` holds a credential (the default policy)."""
    return default_policy().is_secret(name, value)


def mask_value(name: str, value: str) -> str:
    """`value` whole-redacted when its name says secret, else with secret spans masked."""
    if name and is_secret_name(name) and value and not PLACEHOLDER_RE.fullmatch(value):
        return REDACTED
    return mask_text(value)


def spans(text: str, *, library: bool = True) -> list[tuple[int, int]]:
    """(start, end) of every secret in `text` (see `scan`)."""
    return _spans(text, library, SECRET_PATTERNS)


def _spans(text: str, library: bool, patterns: Sequence[SecretPattern]) -> list[tuple[int, int]]:
    try:
        hits = scan(text, library=library, patterns=patterns)
    except ImportError:  # pragma: no cover - detect-secrets missing: our patterns still apply
        hits = scan(text, library=False, patterns=patterns)
    return [(h.start, h.end) for h in hits]


def mask_text(text: str, *, library: bool = True) -> str:
    """`text` with every secret span replaced by `[redacted]` (the rest kept as is).

    The one call for anything that shows evidence-derived text: terminal lines, warnings,
    `--json` strings, the local report body, `report diff`. Idempotent. `library=False`
    skips detect-secrets' plugins (our own shapes only): for many short texts at once.
    """
    return _masked(text, library, SECRET_PATTERNS)


def _masked(text: str, library: bool, patterns: Sequence[SecretPattern]) -> str:
    """`mask_text` with `patterns`: ours less those known to match nothing (`possible`)."""
    if not text:
        return text
    if len(text) > _CHUNK:
        # Cut at line ends so a secret is never split between two pieces.
        out: list[str] = []
        at = 0
        while at < len(text):
            cut = text.rfind("\n", at, at + _CHUNK)
            end = len(text) if at + _CHUNK >= len(text) else (cut + 1 if cut > at else at + _CHUNK)
            out.append(_masked(text[at:end], library, patterns))
            at = end
        return "".join(out)
    found = _spans(text, library, patterns)
    if not found:
        return text
    pieces: list[str] = []
    at = 0
    for start, end in sorted(found):
        if start < at:
            start = at
        if end <= start:
            continue
        pieces += [text[at:start], REDACTED]
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


# Documents with more distinct strings than this are masked with our own shapes only.
_THOROUGH_STRINGS = 4000
# Strings looked at together for the patterns they may hold (`shapes.possible`): rarer
# needles (a quote, `://`) are missing from most batches of this size.
_BATCH = 64


def mask_data(value: object) -> object:
    """A decoded JSON-like value (dicts, lists, strings, numbers) with every string masked.

    For `--json` output: strings are masked *decoded*, so a quoted log line's
    `\\"password\\": \\"...\\"` is seen as the evidence had it. Iterative (no recursion
    on input-controlled depth); each distinct string is masked once, and a document with
    nothing to mask is walked once and returned as it is.
    """
    strings: set[str] = set()
    pending: list[object] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            strings.add(item)
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            strings.update(item)
            pending.extend(item.values())
    library = len(strings) <= _THOROUGH_STRINGS
    changed: dict[str, str] = {}
    ordered = list(strings)
    for start in range(0, len(ordered), _BATCH):
        batch = ordered[start : start + _BATCH]
        # Patterns whose literal text is in none of these strings are skipped for all of them.
        patterns = possible(batch)
        for text in batch:
            masked = _masked(text, library, patterns)
            if masked != text:
                changed[text] = masked
    if not changed:
        return value
    root: list[object] = [value]
    holders: list[list[object] | dict[str, object]] = [root]
    while holders:
        holder = holders.pop()
        if isinstance(holder, list):
            for index, item in enumerate(holder):
                if isinstance(item, str):
                    if item in changed:
                        holder[index] = changed[item]
                elif isinstance(item, (list, dict)):
                    holders.append(item)
            continue
        for key, item in list(holder.items()):
            if isinstance(item, str):
                if item in changed:
                    holder[key] = changed[item]
            elif isinstance(item, (list, dict)):
                holders.append(item)
        if any(k in changed for k in holder):
            renamed = {changed.get(k, k): v for k, v in holder.items()}
            holder.clear()
            holder.update(renamed)
    return root[0]
