"""Write every rendered output of the fixtures into a folder, to compare two checkouts byte for byte.

For each bundle under `fixtures/bundles/`: the report (fixed clock), the metrics SVG
document when it has charts, and the HTML preview of the report; the preview of every
Markdown file under `fixtures/` and `tests/golden/`; and the Mermaid text and SVG of
synthetic wedges (small, large and sub-unit values, a quote in a metric name). Run it in
two checkouts, then `diff -r`: a behaviour-preserving change shows no difference.

    cd /work/main && PYTHONPATH=$PWD python benchmarks/snapshot_outputs.py /tmp/before
    cd my-worktree && PYTHONPATH=$PWD python benchmarks/snapshot_outputs.py /tmp/after
    diff -r /tmp/before /tmp/after
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reporter import app
from reporter.analysis import wedge
from reporter.evidence import metrics
from reporter.model import Location, MetricKind, MetricPoint, MetricSeries, WedgeSettings
from reporter.render import charts, preview

NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)
T0 = datetime(2026, 11, 29, 14, 40, tzinfo=UTC)


def _series(name: str, values: list[float], kind: MetricKind = MetricKind.GAUGE) -> MetricSeries:
    points = tuple(
        MetricPoint(at=T0 + timedelta(seconds=i * 0.5), value=v, source=Location(path="m", line=i))
        for i, v in enumerate(values)
    )
    return MetricSeries(name=name, kind=kind, points=points, source=Location(path="m", line=0))


def _synthetic(n: int, scale: float) -> wedge.WedgeReport | None:
    half = n // 2
    series, _ = metrics.finish(
        [
            _series(
                "sglang:gen_throughput", [0.0 if i >= half else scale * (4 + i) for i in range(n)]
            ),
            _series(
                "sglang:generation_tokens_total",
                [scale * 1.37 * min(i, half) for i in range(n)],
                MetricKind.COUNTER,
            ),
            _series(
                'sglang:num_queue_reqs{x="a"}', [max(0, i - half) * 0.000123457 for i in range(n)]
            ),
            _series("sglang:num_running_reqs", [4.0] * n),
            _series("sglang:token_usage", [0.5] * n),
        ]
    )
    return wedge.detect(series, WedgeSettings(window_seconds=5))


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for folder in sorted(p for p in Path("fixtures/bundles").iterdir() if p.is_dir()):
        bundle, analysis = app.load_and_analyze([folder], app.Options())
        text = app.render_draft(bundle, analysis, now=NOW)
        built = charts.build(analysis.wedge)
        if built and analysis.wedge is not None:
            title = bundle.manifest.title or f"Metrics: {analysis.verdict.value}"
            svg = charts.svg_document(built, title=title, window=charts.window_text(analysis.wedge))
            (out / f"{folder.name}.svg").write_text(svg, encoding="utf-8")
        (out / f"{folder.name}.md").write_text(text, encoding="utf-8")
        (out / f"{folder.name}.html").write_text(
            preview.to_html(text, source=folder.name), encoding="utf-8"
        )
    for source in sorted([*Path("fixtures").rglob("*.md"), *Path("tests/golden").glob("*.md")]):
        page = preview.to_html(source.read_text(encoding="utf-8"), source=source.name)
        (out / (str(source).replace("/", "_") + ".html")).write_text(page, encoding="utf-8")
    for n in (30, 200, 1000):
        for scale in (1.0, 1234.567, 0.001):
            report = _synthetic(n, scale)
            built = charts.build(report)
            name = f"synthetic-{n}-{scale:g}"
            window = charts.window_text(report) if report is not None else ""
            (out / f"{name}.svg").write_text(
                charts.svg_document(built, title='T "q" <x>', window=window), encoding="utf-8"
            )
            (out / f"{name}.mmd").write_text(
                "\n\n".join(f"{c.mermaid}\n{c.caption}" for c in built), encoding="utf-8"
            )
    print(f"{len(list(out.iterdir()))} files in {out}")


if __name__ == "__main__":
    main()
