"""`report collect` against hostile endpoints: wall time, peak RSS and what it says.

Each row starts one hostile server on 127.0.0.1 (`tests/hostile/servers.py`), points
`--metrics-url` and `--torch-debug` of one `report collect` at it and measures the
collect process (its own peak RSS from `wait4`, wall time, exit code, the status it
wrote). A watchdog kills a run that is still going after `--watchdog` seconds (a hang).

* `trickle`: one byte every 0.2 s, each read well inside any per-read timeout;
* `huge`: a `--size`-byte answer (default 1 GiB), sent as fast as it is read;
* `gzip-bomb`: about 1 MB that inflates to `--size` bytes;
* `interrupt`: the trickling server, and one SIGINT 2 s after the collector said
  "collecting into": how long until it exits, and the status it left.

The same script measures any checkout: `PYTHONPATH=<checkout> python
benchmarks/bench_collect_hostile.py` runs that checkout's `reporter`.

    python benchmarks/bench_collect_hostile.py [--size 1G] [--watchdog 90] [--rows trickle,huge]
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/hostile/servers.py

from hostile.servers import HostileServer  # noqa: E402 - after the path is set


@dataclass
class Row:
    """One measured run."""

    name: str
    seconds: float
    rss_mib: float
    code: int | None
    status: str
    said: str
    after_interrupt: float | None = None


def _size(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]?)", text.upper())
    if not match:
        raise SystemExit(f"--size {text!r}: give bytes, or a number with K, M or G")
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)]


def run_collect(
    server: HostileServer, work: Path, *, watchdog: float, interrupt_after: float | None = None
) -> Row:
    """One `report collect` at `server`; measured with wait4 (this child only)."""
    out = work / "bundle"
    args = [
        sys.executable,
        "-m",
        "reporter",
        "collect",
        "--out",
        str(out),
        "--metrics-url",
        server.url + "/metrics",
        "--scrape-every",
        "1s",
        "--scrape-for",
        "0s",
        "--torch-debug",
        server.url,
        "--timeout",
        "10s",
    ]
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "XDG_CACHE_HOME": str(work / "cache"),
        "PYTHONUNBUFFERED": "1",
    }
    started = time.monotonic()
    proc = subprocess.Popen(
        args,
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    interrupted_at: float | None = None
    ready: float | None = None
    deadline = started + watchdog
    status_word = ""
    rusage = None
    code: int | None = None
    output = b""
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while True:
        chunk = proc.stdout.read()
        if chunk:
            output += chunk
        pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
        now = time.monotonic()
        if pid:
            rusage = usage
            code = os.waitstatus_to_exitcode(wait_status)
            break
        if b"collecting into" in output and ready is None:
            ready = now
        if (
            interrupt_after is not None
            and interrupted_at is None
            and ready is not None
            and now - ready > interrupt_after
        ):
            os.kill(proc.pid, signal.SIGINT)
            interrupted_at = now
        if now > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            _pid, wait_status, rusage = os.wait4(proc.pid, 0)
            code = None
            status_word = f"hung: killed after {watchdog:g} s"
            break
        time.sleep(0.02)
    ended = time.monotonic()
    proc.returncode = code if code is not None else -9
    if proc.stdout:
        output += proc.stdout.read() or b""
    manifest = out / "bundle.toml"
    if not status_word:
        found = (
            re.search(r'^status = "([^"]+)"', manifest.read_text("utf-8"), re.M)
            if manifest.is_file()
            else None
        )
        status_word = found.group(1) if found else "no manifest"
    said = output.decode("utf-8", errors="replace").strip().splitlines()
    return Row(
        name=server.mode,
        seconds=ended - started,
        rss_mib=(rusage.ru_maxrss / 1024) if rusage else 0.0,
        code=code,
        status=status_word,
        said=said[-1][:150] if said else "",
        after_interrupt=(ended - interrupted_at) if interrupted_at is not None else None,
    )


def main(argv: list[str] | None = None) -> int:
    """Print one line per row."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1G", help="size of the huge and inflated answers")
    parser.add_argument("--watchdog", type=float, default=90.0)
    parser.add_argument("--rows", default="trickle,huge,gzip-bomb,interrupt")
    args = parser.parse_args(argv)
    size = _size(args.size)
    rows: list[Row] = []
    for name in args.rows.split(","):
        mode = "trickle" if name == "interrupt" else name
        with tempfile.TemporaryDirectory() as tmp, HostileServer(mode, size=size) as server:
            row = run_collect(
                server,
                Path(tmp),
                watchdog=args.watchdog,
                interrupt_after=2.0 if name == "interrupt" else None,
            )
            row.name = name
            rows.append(row)
            print(
                f"{row.name:<10} {row.seconds:7.1f} s  peak RSS {row.rss_mib:8.1f} MiB  "
                f"exit {row.code}  status {row.status}"
                + (
                    f"  exit {row.after_interrupt:.2f} s after SIGINT"
                    if row.after_interrupt is not None
                    else ""
                ),
                flush=True,
            )
            print(f"           last line: {row.said}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
