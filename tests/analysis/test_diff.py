"""`report diff` ranking: the changed knob first among hundreds of equal variables and per-run noise."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from reporter.analysis import export_context
from reporter.analysis.diff import (
    ChangeKind,
    ChangeStatus,
    Side,
    default_rules_diff,
    diff_bundles,
    diff_sides,
    parse_rules,
)
from reporter.analysis.environment import REDACTED
from reporter.core.errors import ReporterError
from reporter.load import bundle
from reporter.model.document import data


def diff_json(value: object) -> dict[str, object]:
    """The `diff` record's JSON data."""
    out: dict[str, object] = data(export_context.diff(value))  # type: ignore[arg-type]
    return out


ROOT = Path(__file__).resolve().parents[2]
ENVDIFF = ROOT / "fixtures" / "envdiff"
KNOB = "SGLANG_SM120_MMA_TARGET_CTAS"


def _env(pairs: dict[str, str]) -> Side:
    return {ChangeKind.ENV: dict(pairs)}


def test_real_runs_put_the_knob_first() -> None:
    good = bundle.load([ENVDIFF / "good"])
    bad = bundle.load([ENVDIFF / "bad"])
    diff = diff_bundles(good, bad)
    first = diff.changes[0]
    assert (first.kind, first.key, first.before, first.after) == (
        ChangeKind.ENV,
        KNOB,
        "256",
        "512",
    )
    assert "engine-knob" in " ".join(first.why)
    # Everything else is per-run noise, scored below the knob and explained by a noise rule.
    for change in diff.changes[1:]:
        assert change.score < first.score
        assert any(w.endswith(tuple(f"-{n}" for n in range(10, 100))) for w in change.why), change
    unchanged = dict(diff.unchanged)
    assert unchanged[ChangeKind.ENV] >= 300
    assert unchanged[ChangeKind.PACKAGE] > 50


def test_real_runs_by_loose_files_too() -> None:
    good = bundle.load([ENVDIFF / "good" / "proc" / "environ"])
    bad = bundle.load([ENVDIFF / "bad" / "proc" / "environ"])
    assert diff_bundles(good, bad).changes[0].key == KNOB


def test_added_knob_still_outranks_noise() -> None:
    good = _env({"INVOCATION_ID": "a" * 32, "HOME": "/root"})
    bad = _env({"INVOCATION_ID": "b" * 32, "HOME": "/root", KNOB: "512"})
    diff = diff_sides(good, bad)
    assert [(c.key, c.status) for c in diff.changes] == [
        (KNOB, ChangeStatus.ADDED),
        ("INVOCATION_ID", ChangeStatus.CHANGED),
    ]
    assert diff.changes[0].before is None


# Every rule id of diff.toml, with a change it must fire on.
RULE_CASES: list[tuple[str, ChangeKind, str, str | None, str | None]] = [
    ("engine-knob", ChangeKind.ENV, "VLLM_USE_V1", "0", "1"),
    ("runtime-knob", ChangeKind.ENV, "NCCL_ALGO", "Ring", "Tree"),
    ("server-option", ChangeKind.FLAG, "--mem-fraction-static", "0.8", "0.9"),
    ("core-package", ChangeKind.PACKAGE, "torch", "2.7.0", "2.8.0"),
    ("code-changed", ChangeKind.SOURCE, "sglang/srt/x.py", "aaa", "bbb"),
    ("gpu-stack", ChangeKind.FACT, "NVIDIA driver version", "550", "560"),
    ("run-identity", ChangeKind.ENV, "JOURNAL_STREAM", "8:1", "8:2"),
    ("capture-noise", ChangeKind.FACT, "nvidia-smi time", "Mon", "Tue"),
    ("timestamp", ChangeKind.ENV, "APP_BOOT", "2026-11-29T15:00:00Z", "2026-11-29T15:00:09Z"),
    ("generated-id", ChangeKind.ENV, "RUN_UUID", "0" * 8 + "-1111-2222-3333-" + "4" * 12, "f" * 32),
    ("temporary-path", ChangeKind.ENV, "SCRATCH", "/tmp/a", "/tmp/b"),
    ("random-port", ChangeKind.FLAG, "--port", "41234", "39876"),
    ("path-value", ChangeKind.FLAG, "--model-path", "/models/qwen-a", "/models/qwen-b"),
    ("process-id", ChangeKind.ENV, "PARENT_PID", "100", "200"),
    ("journal-stream", ChangeKind.ENV, "STREAM", "8:100", "8:200"),
]


@pytest.mark.parametrize(("rule_id", "kind", "key", "before", "after"), RULE_CASES)
def test_each_rule_fires(
    rule_id: str, kind: ChangeKind, key: str, before: str | None, after: str | None
) -> None:
    good: Side = {kind: {key: before} if before is not None else {}}
    bad: Side = {kind: {key: after} if after is not None else {}}
    (change,) = diff_sides(good, bad).changes
    assert any(f"({rule_id})" in why for why in change.why), change.why


def test_every_shipped_rule_has_a_case() -> None:
    text = resources.files("reporter").joinpath("data/diff.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    ids = {r["id"] for r in data["rule"]} | {r["id"] for r in data["value_rule"]}
    assert ids == {case[0] for case in RULE_CASES}
    assert len(default_rules_diff().rules) == len(ids)


@pytest.mark.parametrize(
    ("noise_key", "before", "after"),
    [
        ("--model-path", "/models/qwen-a", "/models/qwen-b"),
        ("--model-path", "s3://bucket/qwen-a", "s3://bucket/qwen-b"),
        (
            "--model-path",
            "https://u:hf_Zq81@hub.example/qwen-a",
            "https://u:hf_Zq81@hub.example/qwen-b",
        ),
        ("--tokenizer-path", "./tok-a", "./tok-b"),
    ],
)
def test_a_knob_outranks_a_path_of_equal_score(noise_key: str, before: str, after: str) -> None:
    # A server option (60 + 10 + 30) and an engine knob (50 + 10 + 40) score the same;
    # the rules' `tie` puts the knob the step can name first, whatever the kind order says.
    good: Side = {ChangeKind.FLAG: {noise_key: before}, ChangeKind.ENV: {KNOB: "256"}}
    bad: Side = {ChangeKind.FLAG: {noise_key: after}, ChangeKind.ENV: {KNOB: "512"}}
    first, second = diff_sides(good, bad).changes
    assert first.score == second.score
    assert (first.key, second.key) == (KNOB, noise_key)
    assert first.tie > second.tie
    assert any("(path-value): loses ties" in why for why in second.why), second.why


def test_a_plain_server_option_ties_below_a_knob_but_above_a_path() -> None:
    good: Side = {ChangeKind.FLAG: {"--mem-fraction-static": "0.8", "--model-path": "/m/a"}}
    bad: Side = {ChangeKind.FLAG: {"--mem-fraction-static": "0.9", "--model-path": "/m/b"}}
    keys = [c.key for c in diff_sides(good, bad).changes]
    assert keys == ["--mem-fraction-static", "--model-path"]


def test_scores_add_up_and_ties_break_by_kind_then_key() -> None:
    good: Side = {ChangeKind.ENV: {"B": "1", "A": "1"}, ChangeKind.FLAG: {"--z": "1"}}
    bad: Side = {ChangeKind.ENV: {"B": "2", "A": "2"}, ChangeKind.FLAG: {"--z": "2"}}
    diff = diff_sides(good, bad)
    assert [(c.kind, c.key, c.score) for c in diff.changes] == [
        (ChangeKind.FLAG, "--z", 100),  # 60 + 10 + server-option 30
        (ChangeKind.ENV, "A", 60),
        (ChangeKind.ENV, "B", 60),
    ]
    assert diff.changes[1].why == ("env var changed: 50 + 10",)


def test_kinds_present_on_one_side_only_are_noted_not_listed() -> None:
    good: Side = {ChangeKind.ENV: {"A": "1"}}
    bad: Side = {ChangeKind.ENV: {"A": "1"}, ChangeKind.PACKAGE: {"torch": "2.8"}}
    diff = diff_sides(good, bad, good_name="g", bad_name="b")
    assert diff.changes == ()
    assert diff.notes == ("packages not compared: only b has any",)
    assert diff.unchanged == ((ChangeKind.ENV, 1),)


def test_secret_values_are_redacted_but_the_change_is_kept() -> None:
    diff = diff_sides(_env({"HF_TOKEN": "old-value"}), _env({"HF_TOKEN": "new-value"}))
    (change,) = diff.changes
    assert (change.before, change.after) == (REDACTED, REDACTED)
    assert "values hidden: they look secret" in change.why
    assert "old-value" not in json.dumps(diff_json(diff))


def test_json_shape_and_order() -> None:
    diff = diff_sides(_env({KNOB: "256", "HOSTNAME": "a"}), _env({KNOB: "512", "HOSTNAME": "b"}))
    data = diff_json(diff)
    assert list(data) == ["changes", "unchanged", "notes", "good", "bad"]
    changes = data["changes"]
    assert isinstance(changes, list)
    assert list(changes[0]) == ["kind", "key", "status", "before", "after", "score", "why"]
    assert [c["key"] for c in changes] == [KNOB, "HOSTNAME"]


def test_source_trees_and_excerpts_are_compared(tmp_path: Path) -> None:
    for name, body in (("good", "x = 1\n"), ("bad", "x = 2\n")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "a.excerpt").write_text(f"reporter-excerpt: 1\npath: pkg/a.py\n---\n{body}")
    good = bundle.load([tmp_path / "good"])
    bad = bundle.load([tmp_path / "bad"])
    diff = diff_bundles(
        good, bad, good_tree={"pkg/a.py": "1" * 64}, bad_tree={"pkg/a.py": "2" * 64}
    )
    assert [(c.kind, c.key) for c in diff.changes] == [
        (ChangeKind.SOURCE, "pkg/a.py"),
        (ChangeKind.EXCERPT, "pkg/a.py:1-1"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[kind\n", "not valid TOML"),
        ("[kind]\nflag = 'x'\n", "`kind.flag` must be an integer"),
        ("[[rule]]\nweight = 1\n", "#1 needs `id`"),
        ("[[rule]]\nid = 'a'\nweight = 1\nwhy = 'x'\n", "needs `keys`"),
        ("[[value_rule]]\nid = 'a'\nweight = 1\nwhy = 'x'\n", "needs `pattern`"),
        ("[[value_rule]]\nid = 'a'\npattern = '('\nweight = 1\nwhy = 'x'\n", "bad pattern"),
        ("[[rule]]\nid = 'a'\nkeys = ['*']\nkinds = ['nope']\nweight = 1\nwhy = 'x'\n", "nope"),
        ("[[rule]]\nid = 'a'\nkeys = ['*']\nwhy = 'x'\n", "needs `weight`"),
        (
            "[[rule]]\nid = 'a'\nkeys = ['*']\nweight = 1\nwhy = 'x'\n"
            "[[rule]]\nid = 'a'\nkeys = ['*']\nweight = 1\nwhy = 'x'\n",
            "duplicate id",
        ),
    ],
)
def test_bad_rules(text: str, message: str) -> None:
    base = "[kind]\nflag=1\nenv=1\npackage=1\nsource=1\nexcerpt=1\ngpu=1\nfact=1\n[status]\nchanged=1\nadded=1\nremoved=1\n"
    body = text if text.startswith("[kind") else base + text
    with pytest.raises(ReporterError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_rules(body)


def test_a_credential_inside_a_value_is_masked_inside_so_the_change_reads() -> None:
    # Issue 20 step 5: not "`--model-path` [redacted] -> [redacted]".
    token = "glpat-" + "Zq3Wk9" * 4
    before = f"https://oauth2:{token}@gitlab.example/models/Qwen3-8B"
    after = f"https://oauth2:{token}@gitlab.example/models/Qwen3-32B"
    diff = diff_sides(_env({"SGLANG_MODEL_URL": before}), _env({"SGLANG_MODEL_URL": after}))
    (change,) = diff.changes
    assert change.before == "https://oauth2:[redacted]@gitlab.example/models/Qwen3-8B"
    assert change.after == "https://oauth2:[redacted]@gitlab.example/models/Qwen3-32B"
    assert "secrets masked inside the values" in "; ".join(change.why)
    assert token not in repr(diff)
