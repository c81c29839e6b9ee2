"""Property: random reviewer edits, then regeneration with changed evidence, lose no reviewer byte.

Every line's origin can be read from its content, so no bookkeeping can drift:

* reviewer lines contain a unique `rev-N reviewer wrote this` token: lines the reviewer
  inserted, and lines the reviewer rewrote (any line, markers included);
* human lines are the template's text outside regions: the front matter lines and the
  `## Notes after sX` / `_TODO(reviewer): ..._` pairs (the test template has no blank
  lines, so a blank line can only come from the merge itself);
* everything else was written by the generator or by the merge.

"Reviewer byte" here means: every reviewer line and every human line of the edited
file appears in the merged output, in the same relative order (a subsequence of the
output's lines). The reviewer may also delete lines, delete, move or paste whole region
and offer blocks, and write lines that look like damaged markers. After each merge we
also check: merging the result again with the same draft changes nothing (offers are
replaced, not stacked); a region the reviewer deleted, and that the record line names,
does not come back; a region the reviewer did not touch carries the new generated body;
parsing is lossless.

Each example runs two rounds: draft v1 -> edits -> merge v2 -> edits -> merge v3, so
edits also land inside offers and regions the first merge wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reporter.render import regions

IDS = [f"s{i}" for i in range(10)]
FRONT = "---\nkind: incident-report\nstatus: draft\nowners: []\n---\n"
HUMAN = {
    *FRONT.splitlines(),
    *(f"## Notes after {i}" for i in IDS),
    *(f"_TODO(reviewer): about {i}._" for i in IDS),
}
REVIEWER = re.compile(r"rev-\d+ reviewer wrote this")
OPS = ("insert", "delete", "rewrite", "move", "copy", "drop-block", "insert-marker-like")

Edit = tuple[str, int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    id: str
    version: int
    size: int
    human_after: bool


def owned(line: str) -> bool:
    """True for reviewer and human lines: the ones a merge must keep."""
    return bool(REVIEWER.search(line)) or line in HUMAN


def generate(sections: list[Section]) -> str:
    """The sealed draft for one state of the evidence."""
    parts = [
        FRONT,
        "<!-- reporter:begin id=title -->\n# Hang report\n<!-- reporter:end id=title -->\n",
    ]
    for s in sections:
        body = f"## Section {s.id}\n" + "".join(
            f"{s.id} evidence v{s.version} line {j}\n" for j in range(s.size)
        )
        parts.append(f"<!-- reporter:begin id={s.id} -->\n{body}<!-- reporter:end id={s.id} -->\n")
        if s.human_after:
            parts.append(f"## Notes after {s.id}\n_TODO(reviewer): about {s.id}._\n")
    return regions.seal("".join(parts))


def blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(start, end exclusive, id) of every well-formed region or offer block."""
    found = []
    index = 0
    while index < len(lines):
        begin = regions.BEGIN.fullmatch(lines[index])
        opener = begin or regions.OFFER_BEGIN.fullmatch(lines[index])
        if opener:
            closer = regions.END if begin else regions.OFFER_END
            for end in range(index + 1, len(lines)):
                m = closer.fullmatch(lines[end])
                if m and m.group("id") == opener.group("id"):
                    found.append((index, end + 1, opener.group("id")))
                    index = end
                    break
        index += 1
    return found


class Reviewer:
    """Applies edits to a list of lines; positions are taken modulo the current length."""

    def __init__(self) -> None:
        self.counter = 0

    def apply(self, lines: list[str], op: str, a: int, b: int, deleted: set[str]) -> None:
        self.counter += 1
        token = f"rev-{self.counter} reviewer wrote this"
        if op == "insert" or not lines:
            lines.insert(a % (len(lines) + 1), token)
        elif op == "delete":
            del lines[a % len(lines)]
        elif op == "rewrite":
            lines[a % len(lines)] = f"{token} (was: {lines[a % len(lines)][:20]})"
        elif op == "insert-marker-like":
            lines.insert(a % (len(lines) + 1), f"<!-- reporter: {token} -->")
        else:
            found = blocks(lines)
            if not found:
                return
            start, end, ident = found[a % len(found)]
            block = lines[start:end]
            if op == "drop-block":
                del lines[start:end]
                if regions.BEGIN.fullmatch(block[0]):
                    deleted.add(ident)
                return
            if op == "move":
                del lines[start:end]
            at = b % (len(lines) + 1)
            lines[at:at] = block


def is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


def untouched(lines: list[str], draft: str) -> set[str]:
    """Ids of regions whose block from `draft` is in `lines` as it was, and named nowhere else."""
    ids = set()
    for region in regions.parse(draft).regions:
        block = region.raw.splitlines()
        mentions = [n for n, line in enumerate(lines) if f"id={region.id} " in line]
        if len(mentions) == 2 and lines[mentions[0] : mentions[0] + len(block)] == block:
            ids.add(region.id)
    return ids


def check_round(lines: list[str], old_draft: str, new_draft: str, deleted: set[str]) -> str:
    existing = "".join(line + "\n" for line in lines)
    result = regions.merge(existing, new_draft)
    out = result.text.split("\n")
    mine = [line for line in lines if owned(line)]
    # 1. No reviewer byte lost.
    assert is_subsequence(mine, out), (existing, result.text)
    # 2. Merging again changes nothing: offers are replaced, not stacked. (Where markers
    # are damaged, a second merge may drop an untouched region that the first one
    # un-nested; there only the reviewer's lines are checked again.)
    again = regions.merge(result.text, new_draft).text
    if not result.damaged:
        assert again == result.text
    assert is_subsequence(mine, again.split("\n"))
    # 3. A deleted region that the record line names stays deleted.
    known = {
        ident
        for line in lines
        if (record := regions.RECORD.fullmatch(line))
        for ident in record.group("ids").split(",")
    }
    begins = {m.group("id") for line in out if (m := regions.BEGIN.fullmatch(line))}
    for ident in deleted & known:
        if not any(f"id={ident} " in line for line in lines):
            assert ident not in begins
    # 4. Untouched regions carry the new generated body.
    fresh = {r.id: r for r in regions.parse(new_draft).regions}
    for ident in untouched(lines, old_draft) & fresh.keys():
        assert regions.region_text(ident, fresh[ident].body) in result.text
    # 5. Parsing is lossless whatever the reviewer did.
    assert "".join(c.raw for c in regions.parse(existing).chunks) == existing
    return result.text


@st.composite
def evolve(draw: st.DrawFn, previous: list[Section]) -> list[Section]:
    """The evidence changes: sections stay, change, vanish, or appear."""
    out: list[Section] = []
    for s in previous:
        fate = draw(st.sampled_from(["same", "same", "changed", "changed", "gone"]))
        if fate == "same":
            out.append(s)
        elif fate == "changed":
            size = draw(st.integers(1, 4))
            out.append(
                Section(id=s.id, version=s.version + 1, size=size, human_after=s.human_after)
            )
    unused = [i for i in IDS if i not in {s.id for s in previous}]
    for ident in draw(st.lists(st.sampled_from(unused), unique=True, max_size=2)):
        at = draw(st.integers(0, len(out)))
        size = draw(st.integers(1, 3))
        out.insert(at, Section(id=ident, version=1, size=size, human_after=draw(st.booleans())))
    return out


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[list[Section]], list[list[Edit]]]:
    ids = draw(st.lists(st.sampled_from(IDS), unique=True, min_size=2, max_size=6))
    first = [
        Section(id=i, version=1, size=draw(st.integers(1, 4)), human_after=draw(st.booleans()))
        for i in ids
    ]
    second = draw(evolve(first))
    third = draw(evolve(second))
    op = st.tuples(st.sampled_from(OPS), st.integers(0, 10_000), st.integers(0, 10_000))
    edits = [draw(st.lists(op, max_size=10)) for _ in range(2)]
    return [first, second, third], edits


@settings(
    max_examples=2500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario())
def test_reviewer_edits_survive_regeneration(
    case: tuple[list[list[Section]], list[list[Edit]]],
) -> None:
    states, edits = case
    draft = generate(states[0])
    lines = draft.splitlines()
    reviewer = Reviewer()
    for round_edits, state in zip(edits, states[1:], strict=True):
        deleted: set[str] = set()
        for op, a, b in round_edits:
            reviewer.apply(lines, op, a, b, deleted)
        new_draft = generate(state)
        lines = check_round(lines, draft, new_draft, deleted).splitlines()
        draft = new_draft


def test_the_model_reads_origins_from_content() -> None:
    draft = generate([Section(id="s1", version=1, size=2, human_after=True)])
    lines = draft.splitlines()
    assert [line for line in lines if owned(line)] == [
        *FRONT.splitlines(),
        "## Notes after s1",
        "_TODO(reviewer): about s1._",
    ]
    assert "" not in lines
    assert [ident for _, _, ident in blocks(lines)] == ["title", "s1"]
    reviewer = Reviewer()
    deleted: set[str] = set()
    reviewer.apply(lines, "drop-block", 1, 0, deleted)
    assert deleted == {"s1"} and not any("s1 evidence" in line for line in lines)
    reviewer.apply(lines, "rewrite", 0, 0, deleted)
    assert owned(lines[0]) and lines[0].startswith("rev-2 reviewer wrote this (was: ---)")
