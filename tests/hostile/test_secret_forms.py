"""Hostile rows of issue 32 step 7: secrets behind base64 or hex, split over two variables,
under `*_DB` / `*_DSN` / `*PASS*` names, and a Sentry DSN whose key holds no digit.

Each form once reached `--json`, the report, the upstream draft or `report diff`, and
`report lint` called it clean. Same rules as the other hostile tables (`harness.run_case`).
Every secret here is fake, built from parts so no scanner mistakes the file for a real one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from secret_policy.forms import B64_GHP, GHP, HEX_GHP, PW, SENTRY_KEY
from secret_policy.forms import B64_USER_PW as USER_PW

from .harness import Case, Outcome, run_case
from .test_round2 import DUMP, draft_report, environ_rows

# What must never show: each value, and the decoded token and password.
SHOWN_NEVER = (USER_PW, B64_GHP, HEX_GHP, GHP, GHP[4:], PW, SENTRY_KEY)


def _forms() -> dict[str, str]:
    return {
        "SGLANG_UPSTREAM_BASIC": USER_PW,
        "VLLM_MIRROR_BLOB": B64_GHP,
        "SGLANG_MIRROR_HEX": HEX_GHP,
        "SGLANG_TOK_A": GHP[:4],
        "SGLANG_TOK_B": GHP[4:],
        "ANALYTICS_DB": PW,
        "METRICS_DSN": f"{PW}-dsn",
        "REDIS_PASSWD2": f"{PW}-redis",
        "SGLANG_ERROR_SINK": f"https://{SENTRY_KEY}@sentry.acme.example/7",
    }


def check_never_shown(*files: str) -> Callable[[Path, Outcome], None]:
    def check(work: Path, outcome: Outcome) -> None:
        texts = [outcome.stdout + outcome.stderr]
        texts += [(work / f).read_text("utf-8") for f in files if (work / f).is_file()]
        for text in texts:
            for secret in SHOWN_NEVER:
                assert secret not in text, f"{secret[:8]}... shown"
            assert "SGLANG_TOK_A=ghp_" not in text and "`ghp_`" not in text

    return check


s_json, s_report, s_upstream = environ_rows(_forms)


def s_diff(work: Path) -> list[str]:
    good = work / "good.environ"
    bad = work / "bad.environ"
    good.write_text("".join(f"{k}=none\x00" for k in _forms()), encoding="utf-8")
    bad.write_text("".join(f"{k}={v}\x00" for k, v in _forms().items()), encoding="utf-8")
    return ["diff", str(good), str(bad), "--limit", "50", "--json"]


def s_lint(work: Path) -> list[str]:
    report = work / "r.md"
    draft_report(work, DUMP, report)
    typed = "\n".join(f"- {k}={v}" for k, v in _forms().items())
    text = report.read_text("utf-8").replace("\n# ", f"\n# Notes\n\n{typed}\n\n# ", 1)
    report.write_text(text, encoding="utf-8")
    return ["lint", str(report), "--json"]


def check_lint_flags_each(work: Path, outcome: Outcome) -> None:
    check_never_shown()(work, outcome)
    text = (work / "r.md").read_text("utf-8")
    first = text.count("\n", 0, text.index("- SGLANG_UPSTREAM_BASIC=")) + 1
    findings = json.loads(outcome.stdout)["findings"]
    flagged = {f["line"] for f in findings if f["rule"] == "secret"}
    want = {first + at for at, name in enumerate(_forms()) if name != "SGLANG_TOK_B"}
    # The rest of a split token is an opaque run with no shape of its own: outputs mask it
    # by the policy (the rows above); lint flags the split token at its prefix.
    assert want <= flagged, (first, sorted(flagged))


ROWS = [
    Case("secret-forms-json", s_json, {0}, check=check_never_shown()),
    Case(
        "secret-forms-report",
        s_report,
        {0},
        allowed=("r.md", "r.metrics.svg"),
        check=check_never_shown("r.md"),
    ),
    Case(
        "secret-forms-upstream",
        s_upstream,
        {0},
        allowed=("u.md",),
        check=check_never_shown("u.md"),
    ),
    Case("secret-forms-diff", s_diff, {0}, check=check_never_shown()),
    Case("secret-forms-lint", s_lint, {1}, check=check_lint_flags_each),
]


@pytest.mark.parametrize("case", ROWS, ids=[c.id for c in ROWS])
def test_secret_forms(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
