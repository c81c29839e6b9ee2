"""Instance signals: which processes belong to one server, one job, one launcher.

Ranks are numbered within an instance, so two servers on one host both have a rank 0.
This module reads, per PID, what the evidence says about the instance a process
belongs to, and partitions the rank processes `ranks.py` gathered by it. Signals,
strongest first:

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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol, TypeVar

from reporter.analysis.clues import sorted_dims
from reporter.model import Bundle, CommandLine, EventKind, ProcessDump

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
    """What the evidence says about one process, (host, PID), besides its stacks."""

    pid: int
    host: str = ""
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


Proc = tuple[str, int]
"""A process: (host, PID); host "" where the evidence does not name one."""


def process_facts(bundle: Bundle) -> dict[Proc, ProcessFacts]:
    """Per (host, PID): parent, parent command line, environ and command line from every
    source. An environment file's host is the host of the file (`EvidenceFile.host`)."""
    host_of = {f.path: f.host for f in bundle.files if f.host}
    ppid: dict[Proc, int] = {}
    parent_cmd: dict[Proc, str] = {}
    # Dumps that name their parent's command line, for the command lines below: one pass
    # over thousands of dumps, most of which name no parent.
    parents: list[ProcessDump] = []
    for dump in bundle.dumps:
        if dump.parent_pid is not None and dump.parent_cmdline:
            parents.append(dump)
        if dump.pid is None:
            continue
        if dump.parent_pid is not None:
            ppid.setdefault((dump.host, dump.pid), dump.parent_pid)
        if dump.parent_cmdline:
            parent_cmd.setdefault((dump.host, dump.pid), dump.parent_cmdline)
    for note in bundle.manifest.processes:
        if note.ppid is not None:
            ppid.setdefault((note.host, note.pid), note.ppid)
    environ: dict[Proc, list[tuple[str, str]]] = {}
    for var in bundle.environment.variables:
        pid = pid_of_path(var.source.path)
        if pid is not None and var.name in RENDEZVOUS_VARS + IDENTITY_VARS:
            key = (host_of.get(var.source.path, ""), pid)
            environ.setdefault(key, []).append((var.name, var.value))
    cmdlines: dict[Proc, str] = {}
    for cmd in bundle.environment.cmdlines:
        pid = pid_of_path(cmd.source.path)
        if pid is not None:
            cmdlines.setdefault((host_of.get(cmd.source.path, ""), pid), _cmdline_text(cmd))
    for note in bundle.manifest.processes:
        if note.cmdline:
            cmdlines.setdefault((note.host, note.pid), note.cmdline)
    for dump in parents:
        if dump.parent_pid is not None and dump.parent_cmdline:
            cmdlines.setdefault((dump.host, dump.parent_pid), dump.parent_cmdline)
    titles = {(n.host, n.pid): n.title for n in bundle.manifest.processes if n.title}
    keys = set(ppid) | set(environ) | set(cmdlines) | set(parent_cmd) | set(titles)
    out: dict[Proc, ProcessFacts] = {}
    for key in keys:
        host, pid = key
        parent = ppid.get(key)
        out[key] = ProcessFacts(
            pid=pid,
            host=host,
            ppid=parent,
            parent_cmdline=parent_cmd.get(key)
            or (cmdlines.get((host, parent)) if parent else None),
            environ=tuple(environ.get(key, ())),
            cmdline=cmdlines.get(key),
            title=titles.get(key),
        )
    return out


_UNIT_START = re.compile(r"^(\S+): main process started \(PID (\d+)\)")


def unit_pids(bundle: Bundle) -> dict[Proc, str]:
    """systemd units by (host, main PID), from the `systemctl show` evidence's start events."""
    host_of = {f.path: f.host for f in bundle.files if f.host}
    out: dict[Proc, str] = {}
    for event in bundle.events:
        if event.kind is EventKind.SERVICE:
            match = _UNIT_START.match(event.text)
            if match is not None:
                out[(host_of.get(event.source.path, ""), int(match.group(2)))] = match.group(1)
    return out


def signals(facts: ProcessFacts | None, units: dict[Proc, str] | None = None) -> dict[str, str]:
    """The instance signals of one process, by kind (`launcher`, `rendezvous`, `port`).

    PID 1 (init, or a container's entry point) adopts orphans: it is no launcher. A
    launcher that is a systemd unit's main process is named by the unit.
    """
    out: dict[str, str] = {}
    if facts is None:
        return out
    if facts.ppid is not None and facts.ppid > 1:
        unit = (units or {}).get((facts.host, facts.ppid))
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


# -- partitioning rank processes by instance --------------------------------------------------


class Claimant(Protocol):
    """A rank process before ranks are final: its host, PID, signals and claimed rank or dims."""

    @property
    def pid(self) -> int | None: ...

    @property
    def host(self) -> str: ...

    @property
    def signals(self) -> Mapping[str, str]: ...

    @property
    def rank(self) -> int | None: ...

    @property
    def dims(self) -> Mapping[str, int]: ...


C = TypeVar("C", bound=Claimant)

SIGNAL_ORDER = ("manifest", "launcher", "rendezvous", "port")
_SIGNAL_WORDS = {
    "manifest": "the manifest's instance",
    "launcher": "parent process (launcher)",
    "rendezvous": "torch.distributed rendezvous in the environment",
    "port": "ports in the command line",
}


def _claim(cand: Claimant) -> object:
    """What a rank candidate claims before radix ranks are final: its rank, or its dims."""
    if cand.rank is not None:
        return cand.rank
    dims = cand.dims
    # One dim (`TP3`) is the usual title of every rank of a big job: nothing to sort.
    return tuple(dims.items()) if len(dims) == 1 else tuple(sorted(dims.items()))


def _claim_text(cand: Claimant) -> str:
    if cand.rank is not None:
        return f"rank {cand.rank}"
    return " ".join(f"{d}{n}" for d, n in sorted_dims(cand.dims))


def split_by_signal(cands: list[C]) -> tuple[list[tuple[str, str, list[C]]], str]:
    """Partition rank candidates by the strongest signal that tells instances apart.

    A signal kind is used when it gives at least two values; candidates without it
    stay in one extra part. Returns (label, how, members) parts and the kind used."""
    for kind in SIGNAL_ORDER:
        values = {c.signals[kind] for c in cands if kind in c.signals}
        if len(values) < 2:
            continue
        parts: dict[str, list[C]] = {}
        for cand in cands:
            parts.setdefault(cand.signals.get(kind, ""), []).append(cand)
        word = _SIGNAL_WORDS[kind]
        out = [
            (
                f"{kind} {value}" if value else f"processes without a {kind} signal",
                f"separated by {word}",
                members,
            )
            for value, members in parts.items()
        ]
        return out, kind
    return [("", "", cands)], ""


def split_collisions(
    label: str, how: str, cands: list[C], warnings: list[str]
) -> list[tuple[str, str, list[C], bool]]:
    """Split one part further when several PIDs claim one rank: nothing told them apart,
    so they are kept apart by PID, the k-th lowest PID of each rank going to part k
    (one launcher starts its ranks one after the other, so their PIDs run together)."""
    by_claim: dict[object, list[C]] = {}
    for cand in cands:
        by_claim.setdefault(_claim(cand), []).append(cand)
    # Processes, not PIDs: two containers' processes can both be PID 1.
    depth = max(
        (sum(1 for c in group if c.pid is not None) for group in by_claim.values()),
        default=0,
    )
    if depth < 2:
        return [(label, how, cands, False)]
    buckets: list[list[C]] = [[] for _ in range(depth)]
    for group in by_claim.values():
        with_pid = sorted((c for c in group if c.pid is not None), key=lambda c: c.pid or 0)
        for i, cand in enumerate(with_pid):
            buckets[i].append(cand)
        # PID-less dumps of a claimed rank (faulthandler) cannot be told apart: first part.
        buckets[0].extend(c for c in group if c.pid is None)
    shared = sorted(
        _claim_text(group[0])
        for group in by_claim.values()
        if sum(1 for c in group if c.pid is not None) > 1
    )
    pids = ", ".join(
        f"{_claim_text(g[0])}: PIDs {', '.join(str(c.pid) for c in g if c.pid is not None)}"
        for g in by_claim.values()
        if sum(1 for c in g if c.pid is not None) > 1
    )
    warnings.append(
        f"{len(shared)} rank identities are claimed by several processes ({pids}) and nothing "
        "in the evidence tells their servers or jobs apart; they are kept apart by PID and "
        "split into instances by PID order, which is a guess. Tip: dump with "
        "`py-spy dump --subprocesses` of each launcher, or use `report collect`, which "
        "records the process tree"
    )
    where = f"{label}, " if label else ""
    return [
        (
            f"{where}PID group {i + 1}",
            "split by PID order: nothing in the evidence separated these processes",
            bucket,
            True,
        )
        for i, bucket in enumerate(buckets)
        if bucket
    ]


Part = tuple[str, str, list[C], bool]
"""One instance before numbering: (label, how it was separated, members, ambiguous)."""


def partition(cands: list[C], warnings: list[str]) -> list[Part[C]]:
    """The instances of the rank candidates: by host first, then by the strongest signal on
    each host, then by PID order where ranks still collide (`split_collisions`).

    With one host (or none named) that is all. With several, each host's parts are joined
    across hosts into jobs: one host's part joins a job that has no part from that host yet,
    whose ranks (or parallel coordinates) do not overlap its own and whose manifest instance
    and rendezvous do not disagree with its own. So a TP16 job over two nodes (ranks 0-7 and
    8-15, one `MASTER_ADDR:MASTER_PORT`) is one instance, and two 4-rank servers on two hosts
    (ranks 0-3 each) stay two. The launcher and ports are per host and never join or split
    across hosts.
    """
    hosts = list(dict.fromkeys(c.host for c in cands))
    per_host: list[tuple[str, Part[C]]] = []
    for host in hosts:
        members = [c for c in cands if c.host == host] if len(hosts) > 1 else cands
        parts, _ = split_by_signal(members)
        for label, how, group in parts:
            per_host.extend((host, p) for p in split_collisions(label, how, group, warnings))
    if len(hosts) < 2:
        return [part for _, part in per_host]
    jobs: list[list[tuple[str, Part[C]]]] = []
    for host, part in per_host:
        for job in jobs:
            if _joins(job, host, part[2]):
                job.append((host, part))
                break
        else:
            jobs.append([(host, part)])
    return [_job_part(job) for job in jobs]


# Signals that hold across hosts: the operator's instance name and the torch rendezvous.
_GLOBAL_SIGNALS = ("manifest", "rendezvous")


def _joins(job: list[tuple[str, Part[C]]], host: str, members: list[C]) -> bool:
    if any(h == host for h, _ in job):
        return False
    theirs = [c for _, part in job for c in part[2]]
    if {_claim(c) for c in theirs} & {_claim(c) for c in members}:
        return False
    for kind in _GLOBAL_SIGNALS:
        mine = {c.signals[kind] for c in members if kind in c.signals}
        other = {c.signals[kind] for c in theirs if kind in c.signals}
        if mine and other and mine != other:
            return False
    return True


def _job_part(job: list[tuple[str, Part[C]]]) -> Part[C]:
    """One instance made of parts on one or more hosts, labelled with its hosts."""
    hosts = [h or "(host not named)" for h, _ in job]
    members = [c for _, part in job for c in part[2]]
    ambiguous = any(part[3] for _, part in job)
    if len(job) == 1:
        label, how = job[0][1][0], job[0][1][1]
        where = f"host {hosts[0]}"
        return (
            f"{where}, {label}" if label else where,
            how or "separated by host",
            members,
            ambiguous,
        )
    return (
        "hosts " + ", ".join(hosts),
        "one job across hosts: rank numbers do not overlap",
        members,
        ambiguous,
    )
