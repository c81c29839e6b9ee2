"""Cold start of `report --help` (and `report analyze` on a small bundle) against
`python -m pip --version`, in one run: alternating A/B pairs, the median ratio.

Each run is a new interpreter, as a user's shell starts it; the A/B alternation spreads
machine noise (other processes, CPU frequency) over both sides, and the median of the
per-pair ratios ignores the outliers. Goal: `report --help` at most 0.5x pip --version.

    PYTHONPATH=$PWD python benchmarks/bench_startup.py [--pairs 15]

Also prints which modules `report --help` and `report analyze` import that they should
not (the app layer, rich, jinja2, httpx, PyGithub, markdown-it for --help; rich, jinja2,
httpx and PyGithub for analyze).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "fixtures" / "bundles" / "tp_desync"
HELP_MUST_NOT = (
    "reporter.app",
    "rich",
    "jinja2",
    "httpx",
    "github",
    "markdown_it",
    "reporter.analysis",
)
ANALYZE_MUST_NOT = ("rich", "jinja2", "httpx", "github")


def _run(argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    began = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def imported(argv: list[str]) -> set[str]:
    """Top-level and dotted module names a command imports (from `-X importtime`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def offenders(names: set[str], forbidden: tuple[str, ...]) -> list[str]:
    """The forbidden packages among `names` (a package counts with its submodules)."""
    return sorted({f for f in forbidden for n in names if n == f or n.startswith(f + ".")})


def pairs(a: list[str], b: list[str], count: int) -> list[tuple[float, float]]:
    """`count` alternating (a, b) timings after one warm-up of each (the file cache)."""
    _run(a)
    _run(b)
    out = []
    for index in range(count):
        if index % 2:
            tb, ta = _run(b), _run(a)
        else:
            ta, tb = _run(a), _run(b)
        out.append((ta, tb))
    return out


def report(name: str, timings: list[tuple[float, float]]) -> float:
    ratios = [a / b for a, b in timings]
    median_a = statistics.median(a for a, _ in timings)
    median_b = statistics.median(b for _, b in timings)
    ratio = statistics.median(ratios)
    print(
        f"{name:<28} {median_a * 1000:7.0f} ms   pip --version {median_b * 1000:7.0f} ms   "
        f"median ratio {ratio:.2f}  (pairs: {len(ratios)}, min {min(ratios):.2f}, "
        f"max {max(ratios):.2f})"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    pip = [python, "-m", "pip", "--version"]
    helped = [python, "-m", "reporter", "--help"]
    analyzed = [python, "-m", "reporter", "analyze", str(BUNDLE)]

    bad_help = offenders(imported(helped[1:]), HELP_MUST_NOT)
    bad_analyze = offenders(imported(analyzed[1:]), ANALYZE_MUST_NOT)
    print(f"report --help imports none of {', '.join(HELP_MUST_NOT)}: {bad_help or 'ok'}")
    print(f"report analyze imports none of {', '.join(ANALYZE_MUST_NOT)}: {bad_analyze or 'ok'}")
    help_ratio = report("report --help", pairs(helped, pip, args.pairs))
    report("report analyze tp_desync", pairs(analyzed, pip, max(5, args.pairs // 3)))
    verdict = "meets" if help_ratio <= 0.5 else "misses"
    print(f"goal: report --help <= 0.50x pip --version: {verdict} it ({help_ratio:.2f}x)")


if __name__ == "__main__":
    main()
