"""Parse a large Markdown document a piece at a time, so memory stays near the file's size.

markdown-it builds one token object per block and inline element: a report grown to 50 MB
of short paragraphs is millions of tokens, some 45 bytes of memory per byte of text. Lint,
status and preview need the tokens, not all of them at once. `token_pieces` cuts a large
text into pieces at block boundaries and parses one piece at a time, each token's `map`
shifted to its line in the whole text; a text under `WHOLE` is parsed whole, exactly as
before.

A piece ends only at a blank line outside any fenced code block and HTML comment, and
never right before a line starting with `---` (which would read as front matter or a
setext underline). What can differ from a whole parse, on large texts only: a list split
by blank lines becomes two lists, and a link reference defined in a later piece does not
serve an earlier one (the pieces share one parser environment, so earlier ones do).
Neither changes a lint finding, a title, a placeholder line or the text a preview shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

# Texts up to this size are parsed whole; larger ones in pieces of about `PIECE`.
WHOLE = 1 << 20
PIECE = 1 << 18
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")


def pieces(text: str, *, piece: int | None = None) -> Iterator[tuple[int, str]]:
    """(0-based first line, text) of block-aligned pieces of `text` of about `piece`
    characters (default `PIECE`), in order; joined, they are `text`. A fenced block at the
    margin larger than a piece is a piece of its own (`token_pieces` does not parse it)."""
    piece = piece or PIECE
    if len(text) <= WHOLE:
        yield 0, text
        return
    start = 0  # offset of the piece being built
    first_line = 0
    line_no = 0
    fence = ""  # the open fence's marker, "" outside one
    fence_at, fence_line = 0, 0  # where the open fence started (offset, line)
    comment = False
    at = 0
    size = len(text)
    while at < size:
        end = text.find("\n", at)
        end = size if end < 0 else end + 1
        line = text[at:end]
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = ""
                if end - fence_at > piece and text[fence_at] in "`~":
                    if fence_at > start:
                        yield first_line, text[start:fence_at]
                    yield fence_line, text[fence_at:end]
                    start, first_line = end, line_no + 1
        elif comment:
            comment = "-->" not in line
        else:
            opened = _FENCE_RE.match(line)
            if opened:
                fence = opened.group(1)
                fence_at, fence_line = at, line_no
            elif "<!--" in line and "-->" not in line[line.find("<!--") :]:
                comment = True
        line_no += 1
        at = end
        if (
            not fence
            and not comment
            and not stripped
            and at - start >= piece
            and at < size
            and not text.startswith("---", at)
        ):
            yield first_line, text[start:at]
            start, first_line = at, line_no
    if start < size:
        yield first_line, text[start:]


def big_fence(text: str, first_line: int) -> Token | None:
    """The fence token of a piece that is one large fenced block at the margin (see
    `pieces`), made without parsing it: markdown-it would keep per-line tables for
    every line of a pasted 50 MB log, only to say "a code block"."""
    if len(text) <= PIECE or text[:1] not in "`~":
        return None
    opening, _, rest = text.partition("\n")
    marker = _FENCE_RE.match(opening)
    if marker is None:
        return None
    body, _, closing = rest.rstrip("\n").rpartition("\n")
    mark = marker.group(1)
    if not closing.strip().startswith(mark) or closing.strip().strip(mark[0]):
        return None
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    return Token(
        "fence",
        "code",
        0,
        map=[first_line, first_line + lines],
        content=body + "\n" if body else "",
        markup=mark,
        info=opening[len(mark) :].strip(),
        block=True,
    )


def token_pieces(
    md: MarkdownIt, text: str, *, only: Callable[[str], bool] | None = None
) -> Iterator[list[Token]]:
    """The tokens of `text`, one piece at a time (see `pieces`), maps in whole-text lines;
    with `only`, the pieces it refuses are not parsed at all."""
    env: dict[str, object] = {}
    for first_line, piece in pieces(text):
        if only is not None and not only(piece):
            continue
        fenced = big_fence(piece, first_line)
        if fenced is not None:
            yield [fenced]
            continue
        tokens = md.parse(piece, env)
        if first_line:
            for token in tokens:
                if token.map:
                    token.map = [token.map[0] + first_line, token.map[1] + first_line]
        yield tokens
