"""`report watch` as a real process against a real HTTP server on 127.0.0.1.

A wedged service (token counter stopped, queue growing) is caught with `--once` and
reported; the same signature caught again goes into the first report's "Seen again";
a healthy and a quiet service give no capture over the same time; a health route that
hangs is the second trigger; `--on-capture` gets the report and the headline; SIGTERM
ends it cleanly; the watcher asks nothing but `/metrics` and the health route.
Times are short (`--for 1.5s`, polls every 0.25 s).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema

from reporter.console.schemas import SCHEMAS

from .promserver import prom_server

SCHEMA = SCHEMAS["watch"]

ROOT = Path(__file__).resolve().parents[2]
FAST = ("--for", "1.5s", "--every", "0.25s", "--timeout", "2s")


def _watch(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reporter", "watch", "--json", *FAST, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


def _events(stdout: str) -> list[dict[str, Any]]:
    """The `--json` events, each checked against the published schema."""
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    for event in events:
        jsonschema.validate(event, SCHEMA)
    return events


def _popen(*args: str) -> subprocess.Popen[str]:
    """`report watch --json` with the fast timings, its events readable line by line."""
    return subprocess.Popen(
        [sys.executable, "-m", "reporter", "watch", "--json", *FAST, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _start(*args: str) -> tuple[subprocess.Popen[str], list[dict[str, Any]]]:
    """Start `report watch --json` and read its events until a poll says "working"."""
    proc = _popen(*args)
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if seen[-1].get("state") == "working":
            return proc, seen
    proc.kill()
    raise AssertionError(f"no working poll: {seen} {proc.communicate()[1]}")


def _finish(proc: subprocess.Popen[str], seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return seen + _events(out)


def _dirs(tmp_path: Path) -> tuple[str, ...]:
    return ("--out-dir", str(tmp_path / "captures"), "--reports", str(tmp_path / "reports"))


def test_wedged_service_is_captured_once_and_reported(tmp_path: Path) -> None:
    with prom_server("healthy") as server:
        proc, seen = _start(
            "--once", "--metrics-url", server.url, *_dirs(tmp_path), "--max-time", "40s"
        )
        time.sleep(1.0)  # the ring holds history from before the onset
        server.set_mode("wedged")
        events = _finish(proc, seen)
        paths = server.paths
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "stop"
    states = [e["state"] for e in events if e["event"] == "decision"]
    assert "working" in states and states.index("working") < states.index("wedged")
    wedged = next(e for e in events if e["event"] == "decision" and e["state"] == "wedged")
    # The numbers behind the decision: zero output, work waiting, at least the window.
    assert wedged["output"] == 0 and wedged["waiting"] >= 5
    assert wedged["stalled_for"] >= 1.5 and wedged["window"] == 1.5
    assert wedged["signals"]["sglang:generation_tokens_total"] == 0
    assert "wedged: output 0/s" in wedged["text"] and ">= 1.5 s while" in wedged["text"]
    report = next(e for e in events if e["event"] == "report")
    bundle = Path(report["bundle"])
    assert bundle.name.endswith("-wedge") and bundle.parent == tmp_path / "captures"
    history = (bundle / "metrics" / "watch-history-1.prom").read_text()
    # History from before the onset: samples where tokens still moved.
    assert history.count("# scrape at ") >= 8
    record = json.loads((bundle / "watch.json").read_text())
    assert record["signature"] == report["signature"] and record["trigger"] == "metrics"
    text = Path(report["report"]).read_text()
    assert "Output stalled since" in text and "**wedged (metrics only)**" in text
    assert f"Wedge onset {wedged['onset'][11:23]}" in text
    # The decision is on the report's timeline, from the bundle's [[event]] tables.
    assert "report watch: output stopped (onset)" in text
    assert "report watch decided, and captured: wedged: output 0/s" in text
    assert set(paths) == {"/metrics"}


def test_same_signature_twice_is_one_report_seen_again(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    caught = []
    for _ in range(2):
        with prom_server("healthy") as server:
            proc, seen = _start(
                "--once", "--metrics-url", server.url, *_dirs(tmp_path), "--cooldown", "0"
            )
            server.set_mode("wedged")
            caught.append(_finish(proc, seen))
    first = next(e for e in caught[0] if e["event"] == "report")
    again = next(e for e in caught[1] if e["event"] == "seen-again")
    assert again["report"] == first["report"] and again["signature"] == first["signature"]
    assert [p.name for p in reports.glob("*.md")] == [Path(first["report"]).name]
    text = Path(first["report"]).read_text()
    assert "## Seen again" in text and "(once more)" in text
    assert f"bundle `{again['bundle']}`" in text
    assert len(list((tmp_path / "captures").iterdir())) == 2


def test_healthy_and_quiet_services_are_never_captured(tmp_path: Path) -> None:
    for mode in ("healthy", "quiet"):
        with prom_server(mode) as server:
            done = _watch(
                "--metrics-url",
                server.url,
                "--out-dir",
                str(tmp_path / mode),
                "--reports",
                str(tmp_path / f"{mode}-reports"),
                "--max-time",
                "4s",
            )
        assert done.returncode == 0, done.stderr
        events = _events(done.stdout)
        states = {e["state"] for e in events if e["event"] == "decision"}
        assert states <= {"no-data", "working" if mode == "healthy" else "quiet"}, states
        assert not [e for e in events if e["event"] in {"capture", "report"}]
        assert list((tmp_path / mode).iterdir()) == []
        if mode == "quiet":
            quiet = next(e for e in events if e.get("state") == "quiet")
            assert quiet["waiting"] == 0 and "idle, not a wedge" in quiet["text"]


def test_once_without_a_wedge_exits_3(tmp_path: Path) -> None:
    with prom_server("healthy") as server:
        done = _watch("--metrics-url", server.url, *_dirs(tmp_path), "--once", "--max-time", "1s")
    assert done.returncode == 3, done.stderr


def test_a_hung_health_route_triggers_and_on_capture_gets_the_report(tmp_path: Path) -> None:
    said = tmp_path / "said.txt"
    hook = (
        f'{sys.executable} -c \'import sys; open(sys.argv[1], "w").write("|".join(sys.argv[2:]))\''
    )
    with prom_server("hung-health") as server:
        done = _watch(
            "--metrics-url",
            server.url,
            "--health-url",
            server.health,
            "--health-timeout",
            "0.4s",
            *_dirs(tmp_path),
            "--once",
            "--on-capture",
            f"{hook} {said} {{report}} {{headline}}",
        )
        paths = server.paths
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    capture = next(e for e in events if e["event"] == "capture")
    assert capture["trigger"] == "health"
    assert "hung past its 0.4 s deadline" in capture["text"]
    report = next(e for e in events if e["event"] == "report")
    hand_off = next(e for e in events if e["event"] == "hand-off")
    assert hand_off["exit"] == 0
    assert said.read_text() == f"{report['report']}|{report['headline']}"
    assert set(paths) <= {"/metrics", "/health"}


def test_sigterm_ends_it_cleanly(tmp_path: Path) -> None:
    with prom_server("healthy") as server:
        proc, _ = _start("--metrics-url", server.url, *_dirs(tmp_path))
        os.kill(proc.pid, signal.SIGTERM)
        began = time.monotonic()
        out, _ = proc.communicate(timeout=10)
        took = time.monotonic() - began
    assert proc.returncode == 0
    assert took < 3.0
    assert _events(out)[-1]["event"] == "stop"


def test_a_restarted_target_is_followed(tmp_path: Path) -> None:
    title = f"watch-target-{os.getpid()}"
    code = "import sys, time; time.sleep(60)"

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", code, title])

    first = start()
    second: subprocess.Popen[bytes] | None = None
    try:
        with prom_server("healthy") as server:
            proc = _popen(
                "--metrics-url", server.url, "--match", title, *_dirs(tmp_path), "--max-time", "30s"
            )
            assert proc.stdout is not None
            seen: list[dict[str, Any]] = []
            while True:
                line = proc.stdout.readline()
                if not line:
                    break
                event = json.loads(line)
                seen.append(event)
                if event["event"] == "targets" and event["pids"] == [first.pid]:
                    first.kill()
                    first.wait()
                    second = start()
                elif (
                    event["event"] == "targets"
                    and second is not None
                    and event["pids"] == [second.pid]
                ):
                    break
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=10)
    finally:
        for one in (first, second):
            if one is not None:
                one.kill()
                one.wait()
    changed = [e for e in seen if e["event"] == "targets"]
    assert second is not None and changed[-1]["pids"] == [second.pid]
    assert changed[-1]["text"].startswith("changed (a restart?): now ")


def test_the_cooldown_holds_back_a_second_capture_also_after_a_restart(tmp_path: Path) -> None:
    with prom_server("healthy") as server:
        proc, seen = _start("--once", "--metrics-url", server.url, *_dirs(tmp_path))
        server.set_mode("wedged")
        first = _finish(proc, seen)
    assert [e["event"] for e in first].count("capture") == 1
    # The watcher restarts (default --cooldown 30m): the capture folder it left counts.
    with prom_server("healthy") as server:
        proc, seen = _start("--metrics-url", server.url, *_dirs(tmp_path), "--max-time", "12s")
        server.set_mode("wedged")
        second = _finish(proc, seen)
    assert any(e["state"] == "wedged" for e in second if e["event"] == "decision")
    assert not [e for e in second if e["event"] == "capture"]
    held = [e for e in second if e["event"] == "cooldown"]
    assert len(held) == 1 and "under the 1800 s cooldown" in held[0]["text"]
    assert len(list((tmp_path / "captures").iterdir())) == 1


def test_on_capture_is_killed_at_its_deadline(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from reporter.app import watch as use_case

    request = replace(
        _request(tmp_path),
        on_capture=(sys.executable, "-c", "import time; time.sleep(30)", "{report}"),
        on_capture_timeout=0.5,
    )
    made = use_case.Capture(
        bundle=tmp_path / "b",
        report=tmp_path / "r.md",
        headline="Hang",
        signature="abc",
        verdict="collective-desync",
        seen_again=False,
    )
    began = time.monotonic()
    event = use_case._hand_off(request, made, datetime.now(tz=UTC), threading.Event())
    assert time.monotonic() - began < 5
    assert event.fields["timed_out"] is True and event.fields["exit"] is None
    assert event.fields["argv"][-1] == str(tmp_path / "r.md")
    assert "killed after its 0.5 s deadline" in event.text


def _request(tmp_path: Path) -> Any:
    from reporter.app.watch import WatchRequest
    from reporter.collect import CollectRequest
    from reporter.model import WedgeSettings

    return WatchRequest(
        metrics_urls=("http://127.0.0.1:9/metrics",),
        health_url=None,
        health_timeout=1.0,
        settings=WedgeSettings(window_seconds=1.0),
        every=1.0,
        history=60.0,
        cooldown=0.0,
        out_dir=tmp_path / "captures",
        reports=tmp_path / "reports",
        budget=1 << 30,
        collect=CollectRequest(out=tmp_path / "captures", metrics_url="http://127.0.0.1:9/metrics"),
    )


def test_the_terminal_lines_mask_a_token_in_a_url(tmp_path: Path) -> None:
    """Without --json the events go to stderr as text: masked like every terminal line
    (issue 35; they printed the URL's token as given)."""
    token = "ghp_" + "a1B2c3D4" * 4 + "e5F6"
    url = f"http://127.0.0.1:9/metrics?access_token={token}"
    args = ("--once", "--max-time", "1s", "--metrics-url", url, *_dirs(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "reporter", "watch", *FAST, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert "start: watching http://127.0.0.1:9/metrics?access_token=[redacted]" in done.stderr
    assert token not in done.stderr + done.stdout
