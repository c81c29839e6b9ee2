"""Query building from a bundle or a text, FTS expressions, and GitHub search strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.analysis import analyze
from reporter.load.bundle import load
from reporter.upstream.query import (
    MAX_GITHUB_KEYWORDS,
    MOVING_STACK_WEIGHT,
    Query,
    QueryStack,
    fit_github_query,
    github_queries,
    match_expression,
    query_from_analysis,
    query_from_text,
    surface_forms,
    term_weights,
)

from .conftest import TP_DESYNC


@pytest.fixture(scope="module")
def tp_query() -> Query:
    bundle = load([TP_DESYNC])
    return query_from_analysis(bundle, analyze(bundle))


def test_bundle_query_has_title_repos_and_weighted_stacks(tp_query: Query) -> None:
    assert tp_query.repos == ("sgl-project/sglang",)
    assert "check_hicache_events" in tp_query.title
    stuck, moving = tp_query.stacks
    assert stuck.keys == (
        "all_reduce",
        "writing_check",
        "check_hicache_events",
        "on_idle",
        "event_loop_overlap",
        "run_scheduler_process",
    )
    assert (stuck.weight, stuck.label) == (1.0, "[0-1] all_reduce")
    assert moving.keys[0] == "self_check_during_idle"
    assert moving.weight == MOVING_STACK_WEIGHT
    assert tp_query.signature is not None and tp_query.signature.startswith("collective-desync")
    # Only the symptom fields of the manifest are query text, not paths and commands.
    assert "capture.py" not in tp_query.text


def test_explicit_repos_win_over_the_manifest(tmp_path: Path) -> None:
    bundle = load([TP_DESYNC])
    query = query_from_analysis(bundle, analyze(bundle), repos=["pytorch/pytorch"])
    assert query.repos == ("pytorch/pytorch",)


def test_text_query_takes_the_first_line_as_title_and_finds_stacks() -> None:
    text = '## Hang in all_reduce\n\n```\nThread 1 (idle): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:1)\n    step (app/loop.py:3)\n```\n'
    query = query_from_text(text, repos=["a/b"])
    assert query.title == "Hang in all_reduce"
    assert [s.keys for s in query.stacks] == [("all_reduce", "step")]
    assert query.repos == ("a/b",)


def test_term_weights_favour_title_and_frames() -> None:
    query = Query(
        repos=(),
        title="deadlock scheduler",
        text="deadlock scheduler and some body words body",
        stacks=(QueryStack(keys=("check_hicache_events",), weight=1.0, label="x"),),
    )
    weights = term_weights(query)
    assert weights["deadlock"] == 3.0  # 2 (title) + 1 (text), capped at 3
    assert weights["bodi"] == 2.0  # Snowball: body -> bodi
    # The identifier's compound carries the frame's weight; its common words little.
    assert weights["checkhicacheevents"] == 2.0
    assert weights["hicach"] == 0.5
    assert "and" not in weights


def test_surface_forms_map_stems_back_to_words() -> None:
    query = Query(repos=(), title="writing hangs", text="")
    assert surface_forms(query)["hang"] == "hangs"


def test_match_expression_quotes_everything() -> None:
    assert match_expression(["hang", "hicache"], ["check_hicache_events", "x"]) == (
        '"hang" OR "hicache" OR "check hicach event"'
    )
    assert match_expression([]) == ""


def test_github_queries_fit_the_limits(tp_query: Query) -> None:
    frame_df = {
        "all_reduce": 900,
        "writing_check": 2,
        "check_hicache_events": 3,
        "on_idle": 40,
        "event_loop_overlap": 400,
        "run_scheduler_process": 500,
    }
    queries = github_queries(tp_query, frame_df=frame_df)
    assert 1 <= len(queries) <= 3
    for q in queries:
        keywords = q.split(" repo:")[0]
        assert len(keywords) <= MAX_GITHUB_KEYWORDS
        assert q.endswith("repo:sgl-project/sglang is:issue")
        assert not {" AND ", " OR ", " NOT "} & {w for w in (" AND ", " OR ", " NOT ") if w in q}
    # The rarest frames lead the frame query.
    assert queries[0].startswith('"writing_check" "check_hicache_events"')


def test_github_queries_use_an_error_line_when_there_is_one() -> None:
    query = Query(
        repos=("a/b",),
        title="crash",
        text="",
        errors=("runtimeerror: [pair.cc:n] connection closed by peer [n.n.n.n]:n",),
    )
    assert github_queries(query) == ('"connection closed peer" repo:a/b is:issue',)


def test_fit_github_query_drops_keywords_and_operators() -> None:
    words = ["x" * 100, "y" * 100, "z" * 100, "AND", "OR"]
    fitted = fit_github_query(words, ["repo:a/b"])
    assert fitted == f"{'x' * 100} {'y' * 100} repo:a/b"
    assert fit_github_query(["and", "not"], ["repo:a/b"]) == ""


def test_outer_frames_weigh_less_than_where_the_stack_waits() -> None:
    query = Query(
        repos=(),
        title="",
        text="",
        stacks=(
            QueryStack(
                keys=("writing_check", "event_loop_overlap", "run_scheduler_process"),
                weight=1.0,
                label="x",
            ),
        ),
    )
    weights = term_weights(query)
    assert weights["writingcheck"] == 2.0
    assert weights["writingcheck"] > weights["eventloopoverlap"] > weights["runschedulerprocess"]
    assert weights["runschedulerprocess"] == pytest.approx(2.0 * 3**-0.6)
