"""Read processes from `/proc`: the collector's only view of what is running.

Input: the `/proc` tree (a different root can be given for tests). Output:
`ProcessInfo` values, one per process, read without touching the processes
themselves (no signals, no ptrace). The text parsers (`parse_stat`,
`parse_status_uid`, `split_cmdline`) are pure.

A title set with `setproctitle` (SGLang, vLLM) replaces the command line in
place and pads it with NULs, so `/proc/PID/cmdline` of an SGLang scheduler reads
`sglang::scheduler_TP0\\0\\0\\0...`: `split_cmdline` gives `("sglang::scheduler_TP0",)`.
The same call overwrites the environment block, so `/proc/PID/environ` of such a
process is NULs only (see `environ_blank`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reporter.collect import procread

PROC = Path("/proc")
# Interpreter executables py-spy can read: python3.11, python3.12d, pypy3, "(deleted)" suffix too.
_PYTHON_EXE_RE = re.compile(r"^(?:python|pypy)[0-9.]*[a-z]*(?: \(deleted\))?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessInfo:
    """One process as `/proc` shows it.

    `argv` is `/proc/PID/cmdline` split at NULs (trailing padding dropped); empty
    for kernel threads. `uid` is the real uid; `exe` is None when the link cannot
    be read (another user's process without privileges, or a kernel thread).
    """

    pid: int
    ppid: int
    state: str
    comm: str
    argv: tuple[str, ...] = ()
    uid: int | None = None
    exe: str | None = None
    pgid: int | None = None

    @property
    def title(self) -> str:
        """What `ps -o args` shows: the command line joined by spaces, or `[comm]`."""
        return " ".join(self.argv) if self.argv else f"[{self.comm}]"

    @property
    def zombie(self) -> bool:
        """True when the process has exited and waits for its parent to reap it."""
        return self.state in {"Z", "X"}


def parse_stat(text: str) -> tuple[str, str, int]:
    """`/proc/PID/stat` -> (comm, state, ppid). The comm sits in parentheses and may hold anything."""
    start = text.index("(")
    end = text.rindex(")")
    fields = text[end + 2 :].split()
    return text[start + 1 : end], fields[0], int(fields[1])


def parse_pgid(text: str) -> int | None:
    """The process group id from `/proc/PID/stat` (the field after the ppid), if readable."""
    try:
        return int(text[text.rindex(")") + 2 :].split()[2])
    except (ValueError, IndexError):
        return None


def parse_status_uid(text: str) -> int | None:
    """The real uid from `/proc/PID/status` (`Uid:\\treal\\teffective\\tsaved\\tfs`)."""
    for line in text.splitlines():
        if line.startswith("Uid:"):
            parts = line.split()
            return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return None


def parse_cap_eff(text: str) -> int:
    """The effective capability mask from `/proc/PID/status` (`CapEff:\\t000001ffffffffff`); 0 if absent."""
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def split_cmdline(data: bytes) -> tuple[str, ...]:
    """`/proc/PID/cmdline` bytes as argv; the NUL padding after a process title is dropped."""
    parts = data.split(b"\x00")
    while parts and not parts[-1]:
        parts.pop()
    return tuple(p.decode("utf-8", errors="replace") for p in parts)


def environ_blank(data: bytes) -> bool:
    """True when an environ copy holds no `NAME=value` entry (empty, or overwritten by a title)."""
    return not any(b"=" in entry for entry in data.split(b"\x00"))


def is_python_exe(exe: str) -> bool:
    """True when the executable's name is a CPython or PyPy interpreter."""
    return bool(_PYTHON_EXE_RE.match(exe.rpartition("/")[2]))


def read_process(pid: int, *, proc: Path = PROC) -> ProcessInfo | None:
    """One process, or None when it is gone (or was never there)."""
    base = proc / str(pid)
    try:
        stat = (base / "stat").read_text(encoding="utf-8", errors="replace")
        comm, state, ppid = parse_stat(stat)
        argv = split_cmdline((base / "cmdline").read_bytes())
    except (OSError, ValueError, IndexError):
        return None
    try:
        uid = parse_status_uid((base / "status").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        uid = None
    try:
        exe: str | None = str((base / "exe").readlink())
    except OSError:
        exe = None
    return ProcessInfo(
        pid=pid,
        ppid=ppid,
        state=state,
        comm=comm,
        argv=argv,
        uid=uid,
        exe=exe,
        pgid=parse_pgid(stat),
    )


def list_processes(*, proc: Path = PROC) -> list[ProcessInfo]:
    """Every process readable now, by PID. Processes that exit while we look are left out."""
    found: list[ProcessInfo] = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            info = read_process(int(entry.name), proc=proc)
            if info is not None:
                found.append(info)
    found.sort(key=lambda p: p.pid)
    return found


def maps_mention_libpython(pid: int, *, proc: Path = PROC) -> bool | None:
    """True when the process has libpython mapped (embedded interpreters); None if unreadable."""
    try:
        with open(proc / str(pid) / "maps", "rb") as handle:  # noqa: PTH123 - streamed, may be large
            return any(b"libpython" in line for line in handle)
    except OSError:
        return None


def looks_like_python(info: ProcessInfo, *, proc: Path = PROC) -> bool | None:
    """Whether py-spy can read this process: True, False, or None when we cannot tell."""
    if info.exe is not None and is_python_exe(info.exe):
        return True
    mapped = maps_mention_libpython(info.pid, proc=proc)
    if mapped:
        return True
    if info.exe is None or mapped is None:
        return None
    return False


def read_bytes(pid: int, name: str, *, proc: Path = PROC) -> bytes:
    """The raw bytes of `/proc/PID/<name>` (`cmdline`, `environ`); OSError when unreadable."""
    return (proc / str(pid) / name).read_bytes()


def read_status(pid: int | str, *, proc: Path = PROC) -> str:
    """`/proc/PID/status` text ("self" for this process); "" when unreadable."""
    return procread.read_status(pid, str(proc))


def read_wchan(pid: int, *, proc: Path = PROC) -> str:
    """The kernel function a blocked process sleeps in (`/proc/PID/wchan`); see `probe`."""
    return procread.read_wchan(pid, str(proc))


def status_copy(pid: int, *, proc: Path = PROC) -> str:
    """`/proc/PID/status` as evidence, with its wchan line: `procread.status_copy`, the code the
    remote probe runs on each host."""
    return procread.status_copy(pid, str(proc))
