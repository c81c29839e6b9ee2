"""Peak memory and time of `report lint`, `status` and `preview` on large reports.

A real report (`report draft` of the tp_desync bundle) grown to `--sizes` megabytes in two
shapes a reviewer could make: `log` (a pasted log in one fenced block) and `prose` (many
short paragraphs and list items). Each command runs in its own subprocess and is measured
with `wait4` (its peak RSS); the ratio RSS / file size is what "memory within a few times
the file" means. The same script measures any checkout:
`PYTHONPATH=<checkout> python benchmarks/bench_report_memory.py`.

    python benchmarks/bench_report_memory.py [--sizes 5,50] [--shapes log,prose]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "fixtures" / "bundles" / "tp_desync"


def run(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS MiB, exit code) of `python -m reporter ARGS`."""
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(cwd / ".cache")}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reporter", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    return time.monotonic() - started, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def grow(report: str, megabytes: int, shape: str) -> str:
    """`report` with `megabytes` MB of `shape` appended in a section of its own."""
    size = megabytes << 20
    if shape == "log":
        line = "[2026-11-29 14:43:10 TP0] Decode batch. #running-req: 7, #token: 4083, gen throughput (token/s): 769.35\n"
        body = "```text\n" + line * (size // len(line)) + "```\n"
    else:
        piece = "- rank 3 waited in all_reduce; see the stack above and the timeline below\n\nA short note.\n\n"
        body = piece * (size // len(piece))
    return report + "\n## Pasted evidence\n\n" + body


def main(argv: list[str] | None = None) -> int:
    """Print one line per size, shape and command."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="5,50")
    parser.add_argument("--shapes", default="log,prose")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        seed = work / "seed.md"
        subprocess.run(
            [sys.executable, "-m", "reporter", "draft", str(DUMP), "--out", str(seed)],
            cwd=work,
            check=True,
            capture_output=True,
        )
        base = seed.read_text("utf-8")
        for megabytes in (int(s) for s in args.sizes.split(",")):
            for shape in args.shapes.split(","):
                folder = work / f"{shape}{megabytes}"
                folder.mkdir()
                report = folder / "big.md"
                report.write_text(grow(base, megabytes, shape), encoding="utf-8")
                mib = report.stat().st_size / (1 << 20)
                for name, command in (
                    ("lint", ["lint", str(report)]),
                    ("status", ["status", str(folder)]),
                    ("preview", ["preview", str(report), "--out", str(work / "p.html")]),
                ):
                    seconds, rss, code = run(command, work)
                    print(
                        f"{shape:<6} {mib:6.1f} MiB  {name:<8} {seconds:7.1f} s  "
                        f"peak RSS {rss:8.1f} MiB ({rss / mib:5.1f} x)  exit {code}",
                        flush=True,
                    )
                (work / "p.html").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
