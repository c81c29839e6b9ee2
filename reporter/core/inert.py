"""Evidence made inert for a terminal: control sequences and invisible reordering removed.

Evidence is text an attacker (or a broken program) may have written: escape sequences
that clear the screen, move the cursor, set the window title, write the clipboard
(OSC 52) or hide text (`\\r` overprinting, bidi overrides). Whatever the tool prints from
evidence goes through `for_terminal` first. Plain colours (SGR, `ESC [ ... m`) are
removed too: they are the program's, not ours.

    for_terminal("ok\\x1b]0;pwned\\x07 \\x1b[2Jdone\\r") -> "ok done"
"""

from __future__ import annotations

import re

# ESC-introduced sequences: CSI (bounded parameters), OSC / DCS / APC / PM / SOS strings up to
# their terminator (bounded: an unterminated one is cut at the limit), and two-byte escapes.
_ESCAPES_RE = re.compile(
    r"\x1b\[[0-?]{0,64}[ -/]{0,8}[@-~]?"
    r"|\x1b[\]P_^X][^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)?"
    r"|\x9b[0-?]{0,64}[ -/]{0,8}[@-~]?"
    r"|\x1b[ -~]?"
)
# C0 controls but tab and newline, DEL, C1 controls, bidi marks, embeddings, overrides and
# isolates, and the zero-width characters that hide text inside a word (space, joiners,
# word joiner, invisible operators, the BOM).
_CONTROLS_RE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u2069\ufeff]"
)


def for_terminal(text: str) -> str:
    """`text` with escape sequences and control characters removed (tab, newline kept).

    A lone `\\r` is dropped; `\\r\\n` becomes `\\n`. Linear in the length of `text`.
    """
    if not text.isascii() or not text.isprintable() or "\x1b" in text:
        text = _ESCAPES_RE.sub("", text.replace("\r\n", "\n"))
        text = _CONTROLS_RE.sub("", text)
    return text


def for_document(text: str) -> str:
    """`for_terminal` for a file we write (a report, an upstream draft, a bundle file
    collect wrote): `cat`, `less` or an editor shows it as text, never runs it."""
    return for_terminal(text)


def one_line(text: str, *, limit: int = 300) -> str:
    """The first line of `text`, inert, cut to `limit` characters (for error messages)."""
    first = for_terminal(text).strip().split("\n", 1)[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"
