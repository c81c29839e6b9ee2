"""Draw Mermaid diagrams as inline SVG in Python, so the HTML preview needs no JavaScript.

Two diagram kinds are understood, in the subset reports use:

* `flowchart TD` (also `graph`, and TB / BT / LR / RL): nodes `id`, `id[label]`,
  `id["quoted label"]` and the other bracket shapes, edges `a --> b`, `a --- b`,
  `a -.-> b`, `a ==> b`, `a -->|label| b`, chains `a --> b --> c`; styling lines are
  skipped. Drawn as a layered tree: each node under its first parent, parents centred
  over their children; other edges are drawn too.
* `xychart-beta`: `title`, `x-axis` (categories `[a, b]` or a range `0 --> 10`),
  `y-axis` (range optional), and `line [..]` / `bar [..]` series. Drawn as a line chart
  with bars where given, coloured by the block's `plotColorPalette` when its front matter
  sets one. A bar series that only marks a window (one run of bars at the chart's top,
  zero elsewhere: how a report draws the wedge window) is drawn as one shaded band behind
  the lines. Tick labels on the x-axis are thinned to the space they need.

`draw(source, uid=...)` returns the SVG text, or None when the diagram is another kind
or cannot be read (the caller then shows the source). All text is XML-escaped.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

CHAR_W = 7.2  # width of one 12px monospace character
LINE_H = 15
PAD = 8
WRAP = 34  # characters per label line
GAP_X = 24
GAP_Y = 46
PALETTE = ("#d6336c", "#1c7ed6", "#37b24d", "#f59f00", "#7048e8", "#0c8599")


def esc(text: str) -> str:
    """XML-escape text for SVG content and attributes."""
    return html.escape(text, quote=True)


_PALETTE = re.compile(r'plotColorPalette:\s*"?(?P<colours>[^"\n]+)"?')
_COLOUR = re.compile(r"#[0-9A-Fa-f]{3,8}")


def draw(source: str, *, uid: str = "m") -> str | None:
    """SVG for a Mermaid block, or None when this module cannot draw it."""
    lines = _lines(source)
    if not lines:
        return None
    head = lines[0].split()
    kind = head[0]
    if kind in ("flowchart", "graph"):
        direction = head[1].rstrip(";") if len(head) > 1 else "TD"
        if direction not in ("TD", "TB", "BT", "LR", "RL"):
            return None
        chart = parse_flowchart(lines[1:])
        return draw_flowchart(chart, direction=direction, uid=uid) if chart.nodes else None
    if kind == "xychart-beta":
        xy = parse_xychart(lines[1:])
        palette = _PALETTE.search(source)
        if palette is not None:
            xy.palette = [c for c in _COLOUR.findall(palette.group("colours"))]
        return draw_xychart(bands_from_bars(xy)) if xy.series else None
    return None


def _lines(source: str) -> list[str]:
    """Statement lines without comments, blank lines or a leading `---` config block."""
    raw = source.split("\n")
    if raw and raw[0].strip() == "---":
        end = next((i for i in range(1, len(raw)) if raw[i].strip() == "---"), len(raw) - 1)
        raw = raw[end + 1 :]
    out = []
    for line in raw:
        stripped = line.strip()
        if stripped and not stripped.startswith("%%"):
            out.append(stripped)
    return out


# ---------------------------------------------------------------------------- flowchart


@dataclass(slots=True)
class Flowchart:
    """Nodes in first-seen order (id -> label) and edges (source, target, label)."""

    nodes: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)


_SKIP = re.compile(r"(classDef|class|style|linkStyle|click|subgraph|end|direction)\b")
_NODE_ID = re.compile(r"[A-Za-z0-9_]+")
_OPENERS = (("([", "])"), ("[[", "]]"), ("[(", ")]"), ("((", "))"), ("{{", "}}"),
            ("[/", "/]"), ("[\\", "\\]"), ("[", "]"), ("(", ")"), ("{", "}"), (">", "]"))  # fmt: skip
_ARROW = re.compile(
    r"\s*(?:--[ \t]++(?P<text>[^-|>\s][^>]{0,200}?)[ \t]{1,16}+(?:-->|---)"
    r"|<?(?:-{2,}>|-{3,}|={2,}>|={3,}|-\.+->|-\.+-|~~~|--[ox]|==[ox]))"
    r"(?:\s*\|(?P<label>[^|]*)\|)?\s*"
)


def decode_label(text: str) -> str:
    """Mermaid label text -> plain text: `#34;`-style entities, `<br>` as a newline."""
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.I)
    text = re.sub(
        r"#(\d+);", lambda m: chr(int(m.group(1))) if int(m.group(1)) < 0x110000 else "", text
    )
    return re.sub(r"#([a-zA-Z]+);", lambda m: html.unescape(f"&{m.group(1)};"), text)


def parse_flowchart(lines: Sequence[str]) -> Flowchart:
    """Nodes and edges of the flowchart statements (the header line already removed)."""
    chart = Flowchart()
    for line in lines:
        for statement in _statements(line):
            if _SKIP.match(statement):
                continue
            _parse_statement(statement, chart)
    return chart


def _statements(line: str) -> list[str]:
    """Split on `;` outside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in line:
        if char == '"':
            quoted = not quoted
        if char == ";" and not quoted:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _parse_statement(text: str, chart: Flowchart) -> None:
    pos = 0
    previous: list[str] = []
    pending_label: str | None = None
    while pos < len(text):
        group: list[str] = []
        while True:
            node = _NODE_ID.match(text, pos)
            if not node:
                return
            ident, pos = node.group(0), node.end()
            label, pos = _shape(text, pos)
            if ident not in chart.nodes or (label is not None and chart.nodes[ident] == ident):
                chart.nodes[ident] = decode_label(label) if label is not None else ident
            group.append(ident)
            amp = re.compile(r"\s*&\s*").match(text, pos)
            if not amp:
                break
            pos = amp.end()
        if pending_label is not None:
            for source in previous:
                for target in group:
                    chart.edges.append((source, target, decode_label(pending_label)))
        arrow = _ARROW.match(text, pos)
        if not arrow or arrow.end() == pos:
            return
        pending_label = arrow.group("label") or arrow.group("text") or ""
        pending_label = pending_label.strip().strip('"')
        previous, pos = group, arrow.end()


def _shape(text: str, pos: int) -> tuple[str | None, int]:
    """The label of a bracketed node shape at `pos`, and the position after it."""
    for opener, closer in _OPENERS:
        if not text.startswith(opener, pos):
            continue
        start = pos + len(opener)
        if text.startswith('"', start):
            end_quote = text.find('"', start + 1)
            if end_quote >= 0 and text.startswith(closer, end_quote + 1):
                return text[start + 1 : end_quote], end_quote + 1 + len(closer)
        end = text.find(closer, start)
        if end >= 0:
            return text[start:end].strip('"'), end + len(closer)
        return None, pos
    return None, pos


def _wrap(label: str) -> list[str]:
    out: list[str] = []
    for paragraph in label.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            while len(word) > WRAP:
                if line:
                    out.append(line)
                    line = ""
                out.append(word[:WRAP])
                word = word[WRAP:]
            if not line:
                line = word
            elif len(line) + 1 + len(word) <= WRAP:
                line += " " + word
            else:
                out.append(line)
                line = word
        out.append(line)
    return out or [""]


@dataclass(slots=True)
class _Box:
    lines: list[str]
    w: float
    h: float
    x: float = 0.0  # top-left, final coordinates
    y: float = 0.0
    layer: int = 0


def draw_flowchart(chart: Flowchart, *, direction: str = "TD", uid: str = "m") -> str:
    """A layered tree drawing of the flowchart."""
    vertical = direction in ("TD", "TB", "BT")
    boxes: dict[str, _Box] = {}
    for ident, label in chart.nodes.items():
        lines = _wrap(label)
        width = max(len(line) for line in lines) * CHAR_W + 2 * PAD
        boxes[ident] = _Box(lines=lines, w=width, h=len(lines) * LINE_H + 2 * PAD)
    children: dict[str, list[str]] = {n: [] for n in chart.nodes}
    parent: dict[str, str] = {}
    for source, target, _label in chart.edges:
        if target not in parent and target != source and not _is_ancestor(target, source, parent):
            parent[target] = source
            children[source].append(target)
    roots = [n for n in chart.nodes if n not in parent]

    def breadth(node: str) -> float:
        return boxes[node].w if vertical else boxes[node].h

    span: dict[str, float] = {}

    # Iterative (explicit stacks): a pasted chart can nest deeper than the recursion limit.
    def measure(top: str) -> None:
        order: list[str] = []
        pending = [top]
        while pending:
            node = pending.pop()
            order.append(node)
            pending.extend(children[node])
        for node in reversed(order):  # children before parents
            kids = children[node]
            inner = sum(span[k] for k in kids) + GAP_X * max(0, len(kids) - 1)
            span[node] = max(breadth(node), inner)

    def place(top: str, first: float) -> None:
        pending = [(top, first, 0)]
        while pending:
            node, start, layer = pending.pop()
            boxes[node].layer = layer
            kids = children[node]
            inner = sum(span[k] for k in kids) + GAP_X * max(0, len(kids) - 1)
            offset = start + (span[node] - inner) / 2
            for kid in kids:
                pending.append((kid, offset, layer + 1))
                offset += span[kid] + GAP_X
            centre = start + span[node] / 2
            if vertical:
                boxes[node].x = centre - boxes[node].w / 2
            else:
                boxes[node].y = centre - boxes[node].h / 2

    cursor = 0.0
    for root in roots:
        measure(root)
        place(root, cursor)
        cursor += span[root] + GAP_X
    # Layer positions along the depth axis: each layer as deep as its deepest box.
    depth_of: dict[int, float] = {}
    for box in boxes.values():
        size = box.h if vertical else box.w
        depth_of[box.layer] = max(depth_of.get(box.layer, 0.0), size)
    starts: dict[int, float] = {}
    position = 0.0
    for layer in sorted(depth_of):
        starts[layer] = position
        position += depth_of[layer] + GAP_Y
    for box in boxes.values():
        if vertical:
            box.y = starts[box.layer]
        else:
            box.x = starts[box.layer]
    margin = 10.0
    width = max(b.x + b.w for b in boxes.values()) + 2 * margin
    height = max(b.y + b.h for b in boxes.values()) + 2 * margin
    for box in boxes.values():
        box.x += margin
        box.y += margin
        if direction == "BT":
            box.y = height - box.y - box.h
        if direction == "RL":
            box.x = width - box.x - box.w
    return _flowchart_svg(chart, boxes, width, height, vertical, uid)


def _is_ancestor(node: str, of: str, parent: dict[str, str]) -> bool:
    seen = set()
    while of in parent and of not in seen:
        seen.add(of)
        of = parent[of]
        if of == node:
            return True
    return False


def _flowchart_svg(
    chart: Flowchart,
    boxes: dict[str, _Box],
    width: float,
    height: float,
    vertical: bool,
    uid: str,
) -> str:
    marker = f"arrow-{uid}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mermaid-flowchart" role="img" '
        f'aria-label="flowchart" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">',
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#555"/></marker></defs>',
    ]
    for source, target, label in chart.edges:
        a, b = boxes[source], boxes[target]
        if vertical:
            down = b.y >= a.y
            x1, y1 = a.x + a.w / 2, a.y + (a.h if down else 0)
            x2, y2 = b.x + b.w / 2, b.y + (0 if down else b.h)
            mid = (y1 + y2) / 2
            path = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
        else:
            right = b.x >= a.x
            x1, y1 = a.x + (a.w if right else 0), a.y + a.h / 2
            x2, y2 = b.x + (0 if right else b.w), b.y + b.h / 2
            mid = (x1 + x2) / 2
            path = f"M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        out.append(
            f'<path class="edge" d="{path}" fill="none" stroke="#555" stroke-width="1.4" '
            f'marker-end="url(#{marker})"/>'
        )
        if label:
            out.append(
                f'<text class="edge-label" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2:.1f}" '
                f'text-anchor="middle" font-size="11" font-family="monospace" '
                f'fill="#333">{esc(label)}</text>'
            )
    for ident, box in boxes.items():
        out.append(f'<g class="node" data-id="{esc(ident)}">')
        out.append(
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
            'rx="5" fill="#eef3fb" stroke="#4a6fa5" stroke-width="1.2"/>'
        )
        for index, line in enumerate(box.lines):
            y = box.y + PAD + (index + 1) * LINE_H - 3
            out.append(
                f'<text x="{box.x + PAD:.1f}" y="{y:.1f}" font-size="12" font-family="monospace" '
                f'fill="#1b1b1b" xml:space="preserve">{esc(line)}</text>'
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


# ---------------------------------------------------------------------------- xychart


@dataclass(slots=True)
class XYChart:
    """A parsed `xychart-beta`: axis titles, categories or range, and series."""

    title: str = ""
    x_title: str = ""
    y_title: str = ""
    categories: list[str] = field(default_factory=list)
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None
    series: list[tuple[str, str, list[float]]] = field(default_factory=list)
    """(kind "line" | "bar", name, values)."""
    bands: list[tuple[int, int, str]] = field(default_factory=list)
    """Shaded windows behind the series: (first index, last index, colour or "")."""
    palette: list[str] = field(default_factory=list)
    """Series colours in order (`plotColorPalette`); PALETTE when empty."""


BAND_FILL = "#f3d9d9"


def bands_from_bars(chart: XYChart) -> XYChart:
    """`chart` with every bar series that only marks a window drawn as a band instead.

    Such a series is zero but for one run of equal values at the chart's top (at least
    every line's highest value): bars there would read as the highest values exactly
    where the window is, so it becomes one shaded rectangle behind the lines."""
    tops = [max(values) for kind, _, values in chart.series if kind == "line" and values]
    kept: list[tuple[str, str, list[float]]] = []
    for index, (kind, name, values) in enumerate(chart.series):
        inside = [i for i, v in enumerate(values) if v]
        run = bool(inside) and inside == list(range(inside[0], inside[-1] + 1))
        level = {values[i] for i in inside}
        if kind == "bar" and run and len(level) == 1 and tops and level.pop() >= max(tops):
            colour = chart.palette[index] if index < len(chart.palette) else ""
            chart.bands.append((inside[0], inside[-1], colour))
            continue
        kept.append((kind, name, values))
    if len(kept) < len(chart.series):
        # The palette follows the series: drop the colours of those now drawn as bands.
        chart.palette = [
            c
            for i, c in enumerate(chart.palette)
            if i >= len(chart.series) or chart.series[i] in kept
        ]
        chart.series = kept
    return chart


_QUOTED = r'"(?P<q>[^"]*)"'
_RANGE = re.compile(r"(?P<lo>-?[\d.]+(?:e-?\d+)?)\s*-->\s*(?P<hi>-?[\d.]+(?:e-?\d+)?)")


def _items(text: str) -> list[str]:
    return [item.strip().strip('"').strip() for item in re.findall(r'"[^"]*"|[^,]+', text)]


def parse_xychart(lines: Sequence[str]) -> XYChart:
    """The chart statements (the header line already removed); unknown lines are ignored."""
    chart = XYChart()
    for line in _lines("\n".join(lines)):
        keyword, _, rest = line.partition(" ")
        rest = rest.strip()
        title = ""
        quoted = re.match(_QUOTED, rest)
        if quoted:
            title, rest = quoted.group("q"), rest[quoted.end() :].strip()
        if keyword == "title":
            chart.title = title or rest
        elif keyword in ("x-axis", "y-axis"):
            bracket = re.match(r"\[(.*)\]$", rest)
            span = _RANGE.fullmatch(rest)
            if not (bracket or span) and rest and not title:
                title, rest = rest, ""
            if keyword == "x-axis":
                chart.x_title = title
                if bracket:
                    chart.categories = _items(bracket.group(1))
                elif span:
                    chart.x_range = (float(span.group("lo")), float(span.group("hi")))
            else:
                chart.y_title = title
                if span:
                    chart.y_range = (float(span.group("lo")), float(span.group("hi")))
        elif keyword in ("line", "bar"):
            bracket = re.match(r"\[(.*)\]$", rest)
            if not bracket:
                continue
            try:
                values = [float(v) for v in _items(bracket.group(1)) if v]
            except ValueError:
                continue
            if values and all(math.isfinite(v) for v in values):
                chart.series.append((keyword, title, values))
    return chart


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        if value >= lo - step * 1e-9:
            ticks.append(round(value, 10))
        value += step
    return ticks


def _fmt(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.3g}"


def draw_xychart(chart: XYChart) -> str:
    """An SVG line chart (bars for `bar` series) with axes, ticks and a legend."""
    width, height = 760.0, 380.0
    left, right, top, bottom = 70.0, 20.0, 40.0 if chart.title else 20.0, 60.0
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(values) for _, _, values in chart.series)
    every = [v for _, _, values in chart.series for v in values]
    lo, hi = chart.y_range or (min(0.0, min(every)), max(every))
    if hi <= lo:
        hi = lo + 1
    ticks = _nice_ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])

    def y_of(value: float) -> float:
        return top + plot_h - (value - lo) / (hi - lo) * plot_h

    def x_of(index: int) -> float:
        return left + (index + 0.5) * plot_w / n

    palette = chart.palette or list(PALETTE)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mermaid-xychart" role="img" '
        f'aria-label="{esc(chart.title or "chart")}" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}">',
        f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="#ffffff"/>',
    ]
    slot_w = plot_w / n
    for first, last, label in chart.bands:
        # Behind everything else: one rectangle from the first sample's slot to the last's.
        x0 = left + max(0, first) * slot_w
        x1 = left + min(n, last + 1) * slot_w
        fill = label if _COLOUR.fullmatch(label) else BAND_FILL
        out.append(
            f'<rect class="band" x="{x0:.1f}" y="{top:.1f}" width="{max(1.0, x1 - x0):.1f}" '
            f'height="{plot_h:.1f}" fill="{fill}"><title>window</title></rect>'
        )
    if chart.title:
        out.append(
            f'<text x="{width / 2:.0f}" y="24" text-anchor="middle" font-size="15" '
            f'font-family="sans-serif" font-weight="bold" fill="#1b1b1b">{esc(chart.title)}</text>'
        )
    for tick in ticks:
        y = y_of(tick)
        out.append(
            f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{left + plot_w:.1f}" y2="{y:.1f}" '
            'stroke="#e3e3e3" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
            f'font-family="sans-serif" fill="#444">{esc(_fmt(tick))}</text>'
        )
    out.append(
        f'<path class="axes" d="M{left:.1f},{top:.1f} V{top + plot_h:.1f} H{left + plot_w:.1f}" '
        'fill="none" stroke="#333" stroke-width="1.2"/>'
    )
    labels = chart.categories or _range_labels(chart.x_range, n)
    # Thin the tick labels to the room they need: one label's width (11px sans-serif, about
    # 6.6px a character) plus a gap, so that none overlaps its neighbour.
    widest = max((len(label) for label in labels), default=1) * 6.6 + 10
    step = max(1, math.ceil(widest / slot_w))
    shown = list(range(0, n, step))
    if shown and shown[-1] != n - 1:
        # The last sample is always labelled (where the data ends is what a reader looks
        # for); the label before it gives way when the two would overlap.
        if (n - 1 - shown[-1]) * slot_w < widest:
            shown.pop()
        shown.append(n - 1)
    for index in shown:
        if index < len(labels):
            out.append(
                f'<text x="{x_of(index):.1f}" y="{top + plot_h + 18:.1f}" text-anchor="middle" '
                f'font-size="11" font-family="sans-serif" fill="#444">{esc(labels[index])}</text>'
            )
    if chart.x_title:
        out.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 14:.1f}" text-anchor="middle" '
            f'font-size="12" font-family="sans-serif" fill="#222">{esc(chart.x_title)}</text>'
        )
    if chart.y_title:
        out.append(
            f'<text transform="translate(16 {top + plot_h / 2:.1f}) rotate(-90)" '
            f'text-anchor="middle" font-size="12" font-family="sans-serif" '
            f'fill="#222">{esc(chart.y_title)}</text>'
        )
    bars = [s for s in chart.series if s[0] == "bar"]
    slot = plot_w / n * 0.7
    order = {id(s): i for i, s in enumerate(chart.series)}
    for bar_index, series_item in enumerate(bars):
        _kind, _name, values = series_item
        position = order[id(series_item)]
        colour = (
            palette[position % len(palette)]
            if chart.palette
            else PALETTE[(len(chart.series) - 1 - bar_index) % len(PALETTE)]
        )
        bar_w = slot / len(bars)
        for index, value in enumerate(values):
            x = x_of(index) - slot / 2 + bar_index * bar_w
            y0, y1 = sorted((y_of(value), y_of(max(lo, 0.0))))
            out.append(
                f'<rect class="bar" x="{x:.1f}" y="{y0:.1f}" width="{bar_w * 0.9:.1f}" '
                f'height="{max(0.5, y1 - y0):.1f}" fill="{colour}" fill-opacity="0.75"/>'
            )
    line_index = 0
    for position, (kind, name, values) in enumerate(chart.series):
        if kind != "line":
            continue
        colour = (
            palette[position % len(palette)]
            if chart.palette
            else PALETTE[line_index % len(PALETTE)]
        )
        line_index += 1
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in _stepped(values, x_of, y_of))
        out.append(
            f'<polyline class="series" points="{points}" fill="none" stroke="{colour}" '
            f'stroke-width="2.5"><title>{esc(name or "series")}</title></polyline>'
        )
        for i, v in enumerate(values):
            out.append(
                f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="3" fill="{colour}">'
                f"<title>{esc(labels[i] if i < len(labels) else str(i))}: {esc(_fmt(v))}</title>"
                "</circle>"
            )
    out.append("</svg>")
    return "\n".join(out)


def _stepped(
    values: Sequence[float], x_of: Callable[[int], float], y_of: Callable[[float], float]
) -> list[tuple[float, float]]:
    """The line's vertices: one per value, and where the series drops to zero, a corner
    that holds the last value until the zero sample, so a stop is drawn as a step down."""
    out: list[tuple[float, float]] = []
    for i, v in enumerate(values):
        if i and v == 0 and values[i - 1] > 0:
            out.append((x_of(i), y_of(values[i - 1])))
        out.append((x_of(i), y_of(v)))
    return out


def _range_labels(span: tuple[float, float] | None, n: int) -> list[str]:
    if span is None or n < 2:
        return [str(i + 1) for i in range(n)]
    lo, hi = span
    return [_fmt(lo + (hi - lo) * i / (n - 1)) for i in range(n)]
