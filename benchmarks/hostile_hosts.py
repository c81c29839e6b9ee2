"""Issue 32, round 3: every attack on the multi-host capture, with rc, wall time and peak RSS.

    python benchmarks/hostile_hosts.py [--src DIR] [--only NAME,...] > table.md

`--src` is a checkout of `reporter` to attack (default: this one), run as
`python -m reporter` with that folder first on `sys.path`, so the same attacks measure main
and a branch. Each run is under `/usr/bin/time -v` (peak RSS of the collector) and a
wall-clock bound (`BOUND` s: a run past it is killed and shown as such). The hostile host is
`tests/hostile/hostile_host.py` behind `--exec`. Run as root (one attack chowns a folder to
`nobody`); everything is written under a fresh temporary folder.
"""

from __future__ import annotations

import argparse
import http.server
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
HOSTILE = HERE / "tests" / "hostile" / "hostile_host.py"
BOUND = 150.0


@dataclass
class Outcome:
    rc: str
    seconds: float
    rss_mb: float
    note: str
    extra: list[str] = field(default_factory=list)


def run(
    src: Path,
    args: list[str],
    *,
    stdin: bytes | None = None,
    signal_after: tuple[float, int] | None = None,
    bound: float = BOUND,
    path: str | None = None,
) -> tuple[int | None, float, float, str]:
    """(rc or None when killed at the bound, seconds, peak RSS in MB, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    if path is not None:
        env["PATH"] = path
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            ["/usr/bin/time", "-v", sys.executable, "-m", "reporter", *args],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=src,
            env=env,
            start_new_session=True,
        )
        if stdin is not None:
            threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
        if signal_after is not None:
            time.sleep(signal_after[0])
            # The collector itself: the child of /usr/bin/time.
            child = _child_of(proc.pid)
            if child:
                os.kill(child, signal_after[1])
        peak = 0.0
        try:
            rc: int | None = proc.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            # /usr/bin/time dies with it and reports nothing: read the peak first.
            child = _child_of(proc.pid)
            if child:
                peak = _peak_mb(child)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
        seconds = time.monotonic() - started
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    status = re.search(r"Exit status: (\d+)", text)
    killed = re.search(r"Command terminated by signal (\d+)", text)
    if rc is not None and killed:
        rc = -int(killed.group(1))
    elif rc is not None and status:
        rc = int(status.group(1))
    body = text.split("\tCommand being timed")[0]
    return rc, seconds, int(rss.group(1)) / 1024 if rss else peak, body


def _peak_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else 0.0


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except OSError:
        pass


def _child_of(pid: int) -> int | None:
    for _ in range(50):
        try:
            text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        except OSError:
            return None
        if text.split():
            return int(text.split()[0])
        time.sleep(0.05)
    return None


def manifest(out: Path) -> dict[str, object]:
    try:
        return tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        return {"error": type(err).__name__}


def host_line(out: Path) -> str:
    data = manifest(out)
    if "error" in data:
        return f"bundle.toml: {data['error']}"
    collect = data.get("collect", {})
    assert isinstance(collect, dict)
    hosts = collect.get("remote", [])
    parts = [f"status {collect.get('status')}"]
    for h in hosts[:3]:
        parts.append(f"{h['host']}: {h['status']} {h.get('reason', '')[:110]}")
    return "; ".join(parts)


def last_error(stderr: str) -> str:
    lines = [
        line
        for line in stderr.splitlines()
        if line.startswith(("error", "Error", "Traceback", "MemoryError", "internal"))
    ]
    return (lines[-1] if lines else (stderr.strip().splitlines() or [""])[-1])[:160]


def collect(out: Path, engine: str, *hosts: str, extra: tuple[str, ...] = ()) -> list[str]:
    args = ["collect", "-o", str(out), "--exec", f"{sys.executable} {HOSTILE} {engine} {{host}}"]
    for h in hosts:
        args += ["--host", h]
    return [*args, "--match", "x", *extra]


def attacks(src: Path, tmp: Path) -> dict[str, Callable[[], Outcome]]:
    def simple(name: str, engine: str, *hosts: str) -> Callable[[], Outcome]:
        def go() -> Outcome:
            out = tmp / name
            rc, s, mb, err = run(src, collect(out, engine, *(hosts or ("box-1",))))
            files = sum(1 for p in out.rglob("*") if p.is_file()) if out.exists() else 0
            return Outcome(_rc(rc), s, mb, f"{host_line(out)}; {files} files" if out.exists()
                           else last_error(err))  # fmt: skip

        return go

    def bidi() -> Outcome:
        out = tmp / "bidi"
        rc, s, mb, _err = run(src, collect(out, "bidi", "box-1"))
        text = (out / "bundle.toml").read_text(encoding="utf-8") if out.exists() else ""
        raw = sum(text.count(c) for c in "\u202e\u2066\u2069\x1b")
        return Outcome(_rc(rc), s, mb, f"{raw} raw bidi/escape characters in bundle.toml")

    def bad() -> Outcome:
        out = tmp / "bad"
        rc, s, mb, err = run(src, collect(out, "bad", "box-1", "box-2"))
        evidence = manifest(out).get("evidence", [])
        entries = evidence if isinstance(evidence, list) else []
        dumps = sum(1 for e in entries if isinstance(e, dict) and "pyspy" in str(e.get("path")))
        return Outcome(
            _rc(rc), s, mb, f"{host_line(out)[:200]}; {dumps} dumps kept; {last_error(err)[:80]}"
        )

    def signalled(sig: int) -> Callable[[], Outcome]:
        def go() -> Outcome:
            out = tmp / f"sig{sig}"
            tag = f"sleep-{sig}-{os.getpid()}"
            args = collect(out, "sleep", tag, "b-" + tag)
            rc, s, mb, _err = run(src, args, signal_after=(4.0, sig), bound=60)
            time.sleep(1.0)
            orphans = _orphans(tag)
            for pid in orphans:  # ours: the hostile hosts this attack started
                os.kill(pid, signal.SIGKILL)
            usable = _analyze(src, out)
            return Outcome(
                _rc(rc),
                s,
                mb,
                f"{host_line(out)[:120]}; {len(orphans)} engine processes left running; "
                f"report analyze: {usable}",
            )

        return go

    def plant() -> Outcome:
        out, aim = tmp / "plant", tmp / "elsewhere"
        aim.mkdir()
        rc, s, mb, _err = run(src, collect(out, f"plant:{out}:{aim}", "box-1"))
        outside = [p.name for p in aim.rglob("*")]
        return Outcome(_rc(rc), s, mb, f"{len(outside)} files written outside --out; "
                       f"{host_line(out)[:140]}")  # fmt: skip

    def foreign() -> Outcome:
        out = tmp / "foreign"
        out.mkdir()
        os.chown(out, 65534, 65534)
        rc, s, mb, err = run(src, collect(out, "good", "box-1"))
        return Outcome(_rc(rc), s, mb, last_error(err) or host_line(out))

    def twice() -> Outcome:
        out = tmp / "twice"
        out.mkdir()
        results: list[tuple[int | None, float, float, str]] = []
        threads = [
            threading.Thread(target=lambda h=h: results.append(run(src, collect(out, "good", h))))
            for h in ("h1", "h2")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        data = manifest(out)
        listed = {e["path"] for e in data.get("evidence", [])}  # type: ignore[attr-defined]
        files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {"bundle.toml"}
        rcs = sorted(_rc(r[0]) for r in results)
        return Outcome(
            "/".join(rcs),
            max(r[1] for r in results),
            max(r[2] for r in results),
            f"rcs {rcs}; {len(files - listed)} files not listed in bundle.toml",
        )

    def slugs() -> Outcome:
        out = tmp / "slugs"
        pod = "a" * 40 + "." + "b" * 40 + ".pod-"
        names = ("normal.1", "normal_1", "normal-1", pod + "1", pod + "2")
        rc, s, mb, err = run(src, collect(out, "good", *names))
        folders = sorted(p.name for p in (out / "hosts").iterdir()) if out.exists() else []
        usable = _analyze(src, out)
        return Outcome(_rc(rc), s, mb, f"{len(names)} hosts -> {len(folders)} folders; "
                       f"report analyze: {usable}; {last_error(err)[:80]}")  # fmt: skip

    def users() -> Outcome:
        # A stand-in `ssh` on PATH (engines get our PATH) that answers as a hostile host.
        out, bin_dir = tmp / "users", tmp / "bin"
        bin_dir.mkdir(exist_ok=True)
        fake = bin_dir / "ssh"
        fake.write_text(f"#!/bin/sh\nexec {sys.executable} {HOSTILE} good\n")
        fake.chmod(0o755)
        rc, s, mb, _err = run(
            src,
            ["collect", "-o", str(out), "--ssh", "root@good", "--ssh", "good", "--match", "x"],
            path=f"{bin_dir}:{os.environ['PATH']}",
        )
        folders = sorted(p.name for p in (out / "hosts").iterdir()) if out.exists() else []
        return Outcome(_rc(rc), s, mb, f"2 hosts -> folders {folders}; {host_line(out)[:100]}")

    def parallel() -> Outcome:
        out = tmp / "parallel"
        rc, s, mb, err = run(src, [*collect(out, "good", "box-1"), "--parallel", "100000"])
        return Outcome(_rc(rc), s, mb, last_error(err) if rc != 0 else host_line(out)[:120])

    def stdin_hosts() -> Outcome:
        out = tmp / "stdin"
        args = ["collect", "-o", str(out), "--exec", "true {host}", "--hosts-file", "-",
                "--match", "x"]  # fmt: skip
        rc, s, mb, err = run(src, args, stdin=b"\0" * (1 << 30))
        return Outcome(_rc(rc), s, mb, last_error(err))

    def shadow() -> Outcome:
        link = tmp / "hosts.txt"
        link.symlink_to("/etc/shadow")
        first = Path("/etc/shadow").read_text().split(":", 1)[0]
        out = tmp / "shadow"
        rc, s, mb, err = run(src, ["collect", "-o", str(out), "--ssh-config", "/dev/null",
                                   "--hosts-file", str(link), "--match", "x"])  # fmt: skip
        leaked = f"{first}:" in err
        return Outcome(_rc(rc), s, mb, f"first line echoed: {leaked}; {last_error(err)[:100]}")

    def deep() -> Outcome:
        root = tmp / "deep"
        root.mkdir()
        subprocess.run([sys.executable, str(HOSTILE), f"deep:{root}:1000"], check=True)
        rc, s, mb, err = run(src, ["analyze", str(root)])
        return Outcome(_rc(rc), s, mb, f"depth named: {'deeper than' in err}; "
                       f"{last_error(err)[-90:]}")  # fmt: skip

    def metrics() -> Outcome:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        out = tmp / "metrics"
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        rc, s, mb, _err = run(src, ["collect", "-o", str(out), "--metrics-url", url,
                                   "--scrape-for", "2s", "--timeout", "2s"], bound=60)  # fmt: skip
        server.shutdown()
        return Outcome(_rc(rc), s, mb, f"the server answers after 30 s; {host_line(out)[:60]}")

    return {
        "flood: one endless line": simple("flood", "flood"),
        "spam: endless small records": simple("spam", "spam"),
        "200,000 small records": simple("many", "many:200000"),
        "20,001 files from one host": simple("files", "files:20001"),
        "bad values (null, pids [], year 999, 10**30, inf, wrong types)": bad,
        "bidi and escapes from a host": bidi,
        "SIGTERM during the run": signalled(signal.SIGTERM),
        "SIGHUP during the run": signalled(signal.SIGHUP),
        "symlink planted at --out/hosts": plant,
        "--out empty, owned by nobody": foreign,
        "two collects into one empty --out": twice,
        "slug collisions (normal.1/_1/-1, two 86-char pods)": slugs,
        "root@good and good": users,
        "--parallel 100000": parallel,
        "--hosts-file - with 1 GiB on stdin": stdin_hosts,
        "hosts file -> /etc/shadow": shadow,
        "dump 1,000 folders deep (analyze)": deep,
        "--metrics-url slow server, --timeout 2s": metrics,
    }


class _Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(30)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"x 1\n")

    def log_message(self, *args: object) -> None:
        pass


def _rc(rc: int | None) -> str:
    if rc is None:
        return f"killed at {BOUND:g} s"
    return f"died of signal {-rc}" if rc < 0 else str(rc)


def _orphans(tag: str) -> list[int]:
    out = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = status.read_bytes().split(b"\0")
        except OSError:
            continue
        # The hostile host (`python hostile_host.py sleep TAG`), not the collector naming it.
        if len(argv) > 3 and argv[1].endswith(b"hostile_host.py") and argv[3] == tag.encode():
            out.append(int(status.parent.name))
    return out


def _analyze(src: Path, out: Path) -> str:
    if not out.exists():
        return "no bundle"
    rc, _s, _mb, err = run(src, ["analyze", str(out)])
    return "rc 0" if rc == 0 else f"rc {rc} ({last_error(err)[:70]})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=HERE)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hostile-hosts-"))
    try:
        print("| attack | rc | wall s | peak RSS MB | outcome |\n|---|---|---|---|---|")
        for name, attack in attacks(args.src.resolve(), tmp).items():
            if args.only and not any(o in name for o in args.only.split(",")):
                continue
            got = attack()
            note = got.note.replace("|", "/").replace("\n", " ")
            print(f"| {name} | {got.rc} | {got.seconds:.1f} | {got.rss_mb:.0f} | {note} |",
                  flush=True)  # fmt: skip
    finally:
        # `rm`, not shutil.rmtree: the 1,000-deep folder is past Python's recursion limit.
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


if __name__ == "__main__":
    main()
