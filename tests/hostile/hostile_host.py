"""A hostile host for `report collect --exec`: prints what a broken or malicious probe could.

Used as the engine of a template (`--exec 'python hostile_host.py MODE {host}'`); the probe
program the collector appends is ignored. Modes (issue 32, round 3):

- `flood[:BYTES]`: one endless line of JSON text (at most BYTES, default 3 GB, so a run
  without a cap still ends);
- `spam[:BYTES]`: endless small records (at most BYTES, default 3 GB);
- `good`: one good dump (for attacks that are not about the records);
- `many:N`: N small valid records (skip notes) between `hello` and `end`;
- `files:N`: N dumps of distinct PIDs (N files);
- `bad`: two good dumps around records with a null, `"pids": []`, a year before 1000, a huge
  integer and wrong types;
- `bidi`: a host name and notes with bidi overrides and escape sequences;
- `sleep`: `hello`, then nothing for an hour (for SIGTERM);
- `plant:OUT:TARGET`: puts a symbolic link `OUT/hosts` -> TARGET, then sends a good dump;
- `deep:ROOT:N` (not a host): a dump N folders below ROOT (`make_deep`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

DUMP = (
    "Process {pid}: python serve.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
    'Thread {pid} (idle): "MainThread"\n    wait (threading.py:320)\n'
)


def out(record: object) -> None:
    sys.stdout.write(json.dumps(record) + "\n")


def hello(name: str = "box") -> None:
    out({"t": "hello", "hostname": name, "python": "3.11.7", "uid": 0, "pid": 9})
    out({"t": "pyspy", "path": "/usr/bin/py-spy", "version": "py-spy 0.4.3", "searched": "PATH",
         "refused": [], "uid": 0})  # fmt: skip


def target(pid: int) -> None:
    out({"t": "target", "pid": pid, "ppid": 1, "pgid": pid, "uid": 0, "title": "python serve.py",
         "selected_by": "--match", "launcher": None})  # fmt: skip


def dump(pid: int, snapshot: int = 0, **changes: object) -> dict[str, object]:
    record: dict[str, object] = {
        "t": "dump", "pid": pid, "snapshot": snapshot, "started_at": "2026-12-07T10:00:00.000Z",
        "seconds": 0.2, "returncode": 0, "stdout": DUMP.format(pid=pid), "stderr": "",
        "timed_out": False, "launch_error": "", "attempts": 1,
    }  # fmt: skip
    record.update(changes)
    return record


def make_deep(root: Path, depth: int) -> None:
    """A py-spy dump `depth` folders below `root` (`d/d/.../dump.txt`), made through folder
    descriptors: its path is longer than PATH_MAX."""
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        step = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = step
    dump = os.open("dump.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(dump, DUMP.format(pid=41).encode())
    os.close(dump)
    os.close(fd)


def main(mode: str) -> None:
    kind, _, arg = mode.partition(":")
    if kind in ("flood", "spam"):
        limit = int(arg or 3 << 30)
        line = (json.dumps({"t": "skip", "what": "x", "reason": "y"}) + "\n") * 4096
        hello()
        if kind == "flood":
            sys.stdout.write('{"t": "dump", "stdout": "')
            line = "x" * len(line)
        sent = 0
        while sent < limit:
            sys.stdout.write(line)
            sent += len(line)
    elif kind == "good":
        hello()
        target(41)
        out(dump(41))
        out({"t": "end"})
    elif kind == "many":
        hello()
        target(41)
        out(dump(41))
        for i in range(int(arg)):
            out({"t": "skip", "what": f"thing {i}", "reason": "noise"})
        out({"t": "end"})
    elif kind == "files":
        hello()
        for pid in range(100, 100 + int(arg)):
            out(dump(pid))
        out({"t": "end"})
    elif kind == "bad":
        hello()
        target(41)
        out(dump(41))
        out(dump(None))  # type: ignore[arg-type]
        out({"t": "packages", "pids": [], "text": "torch==2.5.1\n"})
        out(dump(43, started_at="0999-01-01T00:00:00.000Z"))
        out(dump(44, seconds=float("inf")))
        out(dump(10**30))
        out({"t": "target", "pid": 45, "ppid": 1, "uid": 10**30, "title": ["x"]})
        out({"t": "round", "pid": 41, "snapshot": 0, "name": "../../etc/passwd", "text": "x"})
        out({"t": "file", "pid": 41, "kind": "environ", "b64": "!!"})
        out({"t": "envscript", "pids": [41], "module": "os", "text": "x"})
        out({"t": "skip", "what": None, "reason": 5, "lost": "all"})
        out({"t": None})
        out([1, 2, 3])
        target(42)
        out(dump(42))
        out({"t": "end"})
    elif kind == "bidi":
        hello("box\u202egnp.exe\x1b]0;pwned\x07")
        target(41)
        out(dump(41))
        out({"t": "skip", "what": "x\u202ey", "reason": "\x1b[2Jcleared \u2066hidden\u2069"})
        out({"t": "end"})
    elif kind == "sleep":
        hello()
        sys.stdout.flush()
        time.sleep(3600)
    elif kind == "deep":
        where, _, depth = arg.partition(":")
        make_deep(Path(where), int(depth))
    elif kind == "plant":
        where, _, aim = arg.partition(":")
        (Path(where) / "hosts").symlink_to(aim)
        hello()
        target(41)
        out(dump(41))
        out({"t": "end"})
    else:
        raise SystemExit(f"unknown mode {mode}")
    sys.stdout.flush()


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main(sys.argv[1])
