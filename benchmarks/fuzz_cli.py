"""Fuzz every command that reads input, through the real CLI in subprocesses.

For each reading command (`analyze`, `analyze --json`, `draft`, `lint`, `preview`,
`index import`, `diff`) the script mutates real inputs from `fixtures/` (truncation at a
random byte, byte flips, inserted NULs and escape sequences, duplicated and deleted lines,
huge lines, deep nesting, non-UTF-8 bytes, CRLF) and runs `python -m reporter ...` on
each with a watchdog. `collect` is run against a hostile server on 127.0.0.1
(`tests/hostile/servers.py`, a random mode: trickling, silent, huge, endless, a gzip bomb,
an unclosed debug page, or a mutated real `/metrics` and debug page) as its `--metrics-url`
and `--torch-debug`. It counts exit codes, tracebacks (any `Traceback` on either
stream) and hangs (watchdog kills), and prints the first offending inputs. In-process
parser fuzzing is `benchmarks/fuzz_parsers.py`'s job; this drives the commands.

    python benchmarks/fuzz_cli.py [--runs 40] [--seed 16] [--timeout 60]

Exit 1 when any run left a traceback or hung.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/hostile/servers.py
DUMP = ROOT / "fixtures" / "bundles" / "tp_desync" / "snapshots" / "rank0_s0.txt"
BUNDLE = ROOT / "fixtures" / "bundles" / "tp_desync"
ENV_BUNDLE = ROOT / "fixtures" / "redaction" / "bundle"
ISSUES = ROOT / "fixtures" / "github" / "issues.jsonl"


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random mutation of `data`."""
    if not data:
        return b"\x00"
    at = rng.randrange(len(data))
    kind = rng.choice(
        [
            "truncate",
            "flip",
            "nul",
            "escape",
            "dup-lines",
            "drop-lines",
            "huge-line",
            "deep",
            "bad-utf8",
            "crlf",
            "splice",
        ]
    )
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 16)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == "nul":
        return data[:at] + b"\x00" + data[at:]
    if kind == "escape":
        return data[:at] + b"\x1b]0;x\x07\x1b[2J\x9b31m" + data[at:]
    lines = data.split(b"\n")
    if kind == "dup-lines":
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + [lines[i]] * rng.randint(2, 500) + lines[i:])
    if kind == "drop-lines":
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + lines[i + rng.randint(1, 20) :])
    if kind == "huge-line":
        return data[:at] + rng.choice([b"a", b"0", b"_", b"[", b":", b" "]) * 200_000 + data[at:]
    if kind == "deep":
        return data[:at] + b"[" * 50_000 + b"]" * 50_000 + data[at:]
    if kind == "bad-utf8":
        return data[:at] + b"\xff\xfe\xc3\x28\xa0\xa1" + data[at:]
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    other = data[rng.randrange(len(data)) :][: rng.randint(1, 4096)]
    return data[:at] + other + data[at:]


def _bundle_copy(src: Path, work: Path, rng: random.Random) -> Path:
    target = work / "bundle"
    shutil.copytree(src, target)
    files = sorted(p for p in target.rglob("*") if p.is_file())
    for path in rng.sample(files, k=min(len(files), rng.randint(1, 3))):
        path.write_bytes(mutate(path.read_bytes(), rng))
    return target


def _report(work: Path) -> Path:
    out = work / "seed.md"
    if not out.exists():
        subprocess.run(
            [sys.executable, "-m", "reporter", "draft", str(DUMP), "--out", str(out)],
            cwd=work,
            env=_env(work),
            capture_output=True,
            check=True,
        )
    return out


# command name -> builder(work, rng) -> argv
Builder = Callable[[Path, random.Random], list[str]]


def b_analyze(work: Path, rng: random.Random) -> list[str]:
    if rng.random() < 0.5:
        return ["analyze", str(_bundle_copy(BUNDLE, work, rng))]
    path = work / "dump.txt"
    path.write_bytes(mutate(DUMP.read_bytes(), rng))
    return ["analyze", str(path)]


def b_analyze_json(work: Path, rng: random.Random) -> list[str]:
    return ["analyze", "--json", str(_bundle_copy(ENV_BUNDLE, work, rng))]


def b_draft(work: Path, rng: random.Random) -> list[str]:
    return ["draft", str(_bundle_copy(BUNDLE, work, rng)), "--out", str(work / "out.md")]


def b_lint(work: Path, rng: random.Random) -> list[str]:
    path = work / "r.md"
    path.write_bytes(mutate(_report(work).read_bytes(), rng))
    return ["lint", str(path)]


def b_preview(work: Path, rng: random.Random) -> list[str]:
    path = work / "r.md"
    path.write_bytes(mutate(_report(work).read_bytes(), rng))
    return ["preview", str(path), "--out", str(work / "r.html")]


def b_index_import(work: Path, rng: random.Random) -> list[str]:
    path = work / "issues.jsonl"
    path.write_bytes(mutate(ISSUES.read_bytes(), rng))
    return ["index", "import", str(path), "--db", str(work / "i.sqlite3")]


def b_diff(work: Path, rng: random.Random) -> list[str]:
    good = ROOT / "fixtures" / "bundles" / "full_incident"
    return ["diff", str(good), str(_bundle_copy(ENV_BUNDLE, work, rng))]


# Servers a `collect` run talks to: stopped after the run.
SERVERS: list[object] = []
FR_PAGE = ROOT / "fixtures" / "bundles" / "fr_different_ops" / "torch-debug" / "fr_trace"


def b_collect(work: Path, rng: random.Random) -> list[str]:
    from hostile.servers import MODES, HostileServer

    mode = rng.choice(MODES)
    page = ""
    if mode == "debug-page":
        real = sorted(p for p in FR_PAGE.rglob("*") if p.is_file())
        blocks = "".join(
            f"<h2>Rank {n}: http://127.0.0.1:1/handler?</h2>\n<pre>{p.read_text('utf-8')}</pre>\n"
            for n, p in enumerate(real)
        )
        metrics = (ROOT / "fixtures" / "bundles" / "wedge_metrics" / "metrics").rglob("*.prom")
        seed = blocks + "".join(p.read_text("utf-8") for p in metrics)
        page = mutate(seed.encode("utf-8"), rng).decode("utf-8", errors="replace")
    server = HostileServer(mode, size=64 << 20, page=page).__enter__()
    SERVERS.append(server)
    return [
        "collect",
        "--out",
        str(work / "out"),
        "--timeout",
        "2s",
        "--max-size",
        "4M",
        "--metrics-url",
        server.url + "/metrics",
        "--scrape-for",
        "0s",
        "--torch-debug",
        server.url,
    ]


COMMANDS: dict[str, Builder] = {
    "analyze": b_analyze,
    "analyze --json": b_analyze_json,
    "draft": b_draft,
    "lint": b_lint,
    "preview": b_preview,
    "index import": b_index_import,
    "diff": b_diff,
    "collect": b_collect,
}


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        XDG_CACHE_HOME=str(work / ".cache"),
        XDG_CONFIG_HOME=str(work / ".config"),
        NO_COLOR="1",
    )
    return env


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz campaign and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="runs per command")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--only", default="", help="one command name, e.g. lint")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    totals: dict[str, Counter[str]] = {}
    problems: list[str] = []
    started = time.perf_counter()
    slowest = 0.0
    shared = Path(tempfile.mkdtemp(prefix="fuzz-cli-seed-"))
    for name, build in COMMANDS.items():
        if args.only and name != args.only:
            continue
        counts: Counter[str] = Counter()
        for run in range(args.runs):
            work = Path(tempfile.mkdtemp(prefix="fuzz-cli-"))
            try:
                if (shared / "seed.md").exists():
                    shutil.copy(shared / "seed.md", work / "seed.md")
                argv_run = build(work, rng)
                if (work / "seed.md").exists() and not (shared / "seed.md").exists():
                    shutil.copy(work / "seed.md", shared / "seed.md")
                began = time.perf_counter()
                try:
                    done = subprocess.run(
                        [sys.executable, "-m", "reporter", *argv_run],
                        cwd=work,
                        env=_env(work),
                        capture_output=True,
                        text=True,
                        errors="replace",
                        timeout=args.timeout,
                        check=False,
                    )
                except subprocess.TimeoutExpired:
                    counts["hang"] += 1
                    problems.append(f"HANG {name} run {run}")
                    continue
                slowest = max(slowest, time.perf_counter() - began)
                counts[f"exit {done.returncode}"] += 1
                said = done.stdout + done.stderr
                if "Traceback (most recent call last)" in said:
                    counts["traceback"] += 1
                    problems.append(f"TRACEBACK {name} run {run}: {done.stderr[-400:]}")
                if done.returncode not in (0, 1, 2):
                    problems.append(f"EXIT {done.returncode} {name} run {run}")
            finally:
                while SERVERS:
                    SERVERS.pop().stop()  # type: ignore[attr-defined]
                shutil.rmtree(work, ignore_errors=True)
        totals[name] = counts
        print(
            f"{name:<15} {args.runs} runs: "
            + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())),
            flush=True,
        )
    shutil.rmtree(shared, ignore_errors=True)
    runs = sum(
        sum(v for k, v in c.items() if k.startswith(("exit", "hang"))) for c in totals.values()
    )
    tracebacks = sum(c["traceback"] for c in totals.values())
    hangs = sum(c["hang"] for c in totals.values())
    print(
        f"total: {runs} runs, {tracebacks} tracebacks, {hangs} hangs, slowest run "
        f"{slowest:.1f} s, {time.perf_counter() - started:.0f} s in all"
    )
    for line in problems[:10]:
        print(f"  {line}")
    print(json.dumps({"runs": runs, "tracebacks": tracebacks, "hangs": hangs}))
    return 1 if tracebacks or hangs else 0


if __name__ == "__main__":
    sys.exit(main())
