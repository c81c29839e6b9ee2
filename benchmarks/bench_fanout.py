"""Collection fan-out: `report collect --ssh` over many simulated hosts, wall time and per-host cost.

Starts `--hosts` real sshd on 127.0.0.1 (tests/collect/sshlab.py: one per host, each in its own
PID and UTS namespace, key login, host keys checked), one small Python target per host (a
titled process idling in `time.sleep`), then runs `report collect --ssh host-00 ... --match
bench::target --snapshots 1` with each `--parallel` asked, and reads back what it wrote.

    sudo python benchmarks/bench_fanout.py [--hosts 64] [--parallel 16 64] [--json]

Prints, per run: wall time, hosts per second, each host's own time (median, 90th percentile,
largest: ssh connection, the probe's /proc reads, one py-spy dump, the package listing), the
collector's CPU (itself and its ssh clients, not the hosts' side) per host, the bundle's size
and `bundle.toml`'s render time; then one host alone as the baseline. Every host here shares
this machine's cores with the collector, so the per-host times are those of a loaded machine;
on real hosts the remote work runs on each host's own CPU. Needs root (namespaces, sshd).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "collect"))
sys.path.insert(0, str(ROOT))
# The simulated hosts live with the tests (tests/collect/sshlab.py).
sshlab = importlib.import_module("sshlab")

TARGET = (
    "import setproctitle, time\n"
    "setproctitle.setproctitle('bench::target')\n"
    "while True: time.sleep(1)\n"
)


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Runs the collector and prints its own peak RSS: a child's `ru_maxrss` also counts the
# pages of whoever forked it, so this small process stands between.
_TIMER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
sys.stdout.write(done.stdout)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write(f"\\nRSS {usage.ru_maxrss * 1024} {done.returncode}\\n")
"""


def _collect(lab: Any, hosts: list[str], out: Path, parallel: int) -> dict[str, object]:
    # The lab's sshd, or (`lab` None) the stand-in: `--exec 'env FANOUT_HOST={host}'` runs
    # each host's remote side here, with no ssh at all: every host is this machine.
    reach = (
        [*lab.ssh_args(), *(a for h in hosts for a in ("--ssh", h))]
        if lab is not None
        else ["--exec", "env FANOUT_HOST={host}", *(a for h in hosts for a in ("--host", h))]
    )
    argv = [
        sys.executable, "-c", _TIMER,
        sys.executable, "-m", "reporter", "collect", "-o", str(out), *reach,
        "--match", "bench::target", "--snapshots", "1", "--parallel", str(parallel),
        "--remote-python", sys.executable, "--json",
    ]  # fmt: skip
    cpu_before = _cpu_children()
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.monotonic() - began
    cpu = _cpu_children() - cpu_before
    rss_line = done.stderr.rstrip().rsplit("\n", 1)[-1].split()
    rss, code = int(rss_line[1]), int(rss_line[2])
    done = subprocess.CompletedProcess(argv, code, done.stdout, done.stderr)
    if done.returncode not in (0, 1):
        raise SystemExit(f"report collect failed: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout)
    seconds = sorted(h["seconds"] for h in summary["hosts"])
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    manifest = (out / "bundle.toml").read_text()
    parse_began = time.perf_counter()
    tomllib.loads(manifest)
    parse_s = time.perf_counter() - parse_began
    return {
        "hosts": len(hosts),
        "parallel": parallel,
        "status": summary["status"],
        "complete": sum(1 for h in summary["hosts"] if h["status"] == "complete"),
        "wall_s": round(wall, 2),
        "hosts_per_s": round(len(hosts) / wall, 2),
        "host_s_median": round(statistics.median(seconds), 2),
        "host_s_p90": round(seconds[int(0.9 * (len(seconds) - 1))], 2),
        "host_s_max": round(seconds[-1], 2),
        "collector_cpu_s": round(cpu, 2),
        "collector_cpu_per_host_ms": round(1000 * cpu / len(hosts), 1),
        "collector_rss_mib": round(rss / 2**20, 1),
        "bundle_kib": round(size / 1024, 1),
        "manifest_kib": round(len(manifest) / 1024, 1),
        "manifest_parse_ms": round(1000 * parse_s, 1),
    }


def render_seconds(entries: int) -> float:
    """Time to render a `bundle.toml` listing `entries` files (one rewrite of the manifest)."""
    from datetime import UTC, datetime

    from reporter.collect.manifest import EvidenceEntry, ManifestState, render
    from reporter.model import EvidenceKind

    now = datetime.now(tz=UTC)
    state = ManifestState(
        title="t",
        started_at=now,
        command="report collect",
        host="here",
        tool="reporter",
        evidence=tuple(
            EvidenceEntry(
                path=f"hosts/host-{i // 30:04d}/pyspy/pid{i}-s0.txt",
                kind=EvidenceKind.PYSPY_TEXT,
                captured_at=now,
                description=f"py-spy dump of PID {i} (sglang::scheduler_TP{i % 8}) on host",
                host=f"host-{i // 30:04d}",
            )
            for i in range(entries)
        ),
    )
    began = time.perf_counter()
    render(state)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--parallel", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--stand-in",
        action="store_true",
        help="no sshd: every host is this machine, reached with --exec (256 sshd do not fit)",
    )
    args = parser.parse_args(argv)
    names = [f"host-{i:03d}" for i in range(args.hosts)]
    if args.stand_in:
        return _stand_in(args, names)
    problem = sshlab.require_lab()
    if problem is not None:
        raise SystemExit(f"cannot run: {problem}")
    started = time.monotonic()
    with sshlab.ssh_lab(names) as lab, tempfile.TemporaryDirectory(prefix="fanout-") as tmp:
        setup = time.monotonic() - started
        for name in names:
            lab.hosts[name].spawn(
                [sys.executable, "-c", TARGET], cwd=ROOT, env=dict(os.environ), log=Path(os.devnull)
            )
        time.sleep(2.0)
        runs = [_collect(lab, names[:1], Path(tmp) / "one", 1)]
        for parallel in args.parallel:
            runs.append(_collect(lab, names, Path(tmp) / f"all-{parallel}", parallel))
    # 1,000 hosts x 8 ranks x 3 snapshots + environment files: ~30 files per host.
    renders = {n: round(render_seconds(n), 3) for n in (64 * 6, 30_000)}
    if args.json:
        print(
            json.dumps(
                {"sshd_setup_s": round(setup, 1), "runs": runs, "render_s": renders}, indent=2
            )
        )
        return 0
    print(f"{args.hosts} sshd on 127.0.0.1 started in {setup:.1f} s; {os.cpu_count()} cores")
    for run in runs:
        print(
            f"{run['hosts']:>3} hosts, --parallel {run['parallel']:>2}: {run['wall_s']:6.2f} s wall "
            f"({run['hosts_per_s']} hosts/s), {run['complete']}/{run['hosts']} complete; per host "
            f"median {run['host_s_median']} s, p90 {run['host_s_p90']} s, max {run['host_s_max']} s; "
            f"collector CPU {run['collector_cpu_per_host_ms']} ms/host; bundle "
            f"{run['bundle_kib']} KiB (manifest {run['manifest_kib']} KiB, parsed in "
            f"{run['manifest_parse_ms']} ms)"
        )
    for entries, seconds in renders.items():
        print(f"bundle.toml with {entries:,} files: rendered in {seconds:.3f} s (one rewrite)")
    return 0


def _stand_in(args: argparse.Namespace, names: list[str]) -> int:
    """The fan-out with every host played by this machine through `--exec`: the collector's
    side (threads, pipes, parsing, bundle writes, `bundle.toml` rewrites) as at `--hosts`,
    each host's side one py-spy dump of the one local target."""
    target = subprocess.Popen([sys.executable, "-c", TARGET], cwd=ROOT)
    try:
        time.sleep(1.5)
        with tempfile.TemporaryDirectory(prefix="fanout-") as tmp:
            runs = [_collect(None, names[:1], Path(tmp) / "one", 1)]
            for parallel in args.parallel:
                runs.append(_collect(None, names, Path(tmp) / f"all-{parallel}", parallel))
    finally:
        target.kill()
        target.wait()
    if args.json:
        print(json.dumps({"stand_in": True, "runs": runs}, indent=2))
        return 0
    print(f"stand-in hosts (--exec, no ssh) on this machine; {os.cpu_count()} cores")
    for run in runs:
        print(
            f"{run['hosts']:>3} hosts, --parallel {run['parallel']:>2}: {run['wall_s']:6.2f} s wall "
            f"({run['hosts_per_s']} hosts/s), {run['complete']}/{run['hosts']} complete; per host "
            f"median {run['host_s_median']} s, p90 {run['host_s_p90']} s; collector+hosts CPU "
            f"{run['collector_cpu_per_host_ms']} ms/host; collector peak RSS "
            f"{run['collector_rss_mib']} MiB; manifest {run['manifest_kib']} KiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
