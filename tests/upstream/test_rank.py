"""Scoring: stack similarity, title and error similarity, totals, levels and reasons."""

from __future__ import annotations

import math

import pytest

from reporter.upstream.query import Query, QueryStack
from reporter.upstream.rank import (
    Level,
    Stats,
    error_similarity,
    score_candidates,
    stack_score,
    stack_similarity,
    title_similarity,
)
from reporter.upstream.records import IssueRecord, StoredIssue

HANG = (
    "all_reduce",
    "writing_check",
    "check_hicache_events",
    "on_idle",
    "event_loop",
    "run_scheduler",
)
# A corpus where the outer frames are everywhere and the inner ones rare.
STATS = Stats(
    documents=1000,
    term_df={"hicach": 5, "hang": 300, "tokenizer": 40},
    frame_df={
        "all_reduce": 200,
        "writing_check": 3,
        "check_hicache_events": 4,
        "on_idle": 30,
        "event_loop": 600,
        "run_scheduler": 900,
        "forward": 400,
        "capture": 20,
        "wait": 500,
    },
)


@pytest.mark.parametrize(
    ("other", "low", "high"),
    [
        (HANG, 1.0, 1.0),
        (("tokenize", "decode"), 0.0, 0.0),
        (HANG[:3], 0.6, 0.95),  # a truncated paste: the informative top survives
        (("wait", *HANG), 0.6, 0.99),  # one extra frame on top shifts the alignment
        (("all_reduce", "forward", "capture", "event_loop", "run_scheduler"), 0.05, 0.4),
        (tuple(reversed(HANG)), 0.0, 0.35),  # same frames in the wrong order barely align
    ],
    ids=["identical", "disjoint", "truncated", "shifted", "same-collective-elsewhere", "reversed"],
)
def test_stack_similarity_ranges(other: tuple[str, ...], low: float, high: float) -> None:
    match = stack_similarity(HANG, other, STATS)
    assert low <= match.similarity <= high


def test_rare_top_frames_count_more_than_common_outer_ones() -> None:
    top = stack_similarity(HANG, ("all_reduce", "writing_check", "check_hicache_events"), STATS)
    bottom = stack_similarity(HANG, ("on_idle", "event_loop", "run_scheduler"), STATS)
    assert top.similarity > 2 * bottom.similarity


def test_shared_frames_are_listed_innermost_first() -> None:
    match = stack_similarity(
        HANG, ("wait", "all_reduce", "check_hicache_events", "event_loop"), STATS
    )
    assert match.shared == ("all_reduce", "check_hicache_events", "event_loop")


def test_stack_score_weights_query_stacks() -> None:
    stuck = QueryStack(keys=HANG, weight=1.0, label="[0-1] all_reduce")
    idle = QueryStack(keys=("self_check", "on_idle", "event_loop"), weight=0.35, label="[2-3]")
    full, _, matched = stack_score([stuck, idle], [HANG], STATS)
    side, _, side_matched = stack_score(
        [stuck, idle], [("self_check", "on_idle", "event_loop")], STATS
    )
    assert matched is stuck and side_matched is idle
    assert full > 0.75 > 0.4 > side


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        (
            "Scheduler hangs in check_hicache_events",
            "scheduler hang in check_hicache_events",
            0.99,
            1.0,
        ),
        ("Server hangs after idle period with HiCache", "HiCache: idle server hangs", 0.7, 1.0),
        ("Server hangs after idle period with HiCache", "Tokenizer crash on emoji", 0.0, 0.4),
        ("", "anything", 0.0, 0.0),
    ],
)
def test_title_similarity(a: str, b: str, low: float, high: float) -> None:
    assert low <= title_similarity(a, b) <= high


def test_error_similarity_picks_the_best_pair() -> None:
    ours = ["runtimeerror: [pair.cc:n] connection closed by peer [n.n.n.n]:n"]
    theirs = ["valueerror: bad", "runtimeerror: [pair.cc:n] connection closed by peer [n.n.n.n]:n"]
    assert error_similarity(ours, theirs) == (1.0, theirs[1])


def _issue(
    number: int,
    title: str,
    body: str = "",
    stacks: tuple[tuple[str, ...], ...] = (),
    state: str = "open",
) -> StoredIssue:
    return StoredIssue(
        id=number,
        record=IssueRecord(
            repo="a/b",
            number=number,
            title=title,
            body=body,
            state=state,
            state_reason="duplicate" if state == "closed" else None,
            closed_at="2025-05-01T00:00:00Z" if state == "closed" else None,
        ),
        stacks=stacks,
        errors=(),
    )


QUERY = Query(
    repos=("a/b",),
    title="Scheduler hangs in check_hicache_events",
    text="ranks split, hicache write-through all_reduce",
    stacks=(QueryStack(keys=HANG, weight=1.0, label="[0-1] all_reduce"),),
)


def test_scores_levels_order_and_reasons() -> None:
    issues = [
        _issue(1, "Tokenizer crash", "unrelated tokenizer text"),
        _issue(2, "Server hang with hicache", "hicache hang", stacks=(HANG,), state="closed"),
        _issue(3, "hicache question", "hicache hicache"),
    ]
    bm25 = {1: 0.5, 2: 8.0, 3: 4.0}
    ranked = score_candidates(
        QUERY, issues, bm25, STATS, {"hicach": 2.0, "hang": 2.0, "tokenizer": 0.1}
    )
    assert [c.issue.id for c in ranked] == [2, 3, 1]
    best = ranked[0]
    assert best.level is Level.LIKELY_DUPLICATE
    assert best.reasons.shared_frames == HANG
    assert best.reasons.scores.stack == pytest.approx(1.0)
    assert set(best.reasons.terms) == {"hicach", "hang"}  # normalised: no surface forms given
    assert any(n.startswith("stack 1.00: shares 6 of 6 frames") for n in best.reasons.notes)
    assert "closed as duplicate on 2025-05-01" in best.reasons.notes
    # No stack in the issue: a neutral prior, said in words.
    assert ranked[1].reasons.scores.stack is None
    assert "no stack in the issue to compare" in ranked[1].reasons.notes
    assert ranked[2].level is Level.WEAK


def test_equal_scores_are_ordered_by_repo_then_number() -> None:
    issues = [_issue(9, "same"), _issue(4, "same")]
    ranked = score_candidates(QUERY, issues, {}, STATS, {})
    assert [c.issue.id for c in ranked] == [4, 9]


def test_a_text_only_query_ignores_stacks() -> None:
    query = Query(repos=(), title="hicache hang", text="hicache hang")
    ranked = score_candidates(
        query,
        [_issue(1, "hicache hang", stacks=(HANG,))],
        {1: 1.0},
        STATS,
        {"hicach": 2.0, "hang": 2.0},
    )
    assert ranked[0].reasons.scores.stack is None
    assert ranked[0].reasons.shared_frames == ()


def test_six_of_six_shared_frames_outrank_a_match_on_text_alone() -> None:
    """Issue 24: an issue with no stack but the best BM25, title and terms outranked six
    issues whose stacks share every frame with the bundle's."""
    text_only = _issue(
        100,
        "Scheduler hangs in check_hicache_events",
        "Scheduler hangs in check_hicache_events: ranks split, hicache write-through all_reduce",
    )
    sharing = [
        _issue(n, f"Server stops answering (report {n})", "no output", stacks=(HANG,))
        for n in range(1, 7)
    ]
    bm25 = {100: 30.0, **{n: 1.0 for n in range(1, 7)}}
    weights = {"hicach": 2.0, "hang": 2.0, "scheduler": 2.0}
    ranked = score_candidates(QUERY, [text_only, *sharing], bm25, STATS, weights)
    order = [c.issue.id for c in ranked]
    assert order[-1] == 100, order
    top = ranked[0].reasons.scores
    assert top.stack == pytest.approx(1.0) and top.bm25 < 0.1
    # The text-only issue is still listed, its terms said: only its place changed.
    assert ranked[-1].level is not Level.WEAK
    assert ranked[-1].reasons.scores.bm25 == 1.0


def test_among_issues_sharing_the_stack_the_text_still_orders() -> None:
    weak_text = _issue(1, "Crash in tokenizer", "tokenizer", stacks=(HANG,))
    strong_text = _issue(2, "Scheduler hangs with hicache", "hicache hang", stacks=(HANG,))
    ranked = score_candidates(
        QUERY, [weak_text, strong_text], {1: 0.5, 2: 8.0}, STATS, {"hicach": 2.0, "hang": 2.0}
    )
    assert [c.issue.id for c in ranked] == [2, 1]


def test_a_native_frame_does_not_count_against_a_full_match() -> None:
    """Issue 24: one native frame in a pasted stack dropped a 6-of-6 match to 0.41."""
    native = ("~pthread_cond_wait", *HANG)
    match = stack_similarity(HANG, native, STATS)
    assert match.similarity == pytest.approx(1.0)
    assert match.shared == HANG
    # Both sides native and the same frame: it counts, as any shared frame.
    both = stack_similarity(native, native, STATS)
    assert both.similarity == pytest.approx(1.0) and both.shared == native
    # A Python frame on top still shifts the alignment (test_stack_similarity_ranges).
    assert stack_similarity(HANG, ("wait", *HANG), STATS).similarity < 0.99


def test_the_reason_counts_frames_as_the_score_does() -> None:
    query = Query(
        repos=("a/b",),
        title="hang",
        text="hang",
        stacks=(QueryStack(keys=("~epoll_wait", *HANG), weight=1.0, label="[0-1] all_reduce"),),
    )
    ranked = score_candidates(query, [_issue(1, "x", stacks=(HANG,))], {}, STATS, {})
    scores = ranked[0].reasons.scores
    assert scores.stack == pytest.approx(1.0)
    assert any(n.startswith("stack 1.00: shares 6 of 6 frames") for n in ranked[0].reasons.notes)
    shown = stack_similarity(("~epoll_wait", *HANG), ("~epoll_wait", *HANG), STATS)
    assert len(shown.shared) == 7


def test_a_stack_that_shows_another_hang_counts_against() -> None:
    same_text = {"hicach": 2.0, "hang": 2.0}
    other = _issue(1, "Scheduler hangs with hicache", "hicache hang", stacks=(("tokenize",),))
    none = _issue(2, "Scheduler hangs with hicache", "hicache hang")
    ranked = score_candidates(QUERY, [other, none], {1: 8.0, 2: 8.0}, STATS, same_text)
    assert [c.issue.id for c in ranked] == [2, 1]
    assert ranked[1].reasons.scores.stack == 0.0


def test_signals_weigh_in_and_are_said() -> None:
    from reporter.upstream.signals import Signals

    query = Query(
        repos=("a/b",),
        title="engine dies",
        text="EngineDeadError",
        signals=Signals(exceptions=("enginedeaderror",), classes=("crash",)),
    )
    crash = StoredIssue(
        id=1,
        record=IssueRecord(repo="a/b", number=1, title="engine dies", body="EngineDeadError"),
        stacks=(),
        errors=(),
        signals=Signals(exceptions=("enginedeaderror",), classes=("crash",)),
    )
    hang = StoredIssue(
        id=2,
        record=IssueRecord(repo="a/b", number=2, title="engine dies", body="EngineDeadError"),
        stacks=(),
        errors=(),
        signals=Signals(exceptions=("enginedeaderror",), classes=("hang",)),
    )
    stats = Stats(documents=1000, term_df={"enginedeaderror": 3}, frame_df={})
    ranked = score_candidates(query, [hang, crash], {1: 1.0, 2: 1.0}, stats, {})
    assert [c.issue.id for c in ranked] == [1, 2]
    assert ranked[0].reasons.scores.failure == 1.0
    assert ranked[1].reasons.scores.failure == 0.0
    assert ranked[0].reasons.scores.exception == pytest.approx(
        stats.term_idf("enginedeaderror") / math.log(1001)
    )
    assert "same kind of failure" in ranked[0].reasons.notes
    assert "another kind of failure" in ranked[1].reasons.notes
    assert any("same exception type: enginedeaderror" in n for n in ranked[0].reasons.notes)
