"""Application-layer helpers that the CLI tests do not pin down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reporter.analysis import to_json
from reporter.app.report import Options, draft, load_and_analyze, render_draft
from reporter.app.settings import Context
from reporter.console import documents

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]


def test_analysis_json_is_the_same_document_one_item_per_line() -> None:
    _, analysis = load_and_analyze([ROOT / "fixtures" / "bundles" / "tp_desync"], Options())
    text = documents.analysis_json(analysis)
    assert json.loads(text) == json.loads(json.dumps(to_json(analysis)))
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    # Each rank sits on a line of its own, so `grep` and diffs stay readable.
    assert sum(1 for line in lines if '"key": "rank:' in line) == 4
    assert text == documents.analysis_json(analysis)


def test_the_draft_reads_the_evidence_once(tmp_path: Path) -> None:
    """The loader keeps what the report quotes (issue 13): with the bundle's files gone
    after loading, the draft is byte for byte the draft of the intact bundle."""
    import shutil
    from datetime import UTC, datetime

    folder = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "full_incident", folder)
    log = folder / "logs" / "server.log"
    # Past the cap, with line breaks other than \n that str.splitlines also counts.
    log.write_text(
        log.read_text(encoding="utf-8") + "".join(f"extra {n}\x0c\r\n" for n in range(50)),
        encoding="utf-8",
    )
    now = datetime(2026, 7, 14, 9, tzinfo=UTC)
    bundle, analysis = load_and_analyze([folder], Options())
    intact = render_draft(bundle, analysis, now=now)
    shutil.rmtree(folder)
    assert render_draft(bundle, analysis, now=now) == intact
    kept = next(f for f in bundle.files if f.path == "logs/server.log")
    # The head is the first 40 lines joined by newlines (empty ones too).
    assert kept.lines == 34 + 2 * 50 and len(kept.head.split("\n")) == 40
    assert f"… {kept.lines - 40} more lines in logs/server.log" in intact


def test_environment_scripts_come_from_the_bundle(tmp_path: Path) -> None:
    """The upstream draft's environment script is the loader's copy, not a second read."""
    import shutil

    from reporter.app.filing import env_scripts

    folder = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "tp_desync", folder)
    text = "Python: 3.11.7\nsglang: 0.4.1\nCUDA available: True\n"
    (folder / "check_env.txt").write_text(text, encoding="utf-8")
    bundle, _ = load_and_analyze([folder], Options())
    shutil.rmtree(folder)
    found = dict(env_scripts(bundle))
    assert list(found.values()) == [text]


def test_the_context_is_resolved_once_from_flags_environment_and_config(tmp_path: Path) -> None:
    """`Context.resolve`: flags beat the environment, which beats the config file."""
    from datetime import UTC, datetime

    import pytest

    from reporter.core.errors import UsageError

    config = tmp_path / "config.toml"
    config.write_text('host = "ghe.corp.example"\nindex = "/data/issues.db"\n', encoding="utf-8")
    env = {"REPORTER_CONFIG": str(config), "SOURCE_DATE_EPOCH": "1784018084"}
    ctx = Context.resolve(env)
    assert ctx.now == datetime(2026, 7, 14, 8, 34, 44, tzinfo=UTC)
    assert ctx.env["GH_HOST"] == "ghe.corp.example"  # the config's host as the default
    assert ctx.api_url == "https://ghe.corp.example/api/v3" and ctx.host == "ghe.corp.example"
    assert ctx.db(None) == Path("/data/issues.db") and ctx.db(tmp_path) == tmp_path
    assert ctx.config_dir == tmp_path
    with pytest.raises(TypeError):
        ctx.env["GH_HOST"] = "other"  # type: ignore[index]  # read-only
    flagged = Context.resolve({**env, "GH_HOST": "env.example"}, base_url="http://127.0.0.1:1")
    assert flagged.env["GH_HOST"] == "env.example" and flagged.host == "127.0.0.1:1"
    # A broken config file stops the commands that read it, not the report commands.
    config.write_text("host = [\n", encoding="utf-8")
    with pytest.raises(UsageError, match="not valid TOML"):
        Context.resolve(env)
    assert Context.resolve(env, read_config=False).config.exists is False


def test_the_report_is_masked_once_and_scans_clean(tmp_path: Path) -> None:
    """The draft masks the report in one pass (`[redacted]`, the local mark; issue 35):
    the token quoted from a log is gone, and what was written holds nothing a scan finds."""
    import shutil
    from datetime import UTC, datetime

    from reporter import secrets

    folder = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "full_incident", folder)
    log = folder / "logs" / "server.log"
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    first, rest = log.read_text(encoding="utf-8").split("\n", 1)
    log.write_text(f"{first} auth with {token}\n{rest}", encoding="utf-8")
    out = tmp_path / "report.md"
    now = datetime(2026, 7, 14, 9, tzinfo=UTC)
    draft([folder], out=out, options=Options(), now=now)
    written = out.read_text(encoding="utf-8")
    assert token not in written
    assert "auth with [redacted]" in written
    assert secrets.scan(written) == []
