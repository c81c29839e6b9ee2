"""Mermaid flowcharts and xycharts drawn as SVG without JavaScript."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from reporter.render import svg

NS = "{http://www.w3.org/2000/svg}"

TREE = """\
flowchart TD
  n0["[0-3] run_scheduler_process (scheduler.py)"]
  n1["[0-1] check_hicache_events (scheduler.py) → all_reduce (distributed_c10d.py)"]
  n2["[2-3] on_idle (scheduler.py) #34;q#34; #lt;x#gt;"]
  n0 --> n1
  n0 --> n2
"""


def _tree(source: str) -> ET.Element:
    drawing = svg.draw(source)
    assert drawing is not None
    return ET.fromstring(drawing)


def _rects(root: ET.Element) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for group in root.iter(f"{NS}g"):
        rect = group.find(f"{NS}rect")
        assert rect is not None
        out[group.attrib["data-id"]] = tuple(
            float(rect.attrib[k]) for k in ("x", "y", "width", "height")
        )
    return out  # type: ignore[return-value]


def test_flowchart_labels_are_decoded() -> None:
    chart = svg.parse_flowchart(TREE.splitlines()[1:])
    assert list(chart.nodes) == ["n0", "n1", "n2"]
    assert chart.nodes["n2"] == '[2-3] on_idle (scheduler.py) "q" <x>'
    assert chart.edges == [("n0", "n1", ""), ("n0", "n2", "")]


def test_flowchart_is_a_tree_with_parents_centred_above_children() -> None:
    root = _tree(TREE)
    boxes = _rects(root)
    x0, y0, w0, h0 = boxes["n0"]
    for child in ("n1", "n2"):
        assert boxes[child][1] >= y0 + h0 + 20  # below its parent
    left = boxes["n1"][0]
    right = boxes["n2"][0] + boxes["n2"][2]
    assert abs((x0 + w0 / 2) - (left + right) / 2) < 1
    assert len(root.findall(f"{NS}path")) == 2
    lines = [t.text or "" for t in root.iter(f"{NS}text")]
    # Decoded, wrapped, and escaped in the SVG source (it parsed as XML).
    assert lines[-2:] == ['[2-3] on_idle (scheduler.py) "q"', "<x>"]


def test_lr_flowchart_grows_to_the_right() -> None:
    boxes = _rects(_tree("flowchart LR\n  a[start] --> b[end]\n"))
    assert boxes["b"][0] > boxes["a"][0] + boxes["a"][2]


@pytest.mark.parametrize(
    ("source", "nodes", "edges"),
    [
        ("graph TD\n  a --> b --> c\n", ["a", "b", "c"], [("a", "b", ""), ("b", "c", "")]),
        ("flowchart TD\n  a -->|calls| b\n", ["a", "b"], [("a", "b", "calls")]),
        ("flowchart TD\n  a -- waits on --> b\n", ["a", "b"], [("a", "b", "waits on")]),
        ("flowchart TD\n  a & b --> c\n", ["a", "b", "c"], [("a", "c", ""), ("b", "c", "")]),
        (
            "flowchart TD\n  a((x)) -.-> b{y}; b ==> c[(z)]\n",
            ["a", "b", "c"],
            [("a", "b", ""), ("b", "c", "")],
        ),
        (
            "flowchart TD\n  classDef hot fill:#f00\n  a --> b\n  style a fill:#0f0\n",
            ["a", "b"],
            [("a", "b", "")],
        ),
    ],
)
def test_flowchart_statement_forms(
    source: str, nodes: list[str], edges: list[tuple[str, str, str]]
) -> None:
    chart = svg.parse_flowchart(source.splitlines()[1:])
    assert list(chart.nodes) == nodes
    assert chart.edges == edges
    assert svg.draw(source) is not None


def test_cycles_do_not_hang_the_layout() -> None:
    root = _tree("flowchart TD\n  a --> b\n  b --> a\n  b --> b\n")
    assert len(root.findall(f"{NS}path")) == 3


@pytest.mark.parametrize(
    "source",
    [
        "sequenceDiagram\n  A->>B: hi\n",
        "flowchart XY\n  a --> b\n",
        'xychart-beta\n  title "x"\n',
        "",
    ],
)
def test_other_diagrams_are_not_drawn(source: str) -> None:
    assert svg.draw(source) is None


CHART = """\
xychart-beta
  title "Queue depth <b>"
  x-axis "time" ["08:30", "08:35", "08:40", "08:45"]
  y-axis "requests" 0 --> 100
  line [10, 40, 80, 95]
  bar [5, 20, 30, 40]
"""


def test_xychart_is_parsed() -> None:
    chart = svg.parse_xychart(CHART.splitlines()[1:])
    assert chart.title == "Queue depth <b>"
    assert chart.x_title == "time" and chart.y_title == "requests"
    assert chart.categories == ["08:30", "08:35", "08:40", "08:45"]
    assert chart.y_range == (0.0, 100.0)
    assert chart.series == [("line", "", [10, 40, 80, 95]), ("bar", "", [5, 20, 30, 40])]


def test_xychart_draws_a_line_through_every_point() -> None:
    drawing = svg.draw(CHART)
    assert drawing is not None
    root = ET.fromstring(drawing)
    line = root.find(f"{NS}polyline")
    assert line is not None
    points = [tuple(map(float, p.split(","))) for p in line.attrib["points"].split()]
    assert len(points) == 4
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True)  # rising values go up
    assert len([r for r in root.iter(f"{NS}rect") if r.attrib.get("class") == "bar"]) == 4
    assert "Queue depth &lt;b&gt;" in drawing


def test_xychart_range_axis_and_ticks() -> None:
    chart = svg.parse_xychart(["x-axis 0 --> 10", "line [3, 1.5, 2]"])
    assert chart.x_range == (0.0, 10.0)
    drawing = svg.draw_xychart(chart)
    labels = re.findall(r">([\d.,]+)</text>", drawing)
    assert {"0", "5", "10"} <= set(labels)


def test_nice_ticks() -> None:
    assert svg._nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
    assert svg._nice_ticks(0, 7) == [0, 2, 4, 6]
