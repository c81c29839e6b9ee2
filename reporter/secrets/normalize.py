"""Undo disguises before the secret shapes are searched, and map what they find back.

A token written with a zero-width space inside, a Cyrillic `\\u0440` for `p`, fullwidth
letters, or escaped (`ghp%5F...`, `\\u0067hp_...`, Markdown's `ghp\\_...`, HTML's `&amp;`) is the
same token to a reader who copies it out. `normalize(text)` gives the text a detector should
read and a map from its offsets back to the original's, so the mask covers the original
span, disguise included::

    n = normalize("tok \\uff47\\uff48\\uff50\\uff3fabc")   # fullwidth `ghp_`
    n.text                               -> "tok ghp_abc"
    n.original(4, 11)                    -> (4, 11)   (the fullwidth span, as written)

What changes, unit by unit (everything else is copied as is):

* invisible characters (Unicode format characters: zero-width spaces and joiners, the
  word joiner, the soft hyphen, bidi marks, overrides and isolates, the BOM) and
  combining marks are dropped;
* every other non-ASCII character is decomposed (NFKD: fullwidth `\\uff47` is `g`, `\\ufb01` is
  `fi`, `é` is `e` plus a mark) and look-alike letters of other scripts are folded to
  the Latin letter they are drawn like (`reporter/data/secrets.toml` `[normalize]`); a
  character that does not end up ASCII is kept as it was;
* `%XX` (a printable ASCII byte), `\\uXXXX`, JSON's `\\n`, `\\r` and `\\t` (a netrc or a
  key quoted on one line), a backslash before ASCII punctuation (JSON's `\\"`, Markdown's
  `\\_`) and the HTML entities `&amp; &lt; &gt; &quot; &#39;` are decoded.

`None` means the text has nothing to undo (the common case: plain ASCII): scanning it
once is enough. Linear in the length of the text.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache

from reporter.core import rules

# One unit a disguise may hide behind: an escape, or a run of non-ASCII characters.
_UNIT_RE = re.compile(
    r"%[0-9A-Fa-f]{2}"
    r"|\\u[0-9A-Fa-f]{4}"
    r"|\\[!-/:-@\[-`{-~nrt]"
    r"|&(?:amp|lt|gt|quot|apos|#39|#x27);"
    r"|[^\x00-\x7f]+"
)
_WHITESPACE = {"n": "\n", "r": "\r", "t": "\t"}
_ENTITIES = {
    "&amp;": "&",
    "&lt;": "<",
    "&gt;": ">",
    "&quot;": '"',
    "&apos;": "'",
    "&#39;": "'",
    "&#x27;": "'",
}


@cache
def _confusables() -> dict[int, str]:
    """Look-alike letter -> the Latin letter (`[normalize]` of secrets.toml)."""
    table = rules.load("secrets.toml")["normalize"]
    source, target = table["from"], table["to"]
    if len(source) != len(target):
        raise rules.RulesError(
            "reporter/data/secrets.toml: `normalize.from` and `normalize.to` differ in length",
            tip="give one Latin letter in `to` for each letter in `from`",
        )
    return {ord(a): b for a, b in zip(source, target, strict=True)}


@lru_cache(maxsize=8192)
def plain_char(char: str) -> str:
    """What one non-ASCII character reads as: "" (invisible), ASCII, or itself."""
    category = unicodedata.category(char)
    if category in ("Cf", "Mn", "Me"):
        return ""
    folded = _confusables().get(ord(char))
    if folded is not None:
        return folded
    parts = []
    for part in unicodedata.normalize("NFKD", char):
        if unicodedata.category(part) in ("Mn", "Me", "Cf"):
            continue
        parts.append(_confusables().get(ord(part), part))
    decomposed = "".join(parts)
    return decomposed if decomposed.isascii() else char


def _decode(unit: str) -> str:
    """The text one unit of `_UNIT_RE` stands for (before character folding)."""
    first = unit[0]
    if first == "%":
        value = int(unit[1:], 16)
        return chr(value) if 0x20 <= value < 0x7F else unit
    if first == "\\":
        if unit[1] == "u":
            return chr(int(unit[2:], 16))
        return _WHITESPACE.get(unit[1], unit[1])
    if first == "&":
        return _ENTITIES[unit]
    return unit


@dataclass(frozen=True, slots=True)
class Normalized:
    """The normalised text, and where each of its pieces came from in the original.

    Piece `k` starts at `starts[k]` in `text` and stands for `original[froms[k]:tos[k]]`;
    `exact[k]` says it is a 1:1 copy (offsets inside it map one to one).
    """

    text: str
    starts: tuple[int, ...]
    froms: tuple[int, ...]
    tos: tuple[int, ...]
    exact: tuple[bool, ...]

    def windows(self, *, margin: int = 8192) -> list[tuple[int, int]]:
        """Spans of `text` worth scanning again: around each changed piece, `margin`
        characters each side (out to whole lines), merged. A secret a disguise hides lies
        across or next to one; the rest of the text was scanned as written already."""
        spans: list[tuple[int, int]] = []
        size = len(self.text)
        for start, exact in zip(self.starts, self.exact, strict=True):
            if exact:
                continue
            begin = max(0, start - margin)
            end = min(size, start + margin)
            line_start = self.text.rfind("\n", max(0, begin - margin), begin)
            line_end = self.text.find("\n", end, min(size, end + margin))
            begin = line_start + 1 if line_start >= 0 else begin
            end = line_end + 1 if line_end >= 0 else end
            if spans and begin <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], end))
            else:
                spans.append((begin, end))
        return spans

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that `text[start:end]` was made from."""
        first = max(bisect.bisect_right(self.starts, start) - 1, 0)
        if self.exact[first]:
            begin = self.froms[first] + (start - self.starts[first])
        else:
            begin = self.froms[first]
        last = max(bisect.bisect_right(self.starts, max(end - 1, start)) - 1, 0)
        if self.exact[last]:
            finish = self.froms[last] + (end - self.starts[last])
        else:
            finish = self.tos[last]
        return begin, max(finish, begin)


def normalize(text: str) -> Normalized | None:
    """`text` with its disguises undone (see the module docstring); None when nothing changes."""
    if text.isascii() and "%" not in text and "\\" not in text and "&" not in text:
        return None
    out: list[str] = []
    starts: list[int] = []
    froms: list[int] = []
    tos: list[int] = []
    exact: list[bool] = []
    length = 0
    changed = False

    def copy(begin: int, end: int) -> None:
        nonlocal length
        if begin >= end:
            return
        if exact and exact[-1] and tos[-1] == begin:
            tos[-1] = end  # extend the exact piece before
        else:
            starts.append(length)
            froms.append(begin)
            tos.append(end)
            exact.append(True)
        out.append(text[begin:end])
        length += end - begin

    def put(begin: int, end: int, replacement: str) -> None:
        nonlocal length, changed
        if replacement == text[begin:end]:
            copy(begin, end)
            return
        changed = True
        starts.append(length)
        froms.append(begin)
        tos.append(end)
        exact.append(False)
        out.append(replacement)
        length += len(replacement)

    at = 0
    for match in _UNIT_RE.finditer(text):
        copy(at, match.start())
        unit = match.group(0)
        if unit[0] in "%\\&":
            decoded = _decode(unit)
            if decoded != unit and not decoded.isascii():
                decoded = "".join(plain_char(c) for c in decoded)
            put(match.start(), match.end(), decoded)
        else:
            for offset, char in enumerate(unit):
                where = match.start() + offset
                put(where, where + 1, plain_char(char))
        at = match.end()
    copy(at, len(text))
    if not changed:
        return None
    return Normalized(
        text="".join(out),
        starts=tuple(starts),
        froms=tuple(froms),
        tos=tuple(tos),
        exact=tuple(exact),
    )
