"""Live: `report watch --once` catches a real wedge at its onset and reports it right.

Behind the wedge is a real gloo hang (`fixtures/scenarios/tp_desync.py`: four ranks
titled `sglang::scheduler_TP{r}`, ranks 0-1 in an all_reduce, ranks 2-3 in the idle
loop), and in front of it the fixture metrics server, told to wedge while the watcher
runs: its token counter stops and its queue grows. Checks: the decision line carries
its numbers; the bundle is named by time and holds the history from before the onset;
the report's verdict is the hang's (collective-desync, ranks 0-1 in all_reduce) and its
onset is the wedge's; the ranks are still running afterwards (non-blocking dumps).

Skips (with the reason) without py-spy, torch or setproctitle, or without ptrace rights.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from .servers import Scenario, Server, live_pyspy, metrics_server, scenario, state_of

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def live(ptrace_problem: Callable[[str], str | None]) -> Iterator[tuple[str, Scenario, Server]]:
    pyspy = live_pyspy(ptrace_problem)
    with metrics_server() as server, scenario("tp_desync") as hang:
        yield pyspy, hang, server


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_watch_once_captures_the_hang_at_its_onset(
    live: tuple[str, Scenario, Server], tmp_path: Path
) -> None:
    pyspy, hang, server = live
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reporter",
            "watch",
            "--json",
            "--once",
            "--metrics-url",
            server.url,
            "--match",
            "sglang::scheduler_TP",
            "--children-of",
            str(hang.launcher),
            "--for",
            "3s",
            "--every",
            "0.5s",
            "--py-spy",
            pyspy,
            "--out-dir",
            str(tmp_path / "captures"),
            "--reports",
            str(tmp_path / "reports"),
            "--max-time",
            "90s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    events: list[dict[str, Any]] = []
    while True:  # wait for a working poll, so the ring holds output before the wedge
        line = proc.stdout.readline()
        assert line, proc.communicate()[1]
        events.append(json.loads(line))
        if events[-1].get("state") == "working":
            break
    time.sleep(1.0)
    answer = httpx.post(server.url.removesuffix("/metrics") + "/admin/wedge", timeout=5)
    wedged_at = _when(answer.json()["wedged_at"])
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    events += [json.loads(line) for line in out.splitlines() if line.strip()]
    print("\n".join(json.dumps(e) for e in events))

    targets = next(e for e in events if e["event"] == "targets")
    assert sorted(targets["pids"]) == sorted(pid for _, pid, _ in hang.ranks)
    decision = next(e for e in events if e.get("state") == "wedged")
    assert decision["output"] == 0 and decision["waiting"] > 0
    assert decision["stalled_for"] >= 3.0
    # The onset is the wedge's, within one poll (a counter rate covers the poll before it).
    onset = _when(decision["onset"])
    assert -1.0 <= (onset - wedged_at).total_seconds() <= 1.0, (onset, wedged_at)

    report = next(e for e in events if e["event"] == "report")
    bundle = Path(report["bundle"])
    assert bundle.name.endswith("-wedge")
    assert report["verdict"] == "collective-desync"
    assert len(list(bundle.glob("pyspy/*.txt"))) == 8  # 4 ranks x 2 snapshots
    history = (bundle / "metrics" / "watch-history-1.prom").read_text()
    assert history.count("# scrape at ") >= 6

    analyzed = subprocess.run(
        [sys.executable, "-m", "reporter", "analyze", "--json", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert analyzed.returncode == 0, analyzed.stderr
    result = json.loads(analyzed.stdout)
    assert result["verdict"] == "collective-desync"
    assert [c["ranks"] for c in result["classes"] if c.get("collective") == "all_reduce"] == [
        [0, 1]
    ]
    wedge = result["wedge"]
    assert wedge["found"] is True and wedge["still_wedged"] is True
    assert _when(wedge["onset"]) == onset, (wedge["onset"], onset)
    text = Path(report["report"]).read_text()
    assert "collective-desync" in text and f"Wedge onset {decision['onset'][11:23]}" in text
    # Non-blocking: every rank still runs.
    assert {pid: state_of(pid) for _, pid, _ in hang.ranks if state_of(pid) not in "RSD"} == {}
