"""Every command's `--json` output, byte for byte, against snapshots in tests/json_snapshots/.

The documents are generated from typed records (issue 25): this test pins the bytes the
commands printed before that, so field order, null against absent and number formatting
cannot drift unnoticed. `analyze` runs on every shipped bundle and every real-world dump;
the other commands on fixtures, a temporary home and the local GitHub server. Paths
under the temporary folder read `$TMP`, the server's URL `$SERVER`, and GitHub's
rate-limit reset time (the wall clock) `$RESET`.

Rewrite on purpose with `pytest tests/test_json_snapshots.py --update-golden`, and read
the diff: a change here is a change to a documented output.
"""

from __future__ import annotations

import io
import re
import shutil
import tomllib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner
from upstream.ghserver import GitHubServer

from reporter.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = ROOT / "tests" / "json_snapshots"
BUNDLES = sorted(p.name for p in (ROOT / "fixtures" / "bundles").iterdir() if p.is_dir())
# Real dumps copied from public threads; those SOURCES.toml marks `refused` are not dumps.
_SOURCES = tomllib.loads((ROOT / "fixtures" / "realworld" / "SOURCES.toml").read_text("utf-8"))
REALWORLD = sorted(
    d["file"] for d in _SOURCES["dump"] if d.get("expect", {}).get("kind") != "refused"
)
runner = CliRunner()


class World:
    """A temporary home, the repository as working folder, and the text normaliser."""

    def __init__(self, tmp: Path, server: GitHubServer | None = None) -> None:
        self.tmp = tmp
        self.server = server

    def run(self, args: list[str], *, code: int = 0) -> str:
        """`report ARGS --json`'s stdout, normalised; the exit code must be `code`.

        `analyze`, `draft` and `upstream file` look through an empty tmp folder of earlier
        reports unless ARGS name one: never the checkout's `reports/`, where the Quickstart's first
        command leaves a report (issue 29).
        """
        if (args[0] in ("analyze", "draft") or args[:2] == ["upstream", "file"]) and (
            "--reports" not in args
        ):
            earlier = self.tmp / "earlier-reports"
            earlier.mkdir(exist_ok=True)
            args = [*args, "--reports", str(earlier)]
        result = runner.invoke(cli, [*args, "--json"])
        assert result.exit_code == code, (args, result.output)
        return self.normal(result.stdout)

    def normal(self, text: str) -> str:
        text = text.replace(str(self.tmp), "$TMP")
        if self.server is not None:
            text = text.replace(self.server.url, "$SERVER")
            text = text.replace(self.server.url.split("//", 1)[1], "$HOST")
        return re.sub(r'"reset": \d+', '"reset": "$RESET"', text)


def compare(name: str, text: str, update: bool) -> None:
    """`text` must equal the snapshot `name` (or becomes it with `--update-golden`)."""
    path = SNAPSHOTS / f"{name}.json"
    if update:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"{path} missing: run pytest {__file__} --update-golden"
    want = path.read_text(encoding="utf-8")
    assert text == want, f"{name}: --json output differs from {path.relative_to(ROOT)}"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """Caches, config and gh config in tmp; no token; GitHub unreachable unless a test says."""
    for name in (
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GH_HOST",
        "GH_CONFIG_DIR",
        "REPORTER_CONFIG",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no gh
    monkeypatch.chdir(ROOT)
    return World(tmp_path)


@pytest.fixture
def server() -> Iterator[GitHubServer]:
    ghserver = GitHubServer()
    ghserver.start()
    try:
        yield ghserver
    finally:
        ghserver.stop()


@pytest.mark.parametrize("name", BUNDLES)
def test_analyze_bundle(name: str, world: World, update_golden: bool) -> None:
    text = world.run(["analyze", f"fixtures/bundles/{name}"])
    compare(f"analyze--{name}", text, update_golden)


@pytest.mark.parametrize("name", REALWORLD)
def test_analyze_realworld(name: str, world: World, update_golden: bool) -> None:
    text = world.run(["analyze", f"fixtures/realworld/{name}"])
    compare(f"analyze--realworld--{Path(name).stem}", text, update_golden)


def test_analyze_loose_evidence(world: World, update_golden: bool) -> None:
    """Go dumps, faulthandler crashes, a baseline, source roots and earlier reports."""
    cases = {
        "goroutines": [
            "fixtures/goroutines/agents/debug2.txt",
            "fixtures/goroutines/agents/sigquit.txt",
        ],
        "crashes": ["fixtures/crashes/segfault_thread.txt", "fixtures/crashes/abort.txt"],
        "watchdog": ["fixtures/watchdog/nvidia-nccl-1409.log"],
        "baseline": ["fixtures/bundles/tp_desync", "--baseline", "fixtures/bundles/dp_tp"],
    }
    for name, args in cases.items():
        compare(f"analyze--{name}", world.run(["analyze", *args]), update_golden)
    reports = world.tmp / "reports"
    world.run(["draft", "fixtures/bundles/tp8_desync", "-o", str(reports / "tp8.md")])
    seen = world.run(["analyze", "fixtures/bundles/tp_desync", "--reports", str(reports)])
    compare("analyze--seen-before", seen, update_golden)


def test_report_commands(world: World, update_golden: bool) -> None:
    """draft (new, unchanged, merged), status, lint, preview, diff, init."""
    out = world.tmp / "reports" / "tp.md"
    compare(
        "draft--new",
        world.run(["draft", "fixtures/bundles/tp_desync", "-o", str(out)]),
        update_golden,
    )
    compare(
        "draft--unchanged",
        world.run(["draft", "fixtures/bundles/tp_desync", "-o", str(out)]),
        update_golden,
    )
    # A reviewer's edit in the summary, then a draft from other evidence over it.
    text = out.read_text(encoding="utf-8")
    out.write_text(
        text.replace("Verdict: **", "Verdict (checked by hand): **", 1), encoding="utf-8"
    )
    merged = world.run(["draft", "fixtures/bundles/tp8_desync", "-o", str(out)])
    assert (
        '"conflicts": [\n      "summary"' in merged or '"kept_edited": [\n      "summary"' in merged
    )
    compare("draft--merged", merged, update_golden)
    compare("status", world.run(["status", str(world.tmp / "reports")]), update_golden)
    compare("status--lint-fixtures", world.run(["status", "fixtures/lint"]), update_golden)
    compare("lint--report", world.run(["lint", str(out)]), update_golden)
    lint_files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "fixtures" / "lint").glob("*.md"))
    compare("lint--fixtures", world.run(["lint", *lint_files], code=1), update_golden)
    html = world.tmp / "tp.html"
    compare("preview", world.run(["preview", str(out), "-o", str(html)]), update_golden)
    compare(
        "diff--bundles",
        world.run(["diff", "fixtures/bundles/dp_tp", "fixtures/bundles/tp_desync"]),
        update_golden,
    )
    compare(
        "diff--envdiff",
        world.run(["diff", "fixtures/envdiff/good", "fixtures/envdiff/bad"]),
        update_golden,
    )
    folder = world.tmp / "evidence"
    shutil.copytree(
        ROOT / "fixtures" / "bundles" / "tp_desync",
        folder,
        ignore=shutil.ignore_patterns("bundle.toml", "*.md"),
    )
    compare("init", world.run(["init", str(folder)]), update_golden)
    compare("config-show", world.run(["config", "show"]), update_golden)


def test_index_search_triage(world: World, update_golden: bool) -> None:
    db = str(world.tmp / "index.sqlite3")
    compare(
        "index-import",
        world.run(["index", "import", "fixtures/github/issues.jsonl", "--db", db]),
        update_golden,
    )
    compare("index-export", world.run(["index", "export", "--db", db]), update_golden)
    compare(
        "index-export--repo",
        world.run(["index", "export", "--db", db, "--repo", "sgl-project/sglang"]),
        update_golden,
    )
    for name in ("tp_desync", "dp_tp", "wedge_metrics", "thread_deadlock", "healthy_loop"):
        found = world.run(["search-upstream", f"fixtures/bundles/{name}", "--db", db])
        compare(f"search-upstream--{name}", found, update_golden)
    pasted = world.tmp / "pasted.txt"
    pasted.write_text(
        "NCCL watchdog timeout in all_reduce after a rank hung in broadcast\n", encoding="utf-8"
    )
    triaged = world.run(["triage", "sgl-project/sglang", "--text-file", str(pasted), "--db", db])
    compare("triage--text", triaged, update_golden)
    since = world.run(["triage", "sgl-project/sglang", "--since", "2020-01-01", "--db", db])
    compare("triage--since", since, update_golden)


def test_github_commands(
    world: World, server: GitHubServer, monkeypatch: pytest.MonkeyPatch, update_golden: bool
) -> None:
    """sync, auth status, upstream draft and file against the local server."""
    world.server = server
    for number in range(1, 4):
        server.add_issue("a/b", number)
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    db = str(world.tmp / "s.sqlite3")
    compare("sync--first", world.run(["sync", "a/b", "--db", db]), update_golden)
    compare("sync--again", world.run(["sync", "a/b", "--db", db]), update_golden)
    compare("auth-status--no-token", world.run(["auth", "status"], code=1), update_golden)
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "ghe-secret-value")
    compare("auth-status--token", world.run(["auth", "status"]), update_golden)
    monkeypatch.delenv("GH_ENTERPRISE_TOKEN")

    bundle = world.tmp / "bundle"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "tp_desync", bundle)
    out = world.tmp / "up.md"
    drafted = world.run(
        ["upstream", "draft", str(bundle), "--repo", "acme/inference", "--offline", "-o", str(out)]
    )
    compare("upstream-draft", drafted, update_golden)
    server.issues["acme/empty"] = []
    common = ["upstream", "file", str(bundle), "--repo", "acme/empty"]
    common += ["--base-url", server.url, "--db", str(world.tmp / "i.sqlite3")]
    common += ["--reports", str(world.tmp / "reports")]
    compare("upstream-file--refused", world.run(common, code=1), update_golden)
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "test-token")
    compare("upstream-file--sent", world.run([*common, "--yes"]), update_golden)


def test_collect_document(update_golden: bool) -> None:
    """`collect --json` from a fixed summary: a live run's PIDs and seconds vary."""
    from reporter import console
    from reporter.collect.manifest import CollectStatus, RemoteNote, SkipNote
    from reporter.collect.session import CollectSummary
    from reporter.console import documents_upstream as documents

    at = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)
    summary = CollectSummary(
        out=Path("evidence/run1"),
        status=CollectStatus.PARTIAL,
        targets=4,
        dumps_ok=6,
        dumps_failed=2,
        scrapes=3,
        files=14,
        skipped=(SkipNote(what="PID 4711", reason="py-spy timed out after 10 s", at=at),),
        advice=("run as root, or set kernel.yama.ptrace_scope=0",),
        seconds=12.34567,
        missing_stacks=("PID 4712 (python serve.py --token ghp_" + "a" * 36 + "): gone",),
        missing=("http://127.0.0.1:30000/metrics: connection refused",),
        hosts=(
            RemoteNote(
                host="node-a",
                via="ssh",
                status="complete",
                hostname="a",
                targets=2,
                dumps=6,
                seconds=3.14159,
            ),
            RemoteNote(
                host="node-b",
                via="ssh",
                status="timeout",
                reason="no answer in 30 s",
                seconds=30.0004,
            ),
        ),
    )
    stream = io.StringIO()
    console.emit(documents.collect_document(summary), stream=stream)
    compare("collect--partial", stream.getvalue(), update_golden)


def test_analyze_schema_requires_every_key_the_command_prints() -> None:
    """`report analyze --json` always has the bundle, so every key it prints is required
    (the hand-written schema required `headline` and `summary_lines`; so must the class)."""
    import json

    from reporter.console.schemas import SCHEMAS

    schema = SCHEMAS["analyze"]
    printed = sorted(SNAPSHOTS.glob("analyze--*.json"))
    assert len(printed) > 60
    for path in printed:
        keys = set(json.loads(path.read_text(encoding="utf-8")))
        assert keys == set(schema["required"]) == set(schema["properties"]), path.name
