"""Mask secret-shaped values in a local report: the same detectors as upstream drafts.

Reports are committed to repositories; the bundle keeps the raw values. Input: the
rendered report text. Output: the text with every secret the shared detector finds
(`reporter.secrets.scan`) replaced by a placeholder naming its kind and a number,
one number per distinct value (`<github-token-1>`), and how many values were masked.
The placeholders match the detector's own placeholder shape, so a masked report scans
clean and `report lint` flags only what someone pastes back by hand.
"""

from __future__ import annotations

import re

from reporter.secrets import scan

_KIND = re.compile(r"[^a-z0-9]+")


def mask_secrets(text: str) -> tuple[str, int]:
    """`text` with secret-shaped values masked, and the number of distinct values masked."""
    hits = scan(text)
    if not hits:
        return text, 0
    numbers: dict[str, str] = {}
    out: list[str] = []
    position = 0
    for hit in hits:
        if hit.value not in numbers:
            kind = _KIND.sub("-", hit.kind.lower()).strip("-") or "secret"
            numbers[hit.value] = f"<{kind}-{len(numbers) + 1}>"
        out.append(text[position : hit.start])
        out.append(numbers[hit.value])
        position = hit.end
    out.append(text[position:])
    return "".join(out), len(numbers)
