"""`report draft` on a bundle with metrics: the report's new sections and the SVG beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.analysis import wedge as wedge_module
from reporter.cli import cli
from reporter.render import preview, regions

# Commands run from the test's tmp folder, so their default `reports/` is never the checkout's.
pytestmark = pytest.mark.usefixtures("tmp_cwd")

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_draft_writes_the_charts_svg_beside_the_report(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "bundles" / "wedge_metrics", bundle)
    out = tmp_path / "drafts" / "wedge.md"
    result = runner.invoke(cli, ["draft", str(bundle), "--out", str(out)])
    assert result.exit_code == 0, result.output
    svg_path = tmp_path / "drafts" / "wedge.metrics.svg"
    assert f"wrote {svg_path} (metrics charts)" in result.output
    text = out.read_text(encoding="utf-8")
    assert "`wedge.metrics.svg`, written beside this report" in text
    assert svg_path.read_text(encoding="utf-8").startswith("<?xml")
    ids = [r.id for r in regions.parse(text).regions]
    assert ids.index("verdict") + 1 == ids.index("metrics")
    assert ids.index("metrics") + 1 == ids.index("timeline")
    # The preview draws every chart as inline SVG.
    html = preview.to_html(text)
    assert html.count('class="mermaid-xychart"') == text.count("xychart-beta")
    # A second draft leaves the report alone and still refreshes the charts.
    svg_path.unlink()
    again = runner.invoke(cli, ["draft", str(bundle), "--out", str(out)])
    assert again.exit_code == 0 and "up to date" in again.output
    assert svg_path.exists()


def test_stack_only_bundle_writes_no_svg(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    result = runner.invoke(
        cli, ["draft", str(ROOT / "fixtures" / "bundles" / "tp_desync"), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert not list(tmp_path.glob("*.svg"))
    assert "## Metrics and the wedge" not in out.read_text(encoding="utf-8")


def test_draft_builds_the_charts_once_and_draws_the_svg_from_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reporter.render import charts, svg

    built: list[int] = []
    real_build = charts.build

    def counting_build(wedge: wedge_module.WedgeReport | None) -> tuple[charts.Chart, ...]:
        found = real_build(wedge)
        built.append(len(found))
        return found

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("the SVG file must not be drawn by re-reading Mermaid text")

    monkeypatch.setattr(charts, "build", counting_build)
    monkeypatch.setattr(svg, "parse_xychart", no_parsing)
    bundle = ROOT / "fixtures" / "bundles" / "wedge_metrics"
    out = tmp_path / "wedge.md"
    result = runner.invoke(cli, ["draft", str(bundle), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(built) == 1 and built[0] > 0
    drawn = (tmp_path / "wedge.metrics.svg").read_text(encoding="utf-8")
    assert (
        drawn.count("<polyline")
        == built[0]
        == out.read_text(encoding="utf-8").count("xychart-beta")
    )
