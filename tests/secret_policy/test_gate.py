"""`gate.suspects`: a text the gate clears scans clean, so masking only the suspects is masking all.

The gate is a necessary condition written beside each shape and plugin; these tests hold it
to what `shapes.scan` finds in the seeded corpus, in every fixture bundle's evidence, in the
`--json` documents of the redaction bundles, and in those texts with their digits changed.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from reporter.secrets import gate, mask_data, shapes

from .forms import B64_GHP, B64_USER_PW, GHP, HEX_GHP, PW

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fixtures" / "redaction"
BUNDLES = ROOT / "fixtures" / "bundles"
_SHIFT = str.maketrans("0123456789", "3456789012")


def _corpus_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(CORPUS.rglob("*")):
        if path.is_file() and path.suffix != ".py":
            whole = path.read_text(encoding="utf-8", errors="replace")
            texts.append(whole[:20_000])
            texts += whole.splitlines()
    seeds = json.loads((CORPUS / "seeds.json").read_text(encoding="utf-8"))
    texts += [seed["value"] for seed in seeds]
    texts += [f"x={s}" for s in (GHP, PW, B64_GHP, B64_USER_PW, HEX_GHP)]
    # The same with other digits: the gate reads every digit as `0`.
    return texts + [t.translate(_SHIFT) for t in texts]


def _bundle_lines() -> list[str]:
    lines: set[str] = set()
    for path in sorted(BUNDLES.rglob("*")):
        if path.is_file() and path.stat().st_size < 200_000:
            try:
                lines.update(path.read_text(encoding="utf-8").splitlines())
            except UnicodeDecodeError:
                continue
    return sorted(lines)


@pytest.mark.parametrize("library", [True, False])
def test_a_text_the_gate_clears_scans_clean(library: bool) -> None:
    texts = _corpus_texts()
    suspects = set(gate.suspects(texts, library=library))
    cleared = [t for t in texts if t not in suspects]
    assert len(cleared) > 100  # the gate does clear texts
    for text in cleared:
        assert shapes.scan(text, library=library) == [], text


def test_every_fixture_line_the_gate_clears_scans_clean() -> None:
    lines = _bundle_lines()
    suspects = set(gate.suspects(lines))
    cleared = [line for line in lines if line not in suspects]
    assert len(cleared) > len(lines) // 2
    found = [line for line in cleared if shapes.scan(line)]
    assert found == []


def test_suspects_of_many_texts_are_the_suspects_of_each(monkeypatch: pytest.MonkeyPatch) -> None:
    # Joined into one pass, with texts that need the slow path (non-ASCII, a NUL).
    texts = [*_corpus_texts()[:400], "caf\u00e9 ghp", "a\0b", "", "rank 7", "rank 8"]
    together = set(gate.suspects(texts))
    assert together == {t for t in texts if gate.suspects([t])}
    assert {"caf\u00e9 ghp", "a\0b"} <= together
    assert "rank 7" not in together and "" not in together
    # In passes of a few texts at a time, the same.
    monkeypatch.setattr(gate, "_TEXTS_AT_ONCE", 7)
    assert set(gate.suspects(texts)) == together


def _redaction_document(name: str) -> object:
    from reporter.analysis import analyze
    from reporter.console import documents
    from reporter.load import bundle
    from reporter.model.document import data

    loaded = bundle.load([CORPUS / name])
    return data(documents.analysis_document(analyze(loaded), loaded))


@pytest.mark.parametrize("name", ["bundle", "hostile"])
def test_masking_a_document_through_the_gate_is_masking_every_string(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    gated = json.dumps(mask_data(_redaction_document(name)), sort_keys=True)
    import reporter.secrets as secrets

    monkeypatch.setattr(secrets, "suspects", lambda texts, library: list(texts))
    everything = json.dumps(mask_data(_redaction_document(name)), sort_keys=True)
    assert gated == everything
    assert "[redacted]" in gated


# --- every regex of the gate treats all digits alike ------------------------------------

# The parsed form of a regex (no stubs: typed loosely), to check how it treats digits.
sre: Any = importlib.import_module("re._parser")
_DIGITS = frozenset(range(ord("0"), ord("9") + 1))
_ALL_DIGITS = {sre.CATEGORY_DIGIT, sre.CATEGORY_WORD, sre.CATEGORY_NOT_SPACE}
_NO_DIGITS = {sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_WORD, sre.CATEGORY_SPACE}


def _class_digits(items: list[tuple[Any, Any]]) -> set[int]:
    """The digits a `[...]` class holds (negation is all or none either way)."""
    held: set[int] = set()
    for op, arg in items:
        if op is sre.LITERAL:
            held |= {arg} & _DIGITS
        elif op is sre.RANGE:
            low, high = arg
            held |= _DIGITS & set(range(low, high + 1))
        elif op is sre.CATEGORY:
            assert arg in _ALL_DIGITS | _NO_DIGITS, arg
            held |= _DIGITS if arg in _ALL_DIGITS else set()
    return held


def _digit_uniform(parsed: Any, negative: bool = False) -> list[str]:
    """What in a parsed regex could match a text and not the same text with every digit
    written `0`: a digit but `0` (or any, in a negative lookaround), a class holding some
    digits but not all."""
    problems: list[str] = []
    for op, arg in parsed:
        if op is sre.LITERAL:
            if arg in _DIGITS and (negative or arg != ord("0")):
                problems.append(f"the digit {chr(arg)!r}")
        elif op is sre.NOT_LITERAL:
            if arg in _DIGITS:
                problems.append(f"not the digit {chr(arg)!r}")
        elif op is sre.IN:
            held = _class_digits(arg)
            if held not in (set(), set(_DIGITS)):
                problems.append(f"a class with some digits: {sorted(map(chr, held))}")
        elif op is sre.BRANCH:
            for branch in arg[1]:
                problems += _digit_uniform(branch, negative)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            problems += _digit_uniform(arg[2], negative)
        elif op is sre.SUBPATTERN:
            problems += _digit_uniform(arg[3], negative)
        elif op is sre.ASSERT:
            problems += _digit_uniform(arg[1], negative)
        elif op is sre.ASSERT_NOT:
            problems += _digit_uniform(arg[1], not negative)
        elif op is sre.ATOMIC_GROUP:
            problems += _digit_uniform(arg, negative)
        else:
            assert op in (sre.ANY, sre.CATEGORY, sre.AT), op
    return problems


@pytest.mark.parametrize("library", [True, False])
def test_every_regex_of_the_gate_treats_all_digits_alike(library: bool) -> None:
    sources = gate.gate_sources(library)
    assert sources is not None  # every shape can be gated today
    for source in sources:
        assert _digit_uniform(sre.parse(source)) == [], source


def test_the_digit_check_can_fail() -> None:
    for unsafe in ("GR1348941", "[0-8]x", "(?<!0)x", "[^0]", r"(?<![a-z0])"):
        assert _digit_uniform(sre.parse(unsafe)), unsafe
    for safe in (r"GR\d{7}|[^:\s]+", "att0", r"(?<![a-z0-9])x", r"(?i:v0_)"):
        assert not _digit_uniform(sre.parse(safe)), safe


# --- the plugins' part, one line at a time -----------------------------------------------

# One line each plugin reports on (built from parts: no scanner should take them for real).
_HEX32 = "0123456789abcdef" * 2
_PLUGIN_LINES = {
    "AWSKeyDetector": "id AKIA" + "QWERTYUIOPASDFGH",
    "ArtifactoryDetector": "token=AKC" + "p8abcdefghijklmn",
    "AzureStorageKeyDetector": "AccountKey=" + "A" * 86 + "==",
    "BasicAuthDetector": "https://svc:" + PW + "@db.example",
    "CloudantDetector": "cloudant_password='" + _HEX32 * 2 + "'",
    "DiscordBotTokenDetector": "M" + "a" * 23 + ".Gabcde." + "b" * 27,
    "GitHubTokenDetector": "gho_" + "A1b2C3d4" * 4 + "Zz9y",
    "GitLabTokenDetector": "glpat-" + "Ab1" * 7,
    "IbmCloudIamDetector": "ibm_cloud_iam_key = " + "Ab1_-" * 8 + "Abcd",
    "IbmCosHmacDetector": "cos_hmac_secret_access_key='" + _HEX32 + "0123456789abcdef'",
    "JwtTokenDetector": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
    "KeywordDetector": 'password = "' + PW + '"',
    "MailchimpDetector": _HEX32 + "-us12",
    "NpmDetector": "//registry.npmjs.org/:_authToken=npm_" + "a1" * 18,
    "OpenAIDetector": "sk-" + "A1" * 10 + "T3BlbkFJ" + "b2" * 10,
    "PrivateKeyDetector": "-----BEGIN " + "RSA PRIVATE KEY-----",
    "PypiTokenDetector": "pypi-AgEIcHlwaS5vcmc" + "A1b2_" * 15,
    "SendGridDetector": "SG." + "a" * 22 + "." + "b1" * 21 + "c",
    "SlackDetector": "xoxb-" + "123456789012-" + "abc123",
    "SoftlayerDetector": "softlayer_api_key = " + _HEX32 * 2,
    "SquareOAuthDetector": "sq0csp-" + "A1b2c" * 8 + "Zz9",
    "StripeDetector": "sk_live_" + "A1b2C3" * 4,
    "TelegramBotTokenDetector": "123456789:" + "A1b2C3d4e5" * 3 + "AbCdE",
    "TwilioKeyDetector": "AC" + _HEX32,
    "Base64HighEntropyString": "x = '" + "Zq7ownPw81xAbCd1234EfGhJk5LmNoPqRsTu" + "'",
    "HexHighEntropyString": "x = '" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b" + "'",
}


def test_each_plugin_reports_its_line_and_the_gate_lets_it_through() -> None:
    plugins = {type(p).__name__: p for p in shapes._library_plugins()}
    assert set(plugins) == set(_PLUGIN_LINES)
    for name, line in _PLUGIN_LINES.items():
        assert list(plugins[name].analyze_string(line)), name  # the sample is real
        assert gate.library_may_match(line), name


def test_every_line_a_plugin_reports_on_passes_the_library_gate() -> None:
    lines = {line for text in _corpus_texts() for line in text.splitlines(keepends=True)}
    lines.update(_bundle_lines())
    reported = [line for line in lines if shapes._line_library_hits(line)]
    assert len(reported) > 50
    assert [line for line in reported if not gate.library_may_match(line)] == []


def test_the_library_gate_keeps_plain_lines_from_the_plugins() -> None:
    plain = [
        "rank 2899 from TP2899 (process title sglang::scheduler_TP2899)",
        "Probably, by timing out: torch's default timeout ends the wait unless the code "
        "passes its own `timeout=`",
        "Scheduler.event_loop_overlap (sglang/srt/managers/scheduler.py)",
    ]
    assert [line for line in plain if gate.library_may_match(line)] == []
    assert gate.library_may_match('api_key: "' + PW + '"')


def test_a_shape_without_needs_or_gate_makes_every_text_a_suspect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reporter.core import rules

    table = rules.load("secrets.toml")
    bare = {"id": "bare", "name": "bare", "pattern": ["x"]}
    monkeypatch.setattr(rules, "load", lambda name: {**table, "shape": [*table["shape"], bare]})
    gate.gate_sources.cache_clear()
    gate._gate.cache_clear()
    try:
        assert gate.suspects(["rank 7", "plain"]) == ["rank 7", "plain"]
    finally:
        monkeypatch.undo()
        gate.gate_sources.cache_clear()
        gate._gate.cache_clear()
    assert gate.suspects(["rank 7"]) == []


def test_digits_and_case_need_not_match_for_the_gate() -> None:
    # `GR1348941` is written `GR\d{7}`; a need's digits are read as `0` and its case ignored.
    assert gate.suspects(["x GR1348941" + "abc"], library=True)
    assert gate.suspects(["AGE-SECRET-KEY-1QQ"], library=False)
    assert re.fullmatch(r"\(\?i:.*\)", gate.gate_sources(False)[-1])  # type: ignore[index]
