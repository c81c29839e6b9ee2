"""Score candidate issues against a query and say why: pure functions, no I/O.

Inputs: a `Query`, the stored candidates with their BM25 scores, and document
frequencies (terms and frame keys) from the index. Output: `Candidate`s, best first
(score, then repo, then number), each with a `Level` and `Reasons`.

Sub-scores, each in [0, 1]:

* `text`   share of the query's term weight (term weight x IDF) found in the
           candidate's title and body;
* `title`  fuzzy similarity of the titles (RapidFuzz token-set and token-sort ratios on
           the stemmed content words, averaged), leaving out the query title's words
           that more than `TITLE_COMMON_SHARE` of the issues use;
* `bm25`   FTS5's BM25, relative to the best candidate *of the same repository*
           (BM25 depends on a repo's vocabulary and lengths; relative to its own best
           it compares across repos);
* `semantic` cosine similarity of the titles' embeddings (`semantic.py`, the form's
           `[Bug]` tags left out), floored at 0; None when the model is not installed;
* `stack`  position-weighted stack similarity (below); None when the query has no stack;
* `error`  best fuzzy match between normalised error lines, scaled down when many
           candidates share the line (generic errors); None unless both have one.

Stack similarity, after TraceSim: frames are compared by key (short function name,
generic frames already dropped by extraction). A frame weighs
`(1 + position) ** -POSITION_DECAY x rarity`, rarity being the key's IDF over the
index divided by its largest possible value, cubed, at least `MIN_RARITY`. The best
order-preserving alignment of the two stacks
(a weighted LCS where a match at positions i, j earns the two weights times
`exp(-ALIGN_DECAY x |i - j|)`) is divided by the total weight of both stacks. A
candidate's stack score blends its best match against any query stack (times that
stack's weight and information, the rarity of its rarest frame relative to the stuck
stack's) with the weighted mean over all query stacks.

The total is the weighted mean (`WEIGHTS`) of the sub-scores that apply. When the
query has a stack and the candidate shows none, `stack` counts as `STACK_PRIOR`: no
evidence either way, which is more than a stack that shows another hang and less than
a matching one. The weights and the prior were set by a small grid search on generated
corpora (benchmarks/upstream_corpus.py, seeds 11, 23, 101 and 102); the semantic weight
on the tuning half of real duplicate pairs (`benchmarks/eval_search.py --real`, the
queries whose number is even), the other half kept for the figures. `likely-duplicate` needs a high total
and one strong, specific signal (a matching stack, the same error line with shared
terms, or a near-identical title); `related` needs a moderate total.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from rapidfuzz import fuzz

from reporter.upstream import terms
from reporter.upstream.query import Query, QueryStack
from reporter.upstream.records import StoredIssue

POSITION_DECAY = 0.6
ALIGN_DECAY = 0.15
MIN_RARITY = 0.05
RARITY_POWER = 3.0
# Title words in more than this share of the issues are left out of title similarity.
TITLE_COMMON_SHARE = 0.05
STACK_PRIOR = 0.35
# Sub-score weights of the total.
WEIGHTS = {
    "text": 0.30,
    "title": 0.20,
    "bm25": 0.35,
    "stack": 0.45,
    "error": 0.25,
    "semantic": 0.85,
}
# The semantic weight when the query has a stack: a matching stack says far more than
# titles alike in meaning (hang reports' titles read alike: "stuck", "hangs", "NCCL").
# Chosen on the tuning half of the real pairs and the generated corpus (seed 7).
SEMANTIC_WITH_STACK = 0.15
LIKELY_SCORE = 0.60
LIKELY_STACK = 0.60
LIKELY_ERROR = 0.90
LIKELY_TITLE = 0.85
RELATED_SCORE = 0.30
# Titles this alike in meaning make a candidate at least related: on the real pairs a
# third of the true duplicates' titles reach it (most of them re-submissions), one in
# ten thousand of the other issues' titles does (their median is 0.13).
RELATED_SEMANTIC = 0.90
# An error line matched this closely by more candidates than this is scaled down.
ERROR_SHARED_BY = 3
# Characters of a body compared term by term: the description and the first stacks.
MAX_BODY_CHARS = 16 * 1024

_WORD_RE = re.compile(r"[^\W_]+")


class Level(StrEnum):
    """How strongly a candidate matches. `weak` candidates are not shown to users."""

    LIKELY_DUPLICATE = "likely-duplicate"
    RELATED = "related"
    WEAK = "weak"


@dataclass(frozen=True, slots=True, kw_only=True)
class SubScores:
    """The parts of a candidate's score; None where a signal does not apply."""

    text: float
    title: float
    bm25: float
    stack: float | None
    error: float | None
    semantic: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasons:
    """Why a candidate ranks where it does.

    `shared_frames` are the query's frames the best-matching candidate stack shares,
    innermost first; `terms` the query's heaviest terms found in the candidate;
    `notes` the same in sentences, for people.
    """

    scores: SubScores
    shared_frames: tuple[str, ...]
    terms: tuple[str, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One ranked issue."""

    issue: StoredIssue
    score: float
    level: Level
    reasons: Reasons


def idf(documents: int, df: int) -> float:
    """BM25's IDF for a term in `df` of `documents` issues (never negative)."""
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


@dataclass(frozen=True, slots=True, kw_only=True)
class Stats:
    """Document frequencies from the index: `documents` issues, per term and per frame key."""

    documents: int
    term_df: Mapping[str, int]
    frame_df: Mapping[str, int]
    _rarity: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def term_idf(self, term: str) -> float:
        """BM25's IDF of a term (never negative)."""
        return idf(self.documents, self.term_df.get(term, 0))

    def rarity(self, key: str) -> float:
        """A frame key's IDF scaled to [MIN_RARITY, 1]. A key no issue shows is as rare as
        can be: a candidate without the query's distinctive frames matches less of it."""
        known = self._rarity.get(key)
        if known is not None:
            return known
        top = math.log(self.documents + 1.0) or 1.0
        idf = math.log((self.documents + 1.0) / (self.frame_df.get(key, 0) + 1.0))
        # Cubed: frames in many issues (loops, collectives) fall away fast, as TraceSim's
        # sigmoid does, so a shared outer loop cannot pass for a shared hang.
        value = min(1.0, max(MIN_RARITY, float((idf / top) ** RARITY_POWER)))
        self._rarity[key] = value
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class StackMatch:
    """The result of aligning two stacks."""

    similarity: float
    shared: tuple[str, ...]


_POSITION = [(1.0 + i) ** -POSITION_DECAY for i in range(256)]


def _weights(keys: Sequence[str], stats: Stats) -> list[float]:
    return [_POSITION[min(i, 255)] * stats.rarity(k) for i, k in enumerate(keys)]


def stack_similarity(query: Sequence[str], other: Sequence[str], stats: Stats) -> StackMatch:
    """Position- and rarity-weighted alignment similarity of two stacks (innermost first)."""
    if not query or not other or set(query).isdisjoint(other):
        return StackMatch(similarity=0.0, shared=())
    wq, wc = _weights(query, stats), _weights(other, stats)
    n, m = len(query), len(other)
    # best[i][j]: best alignment score of query[:i] and other[:j].
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        row, above = best[i], best[i - 1]
        qi = query[i - 1]
        for j in range(1, m + 1):
            value = row[j - 1] if row[j - 1] > above[j] else above[j]
            if qi == other[j - 1]:
                gain = (wq[i - 1] + wc[j - 1]) * math.exp(-ALIGN_DECAY * abs(i - j))
                if above[j - 1] + gain > value:
                    value = above[j - 1] + gain
            row[j] = value
    # Walk back to name the matched frames.
    shared: list[str] = []
    i, j = n, m
    while i > 0 and j > 0:
        if best[i][j] == best[i - 1][j]:
            i -= 1
        elif best[i][j] == best[i][j - 1]:
            j -= 1
        else:
            shared.append(query[i - 1])
            i -= 1
            j -= 1
    total = sum(wq) + sum(wc)
    return StackMatch(
        similarity=best[n][m] / total if total else 0.0, shared=tuple(reversed(shared))
    )


def stack_score(
    stacks: Sequence[QueryStack], candidate: Sequence[Sequence[str]], stats: Stats
) -> tuple[float, StackMatch, QueryStack | None]:
    """A candidate's stack score, its best single match and the query stack it matched.

    Each query stack counts with its weight times its information: the rarity of its
    rarest frame relative to that of the heaviest (stuck) stack, at most 1. A side stack
    made only of frames every dump shows (the idle ranks' `recv_requests > event_loop >
    run_scheduler_process`) matches many issues fully, and that must not read as a
    shared hang.
    """
    best = StackMatch(similarity=0.0, shared=())
    best_value = 0.0
    best_stack: QueryStack | None = None
    weighted = 0.0
    rarest = [max((stats.rarity(k) for k in stack.keys), default=0.0) for stack in stacks]
    heaviest = max(range(len(stacks)), key=lambda i: (stacks[i].weight, -i), default=0)
    reference = rarest[heaviest] if rarest else 0.0
    for stack, rarity in zip(stacks, rarest, strict=True):
        top = StackMatch(similarity=0.0, shared=())
        for keys in candidate:
            match = stack_similarity(stack.keys, keys, stats)
            if match.similarity > top.similarity:
                top = match
        information = min(1.0, rarity / reference) if reference else 1.0
        value = stack.weight * information * top.similarity
        weighted += value
        if value > best_value:
            best_value, best, best_stack = value, top, stack
    total_weight = sum(s.weight for s in stacks) or 1.0
    return 0.75 * best_value + 0.25 * weighted / total_weight, best, best_stack


def title_similarity(a: str, b: str, drop: frozenset[str] = frozenset()) -> float:
    """Fuzzy similarity of two titles on their stemmed content words, in [0, 1].

    Words in `drop` (the query title's common words) are left out of both sides: two
    titles written from one template ("X: requests stuck forever after Y") are not alike
    for that.
    """
    return _title_words_similarity(_title_words(a, drop), b, drop)


def _title_words(title: str, drop: frozenset[str]) -> str:
    return " ".join(t for t in terms.content_terms(title) if t not in drop)


def _title_words_similarity(x: str, b: str, drop: frozenset[str]) -> float:
    y = _title_words(b, drop)
    if not x or not y:
        return 0.0
    return (fuzz.token_set_ratio(x, y) + fuzz.token_sort_ratio(x, y)) / 200.0


def error_similarity(ours: Sequence[str], theirs: Sequence[str]) -> tuple[float, str]:
    """The best fuzzy match between two sets of normalised error lines, and their line."""
    best, line = 0.0, ""
    for a in ours:
        for b in theirs:
            value = fuzz.ratio(a, b) / 100.0
            if value > best:
                best, line = value, b
    return best, line


def _candidate_terms(issue: StoredIssue) -> set[str]:
    record = issue.record
    text = terms.fold(f"{record.title}\n{record.body[:MAX_BODY_CHARS]}")
    words = set(_WORD_RE.findall(text))
    return {terms.stem(w) for w in words}


def score_candidates(
    query: Query,
    issues: Sequence[StoredIssue],
    bm25: Mapping[int, float],
    stats: Stats,
    term_weight: Mapping[str, float],
    surface: Mapping[str, str] | None = None,
    semantic: Mapping[int, float] | None = None,
) -> list[Candidate]:
    """Every issue scored and explained, best first (ties: repo, then number).

    `surface` maps normalised terms to the words people wrote, for the reasons;
    `semantic` maps issue ids to their title similarity (None: the signal is off).
    """
    surface = surface or {}
    weights = {
        t: w * stats.term_idf(t) for t, w in term_weight.items() if stats.term_df.get(t, 0) > 0
    }
    weight_total = sum(weights.values()) or 1.0
    top_bm25: dict[str, float] = {}
    for issue in issues:
        repo = issue.record.repo.lower()
        top_bm25[repo] = max(top_bm25.get(repo, 0.0), bm25.get(issue.id, 0.0))
    common = frozenset(
        t
        for t in terms.content_terms(query.title)
        if stats.term_df.get(t, 0) > TITLE_COMMON_SHARE * stats.documents
    )
    out: list[Candidate] = []
    query_title = _title_words(query.title, common)
    errors = {
        issue.id: error_similarity(query.errors, issue.errors)
        for issue in issues
        if query.errors and issue.errors
    }
    # An error line half the candidates share (every NCCL watchdog timeout reads alike)
    # is a generic line, like a generic frame: it counts less the more candidates have it.
    sharing = sum(1 for value, _ in errors.values() if value >= LIKELY_ERROR)
    error_factor = min(1.0, ERROR_SHARED_BY / sharing) if sharing else 1.0
    for issue in issues:
        found = _candidate_terms(issue)
        shared = sorted((t for t in weights if t in found), key=lambda t: (-weights[t], t))
        text = sum(weights[t] for t in shared) / weight_total
        shared_terms = list(dict.fromkeys(surface.get(t, t) for t in shared))
        title = _title_words_similarity(query_title, issue.record.title, common)
        rel_bm25 = max(0.0, bm25.get(issue.id, 0.0)) / (
            top_bm25.get(issue.record.repo.lower()) or 1.0
        )
        stack: float | None = None
        match = StackMatch(similarity=0.0, shared=())
        matched_stack: QueryStack | None = None
        if query.stacks and issue.stacks:
            stack, match, matched_stack = stack_score(query.stacks, issue.stacks, stats)
        error: float | None = None
        error_line = ""
        if issue.id in errors:
            raw_error, error_line = errors[issue.id]
            error = raw_error * error_factor
        sem = None if semantic is None else max(0.0, semantic.get(issue.id, 0.0))
        subs = SubScores(
            text=text, title=title, bm25=rel_bm25, stack=stack, error=error, semantic=sem
        )
        score = _total(subs, query_has_stack=bool(query.stacks))
        # Levels keep their meaning with or without the model: they are read off the
        # evidence score (no semantic part); a title that means the same lifts a weak
        # candidate to related, never to likely-duplicate on its own.
        evidence = _total(replace(subs, semantic=None), query_has_stack=bool(query.stacks))
        level = _level(evidence, subs)
        notes = _notes(
            issue, subs, match, matched_stack, shared_terms, error_line, bool(query.stacks)
        )
        out.append(
            Candidate(
                issue=issue,
                score=round(score, 4),
                level=level,
                reasons=Reasons(
                    scores=subs,
                    shared_frames=match.shared,
                    terms=tuple(shared_terms[:8]),
                    notes=notes,
                ),
            )
        )
    out.sort(key=lambda c: (-c.score, c.issue.record.repo.lower(), c.issue.record.number))
    return out


def _total(subs: SubScores, *, query_has_stack: bool) -> float:
    parts = {"text": subs.text, "title": subs.title, "bm25": subs.bm25}
    if query_has_stack:
        parts["stack"] = STACK_PRIOR if subs.stack is None else subs.stack
    if subs.error is not None:
        parts["error"] = subs.error
    if subs.semantic is not None:
        parts["semantic"] = subs.semantic
    weights = dict(WEIGHTS)
    if query_has_stack:
        weights["semantic"] = SEMANTIC_WITH_STACK
    total_weight = sum(weights[k] for k in parts)
    return sum(weights[k] * v for k, v in parts.items()) / total_weight


def _level(score: float, subs: SubScores) -> Level:
    strong = (
        (subs.stack is not None and subs.stack >= LIKELY_STACK)
        or (subs.error is not None and subs.error >= LIKELY_ERROR and subs.text >= 0.4)
        or (subs.title >= LIKELY_TITLE and subs.text >= 0.5)
    )
    if score >= LIKELY_SCORE and strong:
        return Level.LIKELY_DUPLICATE
    if score >= RELATED_SCORE or (subs.semantic or 0.0) >= RELATED_SEMANTIC:
        return Level.RELATED
    return Level.WEAK


def _notes(
    issue: StoredIssue,
    subs: SubScores,
    match: StackMatch,
    matched: QueryStack | None,
    shared_terms: Sequence[str],
    error_line: str,
    query_has_stack: bool,
) -> tuple[str, ...]:
    notes: list[str] = []
    if subs.stack is not None and match.shared and matched is not None:
        frames = ", ".join(match.shared[:5]) + (" …" if len(match.shared) > 5 else "")
        notes.append(
            f"stack {subs.stack:.2f}: shares {len(match.shared)} of {len(matched.keys)} "
            f"frames of {matched.label} ({frames})"
        )
    elif query_has_stack and not issue.stacks:
        notes.append("no stack in the issue to compare")
    if shared_terms:
        notes.append(f"terms {subs.text:.2f}: " + ", ".join(shared_terms[:6]))
    meaning = "" if subs.semantic is None else f", meaning of the titles {subs.semantic:.2f}"
    notes.append(f"title {subs.title:.2f}, bm25 {subs.bm25:.2f} (in {issue.record.repo}){meaning}")
    if subs.error is not None:
        notes.append(f"error line {subs.error:.2f}: {error_line[:80]}")
    record = issue.record
    if record.state == "closed":
        reason = f" as {record.state_reason.replace('_', ' ')}" if record.state_reason else ""
        when = f" on {record.closed_at[:10]}" if record.closed_at else ""
        notes.append(f"closed{reason}{when}")
    return tuple(notes)
