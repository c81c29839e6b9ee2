"""The idle footprint of `report watch`: CPU share of one core and memory, goal < 1 % and < 100 MB.

Starts the fixture metrics server (`fixtures/scenarios/metrics_server.py`: SGLang's
metric names, histograms included, a healthy load) and `report watch` against it with
its defaults (poll every 5 s, `--for 60s`), plus `--match` so that every poll also looks
the targets up in `/proc`. After a warm-up (start-up imports are not the idle cost), it
reads the watcher's CPU time (`/proc/PID/stat` utime + stime) over the measured span,
and its resident memory (VmRSS now, VmHWM the peak). Prints the figures and their
ratio to the goals.

    python benchmarks/bench_watch.py [--seconds 60] [--warmup 10] [--every 5s]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_GOAL = 1.0  # percent of one core
RSS_GOAL_MB = 100.0


def _cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _status_mb(pid: int, key: str) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) / 1024 if match else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured span")
    parser.add_argument("--warmup", type=float, default=10.0, help="start-up left out")
    parser.add_argument("--every", default="5s", help="the watcher's poll interval")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        server = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "fixtures/scenarios/metrics_server.py"),
                "--log",
                f"{tmp}/server.log",
            ],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        watcher: subprocess.Popen[bytes] | None = None
        try:
            line = server.stdout.readline() if server.stdout else ""
            port = re.search(r":(\d+)", line)
            assert port is not None, line
            url = f"http://127.0.0.1:{port.group(1)}/metrics"
            watcher = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "reporter",
                    "watch",
                    "--metrics-url",
                    url,
                    "--match",
                    "metrics_server",
                    "--every",
                    args.every,
                    "--out-dir",
                    f"{tmp}/captures",
                    "--reports",
                    f"{tmp}/reports",
                ],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(args.warmup)
            cpu0, wall0 = _cpu_seconds(watcher.pid), time.monotonic()
            time.sleep(args.seconds)
            cpu1, wall1 = _cpu_seconds(watcher.pid), time.monotonic()
            rss, peak = _status_mb(watcher.pid, "VmRSS"), _status_mb(watcher.pid, "VmHWM")
            share = 100.0 * (cpu1 - cpu0) / (wall1 - wall0)
            captures = list(Path(tmp, "captures").glob("*"))
            print(f"report watch, idle, polling {url} every {args.every} (+ /proc lookup)")
            print(f"measured span       {wall1 - wall0:8.1f} s (after {args.warmup:g} s warm-up)")
            print(f"CPU time            {cpu1 - cpu0:8.3f} s")
            print(
                f"CPU share           {share:8.3f} % of one core   (goal < {CPU_GOAL:g} %, "
                f"ratio {share / CPU_GOAL:.2f})"
            )
            print(
                f"RSS now             {rss:8.1f} MB             (goal < {RSS_GOAL_MB:g} MB, "
                f"ratio {rss / RSS_GOAL_MB:.2f})"
            )
            print(f"RSS peak (VmHWM)    {peak:8.1f} MB")
            print(f"captures (expect 0) {len(captures):8d}")
        finally:
            if watcher is not None:
                watcher.send_signal(signal.SIGTERM)
                try:
                    watcher.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    watcher.kill()
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


if __name__ == "__main__":
    main()
