"""Issue references in query text: which count, which are left out."""

from __future__ import annotations

from reporter.upstream.refs import MAX_REFERENCES, cited

SG = "sgl-project/sglang"


def test_a_bare_number_in_the_searched_repository() -> None:
    assert cited("[BUG] The #3836 problem still exists", (SG,)) == ((SG, 3836),)


def test_qualified_references_and_urls_count_only_for_searched_repositories() -> None:
    text = (
        "https://github.com/sgl-project/sglang/issues/10038[Bug] again; "
        "see SGL-Project/SGLang#5 and vllm-project/vllm#7, "
        "https://github.com/vllm-project/vllm/pull/9"
    )
    assert cited(text, (SG,)) == ((SG, 10038), (SG, 5))
    assert cited(text, (SG, "vllm-project/vllm")) == (
        (SG, 10038),
        ("vllm-project/vllm", 9),
        (SG, 5),
        ("vllm-project/vllm", 7),
    )


def test_a_bare_number_names_nothing_when_several_repositories_are_searched() -> None:
    assert cited("same as #12", (SG, "vllm-project/vllm")) == ()


def test_numbers_that_only_look_like_references_are_left_out() -> None:
    text = "#0  0x00007f3a in pthread_cond_wait\nthread #3 waits, rank #1 too, GPU #0\nissue#4"
    assert cited(text, (SG,)) == ()


def test_at_most_max_references() -> None:
    text = " ".join(f"#{n}" for n in range(1, 100))
    assert len(cited(text, (SG,))) == MAX_REFERENCES
