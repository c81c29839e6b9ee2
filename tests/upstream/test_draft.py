"""Upstream drafts: form sections, inert references, markers, size budget, TODOs, comments."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reporter.analysis import Analysis
from reporter.app.report import Options, load_and_analyze
from reporter.evidence.pyspy import parse_text
from reporter.model import Bundle
from reporter.render import issueview, lint
from reporter.render.policy import INERT
from reporter.upstream import draft as drafting
from reporter.upstream import redact as redactor
from reporter.upstream.draft import DraftInputs, build_draft
from reporter.upstream.forms import generic_form, parse_form
from reporter.upstream.index import Index
from reporter.upstream.search import find_duplicates

from .conftest import ROOT

FULL = ROOT / "fixtures" / "bundles" / "full_incident"
TP = ROOT / "fixtures" / "bundles" / "tp_desync"


@pytest.fixture(scope="module")
def full() -> tuple[Bundle, Analysis]:
    return load_and_analyze([FULL], Options())


@pytest.fixture(scope="module")
def tp() -> tuple[Bundle, Analysis]:
    return load_and_analyze([TP], Options())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cc @alice and @org/team", "cc `@alice` and `@org/team`"),
        (
            "see #123, GH-9 and sgl-project/sglang#4512",
            "see `#123`, `GH-9` and `sgl-project/sglang#4512`",
        ),
        (
            "fixed in 8f1c2d3e4b and owner/repo@abc1234f",
            "fixed in `8f1c2d3e4b` and `owner/repo@abc1234f`",
        ),
        ("https://github.com/o/r/issues/7 again", "`https://github.com/o/r/issues/7` again"),
        ("host <host-1> down", "host `<host-1>` down"),
        ("a_b*c [x] `kept @code`", "a\\_b\\*c \\[x\\] `kept @code`"),
        ("#running-req: 7, deadbeef and 1234567", "#running-req: 7, deadbeef and 1234567"),
        ("mail a@b.com\nnext line", "mail a@b.com next line"),
    ],
)
def test_inert(text: str, expected: str) -> None:
    assert INERT(text) == expected


def test_marker_round_trip_and_bundle_id(tmp_path: Path, tp: tuple[Bundle, Analysis]) -> None:
    bundle, _ = tp
    ident = drafting.bundle_id(bundle)
    assert drafting.find_marker("x\n" + drafting.marker("4b0802848fd7", ident)) == (
        "4b0802848fd7",
        ident,
    )
    assert drafting.find_marker("<!-- reporter:begin id=x -->") is None
    copy = tmp_path / "copy"
    shutil.copytree(TP, copy)
    again, _ = load_and_analyze([copy], Options())
    assert drafting.bundle_id(again) == ident
    (copy / "snapshots" / "rank0_s0.txt").write_text(
        (copy / "snapshots" / "rank0_s0.txt").read_text() + "\n", encoding="utf-8"
    )
    changed, _ = load_and_analyze([copy], Options())
    assert drafting.bundle_id(changed) != ident


def test_format_dump_reads_back_as_the_same_stacks(full: tuple[Bundle, Analysis]) -> None:
    bundle, _ = full
    dump = next(d for d in bundle.dumps if any(f.locals for t in d.threads for f in t.frames))
    again = parse_text(issueview.format_dump(dump), source="x").dumps[0]
    assert again.pid == dump.pid
    assert [t.frames for t in again.threads] == [t.frames for t in dump.threads]


def _inputs(pair: tuple[Bundle, Analysis], **changes: Any) -> DraftInputs:
    bundle, analysis = pair
    base = DraftInputs(
        bundle=bundle, analysis=analysis, repo="sgl-project/sglang", form=generic_form()
    )
    return replace(base, **changes)


def test_generic_draft_sections_and_document(full: tuple[Bundle, Analysis]) -> None:
    made = build_draft(_inputs(full))
    headings = [line for line in made.body.splitlines() if line.startswith("### ")]
    assert headings == ["### Describe the bug", "### Reproduction", "### Environment"]
    # The engine, its size and who waits where: never the local title's PIDs or ports.
    assert made.title == (
        "SGLang HiCache (TP=4, Qwen3-8B) hangs: TP0-1 in all_reduce while TP2-3 idle in on_idle"
    )
    assert len(made.title) < 100 and made.labels == ()
    assert made.body.rstrip().endswith(made.marker)
    # One TODO: the bundle does not say which sglang it runs (maintainers ask for it first).
    # The launch line that was not captured is said, with what would capture it, but does
    # not block filing.
    assert made.leaks == () and len(made.todos) == 1
    todo_line = made.body.splitlines()[made.todos[0] - 1]
    assert "`sglang` version" in todo_line and "python3 -m sglang.check_env" in todo_line
    assert "What would capture it: the command line of the process" in made.body
    assert len(made.body) <= drafting.REVIEW_BUDGET
    assert made.document.startswith("---\nkind: upstream-draft\nstatus: draft\n")
    assert made.document.endswith(made.body)
    assert "<ip-1>" in made.body and "10.42.3.17" not in made.body  # MASTER_ADDR
    rules = {f.rule for f in lint.lint_text(made.document, path="d.md")}
    assert rules.isdisjoint({lint.Rule.SECRET, lint.Rule.BODY_SIZE, lint.Rule.UNCLOSED_FENCE})


def test_related_issues_are_inert_unless_linking_is_asked(
    tp: tuple[Bundle, Analysis], example_index: Index
) -> None:
    from reporter.upstream.query import query_from_analysis

    bundle, analysis = tp
    found = tuple(
        find_duplicates(
            example_index, query_from_analysis(bundle, analysis, repos=("sgl-project/sglang",))
        )
    )
    inert_body = build_draft(_inputs(tp, related=found)).body
    assert (
        "`sgl-project/sglang#4512` (`https://github.com/sgl-project/sglang/issues/4512`)"
        in inert_body
    )
    assert "](https://github.com/sgl-project/sglang/issues/" not in inert_body
    linked = build_draft(_inputs(tp, related=found, link_related=True)).body
    assert (
        "[`sgl-project/sglang#4512`](https://github.com/sgl-project/sglang/issues/4512)" in linked
    )


def test_body_budget_trims_the_largest_evidence_first(full: tuple[Bundle, Analysis]) -> None:
    whole = build_draft(_inputs(full), budget=drafting.BODY_BUDGET)
    small = build_draft(_inputs(full), budget=9_000)
    assert whole.trimmed == ()
    assert len(small.body) <= 9_000 < len(whole.body)
    # Each trimmed block says so where it ends (said once: no second list of the same).
    assert small.trimmed and "more lines trimmed (kept in the full capture)" in small.body
    assert "Trimmed to keep the issue short" not in small.body
    # The first sentence and the minimal stacks survive; the big dumps go first.
    assert "SGLang HiCache (TP=4) serving Qwen3-8B hangs" in small.body
    assert "**Stacks**, one per group of ranks in the same state" in small.body
    assert any("Raw py-spy dumps" in note for note in small.trimmed)
    assert small.body.count("```") % 2 == 0


def test_required_fields_without_content_become_todos(tp: tuple[Bundle, Analysis]) -> None:
    form = parse_form(
        """
title: "[Bug]: "
labels: [bug]
body:
  - {type: dropdown, id: version, attributes: {label: Version, options: ["1.0", "2.0"]}, validations: {required: true}}
  - {type: input, id: gpu, attributes: {label: GPU model}, validations: {required: true}}
  - {type: input, id: extra, attributes: {label: Anything else}}
  - {type: textarea, id: what, attributes: {label: "What happened?"}, validations: {required: true}}
""",
        source="custom.yml",
    )
    bundle, analysis = tp
    stripped = replace(bundle, manifest=replace(bundle.manifest, fields=()))
    made = build_draft(DraftInputs(bundle=stripped, analysis=analysis, repo="o/r", form=form))
    assert made.title.startswith("[Bug]: ") and made.title.count("[Bug]") == 1
    assert len(made.todos) == 2
    assert "choose one of `1.0`, `2.0`" in made.body
    assert "### Anything else\n\n_No response_" in made.body
    headings = [line for line in made.body.splitlines() if line.startswith("### ")]
    assert headings == ["### Version", "### GPU model", "### Anything else", "### What happened?"]


def test_evidence_prose_cannot_ping(tp: tuple[Bundle, Analysis]) -> None:
    bundle, analysis = tp
    noisy = replace(
        bundle,
        manifest=replace(
            bundle.manifest, fields=(("summary", "cc @maintainer, same as #4512 (see abc1234def)"),)
        ),
    )
    body = build_draft(
        DraftInputs(bundle=noisy, analysis=analysis, repo="o/r", form=generic_form())
    ).body
    assert "cc `@maintainer`, same as `#4512` (see `abc1234def`)" in body


def test_comment_says_what_is_new(full: tuple[Bundle, Analysis]) -> None:
    bundle, analysis = full
    comment = drafting.build_comment(
        bundle, analysis, issue_text="Repro on torch 2.7.0, sglang 0.4.6"
    )
    assert "`torch` `2.13.0+cpu` (this issue mentions `2.7.0`)" in comment.body
    assert "Version (incident notes): `torch 2.13.0+cpu`" in comment.body
    assert f"signature `{analysis.signature.hash}`" in comment.body
    assert comment.body.rstrip().endswith(comment.marker)
    assert comment.leaks == ()


def test_a_huge_dump_still_fits_githubs_limit(tmp_path: Path) -> None:
    threads = []
    for n in range(1500):
        frames = "\n".join(
            f"    worker_step_{k} (app/pool/worker_{k}.py:{10 + k})" for k in range(10)
        )
        threads.append(
            f'Thread {1000 + n} (idle): "pool-{n}"\n{frames}\n    run (threading.py:982)'
        )
    text = (
        "Process 11: sglang::scheduler_TP0\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
        'Thread 11 (idle): "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
        "    run_scheduler_process (sglang/srt/managers/scheduler.py:2710)\n\n"
        + "\n\n".join(threads)
        + "\n"
    )
    dump = tmp_path / "rank0.txt"
    dump.write_text(text, encoding="utf-8")
    assert len(text) > 5 * drafting.BODY_BUDGET
    made = build_draft(_inputs(load_and_analyze([dump], Options())))
    assert len(made.body) <= drafting.BODY_BUDGET
    assert made.trimmed and "more lines trimmed (kept in the full capture)" in made.body
    assert made.body.count("<details") == made.body.count("</details>")
    assert "all_reduce (torch/distributed/distributed_c10d.py:2501)" in made.body


def test_the_view_is_built_once_and_redacted_in_one_call(
    full: tuple[Bundle, Analysis], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"evidence": 0, "redact": 0}
    evidence_view, redact = issueview.evidence_view, redactor.redact

    def counting_view(*args: Any, **kwargs: Any) -> issueview.EvidenceView:
        calls["evidence"] += 1
        return evidence_view(*args, **kwargs)

    def counting_redact(*args: Any, **kwargs: Any) -> redactor.Redaction:
        calls["redact"] += 1
        return redact(*args, **kwargs)

    monkeypatch.setattr(issueview, "evidence_view", counting_view)
    monkeypatch.setattr(redactor, "redact", counting_redact)
    made = build_draft(_inputs(full))
    assert calls == {"evidence": 1, "redact": 1}
    # One value, one placeholder, wherever the view shows it.
    assert "<ip-1>" in made.body and made.redaction.total() > 0
