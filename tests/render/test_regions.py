"""Generated regions: parsing, sealing and merging a regeneration into an edited report."""

from __future__ import annotations

import re

import pytest

from reporter.render import regions
from reporter.render.regions import Offer, Record, Region, RegionError, Text

FRONT = "---\nkind: incident-report\nstatus: draft\nowners: []\n---\n"


def _doc(sections: dict[str, str], *, human: str = "## Impact\n\n_TODO(reviewer): who._\n") -> str:
    """A sealed draft: one region per section, then a human section."""
    parts = [FRONT]
    for ident, body in sections.items():
        parts.append(
            f"<!-- reporter:begin id={ident} -->\n{body}<!-- reporter:end id={ident} -->\n\n"
        )
    parts.append(human)
    return regions.seal("".join(parts))


V1 = {"title": "# Hang\n", "verdict": "## Verdict\n\nranks [0-1] in all_reduce\n"}
V2 = {"title": "# Hang\n", "verdict": "## Verdict\n\nranks [0-3] in all_reduce\n"}


def test_seal_fills_hashes_and_appends_the_record() -> None:
    sealed = _doc(V1)
    body = "## Verdict\n\nranks [0-1] in all_reduce\n"
    assert f"<!-- reporter:begin id=verdict hash={regions.digest(body)} -->\n" in sealed
    assert sealed.endswith("<!-- reporter:regions known=title,verdict -->\n")
    assert regions.seal(sealed) == sealed


def test_digest_is_the_first_16_hex_of_sha256() -> None:
    # sha256("") = e3b0c44298fc1c149afbf4c8996fb924...
    assert regions.digest("") == "e3b0c44298fc1c14"


@pytest.mark.parametrize(
    "text",
    [
        "<!-- reporter:begin id=a -->\nx\n",
        "<!-- reporter:begin id=a -->\nx\n<!-- reporter:end id=b -->\n",
        "<!-- reporter:begin id=a -->\n<!-- reporter:end id=a -->\n" * 2,
        "<!-- reporter:offer id=a hash=0123456789abcdef -->\n<!-- reporter:end-offer id=a -->\n",
    ],
)
def test_seal_rejects_malformed_generated_text(text: str) -> None:
    with pytest.raises(RegionError):
        regions.seal(text)


def test_parse_is_lossless_and_typed() -> None:
    text = _doc(V1) + "tail without newline"
    parsed = regions.parse(text)
    assert "".join(c.raw for c in parsed.chunks) == text
    kinds = [type(c) for c in parsed.chunks]
    assert kinds == [Text, Region, Text, Region, Text, Record, Text]
    assert [r.id for r in parsed.regions] == ["title", "verdict"]
    assert parsed.regions[1].line == 10
    assert not any(r.edited for r in parsed.regions)
    assert parsed.known == ("title", "verdict")


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("a\n<!-- reporter:begin id=x hash=0123456789abcdef -->\nb\n", 2, "has no end marker"),
        ("<!-- reporter:end id=x -->\n", 1, "end marker without a begin"),
        (
            "<!-- reporter:begin id=x hash=0123456789abcdef -->\nb\n<!-- reporter:end id=y -->\n",
            1,
            "has no end marker",
        ),
        ("<!--reporter:begin id=x-->\n", 1, "marker line was edited"),
        ("<!-- reporter:begin id=x -->\n<!-- reporter:end id=x -->\n" * 2, 1, "appears twice"),
        (
            "<!-- reporter:offer id=x hash=0123456789abcdef -->\nno end\n",
            1,
            "offer marker for 'x' has no end marker",
        ),
    ],
)
def test_damaged_markers_become_text_and_are_reported(text: str, line: int, problem: str) -> None:
    parsed = regions.parse(text)
    assert "".join(c.raw for c in parsed.chunks) == text
    assert not parsed.regions
    assert parsed.damage[0].line == line
    assert problem in parsed.damage[0].problem
    assert "x" in parsed.damaged_ids or problem == "end marker without a begin"


def test_merge_replaces_untouched_regions() -> None:
    result = regions.merge(_doc(V1), _doc(V2))
    assert result.text == _doc(V2)
    assert result.updated == ("verdict",)
    assert result.unchanged == ("title",)


def test_merge_of_the_same_draft_is_a_fixed_point() -> None:
    draft = _doc(V1)
    result = regions.merge(draft, draft)
    assert result.text == draft
    assert result.unchanged == ("title", "verdict")
    assert not (result.updated or result.conflicts or result.added or result.damaged)


def test_merge_keeps_human_text_byte_for_byte() -> None:
    edited = _doc(V1).replace("_TODO(reviewer): who._", "Everyone on  the\tcluster.\r")
    edited = edited.replace(
        "# Hang\n<!-- reporter:end id=title -->\n",
        "# Hang\n<!-- reporter:end id=title -->\nA note.\n",
    )
    result = regions.merge(edited, _doc(V2))
    assert "Everyone on  the\tcluster.\r\n" in result.text
    assert "<!-- reporter:end id=title -->\nA note.\n" in result.text
    assert "ranks [0-3]" in result.text


def test_edited_region_is_kept_and_newer_text_is_offered_once() -> None:
    edited = _doc(V1).replace("ranks [0-1] in all_reduce", "ranks [0-1] in all_reduce (we checked)")
    first = regions.merge(edited, _doc(V2))
    assert first.conflicts == ("verdict",)
    assert (
        "ranks [0-1] in all_reduce (we checked)\n<!-- reporter:end id=verdict -->\n" in first.text
    )
    assert first.text.count("newer generated text for verdict (not applied)") == 1
    assert "```markdown\n## Verdict\n\nranks [0-3] in all_reduce\n```" in first.text
    # The next run replaces the offer instead of stacking another one.
    again = regions.merge(first.text, _doc(V2))
    assert again.text == first.text
    v3 = {**V2, "verdict": "## Verdict\n\nranks [0-7] in all_reduce\n"}
    third = regions.merge(first.text, _doc(v3))
    assert third.text.count("newer generated text for verdict") == 1
    assert "ranks [0-7]" in third.text and "ranks [0-3]" not in third.text


def test_edited_region_without_new_evidence_is_kept_without_offer() -> None:
    edited = _doc(V1).replace("ranks [0-1] in all_reduce", "ranks 0 and 1")
    result = regions.merge(edited, _doc(V1))
    assert result.kept_edited == ("verdict",)
    assert "reporter:offer" not in result.text
    assert result.text == edited


def test_offer_goes_away_when_the_reviewer_takes_the_new_text() -> None:
    edited = _doc(V1).replace("ranks [0-1] in all_reduce", "mine")
    first = regions.merge(edited, _doc(V2))
    taken = first.text.replace("mine", "ranks [0-3] in all_reduce")
    result = regions.merge(taken, _doc(V2))
    assert result.updated == ("verdict",)
    assert "reporter:offer" not in result.text
    assert result.text == _doc(V2)


def test_edited_offer_is_kept_as_reviewer_text() -> None:
    edited = _doc(V1).replace("ranks [0-1] in all_reduce", "mine")
    first = regions.merge(edited, _doc(V2))
    noted = first.text.replace("Copy what you want", "NOTE TO SELF. Copy what you want")
    result = regions.merge(noted, _doc(V2))
    assert "NOTE TO SELF" in result.text
    parsed = regions.parse(result.text)
    offers = [c for c in parsed.chunks if isinstance(c, Offer)]
    assert [o.edited for o in offers] == [False, True]


def test_deleted_region_stays_deleted() -> None:
    draft = _doc(V1)
    start = draft.index("<!-- reporter:begin id=verdict")
    end = draft.index("<!-- reporter:end id=verdict -->\n") + len(
        "<!-- reporter:end id=verdict -->\n"
    )
    deleted = draft[:start] + draft[end:]
    result = regions.merge(deleted, _doc(V2))
    assert result.removed_by_reviewer == ("verdict",)
    assert "reporter:begin id=verdict" not in result.text
    assert result.text.endswith("known=title,verdict -->\n")
    # Without the record line, the merge cannot tell deleted from new, and adds it.
    unrecorded = deleted.replace("<!-- reporter:regions known=title,verdict -->\n", "")
    assert regions.merge(unrecorded, _doc(V2)).added == ("verdict",)


def test_reordered_regions_keep_the_reviewer_order() -> None:
    draft = _doc({"a": "A1\n", "b": "B1\n", "c": "C1\n"})
    parsed = regions.parse(draft)
    a, _, c = parsed.regions
    reordered = draft.replace(a.raw, "@@A@@").replace(c.raw, a.raw).replace("@@A@@", c.raw)
    result = regions.merge(reordered, _doc({"a": "A2\n", "b": "B2\n", "c": "C2\n"}))
    assert [r.id for r in regions.parse(result.text).regions] == ["c", "b", "a"]
    assert result.updated == ("c", "b", "a")


@pytest.mark.parametrize(
    ("existing", "generated", "order"),
    [
        # New region after the nearest preceding region the file has.
        (["a", "c"], ["a", "b", "c"], ["a", "b", "c"]),
        (["c", "a"], ["a", "b", "c"], ["c", "a", "b"]),
        # Nothing precedes it in the generated text: at the end.
        (["b"], ["a", "b"], ["b", "a"]),
        (["a"], ["a", "b", "c"], ["a", "b", "c"]),
    ],
)
def test_new_regions_are_placed_after_their_nearest_predecessor(
    existing: list[str], generated: list[str], order: list[str]
) -> None:
    old = _doc({i: f"{i}\n" for i in existing})
    new = _doc({i: f"{i}\n" for i in generated})
    result = regions.merge(old, new)
    assert [r.id for r in regions.parse(result.text).regions] == order
    assert set(result.added) == set(generated) - set(existing)


def test_region_the_generator_dropped_is_retired_unless_edited() -> None:
    old = _doc({"a": "A\n", "gone": "G\n", "kept": "K\n"}).replace("K\n", "K edited\n")
    result = regions.merge(old, _doc({"a": "A\n"}))
    assert result.retired == ("gone",)
    assert result.kept_edited == ("kept",)
    assert "reporter:begin id=gone" not in result.text
    assert "K edited\n" in result.text
    assert "known=a,kept -->" in result.text
    # It can come back later: retired ids leave the record.
    back = regions.merge(result.text, _doc({"a": "A\n", "gone": "G2\n"}))
    assert back.added == ("gone",)


def test_damaged_region_is_kept_as_text_and_not_duplicated() -> None:
    draft = _doc(V1)
    broken = draft.replace(
        "<!-- reporter:end id=verdict -->", "<!-- reporter:end id=verdict (x) -->"
    )
    result = regions.merge(broken, _doc(V2))
    assert result.text.count("ranks [0-1] in all_reduce") == 1
    assert "ranks [0-3]" not in result.text
    assert [d.id for d in result.damaged] == ["verdict", "verdict"]
    assert result.added == ()


def test_duplicated_region_is_left_alone() -> None:
    draft = _doc(V1)
    verdict = regions.parse(draft).regions[1].raw
    copied = draft.replace("## Impact", verdict + "## Impact")
    result = regions.merge(copied, _doc(V2))
    assert result.text.count("ranks [0-1] in all_reduce") == 2
    assert "ranks [0-3]" not in result.text
    assert {d.problem for d in result.damaged} == {"region id 'verdict' appears twice"}


def test_front_matter_values_stay_and_new_keys_are_added() -> None:
    old = _doc(V1).replace("status: draft", "status: in-review  # Ana")
    new = _doc(V2).replace("owners: []\n", "owners: []\nincident_start: null\n")
    result = regions.merge(old, new)
    assert result.text.startswith(
        "---\nkind: incident-report\nstatus: in-review  # Ana\nowners: []\nincident_start: null\n---\n"
    )
    assert result.front_matter_added == ("incident_start",)


def test_unsealed_region_counts_as_edited() -> None:
    text = "<!-- reporter:begin id=a -->\nmine\n<!-- reporter:end id=a -->\n"
    result = regions.merge(
        text, regions.seal("<!-- reporter:begin id=a -->\nnew\n<!-- reporter:end id=a -->\n")
    )
    assert result.conflicts == ("a",)
    assert result.text.startswith(text)


def test_missing_final_newline_is_not_glued_to_the_next_block() -> None:
    old = _doc({"a": "A\n"}).replace("<!-- reporter:regions known=a -->\n", "")
    old = old.rstrip("\n")
    result = regions.merge(old, _doc({"a": "A\n", "b": "B\n"}))
    assert all(
        regions.BEGIN.fullmatch(line) or not line.startswith("<!-- reporter:begin")
        for line in result.text.splitlines()
    )
    assert result.added == ("b",)


def test_merge_result_lists_are_in_file_order() -> None:
    old = _doc({"z": "1\n", "a": "1\n", "m": "1\n"})
    result = regions.merge(old, _doc({"z": "2\n", "a": "2\n", "m": "2\n"}))
    assert result.updated == ("z", "a", "m")
    assert re.search(r"known=z,a,m -->\n\Z", result.text)


def test_region_pasted_into_front_matter_is_reported_and_front_matter_left_alone() -> None:
    draft = _doc(V1)
    title = regions.parse(draft).regions[0].raw
    pasted = draft.replace("status: draft\n", "status: draft\n" + title, 1)
    pasted = pasted.replace("owners: []\n", "")
    result = regions.merge(pasted, _doc(V2))
    assert result.damaged[0].problem.startswith("region markers inside the front matter")
    assert result.front_matter_added == ()
    assert "ranks [0-3]" in result.text


def test_region_pasted_from_another_report_is_kept_as_reviewer_text() -> None:
    # Issue 16: an untouched region whose id this file was never given (not in its record)
    # came from another report; a re-draft keeps it instead of retiring it.
    from reporter.render.regions import merge, record_text, region_text

    existing = (
        region_text("verdict", "## Verdict\n\nold\n")
        + "\n"
        + region_text("class-9", "## Class 9\n\npasted from the other incident\n")
        + record_text(["verdict"])
    )
    generated = region_text("verdict", "## Verdict\n\nnew\n") + record_text(["verdict"])
    result = merge(existing, generated)
    assert "pasted from the other incident" in result.text
    assert "class-9" in result.kept_edited
    assert "class-9" not in result.retired
