"""Benchmark Flight Recorder reading and alignment on generated full ring buffers.

Generates `--ranks` per-rank pickled dumps of `--entries` entries each (the recorder's
2,000-entry default, two groups, NCCL-shaped fields and a 10-frame stack per entry) with one
injected mismatch near the end, then prints, best of `--repeat`:

- the time to read every dump with the restricted unpickler and build `FrTrace`s, against
  plain `pickle.loads` of the same bytes (the ratio is the cost of the safety and the model);
- the time to align the trace set and find the first mismatch;
- the total input size.

    python benchmarks/bench_flight_recorder.py [--ranks 256] [--entries 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reporter.analysis import flight_recorder as analysis
from reporter.evidence import flight_recorder as parser


def _frames() -> list[dict[str, Any]]:
    return [
        {"name": f"fn{k}", "filename": f"/srv/app/module{k}.py", "line": 10 + k} for k in range(10)
    ]


def make_dump(rank: int, entries: int, *, bad_at: int) -> bytes:
    """One rank's dump: all_reduce on group 1 and broadcast on group 0, alternating."""
    frames = _frames()
    rows: list[dict[str, Any]] = []
    for i in range(entries):
        group = "1" if i % 2 else "0"
        seq = i // 2 + 1
        op = "all_reduce" if group == "1" else "broadcast"
        if group == "1" and seq == bad_at and rank % 2:
            op = "all_gather"
        rows.append(
            {
                "record_id": i,
                "pg_id": int(group),
                "process_group": (group, "default_pg" if group == "0" else "tp"),
                "collective_seq_id": seq,
                "p2p_seq_id": 0,
                "op_id": seq,
                "profiling_name": f"nccl:{op}",
                "time_created_ns": 1_700_000_000_000_000_000 + i * 1_000_000,
                "input_sizes": [[4096, 8]],
                "input_dtypes": ["Float"],
                "output_sizes": [[4096, 8]],
                "output_dtypes": ["Float"],
                "state": "completed" if seq < bad_at else "scheduled",
                "time_discovered_started_ns": None,
                "time_discovered_completed_ns": None,
                "retired": True,
                "timeout_ms": 600_000,
                "is_p2p": False,
                "frames": frames,
            }
        )
    dump = {
        "version": "2.10",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[]"}},
        "pg_status": {
            "1": {"last_enqueued_collective": bad_at, "last_completed_collective": bad_at - 1}
        },
        "entries": rows,
    }
    return pickle.dumps(dump, protocol=pickle.HIGHEST_PROTOCOL)


def best(repeat: int, work: Any) -> tuple[float, Any]:
    """Fastest of `repeat` runs of `work()` and its last result."""
    times: list[float] = []
    result: Any = None
    for _ in range(repeat):
        began = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - began)
    return min(times), result


def main(argv: list[str] | None = None) -> int:
    """Generate, measure, print."""
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--ranks", type=int, default=256)
    args.add_argument("--entries", type=int, default=2000)
    args.add_argument("--repeat", type=int, default=3)
    opts = args.parse_args(argv)
    bad_at = opts.entries // 2 - 5
    dumps = [make_dump(r, opts.entries, bad_at=bad_at) for r in range(opts.ranks)]
    size = sum(len(d) for d in dumps)

    plain, _ = best(opts.repeat, lambda: [pickle.loads(d) for d in dumps])

    def read() -> list[Any]:
        traces: list[Any] = []
        for rank, data in enumerate(dumps):
            traces.extend(parser.parse_pickle(data, source=f"d/rank{rank}").flight_recorder)
        return traces

    parse_s, traces = best(opts.repeat, read)
    align_s, found = best(opts.repeat, lambda: analysis.analyze_set("d", traces))
    mismatch = found.first_mismatch
    print(f"input: {opts.ranks} ranks x {opts.entries} entries, {size / 1e6:.1f} MB pickled")
    print(f"pickle.loads only:            {plain:7.2f} s")
    print(f"restricted read + FrTrace:    {parse_s:7.2f} s  ({parse_s / plain:.1f}x pickle.loads)")
    print(f"align + first mismatch:       {align_s:7.2f} s")
    print(
        "first mismatch: "
        + (f"group {mismatch.group} #{mismatch.seq_id} {mismatch.kind}" if mismatch else "none")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
