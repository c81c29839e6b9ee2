"""Masking is called from one place per surface (issue 35).

Every output masks once, at its edge, and the layers below hand it text: the table
`SITES` is the "Where each surface is masked" section of `docs/architecture.md`, and a
module outside it that calls a masking function fails here. Like
`tests/analysis/test_decide.py`, this reads the source (ast), so a call inside a
function or behind a condition counts too.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reporter"

# Called or referenced anywhere: the functions that replace secret text.
MASKING = frozenset(
    {
        "mask_text",
        "mask_data",
        "mask_value",
        "mask_bytes",
        "scrub_environ",
        "scrub_argv",
        "scrub_cmdline",
        "scrub_locals",
        "default_detector",
    }
)
# Counted only as calls (the names are common words elsewhere): `redact.redact(...)`,
# `SecretPolicy.shown(...)`, `SecretDetector.mask(...)`.
MASKING_CALLS = frozenset({"redact", "shown", "mask"})

# Where masking is defined: they call each other.
DEFINED = ("reporter/secrets/", "reporter/upstream/redact.py")

# Module -> the surface it masks for. Keep in step with docs/architecture.md.
SITES = {
    "reporter/cli/group.py": "terminal (`masked`)",
    "reporter/console/jsontext.py": "--json (`json_value`)",
    "reporter/app/report.py": "the local report (`_report_text`)",
    "reporter/upstream/draft.py": "the upstream draft and comment (`redact`)",
    # Named values: a table cell has lost its name, so the record decides by it.
    "reporter/analysis/environment.py": "named values of the environment record",
    "reporter/analysis/diff.py": "named values of the environment diff",
    # The bundle: what `report collect` writes and prints, under the session's detector.
    "reporter/collect/state.py": "bundle files, collect's progress lines and tips",
    "reporter/collect/envcap.py": "bundle files: /proc environ and cmdline copies",
    "reporter/collect/manifest.py": "bundle files: the manifest's free text",
}


def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every call into masking, and every reference to a masking function."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [(node.lineno, a.name) for a in node.names if a.name in MASKING]
        elif isinstance(node, ast.Name) and node.id in MASKING:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in MASKING:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in MASKING_CALLS:
                found.append((node.lineno, name))
    return found


@cache
def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(DEFINED):
            out.append((rel, ast.parse(path.read_text(encoding="utf-8"), filename=rel)))
    return out


def test_only_the_named_call_sites_mask() -> None:
    stray = [
        f"{rel}:{line}: {name}"
        for rel, tree in _modules()
        if rel not in SITES
        for line, name in _uses(tree)
    ]
    assert stray == [], "masking outside its surfaces' call sites (see SITES):\n" + "\n".join(stray)


def test_every_named_call_site_still_masks() -> None:
    """A site that stopped masking leaves the table (and the doc), so it cannot hide a
    stray call later."""
    using = {rel for rel, tree in _modules() if _uses(tree)}
    assert sorted(set(SITES) - using) == []


def test_the_scan_sees_a_stray_call() -> None:
    """The scan itself: each way of calling in is found."""
    source = (
        "from reporter.secrets import mask_text\n"
        "from reporter import secrets\n"
        "a = secrets.mask_data({})\n"
        "b = policy.shown('K', 'v')\n"
        "c = redactor.redact([])\n"
        "m = mask_text\n"
        "ok = form.shown\n"
    )
    assert [name for _, name in _uses(ast.parse(source))].count("mask_text") == 2
    assert {name for _, name in _uses(ast.parse(source))} == {
        "mask_text",
        "mask_data",
        "shown",
        "redact",
    }


def test_the_architecture_doc_names_every_call_site() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "## Where each surface is masked" in text
    section = text.split("## Where each surface is masked", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(reporter/[\w/]+\.py)`", section))
    assert sorted(set(SITES) - named) == []
