"""Instance signals: which processes belong to one server, one job, one launcher.

Ranks are numbered within an instance, so two servers on one host both have a rank 0.
This module reads, per PID, what the evidence says about the instance a process
belongs to; `ranks.py` partitions the rank processes with it. Signals, strongest first:

- `launcher`: the parent PID, from a `--subprocesses` dump's `Parent Process` line or
  the process tree `report collect` recorded (`[[collect.target]]` ppid);
- `rendezvous`: `MASTER_ADDR:MASTER_PORT` (or `TORCHELASTIC_RUN_ID`) from the process's
  environ evidence (`env/pid4711.environ`);
- `port`: `--port`, `--dist-init-addr`, `--master-port`, `--rdzv-endpoint`, `--host` in
  the command line of the process or its parent.

Example: two SGLang servers whose schedulers are all titled `sglang::scheduler_TP0..1`,
dumped with `--subprocesses` from each launcher, give two `launcher` values
(`PID 4700 (python -m sglang.launch_server --port 30000)` and `PID 5100 (...)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from reporter.model import Bundle, CommandLine, EventKind

# A PID in an environment file's name: `env/pid4711.environ`, `4711.environ`, `proc/4711/environ`.
_PID_IN_PATH = re.compile(r"(?:^|[/_.-])(?:pid[-_]?)?(\d{2,8})(?=$|[/_.-])", re.IGNORECASE)
_PORT_INLINE = re.compile(
    r"(--(?:port|dist[-_]init[-_]addr|master[-_]port|rdzv[-_]endpoint|rdzv[-_]id))[=\s]+(\S+)"
)
# Environment variables that tell which torch.distributed job a process joined.
RENDEZVOUS_VARS = ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")
IDENTITY_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessFacts:
    """What the evidence says about one PID besides its stacks."""

    pid: int
    ppid: int | None = None
    parent_cmdline: str | None = None
    environ: tuple[tuple[str, str], ...] = ()
    cmdline: str | None = None
    title: str | None = None
    """The process title `report collect` recorded (for a process that has no dump)."""

    def env(self, name: str) -> str | None:
        """The value of one environment variable, if recorded."""
        return next((v for k, v in self.environ if k == name), None)


def pid_of_path(path: str) -> int | None:
    """The PID an evidence file's name gives (`env/pid4711.environ` -> 4711), if any."""
    parts = PurePosixPath(path).parts
    for part in reversed(parts):
        match = _PID_IN_PATH.search(part if part != parts[-1] else "." + part)
        if match is not None:
            return int(match.group(1))
    return None


def ports_of(text: str | None) -> str | None:
    """The instance-separating options of a command line (`--port=30000 --host=0.0.0.0`)."""
    if not text:
        return None
    found = [f"{m.group(1)}={m.group(2)}" for m in _PORT_INLINE.finditer(text)]
    return " ".join(sorted(set(found))) or None


def _cmdline_text(cmd: CommandLine) -> str:
    return " ".join(cmd.argv)


def process_facts(bundle: Bundle) -> dict[int, ProcessFacts]:
    """Per PID: parent, parent command line, environ and command line from every source."""
    ppid: dict[int, int] = {}
    parent_cmd: dict[int, str] = {}
    for dump in bundle.dumps:
        if dump.pid is None:
            continue
        if dump.parent_pid is not None:
            ppid.setdefault(dump.pid, dump.parent_pid)
        if dump.parent_cmdline:
            parent_cmd.setdefault(dump.pid, dump.parent_cmdline)
    for note in bundle.manifest.processes:
        if note.ppid is not None:
            ppid.setdefault(note.pid, note.ppid)
    environ: dict[int, list[tuple[str, str]]] = {}
    for var in bundle.environment.variables:
        pid = pid_of_path(var.source.path)
        if pid is not None and var.name in RENDEZVOUS_VARS + IDENTITY_VARS:
            environ.setdefault(pid, []).append((var.name, var.value))
    cmdlines: dict[int, str] = {}
    for cmd in bundle.environment.cmdlines:
        pid = pid_of_path(cmd.source.path)
        if pid is not None:
            cmdlines.setdefault(pid, _cmdline_text(cmd))
    for note in bundle.manifest.processes:
        if note.cmdline:
            cmdlines.setdefault(note.pid, note.cmdline)
    for dump in bundle.dumps:
        if dump.parent_pid is not None and dump.parent_cmdline:
            cmdlines.setdefault(dump.parent_pid, dump.parent_cmdline)
    titles = {note.pid: note.title for note in bundle.manifest.processes if note.title}
    pids = set(ppid) | set(environ) | set(cmdlines) | set(parent_cmd) | set(titles)
    out: dict[int, ProcessFacts] = {}
    for pid in pids:
        parent = ppid.get(pid)
        out[pid] = ProcessFacts(
            pid=pid,
            ppid=parent,
            parent_cmdline=parent_cmd.get(pid) or (cmdlines.get(parent) if parent else None),
            environ=tuple(environ.get(pid, ())),
            cmdline=cmdlines.get(pid),
            title=titles.get(pid),
        )
    return out


_UNIT_START = re.compile(r"^(\S+): main process started \(PID (\d+)\)")


def unit_pids(bundle: Bundle) -> dict[int, str]:
    """systemd units by main PID, from the `systemctl show` evidence's start events."""
    out: dict[int, str] = {}
    for event in bundle.events:
        if event.kind is EventKind.SERVICE:
            match = _UNIT_START.match(event.text)
            if match is not None:
                out[int(match.group(2))] = match.group(1)
    return out


def signals(facts: ProcessFacts | None, units: dict[int, str] | None = None) -> dict[str, str]:
    """The instance signals of one process, by kind (`launcher`, `rendezvous`, `port`).

    PID 1 (init, or a container's entry point) adopts orphans: it is no launcher. A
    launcher that is a systemd unit's main process is named by the unit.
    """
    out: dict[str, str] = {}
    if facts is None:
        return out
    if facts.ppid is not None and facts.ppid > 1:
        unit = (units or {}).get(facts.ppid)
        what = f"{unit} (PID {facts.ppid})" if unit else f"PID {facts.ppid}"
        ports = ports_of(facts.parent_cmdline)
        out["launcher"] = f"{what} ({ports})" if ports else what
    rendezvous = [f"{k}={facts.env(k)}" for k in RENDEZVOUS_VARS if facts.env(k)]
    if rendezvous:
        out["rendezvous"] = " ".join(rendezvous)
    ports = ports_of(facts.cmdline) or ports_of(facts.parent_cmdline)
    if ports:
        out["port"] = ports
    return out
