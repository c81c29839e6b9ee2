"""A shape's `needs` searched as one regex say what the `in` tests they replace say."""

from __future__ import annotations

import re
from pathlib import Path

from reporter.secrets import shapes
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


def _every_shape(text: str) -> list[tuple[str, int, int]]:
    """Our shapes' hits with every shape run (no prefilter): what `pattern_hits` must give."""
    gate = shapes._prefilter
    try:
        shapes._prefilter = lambda: shapes._Prefilter(  # type: ignore[assignment]
            plain=re.compile(""), folded=None, always=(), marks=None, marked={}
        )
        return [(h.kind, h.start, h.end) for h in shapes.pattern_hits(text)]
    finally:
        shapes._prefilter = gate


def _corpus_lines() -> list[str]:
    root = Path(__file__).resolve().parents[2] / "fixtures" / "redaction"
    lines: list[str] = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix not in {".py", ".json"}:
            lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines


def test_one_prefilter_pass_finds_what_every_shape_finds() -> None:
    # The seeded corpus (every secret shape, disguised too) and texts holding each needle.
    texts = _corpus_lines() + _texts()
    assert len(texts) > 500
    skipped = 0
    for text in texts:
        got = [(h.kind, h.start, h.end) for h in shapes.pattern_hits(text)]
        assert got == _every_shape(text), text
        gate = shapes._prefilter()
        assert gate.folded is not None
        skipped += (gate.plain is None or gate.plain.search(text) is None) and gate.folded.search(
            text.lower()
        ) is None
    assert skipped > 0  # the prefilter did leave some texts to the shapes without `needs`


def test_scan_answers_from_its_cache_as_it_computed() -> None:
    line = "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789AB  # and AKIAIOSFODNN7EXAMPLE"
    shapes._SCANNED.clear()
    shapes._LINE_HITS.clear()
    first = shapes.scan(line)
    assert first and (line, True) in shapes._SCANNED
    first.clear()  # a caller changing its list does not change the cache
    assert shapes.scan(line) == shapes._scan(line, True) != []
    text = "\n".join([line] * 3)
    assert [h.start for h in shapes.library_hits(text)] == [
        h.start for h in shapes.library_hits(text)
    ]
    assert line + "\n" in shapes._LINE_HITS


def test_every_match_holds_one_of_its_needs() -> None:
    # `needs` is a promise about the pattern: a shape searched without its gate finds
    # nothing whose whole match lacks every one of them (the gate then drops no hit).
    texts = _corpus_lines() + _texts()
    checked = 0
    for pattern in secret_patterns():
        if not pattern.needs:
            continue
        for text in texts:
            for match in pattern.pattern.finditer(text):
                whole = match.group(0).lower() if pattern.folded else match.group(0)
                assert any(need in whole for need in pattern.needs), (pattern.kind, text)
                checked += 1
    assert checked > 100
