"""Literal text a regex cannot match without: to skip patterns for a whole batch of texts at once.

`--json` output holds tens of thousands of short strings (a 16,384-rank bundle: ~50,000),
and searching each for each secret shape costs a second. Most shapes need literal text
to match (`hf_`, `://`, `-----BEGIN `, one of `:` `=`): when a needle is in none of the
strings, that shape is in none of them, and it is skipped for the batch. Exact: the
needles come from the pattern's own parse (`re._parser`), and only where every match must
contain them; anything the reader does not know (lookarounds, optional parts, classes
with ranges) yields no needle, never a wrong one. Case-insensitive needles are used only
on ASCII text, where Python's case folding is plain ASCII (elsewhere `(?i)i` also
matches the dotless `\u0131`).

    >>> needle_groups(re.compile(r"\\bhf_[A-Za-z0-9]{20,}"))
    ((('hf_', False),),)
    >>> may_match(needle_groups(re.compile(r"\\bhf_\\w+")), Haystack(["rank 0", "TP0"]))
    False
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

# A needle: (text, case-insensitive); a group: needles of which each match holds one.
Needle = tuple[str, bool]
Group = tuple[Needle, ...]

try:  # Python 3.11+: the regex parser behind `re.compile` (private, stable since 3.11)
    from re import _constants as _c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - another interpreter: no needles, every pattern runs
    _parser = None
    _c = None


class Haystack:
    """A batch of texts joined once: what `may_match` looks for needles in."""

    __slots__ = ("folded", "text")

    def __init__(self, texts: Iterable[str]) -> None:
        self.text = "\n".join(texts)
        # Case-insensitive needles only on ASCII: there re's folding is ASCII's.
        self.folded = self.text.lower() if self.text.isascii() else None


def may_match(groups: Sequence[Group], haystack: Haystack) -> bool:
    """False when some group has no needle in `haystack`: then no text of it can match."""
    for group in groups:
        for needle, fold in group:
            if fold and haystack.folded is None:
                break  # cannot tell: assume present
            if needle in (haystack.folded if fold else haystack.text):  # type: ignore[operator]
                break
        else:
            return False
    return True


@cache
def needle_groups(pattern: re.Pattern[str]) -> tuple[Group, ...]:
    """Groups of literal needles: every match of `pattern` holds a needle of each group."""
    if _parser is None or not isinstance(pattern.pattern, str):
        return ()
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
    except Exception:  # pragma: no cover - compiled already, so it parses; be safe anyway
        return ()
    fold = bool(pattern.flags & re.IGNORECASE) or bool(parsed.state.flags & re.IGNORECASE)
    return tuple(_sequence(list(parsed), fold))


def _sequence(items: list[tuple[Any, Any]], fold: bool) -> list[Group]:
    """Needle groups of a sequence of parsed items, all of which every match passes through."""
    groups: list[Group] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            groups.append(((("".join(run)).lower() if fold else "".join(run), fold),))
            run.clear()

    for op, av in items:
        if op is _c.LITERAL:
            char = chr(av)
            if fold and not char.isascii():
                flush()
                continue
            run.append(char)
            continue
        flush()
        if op is _c.SUBPATTERN:
            _, add, remove, body = av
            inner = fold
            if add & re.IGNORECASE:
                inner = True
            if remove & re.IGNORECASE:
                inner = False
            groups.extend(_sequence(list(body), inner))
        elif op is _c.ATOMIC_GROUP:
            groups.extend(_sequence(list(av), fold))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            low, _, body = av
            if low >= 1:
                groups.extend(_sequence(list(body), fold))
        elif op is _c.BRANCH:
            branch = _branch(av[1], fold)
            if branch is not None:
                groups.append(branch)
        elif op is _c.IN:
            chars = _chars(av, fold)
            if chars is not None:
                groups.append(chars)
        # Anything else (assertions, ANY, categories, backreferences) holds no needle.
    flush()
    return groups


def _branch(alternatives: list[Any], fold: bool) -> Group | None:
    """One group for an alternation: the best group of each alternative, joined."""
    joined: list[Needle] = []
    for alternative in alternatives:
        groups = _sequence(list(alternative), fold)
        if not groups:
            return None
        best = max(groups, key=_strength)
        joined.extend(best)
    return tuple(dict.fromkeys(joined))


def _chars(items: list[tuple[Any, Any]], fold: bool) -> Group | None:
    """A character class of plain characters (`[:=]`, `[(\\[]`) as single-character needles."""
    out: list[Needle] = []
    for op, av in items:
        if op is not _c.LITERAL:
            return None  # NEGATE, ranges, categories: too many characters to look for
        char = chr(av)
        if fold and not char.isascii():
            return None
        out.append((char.lower() if fold else char, fold))
    return tuple(dict.fromkeys(out)) or None


def _strength(group: Group) -> tuple[int, int]:
    """Rarer first: the shortest needle longest, then the fewest needles."""
    return (min(len(n) for n, _ in group), -len(group))
