"""Generated regions of a report: find them, seal them, and merge a regeneration into an edited file.

Every generated section of a report sits between two marker lines::

    <!-- reporter:begin id=verdict hash=0123456789abcdef -->
    ## Verdict
    ...
    <!-- reporter:end id=verdict -->

`hash` is the first 16 hex digits of the sha256 of the body (the exact text between the
begin line's newline and the end line) as it was generated, so a later run can tell an
untouched region (body still matches) from one a reviewer edited. Everything outside
regions is the reviewers' and is never changed.

Two more marker kinds are written by `merge`, never by the template:

* an *offer*: newer generated text for a region the reviewer edited, in a collapsed
  `<details>` block between `<!-- reporter:offer id=X hash=H -->` and
  `<!-- reporter:end-offer id=X -->`. An untouched offer is replaced on the next merge;
  an edited one is kept like any reviewer text.
* the *record* `<!-- reporter:regions known=title,verdict,... -->` on the last line: every
  region id this file has been given. A known id that is missing from the file was deleted
  by a reviewer, and stays deleted. To get a deleted section back, remove its id there.

Damaged markers (a begin without its end, an edited marker line, an id used twice) never
cost a byte: the damaged region is read as reviewer text and reported as `Damage`.
Marker lines are recognised anywhere, also inside code fences, so evidence that itself
holds a reporter report would confuse the parser (the parse stays lossless).
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from reporter.core.errors import ReporterError
from reporter.render import frontmatter
from reporter.render import markdown as md

_ID = r"(?P<id>[a-z0-9-]+)"
_HASH = r"(?P<hash>[0-9a-f]{16})"
_TAIL = r"[ \t\r]*"
BEGIN = re.compile(rf"<!-- reporter:begin id={_ID}(?: hash={_HASH})? -->{_TAIL}")
END = re.compile(rf"<!-- reporter:end id={_ID} -->{_TAIL}")
OFFER_BEGIN = re.compile(rf"<!-- reporter:offer id={_ID} hash={_HASH} -->{_TAIL}")
OFFER_END = re.compile(rf"<!-- reporter:end-offer id={_ID} -->{_TAIL}")
RECORD = re.compile(r"<!-- reporter:regions known=(?P<ids>[a-z0-9,-]*) -->" + _TAIL)
# A line that was meant to be a marker but does not match any exact form.
_LOOKS_LIKE = re.compile(r"\s*<!--\s*reporter:")
_LOOSE_ID = re.compile(r"\bid=([a-z0-9]+(?:-[a-z0-9]+)*)")

OFFER_SUMMARY = "reporter: newer generated text for {id} (not applied)"


class RegionError(ReporterError):
    """Generated text whose region markers are malformed (a template bug, not user input)."""


def digest(body: str) -> str:
    """The region hash: first 16 hex digits of sha256 over the UTF-8 body."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    """Reviewer-owned text between regions (or a damaged region, read as text)."""

    raw: str
    line: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Region:
    """One well-formed generated region."""

    id: str
    hash: str | None
    """The recorded hash; None for an unsealed begin marker."""
    body: str
    raw: str
    """Begin line through end line, exactly as in the file."""
    line: int
    """1-based line of the begin marker."""

    @property
    def edited(self) -> bool:
        """True when the body no longer matches what was generated (or nothing was recorded)."""
        return self.hash is None or digest(self.body) != self.hash


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """A collapsed block offering newer generated text for an edited region."""

    id: str
    hash: str
    content: str
    raw: str
    line: int

    @property
    def edited(self) -> bool:
        """True when a reviewer changed the offer's content."""
        return digest(self.content) != self.hash


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """The `reporter:regions known=...` line."""

    ids: tuple[str, ...]
    raw: str
    line: int


Chunk = Text | Region | Offer | Record


@dataclass(frozen=True, slots=True, kw_only=True)
class Damage:
    """A marker problem; the affected lines were read as reviewer text."""

    line: int
    id: str
    """The region id when it could be read from the damaged marker, else ""."""
    problem: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Parsed:
    """A document cut into chunks; `"".join(c.raw for c in chunks)` is the input."""

    chunks: tuple[Chunk, ...]
    damage: tuple[Damage, ...]

    @property
    def regions(self) -> tuple[Region, ...]:
        """The well-formed regions, in file order."""
        return tuple(c for c in self.chunks if isinstance(c, Region))

    @property
    def known(self) -> tuple[str, ...] | None:
        """Ids from the record line(s), in order, or None when the file has no record."""
        records = [c for c in self.chunks if isinstance(c, Record)]
        if not records:
            return None
        return tuple(dict.fromkeys(i for r in records for i in r.ids))

    @property
    def damaged_ids(self) -> frozenset[str]:
        """Region ids named by damaged markers."""
        return frozenset(d.id for d in self.damage if d.id)


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeResult:
    """The merged text and what happened to each region id (each list in file order)."""

    text: str
    updated: tuple[str, ...] = ()
    """Untouched regions whose generated text changed: replaced."""
    unchanged: tuple[str, ...] = ()
    """Untouched regions whose generated text is the same."""
    kept_edited: tuple[str, ...] = ()
    """Edited regions kept byte for byte; nothing newer to offer."""
    conflicts: tuple[str, ...] = ()
    """Edited regions kept byte for byte, with the newer generated text offered beside them."""
    added: tuple[str, ...] = ()
    """Regions new in the generated text, inserted."""
    removed_by_reviewer: tuple[str, ...] = ()
    """Regions a reviewer deleted; not brought back."""
    retired: tuple[str, ...] = ()
    """Untouched regions the generator no longer produces: removed."""
    damaged: tuple[Damage, ...] = ()
    """Marker problems in the existing file; those regions were left as reviewer text."""
    front_matter_added: tuple[str, ...] = ()
    """Front matter keys new in the template, added."""


def _content(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def _loose_id(line: str) -> str:
    match = _LOOSE_ID.search(line)
    return match.group(1) if match else ""


def _exact_marker(line: str) -> bool:
    text = _content(line)
    return any(p.fullmatch(text) for p in (BEGIN, END, OFFER_BEGIN, OFFER_END, RECORD))


def _close(
    lines: frontmatter.LineTable,
    markers: list[int],
    start: int,
    closer: re.Pattern[str],
    ident: str,
) -> int | None:
    """Index of the line closing the block opened at `start`, or None if another marker
    comes first. Only marker lines (`markers`, sorted) are looked at: a report of
    millions of lines with unclosed markers costs one pass, not one per marker."""
    for index in markers[bisect.bisect_right(markers, start) :]:
        line = lines[index]
        if not line.startswith("<!-- reporter:"):
            continue
        text = _content(line)
        match = closer.fullmatch(text)
        if match and match.group("id") == ident:
            return index
        if _exact_marker(line):
            return None
    return None


def parse(text: str, *, first_line: int = 1) -> Parsed:
    """Cut `text` into reviewer text, regions, offers and the record line. Lossless.

    `first_line` is the file line number of the first line of `text` (after front matter).
    Lines are read on demand (`frontmatter.LineTable`); only lines naming `reporter:` are
    looked at one by one, the text between them is kept as one slice.
    """
    lines = frontmatter.LineTable(text)
    markers = lines.with_text("reporter:")
    chunks: list[Chunk] = []
    damage: list[Damage] = []
    pending = 0  # the first line of the reviewer text not yet kept
    index = 0

    def flush(upto: int) -> None:
        if upto > pending:
            chunks.append(Text(raw=lines.join(pending, upto), line=first_line + pending))

    for index in markers:
        if index < pending:
            continue  # inside a region already taken whole
        line = lines[index]
        number = first_line + index
        text_line = _content(line)
        begin = BEGIN.fullmatch(text_line)
        offer = OFFER_BEGIN.fullmatch(text_line)
        if begin or offer:
            match = begin or offer
            assert match is not None
            ident = match.group("id")
            end = _close(lines, markers, index, END if begin else OFFER_END, ident)
            if end is not None:
                flush(index)
                raw = lines.join(index, end + 1)
                inner = lines.join(index + 1, end)
                if begin:
                    chunks.append(
                        Region(id=ident, hash=match.group("hash"), body=inner, raw=raw, line=number)
                    )
                else:
                    chunks.append(
                        Offer(
                            id=ident, hash=match.group("hash"), content=inner, raw=raw, line=number
                        )
                    )
                pending = end + 1
                continue
            what = "begin" if begin else "offer"
            damage.append(
                Damage(
                    line=number, id=ident, problem=f"{what} marker for {ident!r} has no end marker"
                )
            )
        elif record := RECORD.fullmatch(text_line):
            flush(index)
            ids = tuple(i for i in record.group("ids").split(",") if i)
            chunks.append(Record(ids=ids, raw=line, line=number))
            pending = index + 1
            continue
        elif END.fullmatch(text_line) or OFFER_END.fullmatch(text_line):
            damage.append(
                Damage(line=number, id=_loose_id(text_line), problem="end marker without a begin")
            )
        elif _LOOKS_LIKE.match(text_line):
            damage.append(
                Damage(
                    line=number,
                    id=_loose_id(text_line),
                    problem="marker line was edited (not in the form reporter writes)",
                )
            )
    flush(len(lines))
    return _demote_duplicates(chunks, damage)


def _demote_duplicates(chunks: list[Chunk], damage: list[Damage]) -> Parsed:
    """Regions sharing an id cannot be told apart: read them all as reviewer text."""
    counts: dict[str, int] = {}
    for chunk in chunks:
        if isinstance(chunk, Region):
            counts[chunk.id] = counts.get(chunk.id, 0) + 1
    dupes = {ident for ident, n in counts.items() if n > 1}
    out: list[Chunk] = []
    for chunk in chunks:
        if isinstance(chunk, Region) and chunk.id in dupes:
            damage.append(
                Damage(
                    line=chunk.line, id=chunk.id, problem=f"region id {chunk.id!r} appears twice"
                )
            )
            chunk = Text(raw=chunk.raw, line=chunk.line)
        # Adjacent text chunks read better as one.
        if isinstance(chunk, Text) and out and isinstance(out[-1], Text):
            out[-1] = Text(raw=out[-1].raw + chunk.raw, line=out[-1].line)
        else:
            out.append(chunk)
    damage.sort(key=lambda d: (d.line, d.problem))
    return Parsed(chunks=tuple(out), damage=tuple(damage))


def region_text(ident: str, body: str) -> str:
    """A sealed region for `body` (which should end with a newline)."""
    return f"<!-- reporter:begin id={ident} hash={digest(body)} -->\n{body}<!-- reporter:end id={ident} -->\n"


def offer_text(ident: str, body: str) -> str:
    """A collapsed block offering `body` as the newer generated text of region `ident`.

    The text is shown as fenced Markdown source, ready to copy, so its headings do not
    join the report's outline.
    """
    content = (
        f"<details><summary>{OFFER_SUMMARY.format(id=ident)}</summary>\n\n"
        "You edited this section and the evidence changed since. Copy what you want from "
        "the Markdown below into the section, then delete this block; until then "
        "`report draft` refreshes it on every run.\n\n"
        f"{md.fence(body, 'markdown')}\n\n</details>\n"
    )
    return (
        f"<!-- reporter:offer id={ident} hash={digest(content)} -->\n"
        f"{content}<!-- reporter:end-offer id={ident} -->\n"
    )


def record_text(ids: Iterable[str]) -> str:
    """The record line naming every region id the file has been given."""
    return f"<!-- reporter:regions known={','.join(ids)} -->\n"


def seal(text: str) -> str:
    """Fill in the hash of every region in freshly generated `text` and append the record line.

    The template writes `<!-- reporter:begin id=X -->` without a hash; any existing
    hash is recomputed. Raises `RegionError` for malformed markers or repeated ids.
    """
    head, body, start = split_front(text)
    parsed = parse(body, first_line=start)
    if parsed.damage:
        first = parsed.damage[0]
        raise RegionError(f"generated report, line {first.line}: {first.problem}")
    out: list[str] = [head]
    for chunk in parsed.chunks:
        if isinstance(chunk, Region):
            out.append(region_text(chunk.id, chunk.body))
        elif isinstance(chunk, Text):
            out.append(chunk.raw)
        elif isinstance(chunk, Offer):
            raise RegionError(f"generated report, line {chunk.line}: offers are written by merge")
    _append(out, record_text(r.id for r in parsed.regions))
    return "".join(out)


def _has_markers(text: str) -> bool:
    return any(_LOOKS_LIKE.match(line) for line in frontmatter.lines_of(text))


def split_front(text: str) -> tuple[str, str, int]:
    """`frontmatter.split`, except that a front matter block holding marker lines is not one.

    A region pasted into the YAML must stay visible as a region (and the YAML is broken
    anyway), so such a file is read as having no front matter.
    """
    head, body, start = frontmatter.split(text)
    if head and _has_markers(head):
        return "", text, 1
    return head, body, start


def _append(out: list[str], block: str) -> None:
    """Append `block` on a line of its own."""
    if out and out[-1] and not out[-1].endswith("\n"):
        out.append("\n")
    out.append(block)


def merge(existing: str, generated: str) -> MergeResult:
    """Bring `generated` (a sealed draft) into `existing` (a report reviewers may have edited).

    * a region nobody edited gets the new generated body;
    * an edited region is kept byte for byte; if its generated text changed since, the
      new text is offered beside it in a collapsed block (replacing an older offer);
    * text outside regions, and the order of regions, stay as the reviewer left them;
    * a region the reviewer deleted stays deleted (the record line remembers it);
    * a region new in `generated` goes after the nearest preceding region that the
      file still has, or at the end;
    * damaged regions are left as text and reported in `damaged`.
    """
    head_e, body_e, start_e = split_front(existing)
    head_g, body_g, start_g = split_front(generated)
    head = ""
    fm_added: tuple[str, ...] = ()
    damage: list[Damage] = []
    if frontmatter.split(existing)[0] and not head_e:
        # Front matter with region markers pasted into it is left to the reviewer.
        damage.append(
            Damage(
                line=1, id="", problem="region markers inside the front matter; it was not merged"
            )
        )
    else:
        head, fm_added = frontmatter.merge(head_e, head_g)
    old = parse(body_e, first_line=start_e)
    new = parse(body_g, first_line=start_g)
    if new.damage:
        first = new.damage[0]
        raise RegionError(f"generated report, line {first.line}: {first.problem}")

    generated_regions = {r.id: r for r in new.regions}
    order = [r.id for r in new.regions]
    present = {r.id for r in old.regions}
    damaged_ids = old.damaged_ids
    known = set(old.known) if old.known is not None else set(present)

    removed = [i for i in order if i not in present and i not in damaged_ids and i in known]
    fresh = [i for i in order if i not in present and i not in damaged_ids and i not in known]
    # Anchor each new region after the nearest preceding generated region the file has.
    after: dict[str, list[str]] = {}
    at_end: list[str] = []
    for ident in fresh:
        anchor = next((p for p in reversed(order[: order.index(ident)]) if p in present), None)
        (after.setdefault(anchor, []) if anchor else at_end).append(ident)

    out: list[str] = [head]
    foreign: set[str] = set()  # pasted regions kept as text: never entered in the record
    outcome: dict[str, list[str]] = {
        k: [] for k in ("updated", "unchanged", "kept_edited", "conflicts", "added", "retired")
    }
    for chunk in old.chunks:
        if isinstance(chunk, Text):
            out.append(chunk.raw)
        elif isinstance(chunk, Offer):
            # An untouched offer is regenerated below its region if still needed.
            if chunk.edited:
                out.append(chunk.raw)
        elif isinstance(chunk, Region):
            # A region this file was never given (its record does not list it) was pasted
            # in from another report: reviewer text, never retired.
            ours = old.known is None or chunk.id in old.known
            if not ours and chunk.id not in generated_regions:
                foreign.add(chunk.id)
            _merge_region(chunk, generated_regions.get(chunk.id), out, outcome, ours=ours)
            for ident in after.get(chunk.id, ()):
                _append(out, "\n" + region_text(ident, generated_regions[ident].body))
                outcome["added"].append(ident)
    for ident in at_end:
        _append(out, "\n" + region_text(ident, generated_regions[ident].body))
        outcome["added"].append(ident)

    record = [i for i in (old.known or ()) if i not in outcome["retired"]]
    for ident in (*(r.id for r in old.regions), *order):
        if ident not in record and ident not in outcome["retired"] and ident not in foreign:
            record.append(ident)
    _append(out, record_text(record))
    return MergeResult(
        text="".join(out),
        updated=tuple(outcome["updated"]),
        unchanged=tuple(outcome["unchanged"]),
        kept_edited=tuple(outcome["kept_edited"]),
        conflicts=tuple(outcome["conflicts"]),
        added=tuple(outcome["added"]),
        removed_by_reviewer=tuple(removed),
        retired=tuple(outcome["retired"]),
        damaged=(*damage, *old.damage),
        front_matter_added=fm_added,
    )


def _merge_region(
    mine: Region,
    theirs: Region | None,
    out: list[str],
    outcome: dict[str, list[str]],
    *,
    ours: bool = True,
) -> None:
    """Emit one existing region, merged with its regenerated version (if any)."""
    if theirs is None:
        if mine.edited or not ours:
            out.append(mine.raw)
            outcome["kept_edited"].append(mine.id)
        else:
            outcome["retired"].append(mine.id)
        return
    if not mine.edited or mine.body == theirs.body:
        # Untouched, or the reviewer wrote exactly what is now generated: take (and seal) it.
        out.append(region_text(mine.id, theirs.body))
        same = mine.body == theirs.body and not mine.edited
        outcome["unchanged" if same else "updated"].append(mine.id)
        return
    out.append(mine.raw)
    if mine.hash is not None and digest(theirs.body) == mine.hash:
        outcome["kept_edited"].append(mine.id)
        return
    _append(out, offer_text(mine.id, theirs.body))
    outcome["conflicts"].append(mine.id)
