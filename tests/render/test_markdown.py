"""Escaping and fencing helpers: evidence must never break out of its block."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from reporter.render import markdown as md
from reporter.render import policy


@pytest.mark.parametrize(
    ("text", "opening"),
    [
        ("plain", "```text"),
        ("has ``` inside", "````text"),
        ("has ````` five", "``````text"),
        ("~~~ tildes only", "```text"),
    ],
)
def test_fence_is_longer_than_any_backtick_run(text: str, opening: str) -> None:
    assert md.fence(text).splitlines()[0] == opening


@given(st.text(alphabet=st.sampled_from("`~ \nab|<>#@"), max_size=80))
def test_fenced_text_is_one_code_block_with_the_text_intact(text: str) -> None:
    tokens = MarkdownIt("commonmark").parse(md.fence(text))
    fences = [t for t in tokens if t.type == "fence"]
    assert len(tokens) == 1 and len(fences) == 1
    assert fences[0].content == (text if text.endswith("\n") else text + "\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a|b", "a\\|b"), ("line1\nline2", "line1<br>line2"), ("back\\slash", "back\\\\slash")],
)
def test_cell_escapes_pipes_and_newlines(text: str, expected: str) -> None:
    assert md.cell(text) == expected


def test_code_span_survives_backticks() -> None:
    span = md.code("a`b")
    tokens = MarkdownIt("commonmark").parseInline(span)[0].children
    assert tokens is not None
    assert [t.content for t in tokens if t.type == "code_inline"] == ["a`b"]


def test_mermaid_label_escapes_quotes_and_brackets() -> None:
    label = md.mermaid_label('all_reduce (x.py) ["q"] <T>')
    assert label.startswith('"') and label.endswith('"')
    assert '"' not in label[1:-1] and "[" not in label and "<" not in label


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("TP desync: all_reduce!", "tp-desync-all-reduce"),
        ("***", "incident"),
        ("A" * 100, "a" * 60),
    ],
)
def test_slug(title: str, expected: str) -> None:
    assert md.slug(title) == expected


def test_summary_text_escapes_html() -> None:
    assert md.summary_text("<module> & x\ny") == "&lt;module&gt; &amp; x y"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("cc @alice <b>x</b>", "cc `@alice` &lt;b&gt;x&lt;/b&gt;"),
        ("see #12 and @org/team", "see `#12` and `@org/team`"),
        ("a_b *c* | d", "a\\_b \\*c\\* \\| d"),
        ("mail me@example.com", "mail me@example.com"),
        ("two\nlines", "two lines"),
    ],
)
def test_prose_is_inert(typed: str, expected: str) -> None:
    assert policy.TYPED(typed) == expected
