"""Score candidate issues against a query and say why: pure functions, no I/O.

Inputs: a `Query`, the stored candidates with their BM25 scores, and document
frequencies (terms and frame keys) from the index. Output: `Candidate`s, best first
(score, then repo, then number), each with a `Level` and `Reasons`.

Sub-scores, each in [0, 1] (None where a signal does not apply):

* `text`   share of the query's term weight (term weight x IDF) found in the
           candidate's terms (stored at index time);
* `title`  fuzzy similarity of the titles (RapidFuzz token-set and token-sort ratios on
           the stemmed content words, averaged), leaving out the query title's words
           that more than `TITLE_COMMON_SHARE` of the issues (and `TITLE_COMMON_MIN`) use;
* `bm25`   FTS5's BM25, relative to the best candidate *of the same repository*;
* `semantic` cosine similarity of the titles' embeddings (`semantic.py`), floored at 0;
* `body`   cosine similarity of the bodies' embeddings (chunked, boilerplate left out);
* `stack`  position-weighted stack similarity (below); None when either has no stack;
* `error`  best fuzzy match between normalised error lines, scaled down when many
           candidates share the line (generic errors);
* `exception` the rarity (IDF over the index, scaled to [0, 1]) of the rarest exception
           type both quote (`signals.py`); 0 when both quote some and share none;
* `version` how alike the product versions both name are (`signals.version_similarity`);
* `failure` whether both describe the same class of failure (desync, p2p, crash, OOM,
           deadlock, hang; `signals.class_similarity`);
* `reference` 1 when the query names the candidate (`#N`, `owner/repo#N`, its URL;
           `refs.cited`), `LINKED_REFERENCE` when an issue the query names links to it,
           else 0.

Stack similarity, after TraceSim: frames are compared by key (short function name,
generic frames already dropped by extraction). A frame weighs
`(1 + position) ** -POSITION_DECAY x rarity`, rarity being the key's IDF over the
index divided by its largest possible value, cubed, at least `MIN_RARITY`. The best
order-preserving alignment of the two stacks (a weighted LCS where a match at positions
i, j earns the two weights times `exp(-ALIGN_DECAY x |i - j|)`) is divided by the total
weight of both stacks. Native frames (`extract.NATIVE_MARK`) take no position and count
only where both stacks show them: one `pthread_cond_wait` under six shared Python frames
leaves the match at six of six. A candidate's stack score blends its best match against
any query stack (times that stack's weight and information) with the weighted mean over
all query stacks.

The total is a calibrated combination that no one signal can swamp:
`1 - (1 - p_text) x (1 - p_stack)`, a noisy-OR of two probabilities of "same problem".
`p_text` is a logistic model over a few text-side sub-scores (`COEFFICIENTS`, with and
without the semantic model: BM25, the titles' meaning, references), the design chosen
on cross-validated figures over real duplicate pairs (`eval_search.py --real --cv`) and
fitted by `benchmarks/fit_search.py`;
`p_stack` is a logistic calibration of the stack score (`STACK_MIDPOINT`,
`STACK_SLOPE`); a stack that shows another hang lowers `p_text` (`STACK_MISMATCH`). Six of six shared rare frames give `p_stack` near 1 and so outrank any
match on text alone; among candidates that share the stack, the text still orders them.
`likely-duplicate` needs a high total and one strong, specific signal (a matching stack,
the same error line with shared terms, or a near-identical title); `related` needs a
moderate total.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from rapidfuzz import fuzz

from reporter.upstream import signals, terms
from reporter.upstream.extract import NATIVE_MARK
from reporter.upstream.query import Query, QueryStack
from reporter.upstream.records import StoredIssue

POSITION_DECAY = 0.6
ALIGN_DECAY = 0.15
MIN_RARITY = 0.05
RARITY_POWER = 3.0
# Title words in more than this share of the issues are left out of title similarity.
TITLE_COMMON_SHARE = 0.05
# ... and in more than this many: in a small index (a new sync, a test) every word is in
# 5 % of the issues, and a title would be compared on nothing.
TITLE_COMMON_MIN = 20
# The text-side model: log-odds of "same problem" = intercept + sum of coefficient x
# feature (`features`). Chosen by `benchmarks/eval_search.py --real DIR --cv` on out-of-
# sample figures only (5-fold and leave-one-tracker-out over the real vLLM and SGLang
# pairs): of the designs within one standard error of the best k-fold MRR, the one with
# the fewest parameters (round 3's eight features plus `reference` scored 0.83 +- 0.11,
# these three 0.80 +- 0.10, round 3's model refitted per fold 0.61 +- 0.10). Then fitted
# on every pair by `benchmarks/fit_search.py`. The other sub-scores stay in the reasons
# and in the `likely-duplicate` rule.
FEATURES = (
    "text",
    "title",
    "bm25",
    "semantic",
    "body",
    "error",
    "exception",
    "version",
    "failure",
    "reference",
)
COEFFICIENTS: dict[str, float] = {
    "intercept": -7.546,
    "bm25": 3.412,
    "semantic": 4.358,
    "reference": 5.620,
}
# The same choice without the semantic model (not installed): BM25 and references.
COEFFICIENTS_NO_SEMANTIC: dict[str, float] = {
    "intercept": -6.734,
    "bm25": 4.748,
    "reference": 5.926,
}
# p_stack = 1 / (1 + exp(-STACK_SLOPE x (stack - STACK_MIDPOINT))): 0.7 of both stacks'
# weight aligned is even odds, 0.85 and above near certain, 0.55 (a shared outer loop
# and collective) one in ten. The real pairs hold almost no stacks, so these and the
# mismatch penalty below were chosen on the generated corpora (upstream_corpus.py,
# seeds 7, 11 and 23; bundle queries' MRR), not fitted on real text.
STACK_MIDPOINT = 0.7
STACK_SLOPE = 16.0
# A candidate whose stack shows another hang (similarity under STACK_MISMATCH) loses up
# to STACK_MISMATCH_LOGODDS of p_text's log-odds: a stack that differs is evidence
# against, where a candidate without a stack is no evidence either way.
STACK_MISMATCH = 0.3
STACK_MISMATCH_LOGODDS = 1.5
# Levels on the total, a probability of "same problem" among the retrieved candidates:
# at 0.5 (with a strong signal) few are another issue.
LIKELY_SCORE = 0.50
LIKELY_STACK = 0.60
LIKELY_ERROR = 0.90
LIKELY_TITLE = 0.85
# The `related` cut-off per kind of query, calibrated out of sample. Text queries
# (`eval_search.py --real --cv`, k-fold): at 0.08 the duplicate of 88 % of the queries
# is in the top five at or above it, with 0.35 other issues per query (0.05: 92 %, 0.67).
# Bundle queries score lower (a bundle is not written like an issue: its text is a
# verdict and frame names), so they have their own (`eval_bundles.py`): 0.015 keeps every
# paired real issue the ranking puts in the top five, with 1.75 other issues per query;
# 0.05 kept none. Under either, the best `WEAK_SHOWN` are still shown, as weak.
RELATED_SCORE = 0.08
RELATED_SCORE_BUNDLE = 0.015
# The `reference` sub-score of an issue that an issue the query names links to (the
# query names it at one remove).
LINKED_REFERENCE = 0.5
# At most this many `weak` candidates are shown when none is related or better: an
# answer is never empty while the index holds candidates (`search.find_duplicates`).
WEAK_SHOWN = 3
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
    body: float | None = None
    exception: float | None = None
    version: float | None = None
    failure: float | None = None
    reference: float = 0.0


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
    _stacks: dict[tuple[str, ...], _Prepared] = field(
        default_factory=dict, compare=False, repr=False
    )

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


def _positions(keys: Sequence[str]) -> list[int]:
    """Each key's position among the stack's Python frames: a native frame takes the
    position of the Python frame after it, so it shifts nothing."""
    out: list[int] = []
    seen = 0
    for key in keys:
        out.append(seen)
        if not key.startswith(NATIVE_MARK):
            seen += 1
    return out


def _weights(keys: Sequence[str], stats: Stats) -> list[float]:
    return [
        _POSITION[min(p, 255)] * stats.rarity(k)
        for p, k in zip(_positions(keys), keys, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One stack as the alignment reads it: each frame's weight and position, the total
    weight of its Python frames, and where its native frames are."""

    weights: list[float]
    positions: list[int]
    python_weight: float
    natives: tuple[int, ...]


def _prepared(keys: Sequence[str], stats: Stats) -> _Prepared:
    """`_Prepared` for a stack, kept in `stats` (one query's figures) so a stack compared
    with several others is weighed once."""
    key = tuple(keys)
    found = stats._stacks.get(key)
    if found is None:
        weights = _weights(keys, stats)
        natives = tuple(i for i, k in enumerate(keys) if k.startswith(NATIVE_MARK))
        found = _Prepared(
            weights=weights,
            positions=_positions(keys),
            python_weight=sum(weights) - sum(weights[i] for i in natives),
            natives=natives,
        )
        stats._stacks[key] = found
    return found


def stack_similarity(query: Sequence[str], other: Sequence[str], stats: Stats) -> StackMatch:
    """Position- and rarity-weighted alignment similarity of two stacks (innermost first);
    native frames count only where both stacks show them (see the module docstring).

    The best order-preserving alignment is the heaviest chain of equal-key pairs (i, j)
    rising in both i and j, found over the pairs alone: two stacks share a few frames,
    so this costs far less than a table over every position of both.
    """
    if not query or not other:
        return StackMatch(similarity=0.0, shared=())
    where: dict[str, list[int]] = {}
    for j, key in enumerate(other):
        where.setdefault(key, []).append(j)
    pairs = [(i, j) for i, key in enumerate(query) for j in where.get(key, ())]
    if not pairs:
        return StackMatch(similarity=0.0, shared=())
    mine, theirs = _prepared(query, stats), _prepared(other, stats)
    wq, wc = mine.weights, theirs.weights
    pq, pc = mine.positions, theirs.positions
    # chain[p]: the heaviest chain ending with pairs[p]; before[p]: the pair ahead of it.
    chain: list[float] = []
    before: list[int] = []
    for p, (i, j) in enumerate(pairs):
        gain = (wq[i] + wc[j]) * math.exp(-ALIGN_DECAY * abs(pq[i] - pc[j]))
        top, link = 0.0, -1
        for q in range(p):
            qi, qj = pairs[q]
            if qi < i and qj < j and chain[q] > top:
                top, link = chain[q], q
        chain.append(top + gain)
        before.append(link)
    end = max(range(len(pairs)), key=lambda p: (chain[p], -p))
    shared: list[str] = []
    while end >= 0:
        shared.append(query[pairs[end][0]])
        end = before[end]
    matched = set(shared)
    # A native frame only one side shows is left out of the total: it says how the
    # dump was taken, not which hang it is.
    total = mine.python_weight + theirs.python_weight
    total += sum(wq[i] for i in mine.natives if query[i] in matched)
    total += sum(wc[j] for j in theirs.natives if other[j] in matched)
    best = max(chain)
    return StackMatch(
        similarity=min(1.0, best / total) if total else 0.0, shared=tuple(reversed(shared))
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


def _title_words_similarity(
    x: str, b: str, drop: frozenset[str], tokens: Sequence[str] | None = None
) -> float:
    """`title_similarity` of prepared query words `x` and title `b` (its `tokens` when
    the index stored them)."""
    if tokens is None:
        y = _title_words(b, drop)
    else:
        y = " ".join(t for t in terms.content(list(tokens)) if t not in drop)
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


def _candidate_terms(issue: StoredIssue) -> frozenset[str]:
    """The candidate's distinct terms: stored at index time; tokenised here only for an
    issue built without them (tests, an index written mid-upgrade)."""
    if issue.terms:
        return issue.terms
    record = issue.record
    return frozenset(terms.tokens(f"{record.title}\n{record.body[:MAX_BODY_CHARS]}"))


def exception_similarity(
    ours: Sequence[str], theirs: Sequence[str], stats: Stats
) -> tuple[float | None, str]:
    """The rarity of the rarest exception type both texts quote (IDF over the index
    scaled to [0, 1]) and its name; 0 when both quote some and share none; None when
    either quotes none."""
    if not ours or not theirs:
        return None, ""
    shared = set(ours) & set(theirs)
    if not shared:
        return 0.0, ""
    top = math.log(stats.documents + 1.0) or 1.0
    name = max(sorted(shared), key=stats.term_idf)
    return min(1.0, stats.term_idf(name) / top), name


def score_candidates(
    query: Query,
    issues: Sequence[StoredIssue],
    bm25: Mapping[int, float],
    stats: Stats,
    term_weight: Mapping[str, float],
    surface: Mapping[str, str] | None = None,
    semantic: Mapping[int, float] | None = None,
    body: Mapping[int, float] | None = None,
    references: Mapping[int, tuple[float, str]] | None = None,
) -> list[Candidate]:
    """Every issue scored and explained, best first (ties: repo, then number).

    `surface` maps normalised terms to the words people wrote, for the reasons;
    `semantic` and `body` map issue ids to their title and body similarity (None: the
    model is off); `references` maps the ids of issues the query names (or that an
    issue it names links to) to their `reference` sub-score and a sentence saying so.
    """
    surface = surface or {}
    references = references or {}
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
        if stats.term_df.get(t, 0) > max(TITLE_COMMON_MIN, TITLE_COMMON_SHARE * stats.documents)
    )
    scored: list[tuple[float, Candidate]] = []
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
    mine = query.signals
    for issue in issues:
        found = _candidate_terms(issue)
        shared = sorted((t for t in weights if t in found), key=lambda t: (-weights[t], t))
        text = sum(weights[t] for t in shared) / weight_total
        shared_terms = list(dict.fromkeys(surface.get(t, t) for t in shared))
        title = _title_words_similarity(query_title, issue.record.title, common, issue.title_terms)
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
        theirs = issue.signals
        exception, exception_name = exception_similarity(mine.exceptions, theirs.exceptions, stats)
        subs = SubScores(
            text=text,
            title=title,
            bm25=rel_bm25,
            stack=stack,
            error=error,
            semantic=None if semantic is None else max(0.0, semantic.get(issue.id, 0.0)),
            body=None if body is None else max(0.0, body.get(issue.id, 0.0)),
            exception=exception,
            version=signals.version_similarity(mine.versions, theirs.versions),
            failure=signals.class_similarity(mine.classes, theirs.classes),
            reference=references.get(issue.id, (0.0, ""))[0],
        )
        score = total(subs)
        notes = _notes(
            issue,
            subs,
            match,
            matched_stack,
            shared_terms,
            error_line,
            bool(query.stacks),
            exception_name,
            references.get(issue.id, (0.0, ""))[1],
        )
        candidate = Candidate(
            issue=issue,
            score=round(score, 4),
            level=_level(score, subs, bundle=query.verdict is not None),
            reasons=Reasons(
                scores=subs,
                shared_frames=match.shared,
                terms=tuple(shared_terms[:8]),
                notes=notes,
            ),
        )
        scored.append((score, candidate))
    # The unrounded total orders: many candidates sharing a stack sit near 1.
    scored.sort(key=lambda x: (-x[0], x[1].issue.record.repo.lower(), x[1].issue.record.number))
    return [c for _, c in scored]


def features(subs: SubScores) -> dict[str, float]:
    """The text-side model's inputs: each sub-score, 0 where it does not apply; the
    version and failure-class matches centred (-1 differ, 0 unknown, +1 same)."""
    return {
        "text": subs.text,
        "title": subs.title,
        "bm25": subs.bm25,
        "semantic": subs.semantic or 0.0,
        "body": subs.body or 0.0,
        "error": subs.error or 0.0,
        "exception": subs.exception or 0.0,
        "version": 0.0 if subs.version is None else 2.0 * subs.version - 1.0,
        "failure": 0.0 if subs.failure is None else 2.0 * subs.failure - 1.0,
        "reference": subs.reference,
    }


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def text_probability(subs: SubScores, coefficients: Mapping[str, float] | None = None) -> float:
    """`p_text`: the logistic model over the text-side features (by default the semantic
    model's coefficients when its sub-score is there, else the ones fitted without)."""
    if coefficients is None:
        coefficients = COEFFICIENTS if subs.semantic is not None else COEFFICIENTS_NO_SEMANTIC
    values = features(subs)
    z = coefficients.get("intercept", 0.0) + sum(
        coefficients.get(name, 0.0) * values[name] for name in FEATURES
    )
    if subs.stack is not None and subs.stack < STACK_MISMATCH:
        z -= STACK_MISMATCH_LOGODDS * (1.0 - subs.stack / STACK_MISMATCH)
    return _sigmoid(z)


def stack_probability(stack: float | None) -> float:
    """`p_stack`: the stack score calibrated (0 when there is no stack to compare)."""
    if stack is None:
        return 0.0
    return _sigmoid(STACK_SLOPE * (stack - STACK_MIDPOINT))


def total(subs: SubScores, coefficients: Mapping[str, float] | None = None) -> float:
    """The candidate's score: noisy-OR of `p_text` and `p_stack` (module docstring)."""
    p_text = text_probability(subs, coefficients)
    return 1.0 - (1.0 - p_text) * (1.0 - stack_probability(subs.stack))


def strong_text_match(subs: SubScores, score: float) -> bool:
    """A match on the words alone strong enough to show for a bundle that is no incident:
    a near-identical title or the same error line, with shared terms, and a high total."""
    return score >= LIKELY_SCORE and (
        (subs.error is not None and subs.error >= LIKELY_ERROR and subs.text >= 0.4)
        or (subs.title >= LIKELY_TITLE and subs.text >= 0.5)
    )


def _level(score: float, subs: SubScores, *, bundle: bool = False) -> Level:
    strong = (
        subs.reference >= 1.0
        or (subs.stack is not None and subs.stack >= LIKELY_STACK)
        or (subs.error is not None and subs.error >= LIKELY_ERROR and subs.text >= 0.4)
        or (subs.title >= LIKELY_TITLE and subs.text >= 0.5)
    )
    if score >= LIKELY_SCORE and strong:
        return Level.LIKELY_DUPLICATE
    related = RELATED_SCORE_BUNDLE if bundle else RELATED_SCORE
    if score >= related or (subs.semantic or 0.0) >= RELATED_SEMANTIC:
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
    exception_name: str = "",
    reference_note: str = "",
) -> tuple[str, ...]:
    notes: list[str] = []
    if reference_note:
        notes.append(reference_note)
    if subs.stack is not None and match.shared and matched is not None:
        frames = ", ".join(_shown(k) for k in match.shared[:5]) + (
            " …" if len(match.shared) > 5 else ""
        )
        # Counted as the similarity counts them: native frames only where shared.
        python = [k for k in matched.keys if not k.startswith(NATIVE_MARK)]
        of = len(python) + sum(1 for k in match.shared if k.startswith(NATIVE_MARK))
        notes.append(
            f"stack {subs.stack:.2f}: shares {len(match.shared)} of {of} "
            f"frames of {matched.label} ({frames})"
        )
    elif query_has_stack and not issue.stacks:
        notes.append("no stack in the issue to compare")
    if shared_terms:
        notes.append(f"terms {subs.text:.2f}: " + ", ".join(shared_terms[:6]))
    meaning = "" if subs.semantic is None else f", meaning of the titles {subs.semantic:.2f}"
    if subs.body is not None:
        meaning += f", of the bodies {subs.body:.2f}"
    notes.append(f"title {subs.title:.2f}, bm25 {subs.bm25:.2f} (in {issue.record.repo}){meaning}")
    if subs.error is not None:
        notes.append(f"error line {subs.error:.2f}: {error_line[:80]}")
    if exception_name:
        notes.append(f"same exception type: {exception_name} (rarity {subs.exception or 0:.2f})")
    if subs.failure == 1.0:
        notes.append("same kind of failure")
    elif subs.failure == 0.0:
        notes.append("another kind of failure")
    if subs.version == 1.0:
        notes.append("same release")
    record = issue.record
    if record.state == "closed":
        reason = f" as {record.state_reason.replace('_', ' ')}" if record.state_reason else ""
        when = f" on {record.closed_at[:10]}" if record.closed_at else ""
        notes.append(f"closed{reason}{when}")
    return tuple(notes)


def _shown(key: str) -> str:
    """A frame key for people: a native frame says so instead of the mark."""
    return f"{key[len(NATIVE_MARK) :]} (native)" if key.startswith(NATIVE_MARK) else key
