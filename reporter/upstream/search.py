"""The duplicate search over the local index, and its `search-upstream --json` document.

Inputs: an open `Index` and a `Query`. Outputs: ranked `rank.Candidate`s with reasons,
the stored fixes of the closed ones, and notes for stderr; nothing here prints, reads
settings or opens files (where the index lives is `reporter.app.issues`'s business).

Search, step by step (`find_duplicates`):

1. the query's terms get IDF weights from the index; the heaviest (at most
   `MAX_MATCH_TERMS`, none found in more than `COMMON_TERM_SHARE` of the issues) form
   an FTS5 OR query whose BM25 top `TEXT_POOL` issues are candidates;
2. the query's frame keys seen in at most `FRAME_DF_SHARE` of the issues pull in the
   `FRAME_POOL` issues with the most (rarity-weighted) frames in common;
3. the issues whose titles and bodies mean the most alike (the semantic model, when
   installed) join them;
4. the issues the query names (`#N`, `owner/repo#N`, an issue URL of a searched
   repository; `refs.cited`) join them, and so do the issues those link to;
5. `rank.score_candidates` scores the union and says why;
6. a bundle whose analysis found no incident (no hang, or could not tell) keeps only
   strong text matches, and a note says why (`NON_INCIDENT_NOTE`);
7. with `weak_fallback`, an answer with no related candidate shows the best
   `rank.WEAK_SHOWN` as `weak` with their reasons (`WEAK_NOTE`): never an empty answer
   while the index holds candidates.

`Method.BM25` stops after step 1 and orders by BM25 alone (an ablation in the evaluation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from reporter.core.errors import UsageError
from reporter.upstream import fixes, rank, refs
from reporter.upstream import semantic as semantic_model
from reporter.upstream.index import Index
from reporter.upstream.query import (
    Query,
    frame_phrases,
    match_expression,
    surface_forms,
    term_weights,
)
from reporter.upstream.records import (
    Fix,
    IssueRecord,
)
from reporter.upstream.sync import FixReport as FixReport
from reporter.upstream.sync import SyncProgress as SyncProgress
from reporter.upstream.sync import SyncReport as SyncReport
from reporter.upstream.titles import TitleSimilarity, embedder_of, semantic_neighbours

MAX_MATCH_TERMS = 24
TEXT_POOL = 100
FRAME_POOL = 50
# Frames in more issues than this share say little and cost a long posting list.
FRAME_DF_SHARE = 0.01
FRAME_DF_MIN = 50
# Terms in more issues than this are left out of the FTS5 query (they still count in the
# text score): their long posting lists cost time and their BM25 weight is small.
COMMON_TERM_SHARE = 0.01
COMMON_TERM_MIN = 200


NON_INCIDENT_NOTE = (
    "{kept} related issue(s) shown: the analysis found {what} (verdict `{verdict}`), so only "
    "strong text matches (a near-identical title, or the same error line, with shared "
    "terms) are listed; {dropped} weaker match(es) left out"
)
WEAK_NOTE = (
    "no candidate reached the related cut-off ({cutoff:g} for {kind} queries): the best "
    "{shown} are shown as weak matches, with their reasons"
)
_NON_INCIDENT_WHAT = {"progressing": "no hang", "inconclusive": "no clear incident"}


class Method(StrEnum):
    """How to rank: ours, or BM25 alone (for evaluation)."""

    COMBINED = "combined"
    BM25 = "bm25"


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOutcome:
    """Ranked candidates (best first) and the notes worth showing on stderr."""

    candidates: tuple[rank.Candidate, ...]
    query: Query
    notes: tuple[str, ...]
    index_path: Path
    example_index: bool
    searched: int
    fixes: Mapping[tuple[str, int], Fix] = field(default_factory=dict)
    """Stored fixes of candidates closed as completed, by (repo lowercased, number)."""


def search_and_explain(
    index: Index, query: Query, *, limit: int, notes: list[str]
) -> list[rank.Candidate]:
    """`find_duplicates` for people: the semantic model's absence and a pasted issue's
    own entry (left out) become notes."""
    if semantic_model.load() is None:
        notes.append(semantic_model.MISSING_NOTE)
    pasted: list[IssueRecord] = []
    candidates = find_duplicates(
        index, query, limit=limit, pasted=pasted, notes=notes, weak_fallback=True
    )
    for record in pasted:
        notes.append(
            f"left out {record.repo}#{record.number}: the pasted text is that issue "
            f"(pass `{record.repo}#{record.number}` to search for its duplicates)"
        )
    return candidates


def _flat(text: str) -> str:
    return " ".join(text.split()).lower()


def pasted_self(records: Sequence[IssueRecord], pasted: str) -> IssueRecord | None:
    """The stored issue that *is* the pasted query text: its whole body (and its title,
    or nearly all the text) appear in the query. With several such (re-submissions of
    one text) the newest is taken as the pasted one and the others stay, as duplicates."""
    text = _flat(pasted)
    same: list[IssueRecord] = []
    for record in records:
        body = _flat(record.body)
        if len(body) < 20 or body not in text:
            continue
        if _flat(record.title) in text or len(body) >= 0.8 * len(text):
            same.append(record)
    if not same:
        return None
    return max(same, key=lambda r: (r.created_at or "", r.number))


def stored_issue(index: Index, repo: str, number: int) -> IssueRecord:
    """A stored issue, or a `UsageError` saying how to get it into the index."""
    record = index.issue(repo, number)
    if record is None or record.is_pull:
        what = "a pull request" if record is not None else "not in the index"
        raise UsageError(
            f"{repo}#{number}: {what} at {index.path}",
            tip=f"run `report sync {repo}` first, or pass the issue's text with --text-file",
        )
    return record


def fixes_of(index: Index, candidates: Sequence[rank.Candidate]) -> dict[tuple[str, int], Fix]:
    """The stored fixes of the candidates closed as completed."""
    out: dict[tuple[str, int], Fix] = {}
    for candidate in candidates:
        record = candidate.issue.record
        if record.state != "closed" or (record.state_reason or "completed") != "completed":
            continue
        fix = index.fix(record.repo, record.number)
        if fix is not None and fix.kind != "none":
            out[(record.repo.lower(), record.number)] = fix
    return out


def fixed_notes(outcome: SearchOutcome) -> list[str]:
    """One "matches #N, fixed in vX; this deployment runs Y" line per fixed candidate."""
    deployed = {repo.lower(): version for repo, version in outcome.query.deployed}
    lines: list[str] = []
    for candidate in outcome.candidates:
        record = candidate.issue.record
        fix = outcome.fixes.get((record.repo.lower(), record.number))
        if fix is None:
            continue
        change = fixes.Change(kind=fix.kind, ref=fix.ref, url=fix.url, sha=fix.sha)
        note = fixes.fixed_note(
            record.number, record.repo, change, fix.tag, deployed.get(record.repo.lower(), "")
        )
        if note is not None:
            lines.append(note)
    return lines


# --- search ------------------------------------------------------------------------


def find_duplicates(
    index: Index,
    query: Query,
    *,
    limit: int = 10,
    method: Method = Method.COMBINED,
    include_weak: bool = False,
    embedder: semantic_model.Embedder | bool | None = True,
    exclude: Sequence[tuple[str, int]] = (),
    pasted: list[IssueRecord] | None = None,
    notes: list[str] | None = None,
    weak_fallback: bool = False,
) -> list[rank.Candidate]:
    """The best candidates for `query` in `query.repos` (all repos when empty), best first.

    The query's text loses the lines that are issue-form boilerplate in those repos
    first. `embedder=True` uses the packaged semantic model when installed (False or
    None: no semantic signal; or pass one). Issues in `exclude` (`(repo, number)`, the
    query's own issue) are never returned. With a `pasted` list, a stored issue whose
    text *is* the query (see `pasted_self`) is left out before scoring (it would set the
    BM25 scale for every other candidate) and appended to `pasted`. When several repos
    are searched, the best candidate of each repo that has one is kept in the list (see
    `_best_of_each`). A query from a bundle that is no incident (`Query.incident`)
    keeps only strong text matches (`rank.strong_text_match`); `notes` gets why. With
    `weak_fallback`, when no candidate is left the best `rank.WEAK_SHOWN` are returned
    as `weak` (and `notes` says so).
    """
    model = embedder_of(embedder)
    pasted_text = query.text
    query = replace(query, text=index.strip_boilerplate(query.text, query.repos))
    documents = index.count()
    weights = term_weights(query)
    term_df = index.term_df(weights)
    common = max(COMMON_TERM_MIN, int(documents * COMMON_TERM_SHARE))
    ranked_terms = sorted(
        (t for t in weights if 0 < term_df[t] <= common),
        key=lambda t: (-weights[t] * rank.idf(documents, term_df[t]), t),
    )[:MAX_MATCH_TERMS]
    pool: dict[int, float] = {}
    if ranked_terms:
        for issue_id, score in index.text_candidates(
            match_expression(ranked_terms), query.repos, TEXT_POOL
        ):
            pool[issue_id] = score
    keys = frame_phrases(query)
    frame_df = index.frame_df(keys)
    if method is Method.COMBINED and keys:
        cap = max(FRAME_DF_MIN, int(documents * FRAME_DF_SHARE))
        rare = [k for k in keys if 0 < frame_df[k] <= cap]
        stats = rank.Stats(documents=documents, term_df=term_df, frame_df=frame_df)
        sums: dict[int, float] = {}
        for issue_id, key in index.frame_postings(rare, query.repos):
            sums[issue_id] = sums.get(issue_id, 0.0) + stats.rarity(key)
        best = sorted(sums.items(), key=lambda item: (-item[1], item[0]))[:FRAME_POOL]
        for issue_id, _ in best:
            pool.setdefault(issue_id, 0.0)
    titles: TitleSimilarity | None = None
    bodies: TitleSimilarity | None = None
    if method is Method.COMBINED and model is not None:
        titles = semantic_neighbours(index, model, query)
        bodies = semantic_neighbours(index, model, query, kind="body")
        for issue_id in (*titles.nearest, *bodies.nearest):
            pool.setdefault(issue_id, 0.0)
    references = _references(index, query, pasted_text) if method is Method.COMBINED else {}
    for issue_id in references:
        pool.setdefault(issue_id, 0.0)
    stored = index.stored(pool)
    skip = {(repo.lower(), number) for repo, number in exclude}
    if query.issue is not None:
        skip.add((query.issue[0].lower(), query.issue[1]))
    elif pasted is not None:
        own = pasted_self([stored[i].record for i in sorted(stored)], pasted_text)
        if own is not None:
            pasted.append(own)
            skip.add((own.repo.lower(), own.number))
    issues = [
        stored[i]
        for i in sorted(stored)
        if (stored[i].record.repo.lower(), stored[i].record.number) not in skip
    ]
    # The candidates' own frames weigh in their stack similarity too: look them up.
    seen = {key for issue in issues for stack in issue.stacks for key in stack}
    frame_df = {**index.frame_df(seen - frame_df.keys()), **frame_df}
    stats = rank.Stats(documents=documents, term_df=term_df, frame_df=frame_df)
    if method is Method.BM25:
        return _bm25_only(issues, pool, limit)
    similarity = None if titles is None else titles.lookup(i.id for i in issues)
    body_similarity = None if bodies is None else bodies.lookup(i.id for i in issues)
    scored = rank.score_candidates(
        query,
        issues,
        pool,
        stats,
        weights,
        surface_forms(query),
        similarity,
        body_similarity,
        references,
    )
    every = scored
    if not include_weak:
        scored = [c for c in scored if c.level is not rank.Level.WEAK]
    if not query.incident:
        scored = _incident_filter(query, scored, notes)
    if weak_fallback and not scored and every:
        shown = [replace(c, level=rank.Level.WEAK) for c in every[: min(limit, rank.WEAK_SHOWN)]]
        if notes is not None:
            bundle = query.verdict is not None
            notes.append(
                WEAK_NOTE.format(
                    cutoff=rank.RELATED_SCORE_BUNDLE if bundle else rank.RELATED_SCORE,
                    kind="bundle" if bundle else "text",
                    shown=len(shown),
                )
            )
        return shown
    return _best_of_each(scored, limit)


def _references(index: Index, query: Query, text: str) -> dict[int, tuple[float, str]]:
    """The ids of the issues the query names (`reference` 1) and of the issues those
    link to (`rank.LINKED_REFERENCE`), with the sentence a candidate's reasons show."""
    repos = query.repos or tuple(repo for repo, _ in index.repos())
    named = refs.cited(f"{query.title}\n{text}", repos)
    if not named:
        return {}
    ids = index.issue_ids(named)
    out: dict[int, tuple[float, str]] = {}
    linked: dict[tuple[str, int], str] = {}
    for key in named:
        issue_id = ids.get(key)
        if issue_id is None:
            continue
        out[issue_id] = (1.0, f"the query names it ({key[0]}#{key[1]})")
        record = index.issue(*key)
        if record is None:
            continue
        for target in refs.cited(f"{record.title}\n{record.body}", (key[0],)):
            if target not in named:
                linked.setdefault(target, f"#{key[1]}, which the query names, links to it")
    for key, issue_id in index.issue_ids(linked).items():
        out.setdefault(issue_id, (rank.LINKED_REFERENCE, linked[key]))
    return out


def _incident_filter(
    query: Query, scored: Sequence[rank.Candidate], notes: list[str] | None
) -> list[rank.Candidate]:
    """Only the strong text matches of a query whose bundle is no incident, and a note."""
    kept = [c for c in scored if rank.strong_text_match(c.reasons.scores, c.score)]
    if notes is not None:
        verdict = query.verdict or ""
        notes.append(
            NON_INCIDENT_NOTE.format(
                kept=len(kept),
                what=_NON_INCIDENT_WHAT.get(verdict, "no incident"),
                verdict=verdict,
                dropped=len(scored) - len(kept),
            )
        )
    return kept


def _best_of_each(scored: Sequence[rank.Candidate], limit: int) -> list[rank.Candidate]:
    """The top `limit`, except that each repo's best candidate takes the place of the
    lowest-ranked one of a repo that has more than one in the list: searching PyTorch
    alongside SGLang must not hide PyTorch's best match."""
    top = list(scored[:limit])
    shown = {c.issue.record.repo.lower() for c in top}
    for candidate in scored[limit:]:
        repo = candidate.issue.record.repo.lower()
        if repo in shown:
            continue
        counts: dict[str, int] = {}
        for c in top:
            counts[c.issue.record.repo.lower()] = counts.get(c.issue.record.repo.lower(), 0) + 1
        victim = next(
            (
                i
                for i in range(len(top) - 1, -1, -1)
                if counts[top[i].issue.record.repo.lower()] > 1
            ),
            None,
        )
        if victim is None:
            break
        top.pop(victim)
        top.append(candidate)
        shown.add(repo)
    return top


def _bm25_only(
    issues: Sequence[Any], pool: Mapping[int, float], limit: int
) -> list[rank.Candidate]:
    top = max(pool.values(), default=0.0) or 1.0
    out = [
        rank.Candidate(
            issue=issue,
            score=round(pool[issue.id] / top, 4),
            level=rank.Level.RELATED,
            reasons=rank.Reasons(
                scores=rank.SubScores(
                    text=0.0, title=0.0, bm25=pool[issue.id] / top, stack=None, error=None
                ),
                shared_frames=(),
                terms=(),
                notes=(),
            ),
        )
        for issue in issues
        if pool.get(issue.id, 0.0) > 0.0
    ]
    out.sort(key=lambda c: (-c.score, c.issue.record.repo.lower(), c.issue.record.number))
    return out[:limit]
