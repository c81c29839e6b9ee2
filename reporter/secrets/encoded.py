"""Secrets hidden by an encoding: runs of base64 or hex, decoded so the shapes can see them.

`TOKEN_B64=Z2hwX0Fi...` (a GitHub token in base64), `BLOB=6768705f...` (the same in hex)
and a bare base64 `user:password` (`c3ZjOkh1bnRlcjI=`, what a Basic auth header carries)
give nothing away as written. `decoded_runs` finds the runs worth decoding and yields
what they decode to when that is text; `reporter.secrets.shapes.scan` searches the
decoded text with its own shapes and masks the whole run when it holds a secret.
`looks_like_credential` is the one extra rule for decoded text: `user:password`.

Only printable text counts as decoded: random bytes (a hash, a commit id, an image's
base64) decode to binary and are left alone. Runs are bounded in length
(`reporter/data/secrets.toml` `[encoded]`), so the work stays linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from reporter.core import rules


@dataclass(frozen=True, slots=True)
class DecodedRun:
    """A run of `encoding` ("base64" or "hex") at `start:end` of a text, and its text."""

    start: int
    end: int
    encoding: str
    text: str


@cache
def _limits() -> tuple[int, int]:
    table = rules.load("secrets.toml").get("encoded", {})
    return int(table.get("min_length", 16)), int(table.get("max_length", 4096))


# The characters of a run (standard and URL-safe base64, which hex is part of).
_RUN_CHARS = string.ascii_letters + string.digits + "+/_-"
_RUN = "[A-Za-z0-9+/_-]"


@cache
def _run_re() -> re.Pattern[str]:
    low, _ = _limits()
    # A base64 or hex run between non-run characters; `=` padding only at the end.
    body = _RUN + "{" + str(low) + ",}"
    return re.compile(f"(?<!{_RUN}){body}={{0,2}}(?![A-Za-z0-9+/_=-])")


_HEX_RE = re.compile(r"(?:[0-9a-fA-F]{2})+")
# `user:password`: a user name and a password of at least 4 visible characters, nothing else.
_USER_PASSWORD_RE = re.compile(r"[\w.@+-]{1,64}:[!-~]{4,128}")


def _text(data: bytes) -> str | None:
    """`data` as text when it is printable UTF-8 (a decoded secret), else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text or not all(c.isprintable() or c in "\n\r\t" for c in text):
        return None
    return text


# A base64 run's first character is the top six bits of its first decoded byte. After these
# that byte cannot open printable UTF-8 text: A B E F G H give a control character
# (0x00-0x07, 0x10-0x1F), g to v a continuation byte (0x80-0xBF), 9 + / - _ a byte of
# 0xF4 or more (0xF4 opens only private-use characters, never printable; the rest is not
# UTF-8). So the run decodes to no text and is not decoded at all: most identifiers
# (`scheduler_TP3`, `multiprocessing/spawn`) stop here. (Hex runs are tried first.)
_NOT_TEXT_FIRST = frozenset("ABEFGHghijklmnopqrstuv9+/-_")


def run_gate() -> str:
    """A regex found at the start of every run `decoded_runs` yields (`reporter.secrets.gate`
    clears the texts without one): all hex, or a first character that can open text. Any
    digit may stand for any other (so `9` is let through, though it opens no text)."""
    low, _ = _limits()
    first = sorted(set(_RUN_CHARS) - _NOT_TEXT_FIRST | set(string.digits))
    opening = "[" + "".join(re.escape(c) for c in first) + "]"
    return f"(?<!{_RUN})(?:[0-9a-fA-F]{{{low}}}|{opening}{_RUN}{{{low - 1}}})"


def _decode(run: str) -> tuple[str, str] | None:
    """(encoding, text) of one run, or None when it decodes to no text."""
    if _HEX_RE.fullmatch(run):
        return ("hex", text) if (text := _text(bytes.fromhex(run))) is not None else None
    if run[0] in _NOT_TEXT_FIRST:
        return None
    return _decode_base64(run)


def _decode_base64(run: str) -> tuple[str, str] | None:
    """("base64", text) of a run that is not hex, or None: the decoding itself."""
    body = run.rstrip("=")
    if "/" in body and ("_" in body or "-" in body):
        return None  # both alphabets at once: a path or an identifier, not base64
    # Paths and dotted names are not base64: it needs letters of both cases or digits.
    if body.startswith("/") or "//" in body or (body.isalpha() and body.islower()):
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            data = base64.urlsafe_b64decode(padded)
        else:
            data = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
    text = _text(data)
    return ("base64", text) if text is not None else None


def decoded_runs(text: str) -> Iterator[DecodedRun]:
    """Every run of base64 or hex in `text` that decodes to printable text."""
    if len(text) < _limits()[0]:
        return
    high = _limits()[1]
    for match in _run_re().finditer(text):
        run = match.group(0)
        if len(run) > high:
            continue
        decoded = _decode(run)
        if decoded is not None:
            yield DecodedRun(match.start(), match.end(), decoded[0], decoded[1])


def looks_like_credential(decoded: str) -> bool:
    """True when decoded text is a bare `user:password` (a Basic auth credential)."""
    return _USER_PASSWORD_RE.fullmatch(decoded.strip()) is not None
