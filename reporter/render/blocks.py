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
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

# Texts up to this size are parsed whole; larger ones in pieces of about `PIECE`.
WHOLE = 1 << 20
PIECE = 1 << 18
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")


def pieces(text: str, *, piece: int | None = None) -> Iterator[tuple[int, str]]:
    """(0-based first line, text) of block-aligned pieces of `text` of about `piece`
    characters (default `PIECE`), in order; joined, they are `text`."""
    piece = piece or PIECE
    if len(text) <= WHOLE:
        yield 0, text
        return
    start = 0  # offset of the piece being built
    first_line = 0
    line_no = 0
    fence = ""  # the open fence's marker, "" outside one
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
        elif comment:
            comment = "-->" not in line
        else:
            opened = _FENCE_RE.match(line)
            if opened:
                fence = opened.group(1)
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


def token_pieces(md: MarkdownIt, text: str) -> Iterator[list[Token]]:
    """The tokens of `text`, one piece at a time (see `pieces`), maps in whole-text lines."""
    env: dict[str, object] = {}
    for first_line, piece in pieces(text):
        tokens = md.parse(piece, env)
        if first_line:
            for token in tokens:
                if token.map:
                    token.map = [token.map[0] + first_line, token.map[1] + first_line]
        yield tokens
