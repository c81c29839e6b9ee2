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
    secrets.mask_value("--model-path", "https://u:pw@hf.example/m")
    -> "https://u:[redacted]@hf.example/m"        (masked inside: the rest stays readable)
    secrets.scan(text)                             -> [SecretHit(kind, name, value, start, end)]

* `names.is_secret_name`: a variable, option, key or header whose name says secret;
* `shapes.scan`: secret spans in any text (provider tokens, URL and query credentials,
  webhooks, connection strings, authorization headers, secret-named assignments and
  options), our patterns plus detect-secrets' offline plugins;
* `SecretPolicy`: what a named value shows: whole-value redaction when the name says
  secret or the value is the credential (an opaque token-like run), else the credential
  masked inside it (`shown`); extendable by an `env.toml` `[secret]` table;
* `scrub`: the byte-level capture scrubbers of `report collect`.

`mask_text` is what a caller that shows evidence text wants: idempotent (masked text
scans clean) and linear in the text's length.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from reporter.secrets.gate import suspects
from reporter.secrets.names import is_secret_by_last_word, is_secret_name, name_rules
from reporter.secrets.shapes import PLACEHOLDER_RE, SecretHit, find_secrets, is_value, scan

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
        """True when `name` says secret, or `value` holds a credential anywhere in it."""
        if name and self.is_secret_name(name):
            return True
        if not value:
            return False
        return self.is_whole(name, value) or bool(scan(value[:_CHUNK]))

    def is_whole(self, name: str, value: str) -> bool:
        """True when `value` goes whole: its name says secret, or the value itself is the
        credential (an opaque token, an extra `[secret] values` match, a `-u user:pw`)."""
        if name and self.is_secret_name(name) and not PLACEHOLDER_RE.fullmatch(value):
            # `REDIS_DB=0`: a name secret only by its last word shows a number or a path.
            return not (is_secret_by_last_word(name) and not is_value(value))

        if name.lower() in name_rules().user_password and ":" in value:
            return True
        return _opaque(value, self.opaque_min_length) or any(
            p.search(value) for p in self.extra_values
        )

    def shown(self, name: str, value: str | None) -> str | None:
        """`value` as any output may show it; None stays None.

        `[redacted]` whole when the name says secret or the value is the credential;
        otherwise masked *inside*: the credential in a URL, the token in a flag's value,
        so the rest stays readable (`s3://AKIA...:[redacted]@bucket/model` -> the model
        path is still there to compare).
        """
        if value is None:
            return None
        return REDACTED if value and self.is_whole(name, value) else mask_text(value)


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
    """`value` as the default policy shows it (`SecretPolicy.shown`)."""
    return default_policy().shown(name, value) or ""


def spans(text: str, *, library: bool = True) -> list[tuple[int, int]]:
    """(start, end) of every secret in `text` (see `scan`)."""
    try:
        hits = scan(text, library=library)
    except ImportError:  # pragma: no cover - detect-secrets missing: our patterns still apply
        hits = scan(text, library=False)
    return [(h.start, h.end) for h in hits]


def mask_text(text: str, *, library: bool = True) -> str:
    """`text` with every secret span replaced by `[redacted]` (the rest kept as is).

    The one call for anything that shows evidence-derived text: terminal lines, warnings,
    `--json` strings, the local report body, `report diff`. Idempotent. `library=False`
    skips detect-secrets' plugins (our own shapes only): for many short texts at once.
    """
    if not text:
        return text
    if len(text) > _CHUNK:
        # Cut at line ends so a secret is never split between two pieces.
        out: list[str] = []
        at = 0
        while at < len(text):
            cut = text.rfind("\n", at, at + _CHUNK)
            end = len(text) if at + _CHUNK >= len(text) else (cut + 1 if cut > at else at + _CHUNK)
            out.append(mask_text(text[at:end], library=library))
            at = end
        return "".join(out)
    found = spans(text, library=library)
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


_SCALARS = frozenset((int, float, bool, type(None)))


def _strings_of(value: object) -> set[str]:
    """Every string of a JSON-like value, keys too (not inside tuples: JSON has none).

    Only lists and dicts go on the stack; a container's items are sorted where they
    stand, by their exact type first (the common case: one test, not three)."""
    strings: set[str] = set()
    if isinstance(value, str):
        strings.add(value)
    pending: list[Any] = [value] if isinstance(value, list | dict) else []
    push, add = pending.append, strings.add
    while pending:
        holder = pending.pop()
        items: Iterable[Any] = holder
        if isinstance(holder, dict):
            strings.update(holder)
            items = holder.values()
        for item in items:
            kind = type(item)
            if kind is str:
                add(item)
            elif kind is dict or kind is list:
                push(item)
            elif kind in _SCALARS:
                continue
            elif isinstance(item, str):
                add(item)
            elif isinstance(item, list | dict):
                push(item)
    return strings


def mask_data(value: object) -> object:
    """A decoded JSON-like value (dicts, lists, strings, numbers) with every string masked.

    For `--json` output: strings are masked *decoded*, so a quoted log line's
    `\\"password\\": \\"...\\"` is seen as the evidence had it. Iterative (no recursion
    on input-controlled depth); each distinct string the gate does not clear is masked
    once, and a document with nothing to mask is walked once and returned as it is.
    """
    strings = _strings_of(value)
    library = len(strings) <= _THOROUGH_STRINGS
    changed: dict[str, str] = {}
    # Only the strings the gate cannot clear are scanned (`reporter.secrets.gate`).
    for text in suspects(strings, library=library):
        masked = mask_text(text, library=library)
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
