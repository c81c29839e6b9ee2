"""Issue-form boilerplate, learned from the index: the lines many issues of a repo share.

Issue forms fill every report with the same checklist, headings and environment dump
("- [x] 1. I have searched related issues ...", "### Describe the bug", "PyTorch version:
2.5.1"). Those lines say nothing about the problem, yet they are most of the words of a
short report. Rather than hard-coding one tracker's template, the index counts, per
repository, how many issues carry each *line shape* (`line_key`: lowercased, ticks and
digits blanked, spaces collapsed), and a line whose shape is in at least
`COMMON_LINE_SHARE` of a repo's issues (and at least `COMMON_LINE_MIN`) is boilerplate
there. `strip()` removes such lines before scoring and embedding.

    line_key("- [X] 2. The bug has not been fixed in the latest version.")
    == line_key("- [ ] 2. The bug has not been fixed in the latest version.")
    line_key("PyTorch version: 2.5.1+cu124") == line_key("PyTorch version: 2.4.0+cu121")
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

COMMON_LINE_SHARE = 0.02
COMMON_LINE_MIN = 3
# Lines shorter than this (fences, bullets, `</details>`) are too short to say anything
# either way; they are kept out of the counts and dropped with their neighbours only when
# nothing else is left.
MIN_LINE_CHARS = 4
_TICK_RE = re.compile(r"\[[xX ]\]")
_DIGITS_RE = re.compile(r"\d+")
_SPACE_RE = re.compile(r"\s+")
# "[Bug]", "[Feature]: ", "[RFC][Usage]" in front of a title: the form's kind, not the topic.
_TITLE_TAGS_RE = re.compile(r"^\s*(?:\[[^\]\n]{1,30}\]\s*:?\s*)+")


def line_key(line: str) -> int | None:
    """The shape of a line as a signed 64-bit number, or None for a line too short to count."""
    text = _SPACE_RE.sub(" ", _DIGITS_RE.sub("0", _TICK_RE.sub("[ ]", line.lower()))).strip()
    if len(text) < MIN_LINE_CHARS:
        return None
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def line_keys(body: str) -> set[int]:
    """The distinct line shapes of a body."""
    keys = {line_key(line) for line in body.splitlines()}
    keys.discard(None)
    return {k for k in keys if k is not None}


def threshold(issues: int) -> int:
    """How many issues of a repo must share a line shape for it to be boilerplate."""
    return max(COMMON_LINE_MIN, int(issues * COMMON_LINE_SHARE + 0.999))


def strip(body: str, is_common: Callable[[int], bool]) -> str:
    """`body` without its boilerplate lines (and without the blank runs they leave)."""
    kept: list[str] = []
    for line in body.splitlines():
        key = line_key(line)
        if key is not None and is_common(key):
            continue
        if not line.strip() and (not kept or not kept[-1].strip()):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def strip_title(title: str) -> str:
    """A title without the form's leading tags (`[Bug] ` , `[Usage]: `)."""
    stripped = _TITLE_TAGS_RE.sub("", title).strip()
    return stripped or title.strip()
