"""Text policies: how evidence text becomes Markdown in a local report or an upstream draft.

One view builder serves both documents; a `TextPolicy` decides what happens to text
that did not come from reporter itself. The local report (`LOCAL`) keeps the evidence
whole and only escapes it; an upstream draft (`UPSTREAM`, plus a redaction hook the
draft supplies) also replaces secrets and identifiers by placeholders and neutralises
every reference GitHub would turn into a link or a notification.

Each policy is data: which characters are escaped with a backslash, which runs are put
in (or kept as) code spans, whether HTML becomes entities, whether text is folded onto
one line. Three escapes cover every case::

    TYPED      "cc @alice <b>"       -> "cc `@alice` &lt;b&gt;"    (someone typed it)
    GENERATED  "x <y> @z"            -> "x \\<y\\> @z"               (reporter wrote it)
    INERT      "see #12, @a, GH-3"   -> "see `#12`, `@a`, `GH-3`"  (bound for GitHub)

The terminal has its own medium and its own rule (`reporter.core.inert`: control sequences
removed); it shares no character with these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Protocol, TypeVar, cast

from reporter.core.inert import for_document
from reporter.render.markdown import code

# `@user`, `@org/team` and `#123` notify or link on GitHub; inside a code span they do neither.
_NOTIFYING = re.compile(
    r"(?<![\w@/#])(?:@[A-Za-z0-9][A-Za-z0-9-]{0,38}(?:/[\w.-]{1,100})?|#\d{1,10})\b"
)
# Everything GitHub links or notifies on, for text posted upstream.
_REFERENCES = re.compile(
    r"`[^`\n]+`"  # code spans already there: kept as they are
    r"|https?://[^\s/]+/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+\S*"  # issue / PR URLs
    r"|(?<![\w.-])[\w.-]++/[\w.-]++(?:#\d+|@[0-9a-fA-F]{7,40})\b"  # owner/repo#1, owner/repo@sha
    r"|(?<![\w`])@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:/[\w.-]+)?"  # @user, @org/team
    r"|(?<![\w&#])#\d+\b"  # #123
    r"|\bGH-\d+\b"  # GH-123
    r"|(?<![\w.@-])[\w.-]++@[0-9a-fA-F]{7,40}\b"  # user@sha
    r"|(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"  # bare SHA
    r"|<[a-z][a-z0-9-]*-\d+>"  # redaction placeholders: not HTML tags
)
_CODE_SPANS = re.compile(r"`[^`]*`")


@dataclass(frozen=True, slots=True)
class Escape:
    """One way to make text inert Markdown prose.

    Runs `kept` matches go in a code span (or stay as they are when they are one already);
    the text between them gets `entities` (`&`, `<`, `>` as HTML entities) and then a
    backslash before each of `specials`. `flatten` folds all whitespace to single spaces.
    """

    specials: str
    kept: re.Pattern[str] | None = None
    entities: bool = False
    flatten: bool = True

    def __call__(self, text: str) -> str:
        # Inert first (`reporter.core.inert`): an escape sequence is removed whole, before a
        # backslash could split it and leave its payload behind as text.
        text = for_document(text)
        flat = " ".join(text.split()) if self.flatten else text
        if self.kept is None:
            return self._plain(flat)
        out: list[str] = []
        cursor = 0
        for match in self.kept.finditer(flat):
            out.append(self._plain(flat[cursor : match.start()]))
            found = match.group(0)
            out.append(found if found.startswith("`") else code(found))
            cursor = match.end()
        out.append(self._plain(flat[cursor:]))
        return "".join(out)

    def _plain(self, text: str) -> str:
        if self.entities:
            text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return _escaper(self.specials).sub(r"\\\1", text)


_ESCAPERS: dict[str, re.Pattern[str]] = {}


def _escaper(specials: str) -> re.Pattern[str]:
    pattern = _ESCAPERS.get(specials)
    if pattern is None:
        pattern = _ESCAPERS[specials] = re.compile(f"([{re.escape(specials)}])")
    return pattern


TYPED = Escape(r"\`*_[]|~", kept=_NOTIFYING, entities=True)
"""Text someone typed (a manifest title or field): HTML shows as typed, mentions in code."""
GENERATED = Escape(r"\`*_[]<>|")
"""Prose reporter wrote from evidence (a wedge summary, a caption), for the local report."""
INLINE = Escape(r"\*<>|", kept=_CODE_SPANS, flatten=False)
"""Generated text whose `inline code` spans are reporter's own: only the rest is escaped."""
INERT = Escape(r"\`*_[]<>|~", kept=_REFERENCES)
"""Anything bound for GitHub: every reference and mention in a code span, the rest escaped."""
BARE = Escape(INERT.specials, flatten=False)
"""Reporter's own notes about a draft (what was trimmed): the specials escaped, nothing else."""


def github_title(text: str) -> str:
    """A title bound for GitHub: mentions, issue references and commit ids in code spans.

    GitHub renders code spans in titles and nothing else of Markdown, so only those are
    wrapped; backslash escapes would show as typed. (Control, bidi and zero-width
    characters are `reporter.core.inert`'s to remove.)
    """
    out: list[str] = []
    cursor = 0
    for match in _REFERENCES.finditer(text):
        found = match.group(0)
        out.append(text[cursor : match.start()])
        out.append(found if found.startswith("`") else code(found))
        cursor = match.end()
    out.append(text[cursor:])
    return "".join(out)


class Deferred:
    """Text that waits for redaction: `make(*args)` once every argument is final.

    A redacting policy hands out a `Deferred` for each evidence string (the piece's
    number); the builder wraps it in the formatting it needs (`later(md.code, text)`)
    without knowing whether it is final. After the one redaction call, `settle` walks
    the finished view once and turns every `Deferred` into its string.
    """

    __slots__ = ("args", "make")

    def __init__(self, make: Callable[..., str], args: tuple[object, ...]) -> None:
        self.make = make
        self.args = args

    def final(self, texts: Sequence[str]) -> str:
        """The string, given the redacted text of every piece."""
        return self.make(*(a.final(texts) if isinstance(a, Deferred) else a for a in self.args))


class Slot(Deferred):
    """The redacted text of piece number `index`."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        super().__init__(str, ())
        self.index = index

    def final(self, texts: Sequence[str]) -> str:
        return texts[self.index]


Text = str | Deferred
"""A view string: final (`str`), or waiting for the redaction of evidence (`Deferred`)."""


def later(make: Callable[..., str], *args: object) -> Text:
    """`make(*args)` now when every argument is final, else when the redaction is done."""
    if any(isinstance(a, Deferred) for a in args):
        return Deferred(make, args)
    return make(*args)


def final(text: Text) -> str:
    """A string that must be final by now (after `settle`)."""
    if isinstance(text, Deferred):
        raise TypeError("view text used before the redaction settled it")
    return text


_T = TypeVar("_T")


def settle(value: _T, texts: Sequence[str]) -> _T:
    """`value` (a view: dataclasses, tuples, strings) with every `Deferred` made final:
    one pass over the view after the one redaction call."""
    if isinstance(value, Deferred):
        return cast("_T", value.final(texts))
    if isinstance(value, tuple):
        return cast("_T", tuple(settle(item, texts) for item in value))
    if is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: settle(getattr(value, f.name), texts) for f in fields(value)}
        return cast("_T", replace(value, **changed))
    return value


class Hook(Protocol):
    """A redaction hook: `hook(where, text, key)` is `text` as the document may show it
    (or a `Deferred` that will be, once every evidence string is known)."""

    def __call__(self, where: str, text: str, key: str = "") -> Text: ...


def keep(where: str, text: str, key: str = "") -> Text:
    """The local report's hook: evidence stays whole (the report is not posted anywhere)."""
    del where, key
    return text


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPolicy:
    """What a view builder does with text it did not write.

    `evidence(where, text, key)` is the redaction hook every evidence string passes
    through first (`where` names the place for the redaction report, `key` the variable
    or option the text is the value of); `typed` escapes text someone typed, `prose`
    text reporter wrote from evidence.
    """

    name: str
    typed: Escape
    prose: Escape
    evidence: Hook = keep

    def inline(self, text: str) -> str:
        """Generated text with `inline code` spans kept; with an odd number of backticks no
        span is trusted and the whole text is prose."""
        return self.prose(text) if text.count("`") % 2 else INLINE(text)

    def with_evidence(self, hook: Hook) -> TextPolicy:
        """This policy with `hook` as its redaction of evidence strings."""
        return TextPolicy(name=self.name, typed=self.typed, prose=self.prose, evidence=hook)


LOCAL = TextPolicy(name="local", typed=TYPED, prose=GENERATED)
"""The local report: evidence whole, escaped."""
UPSTREAM = TextPolicy(name="upstream", typed=INERT, prose=INERT)
"""An upstream draft: references neutralised; the draft adds its redaction hook."""
