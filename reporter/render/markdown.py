"""Markdown escaping and fencing helpers, so templates never do string surgery.

GitHub rules these follow (formats.md 6.6): a fence of N backticks closes only on a
line of at least N backticks, so evidence gets a fence longer than any run inside it;
`|` breaks table cells; `@name` and `#123` ping people and link issues unless they
sit in code.
"""

from __future__ import annotations

import re

_BACKTICK_RUN = re.compile(r"`+")
_MERMAID_UNSAFE = re.compile(r'["<>#&`\[\]{}|]')


def fence(text: str, info: str = "text") -> str:
    """Wrap `text` in a backtick fence that nothing inside it can close."""
    longest = max((len(m) for m in _BACKTICK_RUN.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def code(text: str) -> str:
    """Inline code span that survives backticks inside `text`."""
    if not text:
        return ""
    longest = max((len(m) for m in _BACKTICK_RUN.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def cell(text: str) -> str:
    """Text safe inside a table cell: pipes escaped, newlines folded."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def code_cell(text: str) -> str:
    """An inline code span safe inside a table cell (a `|` would end the cell even in code)."""
    return code(text.replace("\r", "").replace("\n", " ")).replace("|", "\\|") if text else ""


def summary_text(text: str) -> str:
    """Text safe inside `<summary>`: HTML-escaped, on one line."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def mermaid_label(text: str) -> str:
    """A quoted Mermaid node label: characters Mermaid parses specially become entities."""
    escaped = _MERMAID_UNSAFE.sub(lambda m: f"#{ord(m.group(0))};", text)
    return f'"{escaped}"'


def slug(text: str, *, limit: int = 60) -> str:
    """Lower-case, dash-separated file-name part: 'TP desync: all_reduce' -> 'tp-desync-all-reduce'.

    Accents are transliterated ('Désync' -> 'desync'); letters with no ASCII form (CJK,
    Cyrillic) add a short hash of the text, so two such titles never share a file name.
    """
    import hashlib
    import unicodedata

    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    out = "-".join(words)[:limit].strip("-")
    lost = any(
        unicodedata.category(c).startswith(("L", "N")) and not c.isascii()
        for c in unicodedata.normalize("NFKD", text)
    )
    if lost:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
        return f"{out[: max(limit - 9, 0)]}-{digest}".strip("-")
    return out or "incident"
