"""The one tokenizer of the upstream index: what FTS5 stores is what queries and ranking use.

`tokens(text)` lowercases, splits on anything that is not a letter or digit (so
identifiers split: `check_hicache_events` -> `check hicache events`) and applies the
English Snowball stemmer (PyStemmer), so `hangs`, `hanging` and `hang` meet. Each snake_case identifier also
gives one *compound* token, its parts run together (`checkhicacheevents`, `allreduce`):
the words of an identifier are common, the identifier is rare, and people write
`allreduce` too. Compounds come after the words, so phrase queries over the words still
find them adjacent. The index feeds FTS5 the joined tokens (a contentless table), which
keeps document frequencies, BM25 and the Python-side term overlap on the same terms::

    tokens("Scheduler hangs in check_hicache_events")
    == ["schedul", "hang", "in", "check", "hicach", "event", "checkhicacheevents"]

`STOPWORDS` lists words that never make a useful query term (English glue and the words
every bug report uses).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

_WORD_RE = re.compile(r"[^\W_]+")
# snake_case identifiers: two or more letter/digit runs joined by underscores.
# Linear time (issue 16): start only where a word starts, and never backtrack into a run
# (a 40 KB hex string took 43 s with the plain pattern: every position retried the run).
_IDENT_RE = re.compile(r"(?<![^\W_])[^\W_]++(?:_++[^\W_]++)+")

_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for
    from further get got had has have having he her here hers him his how i if in into is it its
    itself just let like may me might more most my no nor not now of off on once only or other
    our out over own same see seem she should so some still such than that the their them then
    there these they this those through to too under until up us very via was we were what when
    where which while who whom why will with would you your yes
    bug bugs issue issues report please help thanks thank hi hello anyone someone something
    happen happens happened occur occurs when using use used version versions latest
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


# English Snowball ("Porter 2") from PyStemmer: forms the light suffix rules of earlier
# releases split now meet (writing/write, caching/cached, stalled/stalling,
# deadlocked/deadlocks). Chosen over that stemmer by the cross-validated figures of
# `benchmarks/eval_search.py --real --cv`; changing it changes every stored term, so
# `schema.TOKENIZER_VERSION` names it and an older index is re-tokenised on open.
_SNOWBALL = Stemmer.Stemmer("english")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The English Snowball stem of a lowercased word; short words (3 letters or fewer)
    and words with digits (`h100`, `fp8`, `cu124`) are kept as they are."""
    if len(word) <= 3 or not word.isalpha():
        return word
    return str(_SNOWBALL.stemWord(word))


# Stopwords are matched after stemming, so their stems are stopwords too.
_STOP_STEMS = STOPWORDS | {stem(w) for w in STOPWORDS}


def fold(text: str) -> str:
    """`text` lowercased without diacritics (`Ünïcode` -> `unicode`), as FTS5's
    `remove_diacritics` would see it."""
    text = text.lower()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    """Folded, split and stemmed words of `text`, in order (no compounds)."""
    return [stem(w) for w in _WORD_RE.findall(fold(text))]


def compound(identifier: str) -> str:
    """An identifier's compound token: `check_hicache_events` -> `checkhicacheevents`."""
    return "".join(_WORD_RE.findall(fold(identifier)))


def compounds(text: str) -> list[str]:
    """The compound token of every snake_case identifier in `text`, in order."""
    return [compound(m) for m in _IDENT_RE.findall(fold(text))]


def tokens(text: str) -> list[str]:
    """`words(text)` followed by `compounds(text)`: what the index stores for `text`."""
    folded = fold(text)
    return [stem(w) for w in _WORD_RE.findall(folded)] + compounds(folded)


def normalized(text: str) -> str:
    """`tokens(text)` joined by spaces: the form stored in the full-text index."""
    return " ".join(tokens(text))


def phrase(identifier: str) -> str:
    """The FTS5 phrase for an identifier or words: `all_reduce` -> `"all reduce"`."""
    return '"' + " ".join(words(identifier)) + '"'


def content(items: list[str]) -> list[str]:
    """The tokens worth searching for: no stopwords, no bare numbers, no 1-letter words."""
    return [t for t in items if len(t) > 1 and not t.isdigit() and t not in _STOP_STEMS]


def content_terms(text: str) -> list[str]:
    """`content(tokens(text))`."""
    return content(tokens(text))
