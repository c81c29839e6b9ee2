"""A shape's `needs` searched as one regex say what the `in` tests they replace say."""

from __future__ import annotations

import re

from reporter.secrets.shapes import secret_patterns

# Texts holding each needle alone, at the edges, twice, beside regex metacharacters and
# in other case, plus texts holding none.
_EXTRA = ["", "plain text", "rank 7 from TP7", ".*+?()[]{}|^$\\", "\u00c4\u0131 \u017f \u212a"]


def _texts() -> list[str]:
    needles = sorted({n for p in secret_patterns() for n in p.needs})
    out = list(_EXTRA)
    for need in needles:
        out += [need, f"x{need}y", need + need, f"({need})", need.upper(), need[:-1]]
    return out


def test_needs_regex_agrees_with_substring_tests() -> None:
    texts = _texts()
    for pattern in secret_patterns():
        assert (pattern.needs_re is None) == (not pattern.needs)
        assert pattern.folded == bool(pattern.pattern.flags & re.IGNORECASE)
        for text in texts:
            hay = text.lower() if pattern.folded else text
            expected = any(n in hay for n in pattern.needs) if pattern.needs else True
            assert pattern.may_match(text, text.lower) is expected, (pattern.kind, text)
