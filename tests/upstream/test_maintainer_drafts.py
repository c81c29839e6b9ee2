"""Issue 22: drafts a maintainer takes, one check before sending, known fixes first, and an
index that moves between machines whole."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reporter.analysis import Analysis
from reporter.app import filing, issues
from reporter.app.issues import GitHubAccess
from reporter.app.report import Options, lint_reports, load_and_analyze
from reporter.app.settings import Context
from reporter.app.upstream import index_import
from reporter.model import Bundle
from reporter.render import lint
from reporter.upstream import draft as drafting
from reporter.upstream.draft import DraftInputs, KnownFix, build_draft
from reporter.upstream.forms import IssueForm, generic_form
from reporter.upstream.index import Index
from reporter.upstream.publish import Action
from reporter.upstream.records import Fix, IssueRecord
from reporter.upstream.redact import scan_document

ROOT = Path(__file__).resolve().parents[2]
FULL = ROOT / "fixtures" / "bundles" / "full_incident"
FORMS = ROOT / "fixtures" / "forms" / "sglang"


@pytest.fixture(scope="module")
def full() -> tuple[Bundle, Analysis]:
    return load_and_analyze([FULL], Options())


def _inputs(pair: tuple[Bundle, Analysis], **changes: Any) -> DraftInputs:
    bundle, analysis = pair
    base = DraftInputs(
        bundle=bundle, analysis=analysis, repo="sgl-project/sglang", form=generic_form()
    )
    return replace(base, **changes)


def test_per_run_noise_stays_out_of_the_draft(full: tuple[Bundle, Analysis]) -> None:
    _bundle, analysis = full
    assert analysis.diff is not None
    noisy = {c.key for c in analysis.diff.changes if c.noise}
    # diff.toml's negative rules rank these as noise; the engine knob is not noise.
    assert {"INVOCATION_ID", "JOURNAL_STREAM", "TMPDIR", "--port"} <= noisy
    assert "SGLANG_SM120_MMA_TARGET_CTAS" not in noisy
    body = build_draft(_inputs(full)).body
    for key in ("INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "TMPDIR:"):
        assert key not in body, key
    # The engine knob changed, but nothing in the hung stacks ties it to the hang: the
    # changes stay in the local report, not in a maintainer's issue.
    assert "SGLANG_SM120_MMA_TARGET_CTAS: 256 -> 512" not in body
    assert "Changes since the last good run" not in body


def test_environment_variables_most_relevant_first(full: tuple[Bundle, Analysis]) -> None:
    body = build_draft(_inputs(full), budget=drafting.BODY_BUDGET).body
    rows = [line for line in body.splitlines() if line.startswith("| `") and "_" in line]
    names = [row.split("`")[1] for row in rows if row.split("`")[1].isupper()]
    first_other = next(i for i, n in enumerate(names) if not n.startswith(("SGLANG_", "SGL_")))
    # Engine knobs (diff.toml weighs them most) come before everything else.
    assert all(n.startswith("SGLANG_") for n in names[:first_other])
    assert first_other >= 10


def test_reproduction_is_the_launchers_command_line_from_the_evidence(
    full: tuple[Bundle, Analysis],
) -> None:
    body = build_draft(_inputs(full)).body
    reproduction = body.split("### Reproduction", 1)[1].split("### Environment", 1)[0]
    # The server ran under a wrapper script (serve.py), not the engine's launcher: the draft
    # says the launch line was not captured, gives the engine options the wrapper passed
    # (paths masked, per-run port and host left out) and what would capture the launch line;
    # never the test harness the incident notes name.
    assert "The engine's launch line was not captured" in reproduction
    assert "(`serve.py`)" in reproduction
    assert "--model-path <path>/Qwen3-8B --tp 4 --mem-fraction-static 0.8" in reproduction
    assert "/proc/<pid>/cmdline" in reproduction
    assert "--port" not in reproduction and "--host" not in reproduction
    assert "capture.py tp_desync" not in body and "/work/" not in body
    assert "- Model: Qwen3-8B" in reproduction and "- Parallelism: TP=4" in reproduction
    # The trigger: the timeline's last event before the onset.
    assert "Last event before the hang: fixture control: the server was told to wedge" in (
        reproduction
    )
    environment = body.split("### Environment", 1)[1]
    assert "serve.py --model-path" not in environment  # said once, in the reproduction


def test_the_body_opens_with_one_plain_sentence_and_says_each_stack_once(
    full: tuple[Bundle, Analysis],
) -> None:
    body = build_draft(_inputs(full), budget=drafting.BODY_BUDGET).body
    description = body.split("### Describe the bug\n\n", 1)[1]
    first = description.split("\n", 1)[0]
    assert first.startswith(
        "SGLang HiCache (TP=4) serving Qwen3-8B hangs: TP0-1 wait in all\\_reduce"
    )
    for jargon in ("Verdict", "collective-desync", "Hang signature", "Merged stack tree"):
        assert jargon not in body, jargon
    # Each side of the split once as a stack; the raw dumps in one collapsed block.
    assert body.count("\nHiRadixCache.writing_check (tp_desync.py:66)\n") == 1
    assert body.count("<details><summary>Raw py-spy dumps") == 1
    assert "/root/.pyenv" not in body and "Python v3.11.7 (python3.11)" in body


def test_a_deployment_on_the_fixed_release_says_regression(
    full: tuple[Bundle, Analysis],
) -> None:
    fix = KnownFix(
        repo="sgl-project/sglang",
        number=4388,
        url="https://github.com/sgl-project/sglang/issues/4388",
        tag="v0.5.3",
        change="#4410",
        deployed="0.5.3",
        has_fix=True,
    )
    body = build_draft(_inputs(full, known_fix=fix)).body
    described = body.split("### Describe the bug", 1)[1]
    assert described.lstrip().startswith(
        "**Possible regression of [sgl-project/sglang#4388]"
        "(https://github.com/sgl-project/sglang/issues/4388)**, fixed in `v0.5.3`"
    )
    older = build_draft(_inputs(full, known_fix=replace(fix, deployed="0.5.2", has_fix=False)))
    assert "Possible regression" not in older.body


class _NoIssues:
    """A tracker with no issue upstream (filing would create one)."""

    def recent_issues(self, repo: str, limit: int = 100) -> tuple[()]:
        return ()

    def issue(self, repo: str, number: int) -> Any:
        raise AssertionError("not asked")

    comments = create_issue = create_comment = issue


def test_a_known_fix_in_a_newer_release_blocks_filing_until_forced(
    full: tuple[Bundle, Analysis], tmp_path: Path, known_fix_search: KnownFix
) -> None:
    bundle, analysis = full
    bundle = replace(bundle, root="")
    source = filing.DraftSource(
        bundle=bundle, analysis=analysis, repo="sgl-project/sglang", forms_dir=FORMS
    )
    access = GitHubAccess(env={"GH_TOKEN": "t"}, cache_dir=tmp_path)
    result = filing.file_upstream(
        source,
        access=access,
        tracker=_NoIssues(),  # type: ignore[arg-type]
        reports=tmp_path / "reports",
    )
    refusal = [r for r in result.plan.refusals if "upgrade" in r]
    assert refusal == [
        "sgl-project/sglang#4388 is a likely duplicate fixed in v0.5.3 (#4410); this "
        "deployment runs 0.5.2: upgrade to v0.5.3 or later first (--force-new files anyway)"
    ]
    forced = filing.file_upstream(
        source,
        access=access,
        tracker=_NoIssues(),  # type: ignore[arg-type]
        force_new=True,
        reports=tmp_path / "reports",
    )
    assert forced.plan.action is Action.NEW_ISSUE
    assert not any("upgrade" in r for r in forced.plan.refusals)


def test_the_gate_and_lint_flag_the_same_lines_and_skip_our_placeholders(
    full: tuple[Bundle, Analysis], tmp_path: Path
) -> None:
    made = build_draft(_inputs(full))
    token = "ghp_" + "Zq9x" * 9
    lines = made.document.splitlines()
    # The tool's own placeholder, as a <summary> holds it (HTML-escaped) and as prose
    # holds it (Markdown-escaped): never a finding. A token planted on a known line is.
    lines.insert(20, "<details><summary>files under /home/&lt;user-1&gt;/run</summary>")
    lines.insert(21, "cache in /home/\\<user-2\\>/.cache")
    lines.insert(30, f"seen in the logs: {token}")
    document = "\n".join(lines) + "\n"
    leaks = scan_document(document)
    assert [(leak.line, leak.kind) for leak in leaks] == [(31, "github-token")]
    path = tmp_path / "d.md"
    path.write_text(document, encoding="utf-8")
    found = lint_reports([path]).findings
    secrets = [f for f in found if f.rule is lint.Rule.SECRET]
    assert [f.line for f in secrets] == [31]
    assert "filing gate refuses it" in secrets[0].message


def test_export_then_import_keeps_every_field_and_the_fix(tmp_path: Path) -> None:
    record = IssueRecord(
        repo="sgl-project/sglang",
        number=4388,
        title="hang in all_reduce",
        body="text",
        state="closed",
        state_reason="completed",
        labels=("Bug",),
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-02T00:00:00Z",
        closed_at="2026-01-03T00:00:00Z",
        comments=4,
        url="https://github.com/sgl-project/sglang/issues/4388",
        is_pull=False,
    )
    pull = replace(record, number=4410, title="fix the hang", is_pull=True, state="closed")
    fix = Fix(
        repo="sgl-project/sglang",
        number=4388,
        kind="pull",
        ref="#4410",
        url="https://github.com/sgl-project/sglang/pull/4410",
        sha="3f2c" * 10,
        tag="v0.5.3",
        checked_at="2026-01-04T00:00:00Z",
    )
    with Index(tmp_path / "a.sqlite3") as first:
        first.upsert([record, pull])
        first.save_fix(fix)
        lines = list(issues.export_lines(first))
        # What the index keeps (a pull request's body is not kept: it is never searched).
        stored = [first.issue("sgl-project/sglang", n) for n in (4388, 4410)]
    with Index(tmp_path / "b.sqlite3") as second:
        result = second.import_jsonl(lines, source="x.jsonl")
        assert result.imported == 2 and result.skipped == ()
        assert stored[0] == record
        assert [second.issue("sgl-project/sglang", n) for n in (4388, 4410)] == stored
        assert second.fix("sgl-project/sglang", 4388) == fix
        assert list(issues.export_lines(second)) == lines


def test_an_import_with_no_valid_line_fails_and_leaves_no_index(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"repo": "a/b"}\n', encoding="utf-8")
    ctx = replace(Context.resolve({}), cache_dir=tmp_path / "cache")
    with pytest.raises(Exception, match="no valid issue line") as caught:
        index_import(ctx, bad)
    assert "index export" in caught.value.tip  # type: ignore[attr-defined]
    assert not list((tmp_path / "cache").glob("*.sqlite3*"))


def test_indexes_and_form_caches_are_kept_per_host(tmp_path: Path) -> None:
    assert issues.default_db_path(tmp_path).name == "upstream-issues.sqlite3"
    assert (
        issues.default_db_path(tmp_path, "ghe.corp.example").name
        == "upstream-issues@ghe.corp.example.sqlite3"
    )
    assert issues.default_db_path(tmp_path, "127.0.0.1:8080").name.endswith(
        "@127.0.0.1_8080.sqlite3"
    )
    a = filing.forms_cache_dir("acme/serve", tmp_path, "github.com")
    b = filing.forms_cache_dir("acme/serve", tmp_path, "ghe.corp.example")
    assert a != b and a.name == b.name == "acme+serve"


PD_DECODE = ROOT / "fixtures" / "engine_cli" / "pd_decode"


def _form(folder: Path) -> IssueForm:
    from reporter.upstream.forms import parse_forms, pick_bug_form

    form = pick_bug_form(parse_forms(filing.read_forms_dir(folder))[0])
    assert form is not None
    return form


VLLM_PP = ROOT / "fixtures" / "engine_cli" / "vllm_pp_cli"


def test_a_pd_decode_capture_is_told_in_sglangs_words() -> None:
    # A real capture (fixtures/scenarios/capture_engine_cli.py): the launcher's command
    # line is in the evidence, the scheduler processes carry only their titles.
    bundle, analysis = load_and_analyze([PD_DECODE], Options())
    form = _form(FORMS)
    made = build_draft(
        DraftInputs(bundle=bundle, analysis=analysis, repo="sgl-project/sglang", form=form)
    )
    assert made.title == (
        "[Bug] SGLang PD decode + HiCache (TP=2, Qwen3-0.6B): TP0 in all_reduce "
        "while TP1 idles in on_idle"
    )
    assert len(made.title) < 100
    for noise in ("PID", "pid", "--port", "vm", "/work/", "/root/"):
        assert noise not in made.title, noise
    description = made.body.split("### Describe the bug\n\n", 1)[1]
    assert description.startswith(
        "SGLang PD decode + HiCache (TP=2) serving Qwen/Qwen3-0.6B hangs: TP0 waits in "
        "all\\_reduce "
        "(called from check\\_hicache\\_events) while TP1 idles in on\\_idle"
    )
    reproduction = made.body.split("### Reproduction", 1)[1].split("### ", 1)[0]
    assert "--disaggregation-mode decode --tp-size 2" in reproduction
    # Only engine options: the wrapper's own (--scenario) and the secret stay out.
    assert "--scenario" not in reproduction and "--api-key" not in reproduction
    assert "sk-local" not in made.body
    assert "- Mode: PD decode + HiCache" in reproduction and "- Parallelism: TP=2" in reproduction
    assert "/work/" not in made.body and "/root/" not in made.body


def test_a_pipeline_deadlock_title_drops_detail_before_it_is_cut() -> None:
    bundle, analysis = load_and_analyze([VLLM_PP], Options())
    form = _form(ROOT / "fixtures" / "forms" / "vllm")
    made = build_draft(
        DraftInputs(bundle=bundle, analysis=analysis, repo="vllm-project/vllm", form=form)
    )
    assert made.title == "[Bug]: vLLM (TP=2, PP=2) hangs: every stage waits in recv, none sends"
