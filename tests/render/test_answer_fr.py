"""The summary block when the Flight Recorder knows the answer (fixtures/bundles/fr_*).

The Flight Recorder's first mismatch decides the headline, the "What" line and who waits
for whom (one line per side, citing the FR files and each side's stack place); a trace
with no mismatch and every collective completed says there is no hang.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from reporter.analysis.result import Analysis, Verdict
from reporter.app.report import Options, load_and_analyze
from reporter.model import Bundle
from reporter.render import answer


@cache
def _load(name: str) -> tuple[Bundle, Analysis, answer.Answer]:
    bundle, analysis = load_and_analyze([Path("fixtures/bundles") / name], Options())
    return bundle, analysis, answer.build(bundle, analysis)


def _topic(built: answer.Answer, topic: str) -> list[answer.SummaryLine]:
    return [line for line in built.lines if line.topic == topic]


def test_different_ops_summary_comes_from_the_flight_recorder() -> None:
    _, _, built = _load("fr_different_ops")
    assert built.title == "TP ranks [0-1] in all_reduce, ranks [2-3] in broadcast at #5 on group 1"
    (what,) = _topic(built, "What")
    assert "first mismatch (op) at #5 on group 1" in what.text
    assert "all_reduce by ranks [0-1]; broadcast by ranks [2-3]" in what.text
    assert what.sources == tuple(f"torch-debug/fr_trace/rank{r}.json" for r in range(4))
    waits = _topic(built, "Who waits for whom")
    assert [w.text for w in waits] == [
        "Ranks [0-1] issued all_reduce #5 on group 1; stacks: stuck in work-wait at "
        "forward_batch (frjob.py:104).",
        # The same place as the line above: said once (issue 31: no file:line twice).
        "Ranks [2-3] issued broadcast #5 on group 1; stacks: stuck in work-wait at forward_batch.",
    ]
    assert waits[0].sources == ("torch-debug/fr_trace/rank0.json", "snapshots/rank0_s1.txt:4")
    assert waits[1].sources == ("torch-debug/fr_trace/rank2.json", "snapshots/rank2_s1.txt:4")
    assert "waits in work-wait" not in built.title


def test_skipped_rank_is_the_one_the_others_wait_for() -> None:
    _, _, built = _load("fr_skipped")
    assert built.title == "TP ranks [0-2] in all_reduce #5 on group 1 that rank 3 never issued"
    (what,) = _topic(built, "What")
    assert "(missing) at #5 on group 1: all_reduce by ranks [0-2]; rank 3 never issued it" in (
        what.text
    )
    waits = [w.text for w in _topic(built, "Who waits for whom")]
    assert waits == [
        "Ranks [0-2] issued all_reduce #5 on group 1 and wait for rank 3; stacks: stuck in "
        "work-wait at forward_batch (frjob.py:104).",
        "Rank 3 never issued #5 (last issued all_reduce #4); stacks: idle in sleep at "
        "poll_requests (frjob.py:153).",
    ]


def test_sizes_sides_name_sizes_and_split_places_within_a_side() -> None:
    _, _, built = _load("fr_sizes")
    assert (
        built.title
        == "TP ranks [0,2-3] in all_reduce [[4]], rank 1 in all_reduce [[8]] at #5 on group 1"
    )
    waits = _topic(built, "Who waits for whom")
    assert len(waits) == 2
    assert waits[0].text.startswith("Ranks [0,2-3] issued all_reduce [[4]] #5 on group 1; stacks: ")
    assert "ranks [0,3] stuck in broadcast at recv_requests (frjob.py:139)" in waits[0].text
    assert "rank 2 stuck in work-wait at forward_batch (frjob.py:104)" in waits[0].text
    assert waits[0].sources == (
        "torch-debug/fr_trace/rank0.json",
        "snapshots/rank0_s1.txt:4",
        "snapshots/rank2_s1.txt:4",
    )
    assert waits[1].text.startswith("Rank 1 issued all_reduce [[8]] #5 on group 1")


def test_flight_recorder_rule_replaces_the_generic_desync_rules() -> None:
    for name in ("fr_different_ops", "fr_skipped", "fr_sizes"):
        _, _, built = _load(name)
        rules = [step.rule for step in built.steps]
        assert rules[0] == "fr-first-mismatch", (name, rules)
        assert "desync-two-collectives" not in rules
        assert "desync-rank-local-condition" not in rules
        assert built.steps[0].action.startswith("Compare the two call orders at #5 on group 1: ")
        assert "`torch-debug/fr_trace/rank0.json`" in built.steps[0].why


def test_summary_block_stays_short() -> None:
    for name in ("fr_different_ops", "fr_skipped", "fr_sizes", "fr_healthy"):
        _, _, built = _load(name)
        # At most a dozen summary lines (every topic has one), at most four steps.
        assert len(built.lines) <= 12 and len(built.steps) <= 4, name


def test_healthy_run_says_no_hang() -> None:
    _, analysis, built = _load("fr_healthy")
    assert analysis.verdict is Verdict.PROGRESSING
    assert built.title == "No hang: 4 ranks completed every collective (Flight Recorder)"
    (what,) = _topic(built, "What")
    assert what.text.startswith("No hang in the collectives: ")
    assert (
        "completed every collective it issued (up to group 0 (default_pg) #132, group 1 #132)"
        in (what.text)
    )
    (who,) = _topic(built, "Who waits for whom")
    assert who.text == "No one found waiting for another rank."
    (recovers,) = _topic(built, "Recovers on its own")
    assert recovers.text.startswith("Nothing shown stuck to recover from")
    assert [s.rule for s in built.steps] == ["progressing"]


def test_no_flight_recorder_keeps_the_stack_lines() -> None:
    _, analysis, built = _load("tp_desync")
    assert analysis.flight_recorder is None
    waits = _topic(built, "Who waits for whom")
    assert waits and "issued" not in waits[0].text
    assert "desync-rank-local-condition" in [s.rule for s in built.steps]


def test_ranks_at_the_same_place_are_never_a_pair() -> None:
    for name in ("fr_different_ops", "fr_skipped", "fr_sizes", "fr_healthy", "tp_desync"):
        _, analysis, _ = _load(name)
        for edge in answer.waits_for(analysis):
            assert (edge.waiting.state, edge.waiting.where) != (
                edge.waited.state,
                edge.waited.where,
            ), name
            assert not set(edge.waiting.ranks) & set(edge.waited.ranks), name


def _side(ranks: tuple[int, ...], state: str, where: str) -> answer.WaitSide:
    return answer.WaitSide(
        label=str(list(ranks)),
        name=f"rank {ranks[0]}",
        ranks=ranks,
        pids=(),
        state=state,
        where=where,
        branch="",
        evidence=f"snapshots/rank{ranks[0]}.txt:4",
    )


def test_collapse_joins_equal_places_into_one_side() -> None:
    a0 = _side((0,), "stuck in all_reduce", "step (x.py:10)")
    a1 = _side((1,), "stuck in all_reduce", "step (x.py:10)")
    b2 = _side((2,), "idle", "loop (x.py:20)")
    b3 = _side((3,), "idle", "loop (x.py:20)")
    edges = [
        answer.WaitEdge(waiting=w, collective="all_reduce", waited=v)
        for w in (a0, a1)
        for v in (a1, b2, b3)
        if w is not v
    ]
    (edge,) = answer.collapse(edges, "rank")
    assert edge.waiting.ranks == (0, 1) and edge.waiting.name == "ranks [0-1]"
    assert edge.waited.ranks == (2, 3) and edge.waited.label == "[2-3]"
    assert edge.waiting.evidence == "snapshots/rank0.txt:4"
