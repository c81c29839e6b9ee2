"""Every command that produces a result, run with `--json`, against its documented schema.

The schemas are `reporter.console.schemas.SCHEMAS`, generated from the document types; `docs/cli.md` and the README are generated
from them (tests/test_cli_docs.py keeps those current). Each command runs for real:
bundles from fixtures/, GitHub as the local server, py-spy against a child process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner
from upstream.ghserver import GitHubServer

from reporter.cli import cli, plain_metavars
from reporter.collect import envcap
from reporter.console import schemas

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = ROOT / "fixtures" / "bundles"
EXAMPLE_ISSUES = ROOT / "fixtures" / "github" / "issues.jsonl"
runner = CliRunner()


def check(name: str, args: list[str], *, code: int = 0) -> Any:
    """Run `report ARGS --json`; the exit code must be `code` and stdout one valid document."""
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == code, (name, result.output)
    document = json.loads(result.stdout)
    jsonschema.validate(document, schemas.SCHEMAS[name])
    return document


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
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
    return tmp_path


@pytest.fixture
def server() -> Iterator[GitHubServer]:
    ghserver = GitHubServer()
    ghserver.start()
    try:
        yield ghserver
    finally:
        ghserver.stop()


def test_every_json_command_has_a_schema() -> None:
    """A `--json` flag without a documented schema (or the reverse) fails here."""
    from typer.main import get_command

    group = get_command(cli)
    plain_metavars(group)
    found: set[str] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if any("--json" in getattr(p, "opts", ()) for p in command.params):
            found.add(" ".join(path))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(group, ())
    assert found == set(schemas.SCHEMAS)
    for schema in schemas.SCHEMAS.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_report_commands_json(home: Path) -> None:
    bundle = BUNDLES / "tp_desync"
    analyzed = check("analyze", ["analyze", str(bundle)])
    assert analyzed["verdict"]

    out = home / "drafts" / "tp.md"
    drafted = check("draft", ["draft", str(bundle), "-o", str(out)])
    assert drafted["path"] == str(out) and drafted["merge"] is None
    assert drafted["verdict"] == analyzed["verdict"]
    again = check("draft", ["draft", str(bundle), "-o", str(out)])
    assert again["unchanged"] is True and again["merge"]["regenerated"] == []

    rows = check("status", ["status", str(home / "drafts")])
    assert [r["path"] for r in rows] == [str(out)]
    linted = check("lint", ["lint", str(out)], code=0)
    assert linted["files"] == [str(out)]

    html = home / "tp.html"
    assert check("preview", ["preview", str(out), "-o", str(html)]) == {"path": str(html)}
    assert html.is_file()

    changed = check("diff", ["diff", str(BUNDLES / "dp_tp"), str(bundle)])
    assert changed["good"] == str(BUNDLES / "dp_tp")

    folder = home / "evidence"
    shutil.copytree(bundle, folder, ignore=shutil.ignore_patterns("bundle.toml", "*.md"))
    made = check("init", ["init", str(folder)])
    assert made["path"] == str(folder / "bundle.toml")
    assert {s["key"] for s in made["suggestions"]} >= {"upstream", "world_size"}


def test_index_and_search_json(home: Path) -> None:
    db = home / "index.sqlite3"
    imported = check("index import", ["index", "import", str(EXAMPLE_ISSUES), "--db", str(db)])
    assert imported["imported"] > 40 and imported["skipped"] == []
    exported = check("index export", ["index", "export", "--db", str(db), "--repo", "a/b"])
    assert exported["count"] == 0 and exported["repo"] == "a/b"
    everything = check("index export", ["index", "export", "--db", str(db)])
    assert everything["count"] == imported["imported"] == len(everything["issues"])
    found = check(
        "search-upstream", ["search-upstream", str(BUNDLES / "tp_desync"), "--db", str(db)]
    )
    assert found["index"]["path"] == str(db) and found["candidates"]


def test_sync_auth_and_config_json(
    home: Path, server: GitHubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(1, 4):
        server.add_issue("a/b", number)
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    synced = check("sync", ["sync", "a/b", "--db", str(home / "s.sqlite3")])
    assert synced["repos"][0]["stored"] == 3 and synced["repos"][0]["repo"] == "a/b"
    again = check("sync", ["sync", "a/b", "--db", str(home / "s.sqlite3")])
    assert again["repos"][0]["not_modified"] and again["repos"][0]["requests"] == 1

    # No token: the document still comes, and the exit code is 1 (as `gh auth status`).
    status = check("auth status", ["auth", "status"], code=1)
    assert status["authenticated"] is False and status["token_source"] is None
    assert status["rate_limit"]["limit"] == 60
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "ghe-secret-value")
    status = check("auth status", ["auth", "status"])
    assert status["token_source"] == "GH_ENTERPRISE_TOKEN"
    assert status["rate_limit"]["limit"] == 5000

    shown = check("config show", ["config", "show"])
    assert shown["exists"] is False and shown["settings"]["repos"] == []


def test_upstream_json(home: Path, server: GitHubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = home / "bundle"
    shutil.copytree(BUNDLES / "tp_desync", bundle)
    out = home / "up.md"
    drafted = check(
        "upstream draft",
        ["upstream", "draft", str(bundle), "--repo", "acme/inference", "--offline", "-o", str(out)],
    )
    assert drafted["path"] == str(out) and drafted["form"] == "generic"
    assert drafted["title"].startswith("SGLang HiCache (TP=4) hangs: TP0-1 in all_reduce")
    assert drafted["known_fix"] is None and isinstance(drafted["related"], list)
    assert drafted["characters"] > 1000

    server.issues["acme/empty"] = []
    common = ["upstream", "file", str(bundle), "--repo", "acme/empty"]
    common += ["--base-url", server.url, "--db", str(home / "i.sqlite3")]
    common += ["--reports", str(home / "reports")]
    refused = check("upstream file", common, code=1)
    assert refused["sent"] is False and refused["refusals"]
    assert refused["request"]["characters"] > 1000
    monkeypatch.setenv("GH_ENTERPRISE_TOKEN", "test-token")
    filed = check("upstream file", [*common, "--yes"])
    assert filed["sent"] is True and filed["action"] == "new-issue"
    assert filed["url"] == server.issues["acme/empty"][0]["html_url"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_collect_json(home: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        missing = check(
            "collect",
            [
                "collect",
                "-o",
                str(home / "a"),
                "--pid",
                str(child.pid),
                "--snapshots",
                "1",
                "--py-spy",
                str(home / "no-py-spy"),
            ],
            code=1,
        )
        assert missing["status"] == "incomplete" and missing["dumps_ok"] == 0
        # The label quotes the command line cut to a width, so how much of it shows depends
        # on the interpreter's path: check the parts that do not.
        (reason,) = missing["missing_stacks"]
        assert reason.startswith(f"PID {child.pid} ({sys.executable[:20]}")
        assert reason.endswith(
            f"): py-spy not found at {home / 'no-py-spy'} (pip install py-spy, or pass --py-spy PATH)"
        )
        if envcap.find_pyspy().path is None:
            pytest.skip("py-spy is not installed beside this interpreter or on PATH")
        taken = check(
            "collect",
            ["collect", "-o", str(home / "b"), "--pid", str(child.pid), "--snapshots", "1"],
        )
        assert taken["status"] == "complete" and taken["dumps_ok"] == 1
    finally:
        child.kill()
        child.wait()


def test_every_merge_outcome_names_a_field_of_the_merge_result() -> None:
    """documents.MERGE_OUTCOMES drives the JSON, the schema and the terminal lines."""
    from dataclasses import fields

    from reporter.console.documents import MERGE_OUTCOMES, Merge, merge_document
    from reporter.model.document import data
    from reporter.render.regions import MergeResult

    names = {f.name for f in fields(MergeResult)}
    assert {field for _key, field, _label in MERGE_OUTCOMES} <= names
    merged = MergeResult(text="", updated=("summary",), conflicts=("timeline",))
    record = merge_document(merged)
    assert record is not None
    document = data(record)
    assert [f.name for f in fields(Merge)] == [key for key, _f, _l in MERGE_OUTCOMES] + ["damaged"]
    assert document["regenerated"] == ["summary"] and document["conflicts"] == ["timeline"]
    assert list(document) == [key for key, _f, _l in MERGE_OUTCOMES] + ["damaged"]


def _readme_analyze_rows() -> list[tuple[str, str]]:
    """(key, type) of each row of the README's hand-written `report analyze --json` table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## `report analyze --json`", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            rows.append((cells[0].strip("`"), cells[1]))
    return rows


def _at(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The schema of `classes[].ranks` (and the like) inside `schema`, or None."""
    for part in path.split("."):
        name = part.removesuffix("[]")
        found = schema.get("properties", {}).get(name)
        if found is None:
            return None
        schema = found["items"] if part.endswith("[]") else found
    return schema


def _types(words: str) -> tuple[set[str], set[str]]:
    """The README's type words as JSON Schema types, and the item types of its lists:
    `list of int` -> ({"array"}, {"integer"}); `object or null` -> ({"object", "null"}, set())."""
    names = {"string": "string", "strings": "string", "int": "integer", "object": "object"}
    names |= {"null": "null", "bool": "boolean", "list": "array", "number": "number"}
    kinds: set[str] = set()
    items: set[str] = set()
    for part in words.split(" or "):
        head, _, item = part.partition(" of ")
        kinds.add(names[head.strip()])
        if item:
            items.add(names[item.strip()])
    return kinds, items


def test_readme_analyze_table_agrees_with_the_generated_schema() -> None:
    """The README's prose table of `analyze --json`: every key it documents is in the
    schema generated from the document type, with the type it says, and every key of the
    document is documented there."""
    schema = schemas.SCHEMAS["analyze"]
    rows = _readme_analyze_rows()
    assert len(rows) > 30
    for path, words in rows:
        found = _at(schema, path)
        assert found is not None, f"README documents {path}, the analyze document has no such key"
        kinds, items = _types(words)
        if "type" in found:
            have = found["type"] if isinstance(found["type"], list) else [found["type"]]
            assert kinds == set(have), (path, words, have)
        if items:
            item_type = found["items"]["type"]
            assert items == set(item_type if isinstance(item_type, list) else [item_type]), path
    documented = {path for path, _ in rows if "." not in path}
    assert documented == set(schema["properties"]), "README's analyze table and the document differ"
