"""Golden upstream drafts for an SGLang-style and a vLLM-style bug form, and their structure.

Made offline, with no token: forms from `fixtures/forms/`, related issues from an index of
`fixtures/github/issues.jsonl`. Rewrite on purpose with
`pytest tests/upstream/test_upstream_golden.py --update-golden`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from reporter.app import filing
from reporter.app.filing import DraftSource
from reporter.app.issues import GitHubAccess
from reporter.app.report import Options, load_and_analyze
from reporter.render import lint
from reporter.render.lint import GITHUB_BODY_LIMIT
from reporter.upstream.draft import split_document
from reporter.upstream.forms import parse_forms, pick_bug_form
from reporter.upstream.index import Index

from .conftest import ROOT

GOLDEN = ROOT / "tests" / "golden"
FORMS = ROOT / "fixtures" / "forms"
CASES = {
    "upstream_sglang_form": ("sgl-project/sglang", "sglang"),
    "upstream_vllm_form": ("vllm-project/vllm", "vllm"),
}
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _bundle(case: str, tmp_path: Path) -> Path:
    if case == "upstream_sglang_form":
        return ROOT / "fixtures" / "bundles" / "full_incident"
    # The vLLM-style bundle plus a collect_env.py output, as a vLLM report would carry.
    copy = tmp_path / "vllm_like"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "vllm_like", copy)
    (copy / "env").mkdir()
    shutil.copy(
        ROOT / "fixtures" / "synthetic" / "env" / "vllm_collect_env_sectioned.txt",
        copy / "env" / "collect_env.txt",
    )
    return copy


def _draft(case: str, tmp_path: Path, example_index: Index) -> str:
    repo, forms = CASES[case]
    bundle, analysis = load_and_analyze([_bundle(case, tmp_path)], Options())
    run = filing.make_draft(
        DraftSource(
            bundle=bundle,
            analysis=analysis,
            repo=repo,
            forms_dir=FORMS / forms,
            db=example_index.path,
        ),
        access=GitHubAccess(env={}),
    )
    return run.draft.document


@pytest.mark.parametrize("case", sorted(CASES))
def test_draft_matches_golden(
    case: str, tmp_path: Path, example_index: Index, update_golden: bool
) -> None:
    text = _draft(case, tmp_path, example_index)
    golden = GOLDEN / f"{case}.md"
    if update_golden:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden file; run pytest {__file__} --update-golden"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_structure(case: str) -> None:
    text = (GOLDEN / f"{case}.md").read_text(encoding="utf-8")
    front, body = split_document(text)
    repo, forms = CASES[case]
    assert front["kind"] == "upstream-draft" and front["repo"] == repo
    form = pick_bug_form(parse_forms(filing.read_forms_dir(FORMS / forms))[0])
    assert form is not None
    assert front["title"].startswith(form.title) and tuple(front["labels"]) == form.labels
    assert len(body) <= GITHUB_BODY_LIMIT
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(body)
    h3 = [
        tokens[i + 1].content
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h3"
    ]
    assert h3 == [f.label for f in form.shown], "one ### section per form field, in form order"
    assert not [t for t in tokens if t.type == "heading_open" and t.tag in ("h1", "h2")]
    lines = body.splitlines()
    for token in tokens:
        if token.type == "fence" and token.map:
            start, end = token.map
            ticks = lines[start].strip()[: len(token.markup)]
            assert lines[end - 1].strip() == ticks, f"unclosed fence at body line {start + 1}"
        if token.type == "table_open" and token.map:
            start, end = token.map
            widths = {
                len(_CELL_SPLIT.split(lines[n].strip().strip("|"))) for n in range(start, end)
            }
            assert len(widths) == 1, f"ragged table at body line {start + 1}"
    assert body.count("<details>") + body.count("<details><summary>") >= 1
    assert body.count("<details") == body.count("</details>")
    # Related issues are cited, not linked: no cross-reference events on their timelines.
    assert "](https://github.com/sgl-project/sglang/issues/" not in body
    findings = lint.lint_text(text, path=case)
    assert [f for f in findings if f.rule is not lint.Rule.PLACEHOLDER] == []
