"""A standalone HTML page for a report: no network, no JavaScript, nothing unescaped.

Input: the report's Markdown text. Output: one HTML document with embedded CSS:

* the title and the summary block first; the front matter after them, collapsed, its
  summary line naming the keys that are set (a fresh draft's are mostly empty);
* tables, task lists and `<details>` blocks (evidence stays collapsible);
* code blocks (the rank tree included) in monospace without wrapping;
* Mermaid `flowchart` and `xychart-beta` blocks drawn as inline SVG by `svg.py`;
  other Mermaid kinds stay as code.

Raw HTML in the Markdown passes only through an allow-list (`details`, `summary`,
`br`, a few inline tags, rebuilt from their names without attributes); everything else
is shown as text, comments are dropped, and a Content-Security-Policy forbids scripts in
case anything slipped through. Tags are found with markdown-it's own CommonMark grammar
for raw HTML (the one that decided the text is HTML), in time linear in the text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common import html_re
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.tasklists import tasklists_plugin

from reporter.render import blocks, frontmatter, svg

ALLOWED_TAGS = frozenset(
    {"details", "summary", "br", "b", "i", "em", "strong", "code", "kbd", "sub", "sup", "s",
     "del", "ins", "mark", "small", "p", "hr", "span", "div", "input"}
)  # fmt: skip
# markdown-it's CommonMark grammar for one piece of raw HTML, joined here without the
# leading `^` markdown-it-py 3 puts on its own compiled HTML_TAG_RE (it anchors to the
# start of the string, not to the position a match is tried at).
_HTML_TAG = re.compile(
    "|".join(
        (
            html_re.open_tag,
            html_re.close_tag,
            html_re.comment,
            html_re.processing,
            html_re.declaration,
            html_re.cdata,
        )
    )
)
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)")
# Raw-HTML pieces whose end may lie anywhere later in the text (comment, processing
# instruction, CDATA, declaration): opener and closer. Where no closer follows, the
# opener is text; checking that first keeps a long run of unclosed openers linear.
_OPEN_ENDED = (("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>"), ("<!", ">"))
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")

CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #f6f7f9; color: #1b1b1b;
  font: 15px/1.55 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main.report { max-width: 1100px; margin: 24px auto; padding: 24px 40px; background: #fff;
  border: 1px solid #d9dde3; border-radius: 8px; }
h1 { font-size: 1.8em; border-bottom: 1px solid #d9dde3; padding-bottom: .3em; }
h2 { font-size: 1.35em; border-bottom: 1px solid #e6e8eb; padding-bottom: .25em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 12px 0; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d4da; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .9em;
  background: #f0f2f5; padding: .1em .3em; border-radius: 4px; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; border-radius: 6px; padding: 10px 12px;
  overflow-x: auto; white-space: pre; line-height: 1.35; }
pre code { background: none; padding: 0; font-size: 13px; white-space: pre; }
details { border: 1px solid #d9dde3; border-radius: 6px; padding: 4px 12px; margin: 10px 0; }
details > summary { cursor: pointer; font-weight: 600; padding: 4px 0; }
figure.mermaid { margin: 12px 0; overflow-x: auto; border: 1px solid #e1e4e8; border-radius: 6px;
  padding: 8px; background: #fff; }
figure.mermaid svg { display: block; }
figure.mermaid svg.mermaid-xychart { width: 100%; height: auto; }
details.front-matter { font-size: .85em; color: #444; }
table.front-matter { font-size: .9em; }
table.front-matter th { width: 11em; }
.task-list-item { list-style: none; }
.task-list-item input { margin-right: .5em; }
blockquote { margin: 0; padding: 0 1em; color: #555; border-left: 4px solid #d0d4da; }
.source-note { color: #666; font-size: .85em; }
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _markdown() -> MarkdownIt:
    md = (
        MarkdownIt("commonmark", {"html": True})
        .enable(["table", "strikethrough"])
        .use(front_matter_plugin)
        .use(tasklists_plugin)
    )
    md.add_render_rule("html_block", _render_html)
    md.add_render_rule("html_inline", _render_html)
    md.add_render_rule("front_matter", _render_front_matter)
    md.add_render_rule("fence", _render_fence)
    return md


def sanitize(fragment: str) -> str:
    """Keep allow-listed tags without their attributes (but `<details open>` and a disabled
    checkbox for `<input>`); escape every other tag; drop comments."""
    out: list[str] = []
    last = {closer: fragment.rfind(closer) for _opener, closer in _OPEN_ENDED}
    pos = 0
    start = fragment.find("<")
    while start >= 0:
        unclosed = any(
            fragment.startswith(opener, start) and last[closer] < start + len(opener)
            for opener, closer in _OPEN_ENDED
        )
        match = None if unclosed else _HTML_TAG.match(fragment, start)
        if match is None:
            start = fragment.find("<", start + 1)
            continue
        out.append(_escape_text(fragment[pos:start]))
        out.append(_allowed(match.group(0)))
        pos = match.end()
        start = fragment.find("<", pos)
    out.append(_escape_text(fragment[pos:]))
    return "".join(out)


def _allowed(piece: str) -> str:
    """One raw-HTML piece: an allow-listed tag rebuilt from its name, a comment dropped, the
    rest (other tags, declarations, processing instructions) escaped as text."""
    if piece.startswith("<!--"):
        return ""
    tag = _TAG_NAME.match(piece)
    if tag is None:
        return _escape_text(piece)
    name = tag.group(1).lower()
    if name not in ALLOWED_TAGS:
        return html.escape(piece, quote=False)
    attrs = piece[tag.end() : -1]
    if piece.startswith("</"):
        return f"</{name}>"
    if name == "details" and re.search(r"(?:^|\s)open(?:\s|=|$)", attrs):
        return "<details open>"
    if name == "input":
        # Task-list checkboxes (the tasklists plugin writes them as inline HTML).
        checked = " checked" if re.search(r"\bchecked\b", attrs) else ""
        return f'<input type="checkbox" disabled{checked}>'
    return f"<{name}>"


def _escape_text(text: str) -> str:
    """Escape text between tags, keeping character references that are already there."""
    pieces: list[str] = []
    pos = 0
    for match in _ENTITY.finditer(text):
        pieces.append(html.escape(text[pos : match.start()], quote=False))
        pieces.append(match.group(0))
        pos = match.end()
    pieces.append(html.escape(text[pos:], quote=False))
    return "".join(pieces)


def _render_html(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return sanitize(tokens[idx].content)


def _render_front_matter(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """The front matter as a collapsed table; the summary line names what is set."""
    front = frontmatter.parse(f"---\n{tokens[idx].content}\n---\n")
    if front is None or front.data is None:
        return (
            '<details class="front-matter"><summary>Front matter</summary>'
            f'<pre class="front-matter">{html.escape(tokens[idx].content)}</pre></details>\n'
        )
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_value(v))}</td></tr>"
        for k, v in front.data.items()
    )
    set_keys = [
        f"{k}: {_value(v)}"
        for k, v in front.data.items()
        if v not in (None, [], "", {}) and k not in ("kind",)
    ]
    shown = "; ".join(set_keys[:4]) + ("; …" if len(set_keys) > 4 else "")
    label = f"Front matter ({shown})" if shown else "Front matter"
    return (
        f'<details class="front-matter"><summary>{html.escape(label)}</summary>'
        f'<table class="front-matter"><tbody>{rows}</tbody></table></details>\n'
    )


class _Raw(str):
    """Output text queued between values while flattening (never a value itself)."""

    __slots__ = ()


def _value(value: Any) -> str:
    """A front-matter value as one line; nested lists and maps flattened without recursion."""
    if isinstance(value, list) and not value:
        return "—"
    parts: list[str] = []
    # Work items: a value, or output text (`_Raw`); reviewers' YAML nests freely.
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, _Raw):
            parts.append(item)
        elif item is None:
            parts.append("—")
        elif isinstance(item, list):
            pieces: list[Any] = []
            for index, member in enumerate(item):
                if index:
                    pieces.append(_Raw(", "))
                pieces.append(member)
            pending.extend(reversed(pieces or [_Raw("—")]))
        elif isinstance(item, Mapping):
            pieces = []
            for index, (key, member) in enumerate(item.items()):
                pieces.append(_Raw((", " if index else "") + f"{key}: "))
                pieces.append(member)
            pending.extend(reversed(pieces))
        else:
            parts.append(str(item))
    return "".join(parts)


def _render_fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    if token.info.split()[:1] == ["mermaid"]:
        count = env.setdefault("mermaid_count", 0)
        env["mermaid_count"] = count + 1
        drawing = svg.draw(token.content, uid=f"m{count}")
        if drawing is not None:
            return (
                f'<figure class="mermaid">{drawing}</figure>\n'
                "<details><summary>Mermaid source</summary>"
                f"<pre><code>{html.escape(token.content)}</code></pre></details>\n"
            )
    return self.fence(tokens, idx, options, env)


def _first_screen_first(md: MarkdownIt, tokens: list[Token], env: dict[str, Any]) -> str:
    """The page body: the title and summary first, then the front matter (collapsed),
    then the rest. Without a summary section, the front matter follows the title block."""
    front = [i for i, t in enumerate(tokens) if t.type == "front_matter"]
    if not front:
        return str(md.renderer.render(tokens, md.options, env))
    rest = [t for i, t in enumerate(tokens) if i not in front]
    h2 = [i for i, t in enumerate(rest) if t.type == "heading_open" and t.tag == "h2"]
    summary = next(
        (n for n, i in enumerate(h2) if i + 1 < len(rest) and rest[i + 1].content == "Summary"),
        None,
    )
    if summary is not None:
        cut = h2[summary + 1] if summary + 1 < len(h2) else len(rest)
    else:
        cut = h2[0] if h2 else len(rest)
    # A region's end marker sits just before the next section: keep it with the summary.
    head = str(md.renderer.render(rest[:cut], md.options, env))
    matter = str(md.renderer.render([tokens[i] for i in front], md.options, env))
    tail = str(md.renderer.render(rest[cut:], md.options, env))
    return head + matter + tail


def title_of(tokens: Sequence[Token]) -> str:
    """The text of the first H1, or ""."""
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1" and index + 1 < len(tokens):
            return tokens[index + 1].content
    return ""


def to_html(text: str, *, source: str = "") -> str:
    """The whole preview page for one report's Markdown text."""
    md = _markdown()
    env: dict[str, Any] = {}
    parts: list[str] = []
    title = ""
    # A piece at a time (`blocks`): a 50 MB report is not millions of tokens at once. The
    # first piece holds the front matter, the title and the summary: it is laid out first
    # screen first.
    for first_line, piece in blocks.pieces(text):
        fenced = blocks.big_fence(piece, first_line)
        tokens = [fenced] if fenced is not None else md.parse(piece, env)
        title = title or title_of(tokens)
        if not parts:
            parts.append(_first_screen_first(md, tokens, env))
        else:
            parts.append(md.renderer.render(tokens, md.options, env))
    body = "".join(parts)
    del parts
    title = title or source or "report"
    note = (
        f'<p class="source-note">Preview of <code>{html.escape(source)}</code>; '
        "made by <code>report preview</code>, needs no network.</p>\n"
        if source
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f'<main class="report">\n{note}{body}</main>\n</body>\n</html>\n'
    )
