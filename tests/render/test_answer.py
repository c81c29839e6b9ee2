"""The answer first: the summary block, who waits for whom, next steps from data, reachability.

Run on the fixture bundles (real captures) and on small bundles built here for the
cases the fixtures lack (timeouts in the command line and environment).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.app.report import Options, load_and_analyze, render_draft
from reporter.console import documents
from reporter.core.errors import ReporterError
from reporter.model import CommandFlag, CommandLine, Environment, EnvVar, Location
from reporter.render import answer, nextsteps, parts

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)
# A citation: `file:line`, or a metric sample by file, series and time.
_FILE_LINE = re.compile(r"`[\w./-]+(:\d+`|(:\d+)?: [\w:]+(\{[^}]*\})? at \d\d:\d\d:\d\d`)")


def _render(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles") / name], Options())
    return render_draft(bundle, analysis, now=NOW)


def _head(text: str, lines: int = 40) -> str:
    """The first `lines` lines after the front matter."""
    body = text.split("\n---\n", 1)[1]
    return "\n".join(body.splitlines()[:lines])


@pytest.mark.parametrize(
    ("name", "verdict", "sides", "step"),
    [
        # desync: both sides of the split, each with its file:line.
        (
            "tp_desync",
            "collective-desync",
            (
                "writing_check (tp_desync.py:66)",
                "self_check_during_idle (tp_desync.py:127)",
                "on_idle (tp_desync.py:118)",
                "on_idle (tp_desync.py:119)",
            ),
            "Compare, across ranks, the condition",
        ),
        # dead rank: the waiting side's call site and the gone rank with its failed dump.
        (
            "dead_rank",
            "all-stuck",
            ("flush_cache (dead_rank.py:133)", "rank 3, gone", "snapshots/rank3_s0.txt:1"),
            "kernel log",
        ),
        # metrics only: no split; the onset and the restart before it, with their lines.
        (
            "wedge_metrics",
            "wedged (metrics only)",
            ("metrics/scrapes.prom:1639", "systemd/sglang-fixture.service.txt:24"),
            "capture stacks of every scheduler process",
        ),
        # env regression: the split, and the top change with its lines in both runs.
        (
            "full_incident",
            "collective-desync",
            (
                "writing_check (tp_desync.py:66)",
                "self_check_during_idle (tp_desync.py:127)",
                "SGLANG_SM120_MMA_TARGET_CTAS",
                "env/environ:6",
                "baseline/proc/environ:6",
            ),
            "On one replica first, set `SGLANG_SM120_MMA_TARGET_CTAS` back to `256` (now `512`)",
        ),
    ],
)
def test_the_first_40_lines_hold_the_answer(
    name: str, verdict: str, sides: tuple[str, ...], step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _render(name, monkeypatch)
    head = _head(text)
    assert head.splitlines()[0].startswith("<!-- reporter:begin id=title")
    assert "## Summary" in head and f"Verdict: **{verdict}**" in head
    for needle in sides:
        assert needle in head, needle
    assert "**Next steps:**" in head and step in head
    # Every summary bullet cites evidence, or says plainly that it rests on an absence.
    summary = head[head.index("## Summary") : head.index("**Next steps:**")]
    for line in summary.splitlines():
        if line.startswith("- **"):
            text = line.partition(":** ")[2]
            absent = text.startswith(("Not known: ", "No ", "No: ", "None", "Nothing"))
            absent = absent or line.startswith("- **Not known:** ")
            assert absent or _FILE_LINE.search(line), line


@pytest.mark.parametrize(
    "bundle_dir", sorted(p for p in BUNDLES.iterdir() if p.is_dir()), ids=lambda p: p.name
)
def test_every_class_frame_and_every_evidence_file_is_reachable(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([bundle_dir.relative_to(ROOT)], Options())
    text = render_draft(bundle, analysis, now=NOW)
    for stack_class in analysis.classes:
        for frame in stack_class.frames:
            assert parts.located(frame) in text or frame.function in text, (
                stack_class.label,
                frame,
            )
        # The class's own innermost frames are shown with their line numbers.
        innermost = stack_class.frames[0]
        assert parts.located(innermost) in text
    for evidence in bundle.files:
        assert f"`{evidence.path}`" in text, evidence.path


def test_summary_and_next_steps_in_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/dead_rank")], Options())
    import json

    data = json.loads(documents.analysis_json(analysis, bundle))
    assert data["verdict"] == "all-stuck"  # existing keys stay
    assert data["summary"] == analysis.summary  # the documented string key is kept
    topics = [line["topic"] for line in data["summary_lines"]]
    assert topics[:2] == ["What", "Who waits for whom"]
    waits = data["summary_lines"][1]
    assert "snapshots/rank3_s0.txt:1" in waits["sources"]
    rules = [step["rule"] for step in data["next_steps"]]
    assert rules[0] == "gone-rank" and all(
        step["action"] and step["why"] for step in data["next_steps"]
    )
    # Without the bundle the document is the analysis alone, as before.
    assert "summary_lines" not in json.loads(documents.analysis_json(analysis))


def test_timeouts_from_command_line_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/tp_desync")], Options())
    here = Location(path="env/cmdline", line=1)
    env = Environment(
        cmdlines=(
            CommandLine(
                argv=("python", "-m", "sglang.launch_server", "--watchdog-timeout", "300"),
                program="sglang.launch_server",
                flags=(
                    CommandFlag(name="--watchdog-timeout", value="300"),
                    CommandFlag(name="--tp", value="4"),
                ),
                source=here,
            ),
        ),
        variables=(
            EnvVar(
                name="TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
                value="600",
                source=Location(path="env/environ", line=7),
            ),
            EnvVar(
                name="TORCH_NCCL_DUMP_ON_TIMEOUT",
                value="1",
                source=Location(path="env/environ", line=8),
            ),
            EnvVar(name="PATH", value="/usr/bin", source=Location(path="env/environ", line=9)),
        ),
    )
    found = answer.find_timeouts(replace(bundle, environment=env))
    assert [(t.name, t.value, t.source) for t in found] == [
        ("--watchdog-timeout", "300", "env/cmdline:1"),
        ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "600", "env/environ:7"),
    ]
    built = answer.build(replace(bundle, environment=env), analysis)
    recover = next(line for line in built.lines if line.topic == "Recovers on its own")
    assert "`--watchdog-timeout=300`" in recover.text and "env/cmdline:1" in recover.sources
    assert [s.rule for s in built.steps] == ["desync-rank-local-condition", "timeout-set"]
    # And none: said so.
    # None set: torch's own default for the backend and version in the evidence.
    none = answer.build(bundle, analysis)
    recover = next(line for line in none.lines if line.topic == "Recovers on its own")
    assert recover.text.startswith("Probably, by timing out: torch's gloo default of 30 min")


def test_titles_say_what_happened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    titles = {}
    for name in ("tp_desync", "healthy_loop", "wedge_metrics", "dead_rank"):
        bundle, analysis = load_and_analyze([Path("fixtures/bundles") / name], Options())
        titles[name] = answer.build(bundle, analysis).title
    assert titles["tp_desync"] == (
        "TP ranks [0-1] wait in all_reduce (writing_check) for [2-3] idle in self_check_during_idle"
    )
    assert titles["healthy_loop"] == "No hang: 4 ranks progressing"
    assert titles["wedge_metrics"] == "Output stalled since 15:11:58 UTC, queue growing; no stacks"
    assert titles["dead_rank"] == "TP ranks [0-2] wait in barrier (flush_cache) for rank 3, gone"


def test_restart_before_the_wedge_is_said_once_in_since(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/wedge_metrics")], Options())
    built = answer.build(bundle, analysis)
    (since,) = [line for line in built.lines if line.topic == "Since"]
    assert "16 s after `sglang-fixture.service` started at 15:11:43 UTC" in since.text
    assert "systemd/sglang-fixture.service.txt:24" in since.sources
    # Said once: the verdict paragraph adds only what no line says.
    assert "sglang-fixture.service" not in built.paragraph


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]]\nid = 'a'\naction = 'x'\n", "needs `why`"),
        ("[[rule]]\nid = 'a'\naction = ' '\nwhy = 'y'\n", "`action` is empty"),
        ("[[rule]]\nid = 'a'\naction = 'x {nope}'\nwhy = 'y'\n", "unknown placeholder {nope}"),
        (
            "[[rule]]\nid = 'a'\naction = 'x'\nwhy = 'y'\nverdict = ['stalled']\n",
            "unknown verdict 'stalled'",
        ),
        ("[[rule]]\nid = 'a'\naction = 'x'\nwhy = 'y'\ngone = 'yes'\n", "must be true or false"),
        ("[[rule]]\nid = 'a'\naction = 'x'\nwhy = 'y'\nwaitted = ['idle']\n", "unknown key"),
        (
            "[[rule]]\nid = 'a'\naction = 'x'\nwhy = 'y'\n[[rule]]\nid = 'a'\naction = 'x'\n"
            "why = 'y'\n",
            "duplicate id",
        ),
        ("[[rule]\n", "not valid TOML"),
    ],
)
def test_next_steps_file_is_validated_with_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ReporterError) as err:
        nextsteps.parse_rules(text, source="steps.toml")
    assert err.value.message.startswith("steps.toml") and message in err.value.message
    assert err.value.tip


def test_shipped_rules_load_and_every_rule_can_fire() -> None:
    rules = nextsteps.default_rules()
    assert len({r.id for r in rules}) == len(rules) >= 10
    fired: set[str] = set()
    for verdict in sorted(nextsteps.VERDICTS):
        for stacks in (True, False):
            for wedge in (True, False):
                for waited in sorted(nextsteps.WAITED_STATES):
                    for gone, missing in ((True, False), (False, True), (False, False)):
                        for timeout, captured in ((True, True), (False, True), (False, False)):
                            for one, fr in ((True, False), (False, False), (False, True)):
                                for p2p, peers in ((False, False), (True, False), (True, True)):
                                    facts = nextsteps.Facts(
                                        verdict=verdict,
                                        stacks=stacks,
                                        wedge=wedge,
                                        waited=frozenset({waited}),
                                        gone=gone,
                                        missing=missing,
                                        timeout=timeout,
                                        captured=captured,
                                        one_collective=one,
                                        flight_recorder=fr,
                                        blocked_threads=gone and not timeout,
                                        p2p=p2p,
                                        peers=peers,
                                        diff_kinds=frozenset({"env", "package"}),
                                        collectives=frozenset({"all_reduce"} if one else ()),
                                    )
                                    fired.update(s.rule for s in nextsteps.suggest(rules, facts))
    assert fired == {r.id for r in rules}


class _WithWaits:
    """An analysis with the waits-for relation of the verdict issue, as it will arrive."""

    def __init__(self, analysis: object, waits_for: tuple[object, ...]) -> None:
        self._analysis = analysis
        self.waits_for = waits_for

    def __getattr__(self, name: str) -> object:
        return getattr(self._analysis, name)


def test_the_analysis_own_waits_for_relation_is_used_when_present(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/tp_desync")], Options())
    edge = SimpleNamespace(
        waiting=SimpleNamespace(
            ranks=(0, 1),
            pids=(26038, 26039),
            collective="all_reduce",
            at="writing_check (tp_desync.py:66)",
        ),
        waited=SimpleNamespace(
            ranks=(2, 3),
            pids=(26040, 26041),
            state="idle",
            at="idle in on_idle (tp_desync.py:119)",
        ),
    )
    wrapped = _WithWaits(analysis, (edge,))
    (got,) = answer.waits_for(wrapped)  # type: ignore[arg-type]
    assert got.collective == "all_reduce" and got.waiting.where == "writing_check (tp_desync.py:66)"
    assert got.waited.state == "idle" and got.waited.doing == "idle in on_idle (tp_desync.py:119)"
    assert got.waited.where == "on_idle (tp_desync.py:119)" and got.waited.evidence
    title = answer.build(bundle, wrapped).title  # type: ignore[arg-type]
    assert title == "TP ranks [0-1] wait in all_reduce (writing_check) for [2-3] idle in on_idle"


def test_source_root_shows_the_code_on_both_sides_of_the_branch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    options = Options(source_roots=(ROOT / "fixtures" / "scenarios",))
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/tp_desync")], options)
    text = render_draft(bundle, analysis, now=NOW)
    code = text[text.index("## Code at the branch point") :]
    # [0-1] leave on_idle at line 118 for the collective, [2-3] at line 119 for the idle sleep.
    assert "> 118          self.check_hicache_events()" in code
    assert "> 119          self.self_check_during_idle()" in code
    # The code follows the per-class stacks, right after the verdict.
    assert text.index("## Stacks by class") < text.index("## Code at the branch point")
    assert text.index("## Code at the branch point") < text.index("## Ranks and classes")


def test_ranks_with_the_same_stacks_share_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight ranks in two classes: two full dumps at most per class, the rest one line each."""
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([Path("fixtures/bundles/tp8_desync")], Options())
    text = render_draft(bundle, analysis, now=NOW)
    evidence = text[text.index("## Evidence") :]
    assert "<summary>ranks [1-5]: the same stacks as rank 0</summary>" in evidence
    # Ranks 1-5 are named with their PID and every file, but not drawn again.
    for rank in range(1, 6):
        assert f"(rank {rank}, sglang::scheduler_TP{rank})" in evidence
        assert f"locals/rank{rank}.txt:1" in evidence
        assert f"<summary>rank {rank}, PID" not in evidence
    assert evidence.count("all_reduce (torch/distributed/distributed_c10d.py:") == 1
    assert len(text.encode("utf-8")) < 30 * 1024


def test_evidence_heading_names_the_newest_python_by_release_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Snapshots taken across an upgrade: 3.10 is newer than 3.9, though it sorts first as text."""
    import dataclasses

    from reporter.render import evidence

    monkeypatch.chdir(ROOT)
    _, analysis = load_and_analyze([Path("fixtures/bundles/tp_desync")], Options())
    process = analysis.processes[0]
    first, *rest = process.snapshots
    mixed = dataclasses.replace(
        process,
        snapshots=(
            dataclasses.replace(first, python_version="3.10.4"),
            *(dataclasses.replace(d, python_version="3.9.18") for d in rest),
        ),
    )
    text = evidence.process_block(mixed).text
    assert isinstance(text, str)  # the local report's blocks hold plain text
    heading = text.splitlines()[0]
    assert heading.endswith(", Python 3.10.4"), heading


def test_one_process_is_counted_in_the_singular(monkeypatch: pytest.MonkeyPatch) -> None:
    """A single real dump from a public thread: `1 rank` and `1 process`, never `1 ranks`."""
    monkeypatch.chdir(ROOT)
    path = Path("fixtures/realworld/accelerate-3104-1.txt")
    bundle, analysis = load_and_analyze([path], Options())
    text = render_draft(bundle, analysis, now=NOW)
    head = _head(text)
    # One process judged on its own: one snapshot cannot tell, never "no other rank".
    assert "one snapshot cannot tell stuck from slow" in head
    assert "no other rank to compare" not in text
    assert "1 ranks" not in text and "1 processes" not in text


def test_a_step_naming_pids_on_several_hosts_names_the_host_of_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stopped rank's step says where its PID lives once the ranks span two hosts."""
    from reporter.render.answer import states

    monkeypatch.chdir(ROOT)
    _, analysis = load_and_analyze([Path("fixtures/bundles/stopped_rank")], Options())
    assert "on " not in states.step_values(analysis)["frozen"]
    hosts = ("node-a", "node-a", "node-b", "node-b")
    moved = tuple(
        replace(p, identity=replace(p.identity, host=hosts[(p.identity.rank or 0) % 4]))
        for p in analysis.processes
    )
    spread = replace(analysis, processes=moved)
    frozen = states.step_values(spread)["frozen"]
    assert frozen.startswith("rank 2 (PID ") and frozen.endswith(" on node-b")


def test_all_is_never_said_of_a_set_partly_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stuck bundle whose table shows one rank idle: "2 of 4 ranks stuck, 1 idle" (rank 3
    is gone: "all" is said neither of a partly idle nor of a partly absent set)."""
    from reporter.analysis.result import RankState
    from reporter.render.answer import what as answer_lines

    monkeypatch.chdir(ROOT)
    bundle_, analysis = load_and_analyze([Path("fixtures/bundles/dead_rank")], Options())
    assert answer_lines.stack_title(analysis, ()).startswith("3 of 4 ranks stuck")
    first, *rest = analysis.processes
    idle = replace(analysis, processes=(replace(first, state=RankState.IDLE), *rest))
    assert answer_lines.stack_title(idle, ()).startswith("2 of 4 ranks stuck")
    what = answer_lines.what_line(bundle_, idle, ()).text
    assert what.startswith("2 of 4 ranks stuck and 1 idle") and "All" not in what
