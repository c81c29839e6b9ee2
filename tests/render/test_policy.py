"""Text policies: the escapes each document uses, and text that waits for the redaction."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reporter.render import markdown as md
from reporter.render.parts import Block
from reporter.render.policy import (
    BARE,
    GENERATED,
    INERT,
    LOCAL,
    TYPED,
    UPSTREAM,
    Deferred,
    Slot,
    Text,
    final,
    later,
    settle,
)


@pytest.mark.parametrize(
    ("escape", "text", "expected"),
    [
        (TYPED, "cc @alice <b>~x~</b>", "cc `@alice` &lt;b&gt;\\~x\\~&lt;/b&gt;"),
        (GENERATED, "a <b> @c ~d~\n e", "a \\<b\\> @c ~d~ e"),
        (INERT, "a <b> @c ~d~\n e", "a \\<b\\> `@c` \\~d\\~ e"),
        (BARE, "a [x]\n@c", "a \\[x\\]\n@c"),
    ],
)
def test_each_escape_keeps_its_own_characters(escape: object, text: str, expected: str) -> None:
    assert callable(escape)
    assert escape(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("uses `a|b` and a|b", "uses `a|b` and a\\|b"),
        ("one ` tick <x>", "one \\` tick \\<x\\>"),  # no span is trusted: all prose
        ("keep\nlines *x*", "keep\nlines \\*x\\*"),
    ],
)
def test_inline_keeps_reporters_own_code_spans(text: str, expected: str) -> None:
    assert LOCAL.inline(text) == expected


def test_local_policy_keeps_evidence_whole() -> None:
    assert LOCAL.evidence("where", "ssh alice@gpu-node-17", "USER") == "ssh alice@gpu-node-17"


@dataclass(frozen=True, slots=True, kw_only=True)
class _View:
    title: Text
    rows: tuple[tuple[str, Text], ...]
    block: Block | None


def test_deferred_text_waits_for_the_redaction_and_settles_in_one_pass() -> None:
    pieces: list[str] = []

    def hook(where: str, text: str, key: str = "") -> Text:
        del where, key
        pieces.append(text)
        return Slot(len(pieces) - 1)

    policy = UPSTREAM.with_evidence(hook)
    host = policy.evidence("title", "gpu-7 `x`")
    view = _View(
        title=later(policy.prose, host),
        rows=(("name", later(md.code_cell, policy.evidence("env", "a|b"))),),
        block=Block(title="t", text=policy.evidence("dump", "line")),
    )
    assert pieces == ["gpu-7 `x`", "a|b", "line"]
    assert isinstance(view.title, Deferred)
    with pytest.raises(TypeError):
        final(view.title)
    done = settle(view, ["<host-1> @x", "<ip-1>|", "done"])
    assert done.title == "`<host-1>` `@x`"
    assert done.rows == (("name", "`<ip-1>\\|`"),)
    assert done.block is not None and done.block.body == "```text\ndone\n```"


def test_later_is_immediate_when_nothing_waits() -> None:
    assert later(md.code, "x") == "`x`"
    assert settle(("a", ("b",)), []) == ("a", ("b",))


def test_an_upstream_title_is_inert_with_mentions_in_code_spans() -> None:
    from reporter.render.policy import github_title

    assert github_title("cc @octocat about #12 and org/repo#3") == (
        "cc `@octocat` about `#12` and `org/repo#3`"
    )
    assert github_title("already `@inert` here") == "already `@inert` here"
    # Escapes are for Markdown bodies; a title shows them as typed, so none are added.
    assert github_title("a_b *c*") == "a_b *c*"
