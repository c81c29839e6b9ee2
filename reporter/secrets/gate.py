"""Which texts may hold a secret: one cheap pass that clears the rest before the shapes run.

`suspects(texts)` gives the texts in which `shapes.scan` may find something; every other
text scans clean, so `mask_data` masks only these (of a 4,096-rank `--json` document's
12,421 strings, 17 are suspects). A text is cleared when it holds none of:

* an escape or a non-ASCII character (`normalize` would change the text: the shapes also
  read it with its disguises undone);
* a shape's `needs` (in any case), or, for a shape whose needs are single characters, its
  `gate` (`reporter/data/secrets.toml`), or a word of a secret name (`names.name_needs`)
  for the shapes that want a name to say secret;
* the start of a base64 or hex run that may decode to text (`encoded.run_gate`);
* with detect-secrets' plugins, what `[library] gate` says they need.

Texts that differ only in their digits (a rank, a PID) are cleared together: every regex of
the gate treats all digits alike, so each distinct text, its digits written `0`, is searched
once, and a document of 16,384 ranks costs about what one of 16 does.

`library_may_match(line)` is the plugins' part for one line: `shapes.library_hits` gives
the plugins only the lines it lets through, so detect-secrets is imported only when some
text could need it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from functools import cache

from reporter.core import rules
from reporter.secrets.encoded import run_gate
from reporter.secrets.names import name_needs

# Every digit as `0`: texts that differ only in a rank or a PID look alike to the gate.
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_DIGITS_TEXT = str.maketrans("123456789", "000000000")
_SEPARATOR = "\0"


def any_of(words: set[str]) -> str:
    """A regex found in a text exactly when one of `words` (not empty) is in it.

    Written as a tree of shared prefixes (`a(?:kia|sia|uthorization)`), not one flat
    alternation: `re` tries an alternation's branches one by one at every position, so
    90 words flat cost up to 90 tries a character, the tree a few. Only *whether* a word
    is there counts, so a word that a shorter one begins is left out (the shorter is
    found wherever the longer would be).
    """
    if "" in words:
        return ""  # found everywhere, as the flat alternation would be
    kept: list[str] = []
    for word in sorted(words):
        # Sorted, the words a prefix begins come right after it.
        if not kept or not word.startswith(kept[-1]):
            kept.append(word)

    def tree(group: list[str]) -> str:
        by_first: dict[str, list[str]] = {}
        for word in group:
            by_first.setdefault(word[0], []).append(word)
        parts = [
            re.escape(same[0]) if len(same) == 1 else re.escape(first) + tree([w[1:] for w in same])
            for first, same in by_first.items()
        ]
        return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"

    return tree(kept)


def _canonical(word: str) -> str:
    return word.translate(_DIGITS_TEXT)


@cache
def gate_sources(library: bool) -> tuple[str, ...] | None:
    """The regexes of the gate, any one of which marks a suspect; None when some shape has
    nothing to be gated on (every text is then a suspect)."""
    table = rules.load("secrets.toml")
    # `normalize` changes only texts with a non-ASCII character (never searched here) or
    # one of these escapes.
    sources = ["[%&\\\\]", run_gate()]
    words: set[str] = set()
    named = False
    for shape in table["shape"]:
        if "gate" in shape:
            sources.append("".join(shape["gate"]))
        elif shape.get("name_group"):
            named = True
        elif shape.get("needs"):
            words.update(_canonical(need.lower()) for need in shape["needs"])
        else:
            return None
    if named:
        words.update(_canonical(word) for word in name_needs())
    if words:
        sources.append("(?i:" + any_of(words) + ")")
    if library:
        plugins = table["library"]
        if "gate" not in plugins:
            return None
        sources += plugins["gate"]
    return tuple(sources)


@cache
def _gate(library: bool) -> re.Pattern[bytes] | None:
    sources = gate_sources(library)
    return None if sources is None else re.compile("|".join(sources).encode())


def suspects(texts: Collection[str], *, library: bool = True) -> list[str]:
    """The texts of `texts` that `shapes.scan(text, library=library)` may find a secret in
    (in no particular order): every other one scans clean."""
    gate = _gate(library)
    if gate is None:
        return list(texts)
    items = list(texts)
    found: dict[bytes, bool] = {}  # each distinct form, searched once for all texts
    out: list[str] = []
    for start in range(0, len(items), _TEXTS_AT_ONCE):
        out += _suspects_among(items[start : start + _TEXTS_AT_ONCE], gate.search, found)
    return out


# Texts joined into one pass at a time: bounds the pass's copies to a few hundred KB.
_TEXTS_AT_ONCE = 4096


def _suspects_among(
    items: list[str], search: Callable[[bytes], object], found: dict[bytes, bool]
) -> list[str]:
    joined = _SEPARATOR.join(items)
    out: list[str] = []
    if not joined.isascii() or joined.count(_SEPARATOR) != len(items) - 1:
        # A non-ASCII text (which `normalize` may change) or one holding the separator.
        out = [t for t in items if not t.isascii() or _SEPARATOR in t]
        items = [t for t in items if t.isascii() and _SEPARATOR not in t]
        if not items:
            return out
        joined = _SEPARATOR.join(items)
    forms = joined.encode("ascii").translate(_DIGITS).split(_SEPARATOR.encode())
    for form in set(forms).difference(found):
        found[form] = search(form) is not None
    return out + [text for text, form in zip(items, forms, strict=True) if found[form]]


@cache
def _library_gate() -> re.Pattern[str] | None:
    plugins = rules.load("secrets.toml")["library"]
    return re.compile("|".join(plugins["gate"])) if "gate" in plugins else None


def library_may_match(line: str) -> bool:
    """False only when no plugin of `[library] plugins` can report anything in `line`."""
    gate = _library_gate()
    return gate is None or gate.search(line) is not None
