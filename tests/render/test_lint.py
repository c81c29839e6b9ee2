"""`report lint` rules: every seeded defect is caught by its rule alone; clean reports pass."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from reporter.app.report import Options, lint_reports, load_and_analyze, render_draft
from reporter.core.errors import UsageError
from reporter.render import lint, regions
from reporter.render.lint import Rule

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "lint"
TEMPLATE = ROOT / "templates" / "report.md.j2"
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*.md"))
INDEX = lint.SetIssueIndex(frozenset({("sgl-project/sglang", 8094), ("vllm-project/vllm", 1)}))
BUNDLES = sorted(p for p in (ROOT / "fixtures" / "bundles").iterdir() if p.is_dir())
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)
DEFECTS = sorted(p for p in FIXTURES.glob("*.md") if not p.name.startswith("clean--"))
CLEAN = sorted(FIXTURES.glob("clean--*.md"))


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fixture_files_match_their_generator() -> None:
    cases: dict[str, str] = _load_generator().cases()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.md")}
    assert on_disk == cases, "run python3 fixtures/lint/make_fixtures.py"


def test_every_rule_has_a_seeded_defect_and_a_hint() -> None:
    seeded = {p.name.split("--")[0] for p in DEFECTS}
    assert seeded == {r.value for r in Rule} - {Rule.UNREADABLE.value}
    assert all(lint.HINTS[r] for r in Rule)


@pytest.mark.parametrize("path", DEFECTS, ids=lambda p: p.stem)
def test_seeded_defect_is_caught_by_its_rule_alone(path: Path) -> None:
    rule = path.name.split("--")[0]
    findings = lint.lint_text(path.read_text(encoding="utf-8"), path=path.name, index=INDEX)
    assert findings, "no finding"
    assert {f.rule.value for f in findings} == {rule}, [str(f) for f in findings]
    assert all(f.line >= 1 and f.path == path.name for f in findings)


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: p.stem)
def test_clean_fixture_passes(path: Path) -> None:
    assert lint.lint_text(path.read_text(encoding="utf-8"), path=path.name, index=INDEX) == ()


@pytest.mark.skipif(not GOLDEN, reason="no golden reports yet (tests/golden/*.md)")
@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden_reports_pass(path: Path) -> None:
    findings = lint.lint_text(path.read_text(encoding="utf-8"), path=str(path))
    assert findings == (), [str(f) for f in findings]


@pytest.mark.parametrize("bundle_dir", BUNDLES, ids=lambda p: p.name)
def test_reports_rendered_by_the_app_pass(
    bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    bundle, analysis = load_and_analyze([bundle_dir.relative_to(ROOT)], Options())
    text = render_draft(bundle, analysis, now=NOW)
    findings = lint.lint_text(text, path=bundle_dir.name)
    assert findings == (), [str(f) for f in findings]
    # Every generated section is a sealed region, and a fresh draft merges into itself unchanged.
    parsed = regions.parse(text)
    assert not parsed.damage and all(not r.edited for r in parsed.regions)
    assert {"title", "verdict", "ranks", "stacks", "environment", "signature", "evidence"} <= {
        r.id for r in parsed.regions
    }
    assert regions.merge(text, text).text == text
    # Reviewer sections are outside every region.
    for heading in ("## Impact", "## Contributing factors", "## Action items"):
        assert not any(heading in r.body for r in parsed.regions)


def test_required_sections_match_the_template() -> None:
    headings = re.findall(r"^## (.+)$", TEMPLATE.read_text(encoding="utf-8"), flags=re.M)
    assert [h for h in headings if h in lint.REQUIRED_SECTIONS] == list(lint.REQUIRED_SECTIONS)


def _report(body: str, status: str = "in-review", kind: str = "incident-report") -> str:
    return f"---\nkind: {kind}\nstatus: {status}\n---\n{body}"


@pytest.mark.parametrize(
    ("body", "rule", "line"),
    [
        ("```\nx\n", Rule.UNCLOSED_FENCE, 5),
        ("````\nx\n```\n", Rule.UNCLOSED_FENCE, 5),
        ("~~~\nx\n```\n", Rule.UNCLOSED_FENCE, 5),
        ("- item\n\n  ```\n  code\n", Rule.UNCLOSED_FENCE, 7),
        ("```mermaid\n```\n", Rule.MERMAID_TYPE, 5),
        ("```mermaid\n%% note\nflowchart LR\n  a[x(] --> b\n```\n", Rule.MERMAID_BRACKETS, 8),
        ('```mermaid\ngraph TD\n  a["x] --> b\n```\n', Rule.MERMAID_BRACKETS, 7),
        ("```mermaid\nxychart-beta\n  line [1, 2\n```\n", Rule.MERMAID_BRACKETS, 7),
        ("| a | b |\n|---|---|\n| 1 |\n", Rule.TABLE_COLUMNS, 7),
        ("x https://github.com/vllm-project/vllm/issues/2 y\n", Rule.UPSTREAM_LINK, 5),
        ("<!-- reporter:begin id=a -->\nx\n<!-- reporter:end id=a -->\n", Rule.REGION_MARKER, 5),
    ],
)
def test_rule_table(body: str, rule: Rule, line: int) -> None:
    findings = [
        f for f in lint.lint_text(_report(body), path="r.md", index=INDEX) if f.rule == rule
    ]
    assert [f.line for f in findings] == [line], findings


@pytest.mark.parametrize(
    "body",
    [
        "```mermaid\n---\ntitle: T\n---\nflowchart TD\n  a>asym] --> b((c))\n  c{{h}} -.-> d[(db)]\n```\n",
        '```mermaid\nflowchart TD\n  a["f(x) [1]"] -->|"calls"| b["#quot;q#quot;"]\n```\n',
        '```mermaid\nxychart-beta\n  title "Queue"\n  x-axis ["a", "b"]\n  line [1, 2]\n```\n',
        "```mermaid\nsequenceDiagram\n  A->>B: hi (unbalanced\n```\n",
        "```text\nTODO(reviewer) inside code is evidence, not a placeholder\n```\n",
        "x https://github.com/sgl-project/sglang/issues/8094 y\n",
        "```text\nhttps://github.com/vllm-project/vllm/issues/2 in a dump\n```\n",
    ],
)
def test_accepted_forms(body: str) -> None:
    rules = {f.rule for f in lint.lint_text(_report(body), path="r.md", index=INDEX)}
    assert rules == {Rule.REQUIRED_SECTION}


def test_placeholders_are_fine_in_a_draft() -> None:
    text = _report("_TODO(reviewer): impact._\n", status="draft")
    assert Rule.PLACEHOLDER not in {f.rule for f in lint.lint_text(text, path="r.md")}
    text = _report("_TODO(reviewer): impact._\n", status="reviewed")
    assert Rule.PLACEHOLDER in {f.rule for f in lint.lint_text(text, path="r.md")}


def test_links_are_not_checked_without_an_index() -> None:
    text = _report("x https://github.com/vllm-project/vllm/issues/2 y\n")
    assert Rule.UPSTREAM_LINK not in {f.rule for f in lint.lint_text(text, path="r.md")}


def test_secrets_are_checked_in_every_report() -> None:
    body = "token ghp_0123456789abcdefghijABCDEFGHIJ012345\n"
    local = [f for f in lint.lint_text(_report(body), path="r.md") if f.rule == Rule.SECRET]
    assert [f.line for f in local] == [5] and "in a report" in local[0].message
    upstream = lint.lint_text(_report(body, kind="upstream-draft"), path="u.md")
    assert [f.rule for f in upstream] == [Rule.SECRET]
    # The finding never repeats the secret itself.
    assert "ghp_0123456789abcdefghij" not in str(upstream[0])
    assert "ghp_0123456789abcdefghij" not in str(local[0])


def test_a_secret_in_a_bundle_log_is_masked_in_the_report_and_lint_catches_it_pasted_back(
    tmp_path: Path,
) -> None:
    token = "ghp_" + "Zq8" * 12
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "wedge_metrics", bundle)
    log = bundle / "logs" / "server.log"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    # A log line the timeline quotes, carrying a token in a URL.
    stamp = lines[0].split("]")[0] + "]"
    lines.insert(1, f"{stamp} Restarted; pulling https://x-access-token:{token}@github.com/o/r\n")
    log.write_text("".join(lines), encoding="utf-8")
    bundle_obj, analysis = load_and_analyze([bundle], Options())
    assert any(token in e.text for e in analysis.timeline), "the planted line reaches the timeline"
    text = render_draft(bundle_obj, analysis, now=NOW)
    assert token not in text
    assert "x-access-token:[redacted]" in text, "the local mark stands where the token was"
    assert token in log.read_text(encoding="utf-8"), "the bundle keeps the raw value"
    assert [f for f in lint.lint_text(text, path="r.md") if f.rule == Rule.SECRET] == []
    # A reviewer pastes the raw line back by hand: lint fails on it.
    pasted = text.replace("## Impact\n", f"## Impact\n\nFrom the log: {token}\n", 1)
    run_dir = tmp_path / "reports"
    run_dir.mkdir()
    (run_dir / "r.md").write_text(pasted, encoding="utf-8")
    run = lint_reports([run_dir])
    assert [f.rule for f in run.findings if f.rule == Rule.SECRET] == [Rule.SECRET]


@pytest.mark.parametrize(
    ("sample", "kind"),
    [
        ("ghp_" + "a1" * 18, "GitHub token"),
        ("github_pat_" + "A1_" * 25, "GitHub token"),
        ("hf_" + "Ab1" * 12, "Hugging Face token"),
        ("sk-proj-" + "Ab1-" * 10, "OpenAI key"),
        ("AKIAIOSFODNN7EXAMPLE", "AWS access key id"),
        (
            "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AWS secret access key",
        ),
        ("xoxb-1234567890-abcdefghij", "Slack token"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "JSON Web Token",
        ),
        ("Authorization: Bearer 0123456789abcdefghijKLMN", "bearer token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private key"),
    ],
)
def test_secret_detector(sample: str, kind: str) -> None:
    assert kind in {name for _, name, _ in lint.find_secrets(f"prefix {sample} suffix")}


@pytest.mark.parametrize("text", ["sk-short", "hf_abc", "the bearer of bad news", "AKIA123"])
def test_secret_detector_ignores_look_alikes(text: str) -> None:
    assert list(lint.find_secrets(text)) == []


def test_finding_json_and_text_forms() -> None:
    finding = lint.Finding(path="r.md", line=3, rule=Rule.TABLE_COLUMNS, message="row has 2 cells")
    assert str(finding) == "r.md:3: table-columns: row has 2 cells"
    from reporter.app.report import LintRun
    from reporter.console.documents import lint_document
    from reporter.model.document import data

    shown = data(lint_document(LintRun(files=(Path("r.md"),), findings=(finding,))))
    assert shown["findings"] == [
        {
            "path": "r.md",
            "line": 3,
            "rule": "table-columns",
            "message": "row has 2 cells",
            "hint": lint.HINTS[Rule.TABLE_COLUMNS],
        }
    ]


def test_sqlite_index(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE issues (repo TEXT, number INTEGER, title TEXT)")
        conn.execute("INSERT INTO issues VALUES ('sgl-project/sglang', 8094, 'hang')")
    index = lint.SqliteIssueIndex(db)
    try:
        assert index.has("SGL-project/sglang", 8094)
        assert not index.has("sgl-project/sglang", 1)
    finally:
        index.close()
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(UsageError, match="not an issue index"):
        lint.SqliteIssueIndex(other)
    with pytest.raises(UsageError, match="no such issue index"):
        lint.SqliteIssueIndex(tmp_path / "missing.db")


def test_impossible_dates_and_huge_integers_are_findings_not_crashes() -> None:
    from reporter.render import frontmatter

    text = (
        "---\nkind: incident-report\nstatus: draft\nincident_end: 2026-02-30\nbig: "
        + ("9" * 100_000)
        + "\n---\n# T\n"
    )
    front = frontmatter.parse(text)
    assert front is not None and front.data is not None
    assert front.data["incident_end"] == "2026-02-30"
    assert isinstance(front.data["big"], str)
    assert [line for line, _what in front.problems] == [4, 5]
    findings = lint.lint_text(text, path="r.md")
    said = [(f.line, f.message) for f in findings if f.rule is lint.Rule.FRONT_MATTER]
    assert any(line == 4 and "not a real date" in m for line, m in said)
    assert any(line == 5 and "100,000-character integer" in m for line, m in said)
