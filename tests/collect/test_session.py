"""Whole collections without ptrace: metrics, environment, units, refusals, interruption."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from reporter.analysis import analyze
from reporter.app.collect import collect as app_collect
from reporter.collect import CollectRequest, CollectStatus, collect
from reporter.core.errors import InputError, UsageError
from reporter.load import bundle as bundle_io

from .servers import Server, metrics_server


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with metrics_server() as running:
        running.wedge()
        yield running


def _manifest(folder: Path) -> dict[str, object]:
    return tomllib.loads((folder / "bundle.toml").read_text(encoding="utf-8"))


def test_metrics_only_shows_the_wedge(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "b"
    lines: list[str] = []
    request = CollectRequest(
        out=out,
        metrics_url=server.url,
        scrape_every=0.25,
        scrape_for=2.5,
        wedge_window=1.0,
        units=("reporter-test-nonexistent.service",),
        command="report collect ...",
    )
    summary = app_collect(request, progress=lines.append)
    assert summary.status is CollectStatus.COMPLETE
    # 2.5 s at 0.25 s is 11 slots; a loaded machine skips a late slot rather than bursting
    # (tests/collect/test_scrape.py checks the exact count with no interval), so only the
    # upper bound is exact here. Enough samples remain to find the 1 s wedge window.
    assert 6 <= summary.scrapes <= 11 and summary.targets == 0
    assert any(f"metrics: {summary.scrapes} scrapes saved, 0 failed" in line for line in lines)
    data = _manifest(out)
    collect_table = data["collect"]
    assert isinstance(collect_table, dict) and collect_table["status"] == "complete"
    assert [s["what"] for s in collect_table["skipped"]] == [
        "systemctl show reporter-test-nonexistent.service",
        "journal of reporter-test-nonexistent.service",
    ]
    bundle = bundle_io.load([out])
    assert bundle.warnings == ()
    analysis = analyze(bundle)
    assert analysis.wedge is not None and analysis.wedge.episode is not None
    assert analysis.wedge.episode.end is None  # still wedged at the last sample
    assert server.serves()


def child_title(pid: int) -> str:
    """The title as collect shows it: cut to 60 characters, the cut marked with `…`."""
    title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    return title if len(title) <= 60 else title[:59] + "…"


def test_environment_without_pyspy(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "collect-env-marker"]
    )
    try:
        time.sleep(0.3)
        out = tmp_path / "b"
        summary = collect(
            CollectRequest(
                out=out,
                pids=(child.pid,),
                snapshots=1,
                pyspy="/nonexistent/py-spy",
                kernel_log=False,
            ),
            progress=lambda _line: None,
            stop=threading.Event(),
        )
        assert summary.status is CollectStatus.INCOMPLETE
        assert summary.dumps_ok == 0 and summary.dumps_failed == 0
        assert summary.missing_stacks == (
            f"PID {child.pid} ({child_title(child.pid)}): py-spy not found at "
            "/nonexistent/py-spy (pip install py-spy, or pass --py-spy PATH)",
        )
        files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
        assert files == [
            "bundle.toml",
            f"env/pid{child.pid}.cmdline",
            f"env/pid{child.pid}.environ",
            f"env/pid{child.pid}.packages.txt",
            # Without py-spy the /proc reads of each round are still taken.
            f"proc/pid{child.pid}-s0.family",
            f"proc/pid{child.pid}-s0.fds",
            f"proc/pid{child.pid}-s0.sockets",
            f"proc/pid{child.pid}-s0.status",
            f"proc/pid{child.pid}-s0.threads",
        ]
        reasons = [s.reason for s in summary.skipped]
        assert reasons == [
            "py-spy not found at /nonexistent/py-spy (pip install py-spy, or pass --py-spy PATH)"
        ]
        bundle = bundle_io.load([out])
        assert any(c.argv[-1] == "collect-env-marker" for c in bundle.environment.cmdlines)
        assert any(p.name == "typer" for p in bundle.environment.packages)
        assert child.poll() is None  # untouched
    finally:
        child.kill()
        child.wait()


def test_refusals_write_nothing(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x.txt").write_text("keep me")
    stop = threading.Event()
    with pytest.raises(UsageError, match="already exists"):
        collect(
            CollectRequest(out=busy, metrics_url="http://127.0.0.1:9/metrics"),
            progress=print,
            stop=stop,
        )
    assert (busy / "x.txt").read_text() == "keep me"
    with pytest.raises(
        InputError, match="no process matches 'no-such-process-title-xyz'"
    ) as caught:
        collect(
            CollectRequest(out=tmp_path / "new", match="no-such-process-title-xyz"),
            progress=print,
            stop=stop,
        )
    assert caught.value.tip
    assert not (tmp_path / "new").exists()


def test_stop_leaves_a_valid_partial_bundle(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "b"
    stop = threading.Event()
    timer = threading.Timer(1.2, stop.set)
    timer.start()
    try:
        summary = collect(
            CollectRequest(out=out, metrics_url=server.url, scrape_every=0.2, scrape_for=30),
            progress=lambda _line: None,
            stop=stop,
        )
    finally:
        timer.cancel()
    assert summary.status is CollectStatus.INTERRUPTED
    assert 1 <= summary.scrapes < 100
    data = _manifest(out)
    assert data["collect"]["status"] == "interrupted"  # type: ignore[index]
    assert "finished_at" in data["collect"]  # type: ignore[operator]
    bundle = bundle_io.load([out])
    assert bundle.series and bundle.warnings == ()
    assert any("interrupted" in e.text for e in bundle.events)
