"""No recursion limit on input depth: a 10,000-frame stack through analyze, --json and draft."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.analysis.export import tree_data as tree_json
from reporter.analysis.result import TreeNode
from reporter.cli import cli
from reporter.console.jsontext import dumps_deep
from reporter.model import Frame
from reporter.render.view import MAX_TREE_LINES, mermaid, tree_text

DEPTH = 10_000
runner = CliRunner()


def _deep_dump(pid: int, extra: str = "") -> str:
    """A py-spy dump of a runaway recursion, `DEPTH` frames deep."""
    lines = [
        f"Process {pid}: python deep.py",
        "Python v3.11.7 (/usr/bin/python3.11)",
        "",
        f'Thread {pid} (active+gil): "MainThread"',
    ]
    if extra:
        lines.append(f"    {extra} (deep.py:7)")
    lines.extend(f"    recurse (deep.py:{i % 50 + 1})" for i in range(DEPTH))
    lines.append("    <module> (deep.py:99)")
    return "\n".join(lines) + "\n"


def _bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "rank0.txt").write_text(_deep_dump(4242))
    (folder / "rank1.txt").write_text(_deep_dump(4243, extra="other"))
    return folder


@pytest.mark.usefixtures("tmp_cwd")  # never the checkout's reports/
def test_deep_stack_goes_through_analyze_json_and_draft(tmp_path: Path) -> None:
    assert sys.getrecursionlimit() < DEPTH  # otherwise the test proves nothing
    folder = _bundle(tmp_path)
    human = runner.invoke(cli, ["analyze", str(folder)])
    assert human.exit_code == 0, human.output
    # The answer first: a headline, then the verdict line.
    assert human.stdout.splitlines()[1].startswith("verdict: ")
    machine = runner.invoke(cli, ["analyze", "--json", str(folder)])
    assert machine.exit_code == 0, machine.output
    # Reading it back needs depth too: count levels without json.loads.
    text = machine.stdout
    assert text.count('"children": [') >= DEPTH
    out = tmp_path / "report.md"
    draft = runner.invoke(cli, ["draft", str(folder), "-o", str(out)])
    assert draft.exit_code == 0, draft.output
    report = out.read_text()
    assert "recurse (deep.py)" in report


def _chain(depth: int, branch_every: int) -> TreeNode:
    """A tree `depth` deep that forks a leaf off every `branch_every` levels."""
    node = TreeNode(frame=Frame(function="leaf", file="a.py"), ranks=(0,), children=())
    for level in range(depth):
        kids: tuple[TreeNode, ...] = (node,)
        if level % branch_every == 0:
            side = TreeNode(
                frame=Frame(function=f"side{level}", file="b.py"),
                ranks=(1,),
                children=(),
            )
            kids = (node, side)
        node = TreeNode(
            frame=Frame(function=f"f{level}", file="a.py"),
            ranks=(0, 1),
            children=kids,
        )
    return TreeNode(frame=None, ranks=(0, 1), children=(node,))


def test_tree_text_and_mermaid_handle_branching_at_every_level() -> None:
    root = _chain(DEPTH, 1)
    text = tree_text(root)
    assert text.count("\n") == MAX_TREE_LINES  # cut, with the note line
    assert "tree cut at" in text
    chart = mermaid(root)
    assert "more branches than" in chart


def test_tree_json_and_dumps_deep_match_the_c_encoder_when_shallow() -> None:
    root = _chain(5, 2)
    data = tree_json(root)
    assert dumps_deep(data) == json.dumps(data, ensure_ascii=False)
    deep = tree_json(_chain(DEPTH, 1000))
    encoded = dumps_deep(deep)
    assert encoded.startswith(
        '{"frame": null, "label": "[0-1]", "children": [{"frame": "f9999 (a.py)"'
    )
    assert encoded.count("{") == encoded.count("}")


def test_svg_draws_a_mermaid_chain_deeper_than_the_recursion_limit() -> None:
    from reporter.render.svg import draw

    depth = 3_000
    source = "flowchart TD\n" + "\n".join(
        f"  n{i}[f{i}] --> n{i + 1}[f{i + 1}]" for i in range(depth)
    )
    svg = draw(source)
    assert svg is not None
    assert svg.count("<rect") >= depth


def test_preview_flattens_deeply_nested_front_matter_values() -> None:
    from reporter.render.preview import _value

    value: object = "x"
    for _ in range(DEPTH):
        value = [value]
    assert _value(value) == "x"
    assert _value({"a": None, "b": [1, [2, []]]}) == "a: —, b: 1, 2, —"
