"""The processes of one host as the remote probe sees them: listing and target selection.

Carried to each host with the probe (`remote.HOST_MODULES`): the standard library only,
Python 3.8+. Reads `/proc` (command lines, executables, the process tree) and chooses the
targets as `plan.select_targets` does locally (a test holds them equal). Records are the
JSON-ready dicts the probe sends (`probe.py` shows their shapes).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: `dict[...]` is no runtime expression on Python 3.8
    from collections.abc import Sequence

    Record = dict[str, Any]
    Chosen = list[tuple[Record, str]]


_PYTHON_EXE = re.compile(r"^(?:python|pypy)[0-9.]*[a-z]*(?: \(deleted\))?$")


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


def read_process(pid: int) -> Record | None:
    """One process as `/proc` shows it (the fields of `procfs.ProcessInfo`), or None."""
    base = f"/proc/{pid}/"
    try:
        stat = _text(base + "stat")
        argv_raw = Path(base + "cmdline").read_bytes()
    except OSError:
        return None
    try:
        start, end = stat.index("("), stat.rindex(")")
        fields = stat[end + 2 :].split()
        comm, state, ppid, pgid = stat[start + 1 : end], fields[0], int(fields[1]), int(fields[2])
    except (ValueError, IndexError):
        return None
    parts = argv_raw.split(b"\x00")
    while parts and not parts[-1]:
        parts.pop()
    uid = None
    try:
        for line in _text(base + "status").splitlines():
            if line.startswith("Uid:"):
                words = line.split()
                uid = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
    except OSError:
        pass
    try:
        # Path.readlink is Python 3.9+; the probe runs on 3.8.
        exe: str | None = os.readlink(base + "exe")  # noqa: PTH115
    except OSError:
        exe = None
    return {
        "pid": pid,
        "ppid": ppid,
        "state": state,
        "comm": comm,
        "argv": [p.decode("utf-8", "replace") for p in parts],
        "uid": uid,
        "exe": exe,
        "pgid": pgid,
    }


def list_processes() -> list[Record]:
    """Every process readable now, by PID."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            info = read_process(int(entry.name))
            if info is not None:
                found.append(info)
    found.sort(key=lambda p: int(p["pid"]))
    return found


def title(proc: Record) -> str:
    """What `ps -o args` shows (`ProcessInfo.title`)."""
    return " ".join(proc["argv"]) if proc["argv"] else f"[{proc['comm']}]"


def looks_like_python(proc: Record) -> bool | None:
    """`procfs.looks_like_python`: the executable's name, else libpython in the maps."""
    exe = proc["exe"]
    if exe is not None and _PYTHON_EXE.match(exe.rpartition("/")[2]):
        return True
    try:
        with Path(f"/proc/{proc['pid']}/maps").open("rb") as handle:
            mapped: bool | None = any(b"libpython" in line for line in handle)
    except OSError:
        mapped = None
    if mapped:
        return True
    if exe is None or mapped is None:
        return None
    return False


def ancestors_of(parent: dict[int, int], pid: int) -> set[int]:
    """PIDs above `pid` (by `parent`, PID -> PPID) up to init, not `pid` itself. Shared with
    `plan.ancestors`, which imports it from here: this file must stay self-contained."""
    out: set[int] = set()
    current = parent.get(pid, 0)
    while current > 0 and current not in out:
        out.add(current)
        current = parent.get(current, 0)
    return out


def descendants_of(parent: dict[int, int], pid: int) -> set[int]:
    """PIDs below `pid` in the tree `parent` (PID -> PPID), not `pid` itself. Shared with
    `plan.descendants`, which imports it from here."""
    children: dict[int, list[int]] = {}
    for child, ppid in parent.items():
        children.setdefault(ppid, []).append(child)
    out: set[int] = set()
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


def whoami() -> Record:
    """This process as another on the same machine and PID namespace recognises it."""
    me: Record = {"pid": os.getpid()}
    try:
        me["boot_id"] = _text("/proc/sys/kernel/random/boot_id").strip()
        info = os.stat("/proc/self/ns/pid")  # noqa: PTH116 - path strings, as in probe.py
        me["pidns"] = f"{info.st_dev}:{info.st_ino}"
        stat = _text("/proc/self/stat")
        me["start"] = stat[stat.rindex(")") + 2 :].split()[19]
    except (OSError, ValueError, IndexError):
        pass
    return me


def collector_here(collector: Record | None) -> int | None:
    """The collector's PID when it runs on this host, in this PID namespace (`whoami` equal
    but for the PID, and that PID started when the collector did); else None."""
    if not collector or "start" not in collector:
        return None
    here = whoami()
    if (here.get("boot_id"), here.get("pidns")) != (collector["boot_id"], collector["pidns"]):
        return None
    try:
        stat = _text(f"/proc/{int(collector['pid'])}/stat")
        start = stat[stat.rindex(")") + 2 :].split()[19]
    except (OSError, ValueError, IndexError):
        return None
    return int(collector["pid"]) if start == collector["start"] else None


def select(processes: list[Record], opts: Record, own_pid: int) -> tuple[Chosen, Chosen, str]:
    """(targets with why, processes passed over with why, an error): `plan.select_targets`.
    `opts["collector"]`: when `report collect` itself runs on this host, it and its
    ancestors are left out, and said so when they match."""
    by_pid = {p["pid"]: p for p in processes}
    collector = collector_here(opts.get("collector"))
    parents = {p["pid"]: p["ppid"] for p in processes}
    theirs = {collector} | ancestors_of(parents, collector) if collector else set()
    pids = list(opts.get("pids") or [])
    children_of = opts.get("children_of")
    for pid in pids + ([children_of] if children_of else []):
        if pid not in by_pid:
            return [], [], f"no process with PID {pid}"
    mine = {own_pid} | ancestors_of({p["pid"]: p["ppid"] for p in processes}, own_pid)
    targets: dict[int, tuple[Record, str]] = {}
    passed: dict[int, tuple[Record, str]] = {}
    for pid in pids:
        if pid == own_pid:
            return [], [], f"PID {pid} is the capture itself"
        targets[pid] = (by_pid[pid], "--pid")
    match = opts.get("match")
    if match is not None or children_of is not None:
        pattern = re.compile(match) if match is not None else None
        pool = processes
        why = "--match"
        if children_of is not None:
            below = descendants_of({p["pid"]: p["ppid"] for p in processes}, children_of)
            pool = [p for p in processes if p["pid"] in below]
            why = "--children-of" if pattern is None else "--children-of + --match"
        for proc in pool:
            if proc["pid"] in targets or proc["pid"] in mine or not proc["argv"]:
                continue  # kernel threads have no command line
            if pattern is not None and not (
                pattern.search(title(proc)) or pattern.search(proc["comm"])
            ):
                continue
            if proc["pid"] in theirs:
                passed[proc["pid"]] = (proc, "report collect itself (it runs on this host)")
                continue
            if proc["state"] in ("Z", "X"):
                passed[proc["pid"]] = (proc, "exited (zombie: its parent has not reaped it)")
                continue
            if looks_like_python(proc) is False:
                exe = proc["exe"] or "unknown executable"
                passed[proc["pid"]] = (proc, f"not a Python process ({exe}); py-spy cannot read it")
                continue
            targets[proc["pid"]] = (proc, why)
    return [targets[p] for p in sorted(targets)], [passed[p] for p in sorted(passed)], ""


def launchers(processes: list[Record], targets: list[int]) -> dict[int, int]:
    """`plan.launchers`: per target, the nearest ancestor that is not itself a target."""
    return nearest_launchers({p["pid"]: p["ppid"] for p in processes}, targets)


def nearest_launchers(parent: dict[int, int], targets: Sequence[int]) -> dict[int, int]:
    """Per target PID, the nearest ancestor (by `parent`, PID -> PPID) that is not itself a
    target; PID 1 and init-like roots are none. Shared with `plan.launchers`, which imports
    it from here: this file must stay self-contained."""
    chosen = set(targets)
    out: dict[int, int] = {}
    for pid in targets:
        current = parent.get(pid, 0)
        seen = {pid}
        while current in chosen and current not in seen:
            seen.add(current)
            current = parent.get(current, 0)
        if current > 1:
            out[pid] = current
    return out


def title_only(proc: Record) -> bool:
    """`capture._title_only`: a one-word command line without a path (setproctitle)."""
    argv = proc["argv"]
    return (
        len(argv) == 1
        and "/" not in argv[0]
        and " " not in argv[0]
        and ("::" in argv[0] or not argv[0].startswith(("python", "pypy")))
    )
