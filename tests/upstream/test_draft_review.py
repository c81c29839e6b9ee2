"""The maintainer review's rules for upstream drafts, one test (or more) per rule, on the
story and draft builders: the launch line or "not captured", no locals and no repeated
lines, the mode and model named, the hung instance only, snapshots counted per series."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reporter.analysis import Analysis
from reporter.analysis.environment import ShownCommand
from reporter.app import filing
from reporter.app.report import Options, load_and_analyze
from reporter.model import Bundle, CommandFlag
from reporter.upstream import draft as drafting
from reporter.upstream.draft import DraftInputs, build_draft
from reporter.upstream.focus import plain_dump, stack_groups
from reporter.upstream.forms import IssueForm, parse_forms, pick_bug_form
from reporter.upstream.story import build_story, is_launcher, moments

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = ROOT / "fixtures" / "bundles"
ENGINE_CLI = ROOT / "fixtures" / "engine_cli"
Pair = tuple[Bundle, Analysis]


def _load(path: Path) -> Pair:
    return load_and_analyze([path], Options())


@pytest.fixture(scope="module")
def sglang_form() -> IssueForm:
    form = pick_bug_form(
        parse_forms(filing.read_forms_dir(ROOT / "fixtures" / "forms" / "sglang"))[0]
    )
    assert form is not None
    return form


@pytest.fixture(scope="module")
def tp() -> Pair:
    return _load(BUNDLES / "tp_desync")


@pytest.fixture(scope="module")
def full() -> Pair:
    return _load(BUNDLES / "full_incident")


@pytest.fixture(scope="module")
def dp() -> Pair:
    return _load(BUNDLES / "dp_attention")


@pytest.fixture(scope="module")
def two() -> Pair:
    return _load(BUNDLES / "two_servers" / "collect")


def _draft(pair: Pair, form: IssueForm, **changes: object) -> drafting.UpstreamDraft:
    bundle, analysis = pair
    inputs = DraftInputs(bundle=bundle, analysis=analysis, repo="sgl-project/sglang", form=form)
    return build_draft(replace(inputs, **changes), budget=drafting.BODY_BUDGET)  # type: ignore[arg-type]


def _section(body: str, heading: str) -> str:
    """One form field's text (the hidden marker at the end left out)."""
    return body.split(f"### {heading}", 1)[1].split("\n### ", 1)[0].split("<!--", 1)[0]


def _with_command(pair: Pair, command: ShownCommand) -> Pair:
    bundle, analysis = pair
    assert analysis.environment is not None
    environment = replace(analysis.environment, commands=(command,))
    return bundle, replace(analysis, environment=environment)


LAUNCH = ShownCommand(
    program="sglang.launch_server",
    flags=tuple(
        CommandFlag(name=name, value=value)
        for name, value in (
            ("--model-path", "/models/Qwen3-8B"),
            ("--tp-size", "4"),
            ("--enable-hierarchical-cache", None),
            ("--api-key", "sk-live-123456"),
            ("--host", "10.1.2.3"),
            ("--port", "30000"),
        )
    ),
    positional=(),
    source="env/pid42.cmdline",
)


# --- 1. A real reproduction and version ----------------------------------------------


def test_the_engines_launch_line_is_the_reproduction(full: Pair, sglang_form: IssueForm) -> None:
    made = _draft(_with_command(full, LAUNCH), sglang_form)
    reproduction = _section(made.body, "Reproduction")
    assert (
        "python3 -m sglang.launch_server --model-path <path>/Qwen3-8B --tp-size 4 "
        "--enable-hierarchical-cache --api-key <secret-1>" in reproduction
    )
    # Per-run host and port never show; the secret never does.
    assert "10.1.2.3" not in made.body and "30000" not in reproduction
    assert "sk-live" not in made.body
    assert "not captured" not in reproduction


def test_only_the_engines_own_launchers_count_as_a_launch_line() -> None:
    def cmd(program: str, *positional: str) -> ShownCommand:
        return ShownCommand(program=program, flags=(), positional=positional, source="x")

    assert is_launcher(cmd("sglang.launch_server"))
    assert is_launcher(cmd("/opt/venv/bin/vllm", "serve", "meta-llama/Llama-3.1-8B"))
    assert is_launcher(cmd("torchrun"))
    assert not is_launcher(cmd("serve.py"))
    assert not is_launcher(cmd("/work/engine_cli.py"))
    assert not is_launcher(cmd("vllm", "bench"))
    assert not is_launcher(None)


def test_a_wrapper_script_is_not_presented_as_the_reproduction(
    full: Pair, sglang_form: IssueForm
) -> None:
    made = _draft(full, sglang_form)
    reproduction = _section(made.body, "Reproduction")
    assert "The engine's launch line was not captured" in reproduction
    assert "What would capture it:" in reproduction and "/proc/<pid>/cmdline" in reproduction
    # The engine options the wrapper passed, alone (not the wrapper's own or per-run ones).
    assert "--model-path <path>/Qwen3-8B --tp 4" in reproduction
    assert "serve.py --model-path" not in made.body and "--log-level" not in reproduction


def test_a_harness_command_in_the_notes_is_not_the_reproduction(
    tp: Pair, sglang_form: IssueForm
) -> None:
    bundle, _ = tp
    assert any("capture.py tp_desync" in text for _, text in bundle.manifest.fields)
    made = _draft(tp, sglang_form)
    reproduction = _section(made.body, "Reproduction")
    assert "capture.py" not in made.body
    assert "The engine's launch line was not captured" in reproduction
    # Steps in words from the notes stay: they are not a test script's command.
    steps = replace(
        bundle.manifest,
        fields=(("reproduction", "Send 64 concurrent requests, then stop the load."),),
    )
    worded = _draft((replace(bundle, manifest=steps), tp[1]), sglang_form)
    assert "Send 64 concurrent requests" in _section(worded.body, "Reproduction")


def test_a_missing_version_is_said_once(tp: Pair, sglang_form: IssueForm) -> None:
    environment = _section(_draft(tp, sglang_form).body, "Environment")
    assert environment.count("not known") == 1
    assert "python3 -m sglang.check_env" in environment
    assert "was not run" not in environment
    for jargon in ("bundle", "report collect", "maintainers close"):
        assert jargon not in environment, jargon


# --- 2. Cut the noise ------------------------------------------------------------------


def test_raw_dumps_have_no_arguments_or_locals_and_the_main_thread_first(
    tp: Pair, sglang_form: IssueForm
) -> None:
    bundle, _ = tp
    assert any(f.locals for d in bundle.dumps for t in d.threads for f in t.frames)
    body = _draft(tp, sglang_form).body
    assert "Arguments:" not in body and "Locals:" not in body and "<Tensor at" not in body
    dumps = body.split("<summary>Raw py-spy dumps", 1)[1].split("</details>", 1)[0]
    for process in dumps.split("\nProcess ")[1:]:
        threads = [line for line in process.splitlines() if line.startswith("Thread ")]
        assert threads[0].endswith('"MainThread"'), threads


def test_plain_dump_puts_the_main_thread_first_and_drops_locals(tp: Pair) -> None:
    _, analysis = tp
    process = analysis.processes[0]
    with_locals = [
        d for d in process.snapshots if any(f.locals for t in d.threads for f in t.frames)
    ]
    assert with_locals
    dump = with_locals[-1]
    # The main thread last, as some dumps list it: it still comes out first.
    shuffled = replace(dump, threads=(*dump.threads[1:], dump.threads[0]))
    plain = plain_dump([shuffled])
    assert plain.threads[0].name == "MainThread"
    assert not any(f.locals for t in plain.threads for f in t.frames)


def test_the_timeline_does_not_repeat_the_metrics_or_name_this_run(
    full: Pair, sglang_form: IssueForm
) -> None:
    body = _draft(full, sglang_form).body
    timeline = body.split("<summary>Timeline (UTC)</summary>", 1)[1].split("</details>", 1)[0]
    for said in (" metric: ", " wedge: ", " dump: ", "report collect"):
        assert said not in timeline, said
    assert "PID <pid>" in timeline and "10597" not in timeline
    assert "127.0.0.1:38949" not in body and "<host>:<port>" in timeline


def test_said_once_and_no_tool_jargon(full: Pair, sglang_form: IssueForm) -> None:
    body = _draft(full, sglang_form).body
    assert body.count("starts growing linearly") == 1
    for jargon in (
        "bundle",
        "incident notes",
        "report collect",
        "side of the split",
        "Trimmed to keep the issue short",
    ):
        assert jargon not in body.split("<!--", 1)[0], jargon


def test_a_change_shows_only_when_the_stacks_tie_it_to_the_hang(
    full: Pair, sglang_form: IssueForm
) -> None:
    bundle, analysis = full
    assert analysis.diff is not None
    assert "Changes since the last good run" not in _draft(full, sglang_form).body
    # A change to a file of the hung stack (tp_desync.py) is worth a look.
    change = replace(next(c for c in analysis.diff.changes if not c.noise), key="tp_desync.py")
    tied = replace(analysis, diff=replace(analysis.diff, changes=(change,)))
    assert "Changes since the last good run" in _draft((bundle, tied), sglang_form).body


# --- 3. Name the mode and say why --------------------------------------------------------


def test_dp_attention_is_named_and_one_replica_is_one_stack(
    dp: Pair, sglang_form: IssueForm
) -> None:
    bundle, analysis = dp
    story = build_story(bundle, analysis, "sgl-project/sglang")
    assert story.title.startswith("SGLang DP attention (DP=2, TP=4) hangs: DP0 TP0-1")
    groups = stack_groups(analysis, story.hung_instance)
    assert [sorted(r for c in g for r in c.ranks) for g in groups] == [[0, 1], [2, 3]]
    body = _draft(dp, sglang_form).body
    assert "**DP1 TP2-3** (ranks 2-3), changing between snapshots" in body
    assert body.count("**DP1 TP") == 1


def test_hicache_and_pd_are_named_from_flags_or_the_engines_classes(tp: Pair) -> None:
    bundle, analysis = tp
    # HiRadixCache in the hung stack is SGLang's HiCache.
    assert build_story(bundle, analysis, "sgl-project/sglang").mode == "HiCache"
    pd = _load(ENGINE_CLI / "pd_decode")
    assert build_story(*pd, "sgl-project/sglang").mode == "PD decode + HiCache"


def test_no_bare_torch_link_the_engines_line_instead(two: Pair, sglang_form: IssueForm) -> None:
    body = _draft(two, sglang_form).body
    code = body.split("**Engine code at the hang**", 1)[1].split("<details>", 1)[0]
    assert "github.com/pytorch/pytorch" not in code
    assert "TP0 calls all_reduce from: `HiRadixCache.writing_check (tp_desync.py:66)`" in code


def test_an_excerpt_that_already_shows_the_engines_line_is_not_repeated(
    full: Pair, sglang_form: IssueForm
) -> None:
    body = _draft(full, sglang_form).body
    code = body.split("**Engine code at the hang**", 1)[1].split("**Metrics.**", 1)[0]
    assert "> 66          dist.all_reduce" in code
    assert "calls all_reduce from" not in code and "waits here" not in code


def test_a_p2p_hang_names_no_pairs_the_evidence_does_not_show() -> None:
    bundle, analysis = _load(ENGINE_CLI / "vllm_pp_cli")
    assert not [w for w in analysis.waits_for if w.kind == "p2p"]
    story = build_story(bundle, analysis, "vllm-project/vllm")
    assert "wait for each other" not in story.sentence
    assert "name no peer" in story.sentence and "src/dst" in story.sentence


# --- 4. The hung instance only; snapshots as moments -----------------------------------


def test_the_healthy_instance_leaves_no_line_in_the_draft(
    two: Pair, sglang_form: IssueForm
) -> None:
    body = _draft(two, sglang_form).body
    # The healthy instance's class [0-1] (all_reduce, moving) has no line here.
    assert "[0-1]" not in body and "innermost frame: `all_reduce`" not in body
    assert "--mode healthy" not in body and "41969" not in body
    assert "Another instance captured at the same time (2 ranks) kept making progress" in body


def test_snapshots_count_as_moments_not_dump_files(tp: Pair, two: Pair) -> None:
    _, analysis = tp
    # 3 text snapshots, then --json and --locals once and the --subprocesses tree, taken at
    # the moment of the last: the analysis and the draft both count 3 moments.
    assert analysis.snapshots == 3
    assert moments(analysis, None) == 3
    story = build_story(*tp, "sgl-project/sglang")
    assert "unchanged across 3 snapshots" in story.sentence
    _, two_analysis = two
    assert moments(two_analysis, "2") == 3


# --- 5. Same hang, different evidence, different titles --------------------------------


def test_two_captures_of_one_hang_in_different_deployments_get_different_titles(
    tp: Pair, full: Pair
) -> None:
    first = build_story(*tp, "sgl-project/sglang").title
    second = build_story(*full, "sgl-project/sglang").title
    assert first != second
    assert "Qwen3-8B" in second and "Qwen3-8B" not in first
    for title in (first, second):
        assert len(title) <= 99
