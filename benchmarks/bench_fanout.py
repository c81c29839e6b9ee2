"""Collection fan-out: `report collect --ssh` over many simulated hosts, wall time and per-host cost.

Starts `--hosts` real sshd on 127.0.0.1 (tests/collect/sshlab.py: one per host, each in its own
PID and UTS namespace, key login, host keys checked), one small Python target per host (a
titled process idling in `time.sleep`), then runs `report collect --ssh host-00 ... --match
bench::target --snapshots 1` with each `--parallel` asked, and reads back what it wrote.

    sudo python benchmarks/bench_fanout.py [--hosts 64] [--parallel 16 64] [--json]
    python benchmarks/bench_fanout.py --stand-in --hosts 64 256 --parallel 64 [--checkout DIR]

Prints, per run: wall time, hosts per second, each host's own time (median, 90th percentile,
largest: ssh connection, the probe's /proc reads, one py-spy dump, the package listing), the
collector's CPU (itself and its ssh clients, not the hosts' side) per host, the bundle's size
and `bundle.toml`'s render time; then one host alone as the baseline. Every host here shares
this machine's cores with the collector, so the per-host times are those of a loaded machine;
on real hosts the remote work runs on each host's own CPU. Needs root (namespaces, sshd).

`--stand-in` needs no sshd (see `_stand_in`), and also prints the collector process's own
CPU and peak RSS (measured inside it at exit), and the `bundle.toml` cost: the manifest
writer driven as `record_host` drives it, one rewrite after every host of `--files` files,
CPU per rewrite (the last one) and in total, and the bytes each rewrite writes.
`--checkout DIR` runs the collector and the writer of another checkout (the code before a
change), so before and after come from the same script.

    python benchmarks/bench_fanout.py --sink-memory [--before DIR]

prints only the memory one host's answer takes while the record sink reads it (kept and
peak, traced, times `--max-size`), for plain py-spy answers and hostile shapes; with
`--before`, for that checkout first, in the same run.
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


# The collector in-process, reporting its own CPU (all threads, not its children) and peak
# RSS at exit, whichever checkout it comes from.
_SELF = """
import atexit, resource, runpy, sys
def said():
    u = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write(f"\\nSELF {u.ru_utime + u.ru_stime} {u.ru_maxrss * 1024}\\n")
atexit.register(said)
sys.argv = ["report", *sys.argv[1:]]
runpy.run_module("reporter", run_name="__main__", alter_sys=True)
"""


def _collect(
    lab: Any, hosts: list[str], out: Path, parallel: int, checkout: Path = ROOT
) -> dict[str, object]:
    # The lab's sshd, or (`lab` None) the stand-in: `--exec 'env FANOUT_HOST={host}'` runs
    # each host's remote side here, with no ssh at all: every host is this machine.
    reach = (
        [*lab.ssh_args(), *(a for h in hosts for a in ("--ssh", h))]
        if lab is not None
        else ["--exec", "env FANOUT_HOST={host}", *(a for h in hosts for a in ("--host", h))]
    )
    argv = [
        sys.executable, "-c", _TIMER,
        sys.executable, "-c", _SELF, "collect", "-o", str(out), *reach,
        "--match", "bench::target", "--snapshots", "1", "--parallel", str(parallel),
        "--remote-python", sys.executable, "--json",
    ]  # fmt: skip
    cpu_before = _cpu_children()
    began = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=checkout, env=env)
    wall = time.monotonic() - began
    cpu = _cpu_children() - cpu_before
    own = [line.split() for line in done.stderr.splitlines() if line.startswith("SELF ")]
    self_cpu, self_rss = (float(own[-1][1]), int(own[-1][2])) if own else (0.0, 0)
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
        "collector_own_cpu_s": round(self_cpu, 2),
        "collector_own_cpu_per_host_ms": round(1000 * self_cpu / len(hosts), 1),
        "collector_own_rss_mib": round(self_rss / 2**20, 1),
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


# The manifest writer driven as `record_host` drives it, run in the checkout asked for: per
# host, `--files` py-spy entries, a target and the host's outcome (sealed into a part of its
# own where the writer has `seal`), then a save. Prints a JSON line of the costs.
_MANIFEST = """
import json, sys, tempfile, time, tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from reporter.collect.manifest import (
    EvidenceEntry, ManifestState, ManifestWriter, RemoteNote, TargetNote,
)
from reporter.model import EvidenceKind
from reporter.secrets import shapes

hosts, files = int(sys.argv[1]), int(sys.argv[2])
at = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)
state = ManifestState(title="b", started_at=at, command="report collect", host="jump", tool="x")
saves, written = [], []


def one_host(writer, n, sealing):
    host = f"node-{n:05d}"
    since = writer.mark() if sealing else 0
    for f in range(files):
        writer.add_evidence(EvidenceEntry(
            path=f"hosts/{host}/pyspy/pid{4000 + f}-s0.txt", kind=EvidenceKind.PYSPY_TEXT,
            captured_at=at, host=host, description=f"py-spy dump of PID {4000 + f} on {host}",
        ))
    target = TargetNote(pid=4000, ppid=1, uid=0, title=f"sglang::scheduler_TP{n % 8}",
                        selected_by="--match", host=host)
    remote = RemoteNote(host=host, via=f"ssh {host}", status="complete", targets=1,
                        dumps=files, seconds=3.2)
    if sealing:
        writer.add_target(target)
        writer.add_remote(remote)
        writer.seal(host, host, since=since)
    else:
        writer.update(targets=(*writer.state.targets, target),
                      remotes=(*writer.state.remotes, remote))
    began = time.process_time()
    path = writer.save()
    saves.append(time.process_time() - began)
    written.append(path.stat().st_size)

# The memory the writer keeps per host (traced; the secret scanner's bounded caches cleared,
# they are not the writer's), on its own pass: tracing slows everything down.
with tempfile.TemporaryDirectory(prefix="fanout-manifest-") as tmp:
    writer = ManifestWriter(root=Path(tmp), state=state)
    sealing = hasattr(writer, "seal")
    one_host(writer, 99999, sealing)
    shapes._SCANNED.clear(); shapes._LINE_HITS.clear()
    tracemalloc.start()
    for n in range(min(hosts, 256)):
        one_host(writer, n, sealing)
    shapes._SCANNED.clear(); shapes._LINE_HITS.clear()
    kept_per_host = tracemalloc.get_traced_memory()[0] / min(hosts, 256)
    tracemalloc.stop()
saves, written = [], []
with tempfile.TemporaryDirectory(prefix="fanout-manifest-") as tmp:
    writer = ManifestWriter(root=Path(tmp), state=state)
    sealing = hasattr(writer, "seal")
    total_began = time.process_time()
    for n in range(hosts):
        one_host(writer, n, sealing)
    total = time.process_time() - total_began
    began = time.process_time()
    (writer.join if sealing else writer.save)()
    last = time.process_time() - began
    size = (Path(tmp) / "bundle.toml").stat().st_size
print(json.dumps({
    "hosts": hosts, "files_per_host": files, "rewrite_last_ms": round(1000 * saves[-1], 2),
    "rewrite_median_ms": round(1000 * sorted(saves)[len(saves) // 2], 2),
    "rewrites_total_s": round(sum(saves), 2), "run_total_s": round(total, 2),
    "rewrite_last_kib": round(written[-1] / 1024, 1),
    "written_total_mib": round(sum(written) / 2**20, 1),
    "final_save_s": round(last, 3), "bundle_toml_kib": round(size / 1024, 1),
    "writer_kib_per_host": round(kept_per_host / 1024, 2),
}))
"""


def manifest_cost(hosts: int, files: int, checkout: Path = ROOT) -> dict[str, object]:
    """The `bundle.toml` cost of a collection of `hosts` hosts of `files` files each, with
    the writer of `checkout`: CPU of the last rewrite and of all (one after every host)."""
    done = subprocess.run(
        [sys.executable, "-c", _MANIFEST, str(hosts), str(files)],
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# What one host's answer costs while the sink of the checkout asked for reads it: the answer
# fed in pipe-sized chunks, traced; prints one JSON row per shape.
_SINK = """
import json, sys, tracemalloc
from reporter.collect.hostrecords import RecordSink
cap = int(sys.argv[1])
WIDE = "\\U0001f642"
FRAMES = 'Thread 0x7F (idle): "MainThread"\\n    get (queue.py:171)\\n        batch: [1, 2]\\n'
def dump(text, ascii_only=False):
    record = {"t": "dump", "pid": 1, "snapshot": 0, "stdout": text}
    return (json.dumps(record, ensure_ascii=ascii_only) + "\\n").encode()
def many(item, count):
    return b'{"t": "end", "x": [' + b",".join([item] * count) + b"]}\\n"
shapes = {
    "dumps of 64 KiB, ASCII": lambda: dump("x" * (64 << 10)),
    "dumps of 4 KiB, ASCII": lambda: dump("y" * (4 << 10)),
    "dumps of 16 KiB, emoji only": lambda: dump(WIDE * (4 << 10)),
    "one line of 7/8 the cap, ASCII": lambda: dump("z" * (cap * 7 // 8)),
    "one py-spy dump of 3/4 the cap": lambda: dump(FRAMES * (cap * 3 // 4 // len(FRAMES)), True),
    "one line of 7/8 the cap, one emoji": lambda: dump("a" * (cap * 7 // 8) + WIDE),
    "the same, escaped as the probe sends it": lambda: dump("a" * (cap * 7 // 8) + WIDE, True),
    "lines of 1/8 the cap, one emoji each": lambda: dump("a" * (cap // 8 - 99) + WIDE),
    "lines of 30 empty lists": lambda: many(b"[]", 30),
    "tiny records": lambda: b'{"t": "end"}\\n',
}
for name, make in shapes.items():
    line = make()
    data = (line * max(1, cap // len(line)))[:cap]
    del line
    tracemalloc.start()
    sink = RecordSink(cap)
    for at in range(0, len(data), 1 << 16):
        if not sink(data[at : at + (1 << 16)]):
            break
    sink.close()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"shape": name, "sent_mib": round(len(data) / 2**20, 1),
                      "records": len(sink.records), "capped": bool(sink.capped),
                      "kept_x_max_size": round(kept / cap, 2),
                      "peak_x_max_size": round(peak / cap, 2)}))
    del sink, data
"""


def sink_memory(checkout: Path = ROOT, max_bytes: int = 8 << 20) -> list[dict[str, object]]:
    """What one host's answer costs the collector while it is read: `--max-size` of
    records fed to the host's record sink (`hostrecords.RecordSink` of `checkout`), traced,
    in shapes from a plain py-spy answer to hostile ones (a line of the whole cap holding
    one emoji: Python keeps such a string at 4 bytes a character; `[]` costs 56 bytes)."""
    done = subprocess.run(
        [sys.executable, "-c", _SINK, str(max_bytes)],
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[64])
    parser.add_argument("--parallel", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--stand-in",
        action="store_true",
        help="no sshd: every host is this machine, reached with --exec (256 sshd do not fit)",
    )
    parser.add_argument(
        "--checkout", type=Path, default=ROOT, help="the reporter checkout to measure"
    )
    parser.add_argument(
        "--files", type=int, default=30, help="files per host for the bundle.toml cost"
    )
    parser.add_argument(
        "--manifest-hosts",
        type=int,
        nargs="*",
        default=[64, 256, 1000],
        help="host counts for the bundle.toml cost (none: skip it)",
    )
    parser.add_argument(
        "--sink-memory",
        action="store_true",
        help="only the memory one host's answer costs while it is read (x --max-size)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="with --sink-memory: also measure this checkout first, in the same run",
    )
    args = parser.parse_args(argv)
    if args.sink_memory:
        checkouts = [*([args.before] if args.before else []), args.checkout]
        rows = {str(c): sink_memory(c) for c in checkouts}
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        for checkout, found in rows.items():
            print(checkout)
            for row in found:
                print(
                    f"  {row['shape']}: {row['sent_mib']} MiB sent, {row['records']} records"
                    f"{' (capped)' if row['capped'] else ''}; kept {row['kept_x_max_size']}x "
                    f"--max-size, peak {row['peak_x_max_size']}x"
                )
        return 0
    if args.stand_in:
        return _stand_in(args)
    names = [f"host-{i:03d}" for i in range(max(args.hosts))]
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
        runs = [_collect(lab, names[:1], Path(tmp) / "one", 1, args.checkout)]
        for parallel in args.parallel:
            runs.append(
                _collect(lab, names, Path(tmp) / f"all-{parallel}", parallel, args.checkout)
            )
    # 1,000 hosts x 8 ranks x 3 snapshots + environment files: ~30 files per host.
    renders = {n: round(render_seconds(n), 3) for n in (64 * 6, 30_000)}
    if args.json:
        print(
            json.dumps(
                {"sshd_setup_s": round(setup, 1), "runs": runs, "render_s": renders}, indent=2
            )
        )
        return 0
    print(f"{len(names)} sshd on 127.0.0.1 started in {setup:.1f} s; {os.cpu_count()} cores")
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


def _stand_in(args: argparse.Namespace) -> int:
    """The fan-out with every host played by this machine through `--exec`: the collector's
    side (threads, pipes, parsing, bundle writes, `bundle.toml` rewrites) as at `--hosts`,
    each host's side one py-spy dump of the one local target. Then the `bundle.toml` cost."""
    target = subprocess.Popen([sys.executable, "-c", TARGET], cwd=ROOT)
    runs = []
    try:
        time.sleep(1.5)
        with tempfile.TemporaryDirectory(prefix="fanout-") as tmp:
            runs.append(_collect(None, ["host-000"], Path(tmp) / "one", 1, args.checkout))
            for count in args.hosts:
                names = [f"host-{i:03d}" for i in range(count)]
                for parallel in args.parallel:
                    out = Path(tmp) / f"all-{count}-{parallel}"
                    runs.append(_collect(None, names, out, parallel, args.checkout))
    finally:
        target.kill()
        target.wait()
    costs = [manifest_cost(n, args.files, args.checkout) for n in args.manifest_hosts]
    slope = _per_host_rss(runs)
    if args.json:
        print(
            json.dumps(
                {
                    "stand_in": True,
                    "checkout": str(args.checkout),
                    "runs": runs,
                    "collector_rss_per_host_kib": slope,
                    "manifest": costs,
                },
                indent=2,
            )
        )
        return 0
    print(f"stand-in hosts (--exec, no ssh) on this machine; {os.cpu_count()} cores")
    for run in runs:
        print(
            f"{run['hosts']:>3} hosts, --parallel {run['parallel']:>2}: {run['wall_s']:6.2f} s wall "
            f"({run['hosts_per_s']} hosts/s), {run['complete']}/{run['hosts']} complete; per host "
            f"median {run['host_s_median']} s, p90 {run['host_s_p90']} s; collector+hosts CPU "
            f"{run['collector_cpu_per_host_ms']} ms/host, collector alone "
            f"{run['collector_own_cpu_per_host_ms']} ms/host; collector peak RSS "
            f"{run['collector_own_rss_mib']} MiB; manifest {run['manifest_kib']} KiB"
        )
    if slope is not None:
        print(f"collector peak RSS per host (largest runs, same --parallel): {slope} KiB")
    for cost in costs:
        print(
            f"bundle.toml, {cost['hosts']} hosts x {cost['files_per_host']} files, a rewrite "
            f"after every host: last {cost['rewrite_last_ms']} ms CPU "
            f"({cost['rewrite_last_kib']} KiB written), all {cost['rewrites_total_s']} s CPU "
            f"({cost['written_total_mib']} MiB written; with the parts, "
            f"{cost['run_total_s']} s in all); final save {cost['final_save_s']} s, "
            f"{cost['bundle_toml_kib']} KiB; the writer keeps {cost['writer_kib_per_host']} "
            "KiB a host"
        )
    return 0


def _per_host_rss(runs: list[dict[str, object]]) -> float | None:
    """KiB of collector peak RSS per host: the slope between the two largest host counts
    run at the same `--parallel` (None with one host count)."""
    by: dict[object, list[tuple[int, int]]] = {}
    for run in runs[1:]:
        hosts, rss = run["hosts"], run["collector_own_rss_mib"]
        assert isinstance(hosts, int) and isinstance(rss, float)
        by.setdefault(run["parallel"], []).append((hosts, int(rss * 1024)))
    pairs = [sorted(p)[-2:] for p in by.values() if len({h for h, _ in p}) > 1]
    if not pairs:
        return None
    (h0, r0), (h1, r1) = pairs[0]
    return round((r1 - r0) / (h1 - h0), 1)


if __name__ == "__main__":
    sys.exit(main())
