"""Write every rendered output of the fixtures into a folder, to compare two checkouts byte for byte.

For each bundle under `fixtures/bundles/`: the `analyze --json` document, the report
(fixed clock), the metrics SVG document when it has charts, and the HTML preview of the
report; the `analyze --json` document (or the error) of every loose evidence file under
`fixtures/` (each parser on real captures); the preview of every Markdown file under
`fixtures/` and `tests/golden/`; and the Mermaid text and SVG of synthetic wedges (small,
large and sub-unit values, a quote in a metric name). `--generated 4096,16384` adds the
`analyze --json` document and the report of generated bundles of that many ranks (a
desync and a healthy one, `generate_bundle.py`). Run it in two checkouts, then `diff -r`:
a behaviour-preserving change shows no difference.

    cd /work/main && PYTHONPATH=$PWD python benchmarks/snapshot_outputs.py /tmp/before
    cd my-worktree && PYTHONPATH=$PWD python benchmarks/snapshot_outputs.py /tmp/after
    diff -r /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reporter.analysis import wedge
from reporter.app.report import Options, load_and_analyze, render_draft
from reporter.console import documents
from reporter.core.errors import ReporterError
from reporter.evidence import metrics
from reporter.model import Location, MetricKind, MetricPoint, MetricSeries, WedgeSettings
from reporter.render import charts, preview
from reporter.render.answer import SeenBefore

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


# Loose files under fixtures/ that are not evidence: scripts, notes, manifests, web pages.
_NOT_EVIDENCE = {".py", ".md", ".toml", ".html", ".pyc"}


def _analysis_json(paths: list[Path]) -> str:
    """`report analyze --json` of `paths` (no earlier reports), or the error it stops with."""
    try:
        bundle, analysis = load_and_analyze(paths, Options())
    except ReporterError as err:
        return f"error: {err}\n"
    return documents.analysis_json(analysis, bundle, seen=SeenBefore())


def _loose_files() -> list[Path]:
    return sorted(
        p
        for p in Path("fixtures").rglob("*")
        if p.is_file()
        and p.suffix not in _NOT_EVIDENCE
        and "bundles" not in p.parts
        and "__pycache__" not in p.parts
    )


def _generated(out: Path, sizes: list[int]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from generate_bundle import generate

    # A fixed folder: the report names the bundle's path, so both checkouts must see one.
    base = Path(tempfile.gettempdir()) / "reporter-snapshot-generated"
    for ranks in sizes:
        for healthy in (False, True):
            name = f"generated-{ranks}{'-healthy' if healthy else ''}"
            shutil.rmtree(base, ignore_errors=True)
            folder = base / name
            generate(folder, ranks=ranks, healthy=healthy)
            bundle, analysis = load_and_analyze([folder], Options())
            (out / f"{name}.json").write_text(
                documents.analysis_json(analysis, bundle, seen=SeenBefore()), encoding="utf-8"
            )
            (out / f"{name}.md").write_text(
                render_draft(bundle, analysis, now=NOW), encoding="utf-8"
            )
    shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--generated", default="", help="rank counts, e.g. 4096,16384")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.generated:
        _generated(out, [int(n) for n in args.generated.split(",")])
    for loose in _loose_files():
        name = str(loose).replace("/", "_")
        (out / f"loose-{name}.json").write_text(_analysis_json([loose]), encoding="utf-8")
    for folder in sorted(p for p in Path("fixtures/bundles").iterdir() if p.is_dir()):
        bundle, analysis = load_and_analyze([folder], Options())
        (out / f"{folder.name}.json").write_text(
            documents.analysis_json(analysis, bundle, seen=SeenBefore()), encoding="utf-8"
        )
        text = render_draft(bundle, analysis, now=NOW)
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
