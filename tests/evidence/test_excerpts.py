"""Explicit code excerpt files: the header, the code, and what goes wrong with them."""

from __future__ import annotations

import pytest

from reporter.evidence.kinds import excerpts

GOOD = """\
reporter-excerpt: 1
path: ./python/sglang/srt/managers/scheduler.py   # repository-relative
lines: 10-12
highlight: 11
repo: sgl-project/sglang
ref: v0.5.2
sha256: {sha}
note: see #123, the all_reduce
---
    def on_idle(self):
        self.check_hicache_events()
        self.self_check_during_idle()

"""


def test_good_excerpt() -> None:
    result = excerpts.parse(GOOD.format(sha="A" * 64), source="x.excerpt")
    (excerpt,) = result.excerpts
    assert excerpt.path == "python/sglang/srt/managers/scheduler.py"
    assert (excerpt.start, excerpt.end, excerpt.highlight) == (10, 12, (11,))
    assert excerpt.lines[1] == "        self.check_hicache_events()"
    assert (excerpt.repo, excerpt.ref, excerpt.file_sha256) == (
        "sgl-project/sglang",
        "v0.5.2",
        "a" * 64,
    )
    assert excerpt.note == "see #123, the all_reduce"
    assert str(excerpt.source) == "x.excerpt:1"
    assert not result.warnings
    assert excerpts.sniff(GOOD)


def test_two_excerpts_and_whole_file() -> None:
    text = "reporter-excerpt: 1\npath: a.py\n---\nx = 1\ny = 2\nreporter-excerpt: 1\npath: b.py\nlines: 5\n---\nz = 3\n"
    first, second = excerpts.parse(text, source="e").excerpts
    assert (first.path, first.start, first.end) == ("a.py", 1, 2)
    assert (second.path, second.start, second.end, second.lines) == ("b.py", 5, 5, ("z = 3",))


@pytest.mark.parametrize(
    ("text", "kept", "message"),
    [
        ("reporter-excerpt: 1\nlines: 1-2\n---\nx\n", 0, "e:1: excerpt without `path:`; skipped"),
        ("reporter-excerpt: 1\npath: a.py\nx = 1\n", 0, "e:3: unknown header line: 'x = 1'"),
        (
            "reporter-excerpt: 1\npath: a.py\n",
            0,
            "e:1: excerpt without a `---` line before the code; skipped",
        ),
        (
            "reporter-excerpt: 1\npath: a.py\nlines: ten\n---\nx\n",
            1,
            "e:3: `lines: ten` is not N or N-M; starts at 1",
        ),
        (
            "reporter-excerpt: 1\npath: a.py\nlines: 9-3\n---\nx\n",
            1,
            "e:3: `lines: 9-3` ends before it starts",
        ),
        (
            "reporter-excerpt: 1\npath: a.py\nlines: 1-5\n---\nx\n",
            1,
            "e:3: `lines: 1-5` names 5 lines but 1 follow; numbered from 1",
        ),
        (
            "reporter-excerpt: 1\npath: a.py\nhighlight: 4, x\n---\nx\n",
            1,
            "e:3: highlight 4 lies outside lines 1-1",
        ),
        (
            "reporter-excerpt: 1\npath: a.py\nrepo: not a repo\n---\nx\n",
            1,
            "e:3: repo 'not a repo' is not owner/name; ignored",
        ),
        (
            "reporter-excerpt: 1\npath: a.py\nsha256: abc\n---\nx\n",
            1,
            "e:3: sha256 is not 64 hex digits; ignored",
        ),
        (
            "hello\nreporter-excerpt: 1\npath: a.py\n---\nx\n",
            1,
            "e:1: text before `reporter-excerpt: 1`: 'hello'",
        ),
    ],
)
def test_problems_are_warnings(text: str, kept: int, message: str) -> None:
    result = excerpts.parse(text, source="e")
    assert len(result.excerpts) == kept
    assert message in [str(w) for w in result.warnings]


def test_sniff() -> None:
    assert excerpts.sniff("\n\nreporter-excerpt: 1\n")
    assert not excerpts.sniff("path: a.py\nreporter-excerpt: 1\n")
    assert not excerpts.sniff("")
