"""The bundle loader with metric, service and log evidence: manifests, tolerance, dating."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reporter.core.errors import EvidenceError, ManifestError
from reporter.load import bundle
from reporter.model import EventKind, EvidenceKind, WedgeSettings

SCRAPE = "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 3\n"


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_metrics_only_bundle_with_one_file_per_scrape(tmp_path: Path) -> None:
    for second in range(3):
        _write(tmp_path, f"scrapes/{second}.prom", SCRAPE)
    _write(
        tmp_path,
        "bundle.toml",
        "\n".join(
            f'[[evidence]]\npath = "scrapes/{s}.prom"\ncaptured_at = 2026-11-29T14:40:0{s}Z\n'
            for s in range(3)
        ),
    )
    loaded = bundle.load([tmp_path])
    assert not loaded.dumps and not loaded.warnings
    (series,) = loaded.series
    assert [p.at.second for p in series.points] == [0, 1, 2]
    assert [p.source.path for p in series.points] == [f"scrapes/{s}.prom" for s in range(3)]
    assert {f.kind for f in loaded.files} == {EvidenceKind.PROMETHEUS_TEXT}


def test_manifest_events_and_wedge_settings(tmp_path: Path) -> None:
    _write(tmp_path, "m.prom", "# scrape at 2026-11-29T14:40:00Z\n" + SCRAPE)
    _write(
        tmp_path,
        "bundle.toml",
        """title = "t"

[wedge]
output = "my_tokens_total{mode=\\"decode\\"}"
waiting = ["a", "b"]
window = "2m"

[[event]]
at = 2026-11-29T14:41:00Z
text = "restarted   the router"

[[event]]
at = "2026-11-29T14:39:00+01:00"
text = "paged"

[[evidence]]
path = "m.prom"
""",
    )
    loaded = bundle.load([tmp_path])
    assert loaded.manifest.wedge == WedgeSettings(
        output=('my_tokens_total{mode="decode"}',), waiting=("a", "b"), window_seconds=120.0
    )
    events = [(e.at, e.kind, e.text, str(e.source)) for e in loaded.events]
    assert events == [
        (datetime(2026, 11, 29, 13, 39, tzinfo=UTC), EventKind.MANUAL, "paged", "bundle.toml:12"),
        (
            datetime(2026, 11, 29, 14, 41, tzinfo=UTC),
            EventKind.MANUAL,
            "restarted the router",
            "bundle.toml:8",
        ),
    ]


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("event = 3\n", "`event` must be an array of tables"),
        ("[[event]]\nat = 2026-11-29T14:41:00Z\n", ":1: every [[event]] needs `text`"),
        ('\n[[event]]\ntext = "x"\n', ":2: every [[event]] needs `at`"),
        ('[[event]]\ntext = "x"\nat = "soon"\n', "at 'soon' is not a date-time"),
        ('[wedge]\nwindow = "forever"\n', "`wedge.window` must be a duration"),
        ("[wedge]\noutput = [1]\n", "`wedge.output` must be a list of metric names"),
        ('[wedge]\nwaiting = ["not a name"]\n', "'not a name' is not a metric name"),
        ("wedge = 1\n", "`[wedge]` must be a table"),
    ],
)
def test_bad_manifest_tables(tmp_path: Path, manifest: str, message: str) -> None:
    _write(tmp_path, "m.prom", "# scrape at 2026-11-29T14:40:00Z\n" + SCRAPE)
    _write(tmp_path, "bundle.toml", manifest)
    with pytest.raises(ManifestError, match=message.replace("[", r"\[").replace("]", r"\]")):
        bundle.load([tmp_path])


@pytest.mark.parametrize(
    ("kind", "content", "warning"),
    [
        ("prometheus-text", "", "skipped: empty.txt: the file is empty"),
        ("prometheus-text", "garbage {\n", "not understood as a Prometheus sample"),
        ("prometheus-json", '{"status": "success", "data": {"resu', "not valid JSON"),
        ("grafana-csv", "Time,a\n2026-11-29T14:40:00Z,n/a\n", "not understood as a number"),
        ("systemd-show", "nothing here\n", "not a KEY=VALUE line"),
        ("log", "no times at all\n", "no line starts with a time"),
    ],
)
def test_bad_listed_metric_and_log_files_are_warnings(
    tmp_path: Path, kind: str, content: str, warning: str
) -> None:
    _write(
        tmp_path,
        "rank0.txt",
        "Process 1: x\nPython v3.11.7 (/p)\n\nThread 1 (idle)\n    f (a.py:1)\n",
    )
    _write(tmp_path, "empty.txt" if not content else "bad.txt", content)
    name = "empty.txt" if not content else "bad.txt"
    _write(
        tmp_path,
        "bundle.toml",
        f'[[evidence]]\npath = "rank0.txt"\n\n[[evidence]]\npath = "{name}"\nkind = "{kind}"\n',
    )
    loaded = bundle.load([tmp_path])
    assert len(loaded.dumps) == 1
    text = "\n".join(str(w) for w in loaded.warnings)
    assert (
        warning.replace("empty.txt: ", "") in text.replace("empty.txt: ", "", 1) or warning in text
    )


def test_log_without_year_takes_it_from_the_manifest(tmp_path: Path) -> None:
    _write(tmp_path, "app.log", "Nov 29 14:40:30 host sglang[42]: Scheduler hit an exception\n")
    _write(
        tmp_path,
        "bundle.toml",
        '[[evidence]]\npath = "app.log"\ncaptured_at = 2026-11-29T15:00:00Z\n',
    )
    (event,) = bundle.load([tmp_path]).events
    assert event.at == datetime(2026, 11, 29, 14, 40, 30, tzinfo=UTC)


def test_nothing_usable_names_every_kind(tmp_path: Path) -> None:
    _write(tmp_path, "x.prom", "# TYPE x gauge\n")
    with pytest.raises(EvidenceError, match=r"no usable evidence .*metric history"):
        bundle.load([tmp_path])


def test_utf16_grafana_excel_export_is_read(tmp_path: Path) -> None:
    text = "\ufeffTime\tsglang:num_queue_reqs\r\n1764427200000\t3\r\n1764427201000\t4\r\n"
    (tmp_path / "panel.csv").write_bytes(b"\xff\xfe" + text[1:].encode("utf-16-le"))
    loaded = bundle.load([tmp_path / "panel.csv"])
    assert [f.kind for f in loaded.files] == [EvidenceKind.GRAFANA_CSV]
    (series,) = loaded.series
    assert [p.value for p in series.points] == [3.0, 4.0]
