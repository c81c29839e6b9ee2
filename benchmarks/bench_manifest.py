"""The cost of rewriting `bundle.toml` during a many-host collection.

`report collect --ssh` rewrites `bundle.toml` after every step, so the folder is a valid
bundle at every moment. This simulates a collection of `--hosts` hosts of `--files` files
each (one `[[evidence]]` per file, one `[[collect.target]]` and one `[[collect.remote]]`
per host) and times the rewrite after the last host came in, two ways, in one run:

- full: `render(state)`, every table rendered, masked and read back (what each save cost
  before the writer kept pieces);
- kept: `ManifestWriter.save()`, whose rendered tables are kept between saves: only the new
  host's tables are rendered and read back, the rest joined, and the file written.

Both write the same text (checked). CPU seconds (`time.process_time`), median of `--runs`.

    python benchmarks/bench_manifest.py [--hosts 1000] [--files 30] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reporter.collect import manifest
from reporter.collect.manifest import (
    EvidenceEntry,
    ManifestState,
    ManifestWriter,
    RemoteNote,
    TargetNote,
)
from reporter.model import EvidenceKind

AT = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)


def _host(n: int, files: int) -> tuple[list[EvidenceEntry], TargetNote, RemoteNote]:
    host = f"node-{n:05d}"
    entries = [
        EvidenceEntry(
            path=f"hosts/{host}/pyspy/pid{4000 + f}-s0.txt",
            kind=EvidenceKind.PYSPY_TEXT,
            captured_at=AT,
            rank=n * files + f,
            host=host,
            description=f"py-spy dump of PID {4000 + f} on {host}",
        )
        for f in range(files)
    ]
    target = TargetNote(
        pid=4000, ppid=1, uid=0, title=f"sglang::scheduler_TP{n}", selected_by="--match", host=host
    )
    remote = RemoteNote(
        host=host, via=f"ssh {host}", status="complete", targets=files, dumps=files, seconds=3.2
    )
    return entries, target, remote


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    state = ManifestState(
        title="bench", started_at=AT, command="report collect --ssh ...", host="jump", tool="x"
    )
    with tempfile.TemporaryDirectory(prefix="reporter-manifest-") as tmp:
        writer = ManifestWriter(root=Path(tmp), state=state)
        began = time.process_time()
        for n in range(args.hosts - 1):
            entries, target, remote = _host(n, args.files)
            for entry in entries:
                writer.add_evidence(entry)
            writer.update(
                targets=(*writer.state.targets, target), remotes=(*writer.state.remotes, remote)
            )
        writer.save()  # every host but the last, rendered once
        first = time.process_time() - began
        kept: list[float] = []
        full: list[float] = []
        base = writer.state
        for run in range(args.runs):
            entries, target, remote = _host(args.hosts - 1 + run, args.files)
            writer.update(
                evidence=(*base.evidence, *entries),
                targets=(*base.targets, target),
                remotes=(*base.remotes, remote),
            )
            began = time.process_time()
            path = writer.save()
            kept.append(time.process_time() - began)
            began = time.process_time()
            text = manifest.render(writer.state)
            full.append(time.process_time() - began)
            assert path.read_text(encoding="utf-8") == text
        size = path.stat().st_size
    k, f = statistics.median(kept), statistics.median(full)
    entries_n = args.hosts * (args.files + 2)
    print(
        f"bundle.toml: {args.hosts} hosts x {args.files} files = {entries_n} tables, "
        f"{size / 1e6:.1f} MB"
    )
    print(f"first save with {args.hosts - 1} hosts (every table rendered once): {first:.2f} s CPU")
    print(f"rewrite after one more host, full render:   {f:.2f} s CPU (median of {args.runs})")
    print(f"rewrite after one more host, pieces kept:   {k:.3f} s CPU ({f / k:.0f}x less)")


if __name__ == "__main__":
    main()
