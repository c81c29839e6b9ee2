"""Report size per fixture bundle, and for a generated N-rank, S-snapshot bundle.

Prints one row per bundle: bytes and lines of the drafted report, the share of it that is
the evidence section, and the ratio to the 30 KB goal of issue 11 ("the 8-rank,
3-snapshot case under 30 KB"). The generated bundle comes from `generate_bundle.py`
(py-spy text, half the ranks in an all_reduce, the rest idle).

    python benchmarks/report_size.py [--ranks 8] [--snapshots 3] [--threads 4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from reporter.app.report import Options, load_and_analyze, render_draft

ROOT = Path(__file__).resolve().parents[1]
GOAL = 30 * 1024
NOW = datetime(2026, 7, 14, 9, 0, tzinfo=UTC)


def _size(bundle: Path) -> tuple[int, int, int]:
    loaded, analysis = load_and_analyze([bundle], Options())
    text = render_draft(loaded, analysis, now=NOW)
    data = text.encode("utf-8")
    start = text.find("## Evidence")
    evidence = len(text[start:].encode("utf-8")) if start >= 0 else 0
    return len(data), text.count("\n"), evidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--snapshots", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    rows: list[tuple[str, tuple[int, int, int]]] = []
    for bundle in sorted(p for p in (ROOT / "fixtures" / "bundles").iterdir() if p.is_dir()):
        rows.append((bundle.name, _size(bundle)))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "generated"
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "generate_bundle.py"),
                str(out),
                "--ranks",
                str(args.ranks),
                "--snapshots",
                str(args.snapshots),
                "--threads",
                str(args.threads),
            ],
            check=True,
            capture_output=True,
        )
        rows.append((f"generated {args.ranks}x{args.snapshots}x{args.threads}", _size(out)))
    print(f"{'bundle':<28} {'bytes':>8} {'lines':>6} {'evidence':>9} {'vs 30 KB':>9}")
    for name, (size, lines, evidence) in rows:
        share = f"{100 * evidence / size:.0f}%" if size else "-"
        print(f"{name:<28} {size:>8,} {lines:>6} {share:>9} {size / GOAL:>8.2f}x")


if __name__ == "__main__":
    main()
