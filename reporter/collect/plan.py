"""What `report collect` will do: the request, which processes it targets, when, and file names.

Pure functions over `ProcessInfo` values and the request; nothing here reads
`/proc`, runs a program or opens a socket. The session (`session.py`) carries
the plan out.

Selection, by example: `--match 'sglang::scheduler_TP'` over the processes of an
SGLang host picks the four `sglang::scheduler_TP{r}` schedulers and leaves out the
launcher, the detokenizer, `tail -f sglang.log` (not Python: skipped, with the
reason) and `report collect` itself with its ancestors (a shell whose command line
holds the pattern). `--children-of 4242` limits the search to the descendants of
PID 4242; `--pid` adds processes by number, Python or not.

Bundle layout written by the session::

    bundle.toml                     manifest ([collect] says how and what was skipped)
    pyspy/pid4711-s0.txt            py-spy dump of PID 4711, snapshot 0 (or its error text)
    pyspy/pid4711-s0-nonblocking.txt  --nonblocking dump when a --blocking one could not
                                    suspend the process (stopped) or timed out
    proc/pid4711-s0.status          /proc/4711/status after snapshot 0 (and a Wchan: line)
    proc/pid4711-s0.threads         each thread's state, wchan and CPU ticks after snapshot 0
    proc/pid4711-s0.fds             the fd table as link targets (pipe:[N], socket:[N], paths)
    proc/pid4711-s0.sockets         its rows of /proc/4711/net/{tcp,tcp6,unix}
    proc/pid4711-s0.family          PPid, children (zombies too), start time, uid
    logs/<name>.log                 the tail of each --log file
    logs/journal-<unit>.log         the journal of the targets' systemd unit since it started
    logs/kernel.log                 dmesg since the earliest target started (OOM kills, hung tasks)
    env/pid4711.cmdline             /proc/4711/cmdline (secret option values redacted)
    env/pid4711.environ             /proc/4711/environ (secret values redacted)
    env/pid4711.packages.txt        the target interpreter's packages (name==version)
    metrics/scrapes.prom            every /metrics scrape after a `# scrape at <time>` line
    metrics/prometheus/q1-<slug>.json   query_range answers
    systemd/<unit>.txt              `systemctl show <unit>`
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from reporter.collect.hostprocs import ancestors_of, descendants_of, nearest_launchers
from reporter.collect.httpread import Limits
from reporter.collect.procfs import ProcessInfo
from reporter.core.errors import UsageError
from reporter.core.times import parse_duration

DEFAULT_SNAPSHOTS = 3
DEFAULT_INTERVAL = 1.0
DEFAULT_TIMEOUT = 10.0
DEFAULT_PARALLEL = 4
DEFAULT_SCRAPE_EVERY = 2.0
DEFAULT_SCRAPE_FOR = 60.0
# The largest HTTP answer (decoded), copied file or helper output a collection keeps.
DEFAULT_MAX_SIZE = 64 << 20
DEFAULT_RANGE = 3600.0
DEFAULT_LOG_LINES = 5000
DEFAULT_LOG_BYTES = 4 << 20
# Prometheus refuses more than 11,000 points per series; stay well below.
MAX_POINTS = 1000
_SLUG_RE = re.compile(r"[^A-Za-z0-9]+")
# Title prefixes that name the serving framework: `sglang::scheduler_TP0`, `VLLM::Worker_TP0`.
_FRAMEWORK_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)::")


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectRequest:
    """Everything `report collect` was asked to do (the CLI's options, checked by `validate`)."""

    out: Path
    pids: tuple[int, ...] = ()
    match: str | None = None
    children_of: int | None = None
    snapshots: int = DEFAULT_SNAPSHOTS
    interval: float = DEFAULT_INTERVAL
    with_locals: bool = False
    blocking: bool = False
    metrics_url: str | None = None
    scrape_every: float = DEFAULT_SCRAPE_EVERY
    scrape_for: float = DEFAULT_SCRAPE_FOR
    prometheus: str | None = None
    queries: tuple[str, ...] = ()
    range_seconds: float = DEFAULT_RANGE
    step_seconds: float | None = None
    units: tuple[str, ...] = ()
    raw_env: bool = False
    timeout: float = DEFAULT_TIMEOUT
    parallel: int = DEFAULT_PARALLEL
    pyspy: str | None = None
    """The py-spy executable; None: the one on PATH."""
    title: str = ""
    wedge_window: float | None = None
    """Written as `[wedge] window` when given (a short collection needs a short window)."""
    command: str = ""
    """The command line as typed, for the manifest."""
    torch_debug: str | None = None
    """Base URL of torch's debug server (rank 0's frontend): stacks, py-spy, FR traces."""
    fr_dirs: tuple[Path, ...] = ()
    """Folders holding Flight Recorder dumps a watchdog already wrote."""
    remote: RemoteRequest | None = None
    """Capture on other hosts (`--ssh`, `--exec`) instead of this one."""
    max_size: int = DEFAULT_MAX_SIZE
    """The largest HTTP answer (after decoding), copied file or helper output kept."""
    logs: tuple[str, ...] = ()
    """`--log`: log files (globs allowed) whose tail is kept."""
    log_lines: int = DEFAULT_LOG_LINES
    """The most lines kept of each log and journal."""
    log_bytes: int = DEFAULT_LOG_BYTES
    """The most bytes kept of each log and journal."""
    journal: bool = True
    """Keep the journal of the targets' systemd services (and of each `--unit`)."""
    kernel_log: bool = True
    """Keep the kernel's log since the earliest target started (OOM kills, hung tasks)."""

    @property
    def limits(self) -> Limits:
        """The bounds of every HTTP request: `timeout` for the whole request, `max_size`."""
        return Limits(deadline=self.timeout, max_bytes=self.max_size)

    @property
    def wants_processes(self) -> bool:
        """True when some process selector was given."""
        return bool(self.pids or self.match is not None or self.children_of is not None)


DEFAULT_REMOTE_PARALLEL = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteRequest:
    """Where and how to capture remotely (`reporter.collect.remote`).

    `hosts` are `[USER@]HOST[:PORT]` for ssh, or names put into `exec_template`'s `{host}`.
    `parallel` hosts at once; `deadline` seconds per host (None: from the snapshots,
    interval and timeout, `remotehosts.host_deadline`)."""

    hosts: tuple[str, ...]
    exec_template: str | None = None
    python: str = "python3"
    """The remote interpreter, as shell words (`python3`, `/usr/bin/python3`, `sudo -n python3`)."""
    pyspy: str | None = None
    """py-spy on the remote side; None: looked for there (PATH, beside Python, the targets' venv)."""
    parallel: int = DEFAULT_REMOTE_PARALLEL
    deadline: float | None = None
    ssh_options: tuple[str, ...] = ()
    """`-o` options for ssh (`ProxyJump=bastion`); ssh's own config, agent and known_hosts apply."""
    ssh_config: Path | None = None
    """`ssh -F FILE`: another ssh config file."""
    exec_env: tuple[str, ...] = ()
    """Variables passed to the engine (ssh, kubectl, srun) beside PATH, HOME, LANG and
    SSH_AUTH_SOCK (`--exec-env KUBECONFIG`); the rest of our environment is not."""


def validate(request: CollectRequest) -> None:
    """Raise `UsageError` for a request that cannot be carried out as asked."""
    if not (
        request.wants_processes
        or request.logs
        or request.metrics_url
        or request.prometheus
        or request.units
        or request.torch_debug
        or request.fr_dirs
    ):
        raise UsageError(
            "nothing to collect",
            tip="name processes (--pid, --match, --children-of), --log, --metrics-url, "
            "--prometheus, --unit, --torch-debug or --fr-dir",
        )
    for folder in request.fr_dirs:
        if not folder.is_dir():
            raise UsageError(
                f"--fr-dir {folder}: not a folder",
                tip="name the folder the watchdog wrote its dumps to",
            )
    if request.torch_debug is not None and not re.match(r"https?://", request.torch_debug):
        raise UsageError(
            f"--torch-debug {request.torch_debug!r}: not an http(s) URL",
            tip="give rank 0's debug server, e.g. http://127.0.0.1:25999",
        )
    if request.match is not None:
        try:
            re.compile(request.match)
        except re.error as err:
            raise UsageError(
                f"--match {request.match!r}: not a regular expression ({err})"
            ) from err
    checks: list[tuple[bool, str]] = [
        (request.snapshots >= 1, "--snapshots must be at least 1"),
        (request.interval >= 0, "--interval must not be negative"),
        (request.timeout > 0, "--timeout must be positive"),
        (request.max_size >= 1024, "--max-size must be at least 1K"),
        (request.parallel >= 1, "--parallel must be at least 1"),
        (request.scrape_every > 0, "--scrape-every must be positive"),
        (request.scrape_for >= 0, "--scrape-for must not be negative"),
        (request.range_seconds > 0, "--range must be positive"),
        (request.step_seconds is None or request.step_seconds > 0, "--step must be positive"),
        (
            request.wedge_window is None or request.wedge_window > 0,
            "--wedge-window must be positive",
        ),
        (all(p > 0 for p in request.pids), "--pid takes positive process ids"),
        (request.log_lines >= 1, "--log-lines must be at least 1"),
        (request.log_bytes >= 1024, "--log-size must be at least 1K"),
    ]
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
    if request.queries and not request.prometheus:
        raise UsageError("--query needs --prometheus URL", tip="name the Prometheus server too")
    if request.prometheus and not request.queries:
        raise UsageError(
            "--prometheus needs at least one --query",
            tip="e.g. --query 'sglang:num_queue_reqs' --query 'rate(sglang:generation_tokens_total[1m])'",
        )
    for option, url in (
        ("--metrics-url", request.metrics_url),
        ("--prometheus", request.prometheus),
    ):
        if url is not None:
            parts = urlsplit(url)
            if parts.scheme not in {"http", "https"} or not parts.netloc:
                raise UsageError(
                    f"{option} {url!r} is not an http(s) URL",
                    tip="write it like http://127.0.0.1:30000/metrics",
                )


# -- selection -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A process to collect from, and why it was picked (`--pid`, `--match`, `--children-of`)."""

    process: ProcessInfo
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Passed:
    """A process the selectors named but the collector leaves alone, and why."""

    process: ProcessInfo
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """The targets (by PID) and the processes passed over (by PID)."""

    targets: tuple[Target, ...]
    passed: tuple[Passed, ...] = ()


def descendants(processes: Iterable[ProcessInfo], pid: int) -> set[int]:
    """PIDs of every process below `pid` in the parent tree (not `pid` itself)."""
    return descendants_of({p.pid: p.ppid for p in processes}, pid)


def ancestors(processes: Iterable[ProcessInfo], pid: int) -> set[int]:
    """PIDs above `pid` up to init (not `pid` itself)."""
    return ancestors_of({p.pid: p.ppid for p in processes}, pid)


def launchers(processes: Iterable[ProcessInfo], targets: Sequence[int]) -> dict[int, int]:
    """Per target PID, its launcher: the nearest ancestor that is not itself a target (the
    server, job or engine process that started it). PID 1 and init-like roots are none."""
    return nearest_launchers({p.pid: p.ppid for p in processes}, targets)


def select_targets(
    processes: Sequence[ProcessInfo],
    request: CollectRequest,
    *,
    own_pid: int,
    is_python: Callable[[ProcessInfo], bool | None],
) -> Selection:
    """Apply `--pid`, `--match` and `--children-of` to a process list.

    `--match` and `--children-of` together mean "descendants that match". The
    collector and its ancestors (the shell that started it) are never found by a
    pattern, and the collector is never a target. Processes found
    by a pattern must be Python (`is_python` not False) and alive; `--pid` targets
    are taken as given. Raises `UsageError` for a `--pid` or `--children-of` PID that
    does not exist.
    """
    by_pid = {p.pid: p for p in processes}
    for pid in (*request.pids, *((request.children_of,) if request.children_of else ())):
        if pid not in by_pid:
            raise UsageError(f"no process with PID {pid}", tip="check the PID with `ps -ef`")
    mine = {own_pid} | ancestors(processes, own_pid)
    targets: dict[int, Target] = {}
    passed: dict[int, Passed] = {}
    for pid in request.pids:
        if pid == own_pid:
            raise UsageError(f"PID {pid} is report collect itself")
        targets[pid] = Target(process=by_pid[pid], reason="--pid")
    if request.match is not None or request.children_of is not None:
        pattern = re.compile(request.match) if request.match is not None else None
        pool: Iterable[ProcessInfo] = processes
        why = "--match"
        if request.children_of is not None:
            below = descendants(processes, request.children_of)
            pool = (p for p in processes if p.pid in below)
            why = "--children-of" if pattern is None else "--children-of + --match"
        for proc in pool:
            if proc.pid in targets or proc.pid in mine or not proc.argv:
                continue  # kernel threads have no command line
            if pattern is not None and not (
                pattern.search(proc.title) or pattern.search(proc.comm)
            ):
                continue
            if proc.zombie:
                passed[proc.pid] = Passed(
                    process=proc, reason="exited (zombie: its parent has not reaped it)"
                )
                continue
            if is_python(proc) is False:
                exe = proc.exe or "unknown executable"
                passed[proc.pid] = Passed(
                    process=proc, reason=f"not a Python process ({exe}); py-spy cannot read it"
                )
                continue
            targets[proc.pid] = Target(process=proc, reason=why)
    return Selection(
        targets=tuple(targets[pid] for pid in sorted(targets)),
        passed=tuple(passed[pid] for pid in sorted(passed)),
    )


def similar_titles(processes: Sequence[ProcessInfo], *, own: set[int], limit: int = 8) -> list[str]:
    """Titles of Python-looking processes, for the tip when a pattern matched nothing
    (whole: the caller masks secrets before it cuts them short)."""
    titles = sorted(
        {
            p.title
            for p in processes
            if p.pid not in own and p.argv and ("python" in p.title.lower() or "::" in p.title)
        }
    )
    return titles[:limit]


# -- schedules -----------------------------------------------------------------------------------


def offsets(count: int, every: float) -> tuple[float, ...]:
    """Start offsets (seconds from the first) of `count` events `every` seconds apart."""
    return tuple(k * every for k in range(count))


def scrape_count(every: float, span: float) -> int:
    """Scrapes in a window of `span` seconds, one every `every` seconds, both ends included."""
    return math.floor(span / every + 1e-9) + 1


def query_step(range_seconds: float, step: float | None = None) -> float:
    """The query_range step: as asked, else whole seconds giving at most `MAX_POINTS` points."""
    if step is not None:
        return step
    return float(max(1, math.ceil(range_seconds / MAX_POINTS)))


# -- names ---------------------------------------------------------------------------------------


def slug(text: str, *, limit: int = 40) -> str:
    """A file-name-safe form of `text`: `rate(sglang:x[1m])` -> `rate-sglang-x-1m`."""
    return _SLUG_RE.sub("-", text).strip("-")[:limit].strip("-") or "query"


def dump_path(pid: int, snapshot: int) -> str:
    """Bundle path of one py-spy dump. No rank in the name: the process title gives it."""
    return f"pyspy/pid{pid}-s{snapshot}.txt"


def proc_path(pid: int, snapshot: int, what: str) -> str:
    """Bundle path of one per-round `/proc` read: `threads`, `fds`, `sockets` or `family`."""
    return f"proc/pid{pid}-s{snapshot}.{what}"


def nonblocking_path(pid: int, snapshot: int) -> str:
    """Bundle path of the `--nonblocking` dump taken when the blocking one of `snapshot` failed."""
    return f"pyspy/pid{pid}-s{snapshot}-nonblocking.txt"


def env_path(pid: int, what: str) -> str:
    """Bundle path of one environment file: `cmdline`, `environ` or `packages.txt`."""
    return f"env/pid{pid}.{what}"


def query_path(index: int, query: str) -> str:
    """Bundle path of the answer to the `index`-th (1-based) query."""
    return f"metrics/prometheus/q{index}-{slug(query)}.json"


def unit_path(unit: str) -> str:
    """Bundle path of one `systemctl show` capture."""
    return f"systemd/{slug(unit, limit=80)}.txt"


def log_path(path: str, taken: set[str]) -> str:
    """Bundle path of the tail of one `--log` file: `logs/<name>.log`, made unique among
    `taken` (two `app.log` in two folders) with the folder's name, then a number."""
    pure = Path(path)
    name = pure.name[: -len(".log")] if pure.name.endswith(".log") else pure.name
    stem = slug(name, limit=80)
    candidates = [f"logs/{stem}.log", f"logs/{slug(pure.parent.name)}-{stem}.log"]
    for candidate in candidates:
        if candidate not in taken:
            return candidate
    number = 2
    while f"logs/{stem}-{number}.log" in taken:
        number += 1
    return f"logs/{stem}-{number}.log"


def journal_path(unit: str) -> str:
    """Bundle path of one unit's journal."""
    return f"logs/journal-{slug(unit, limit=80)}.log"


SCRAPES_PATH = "metrics/scrapes.prom"
KERNEL_LOG_PATH = "logs/kernel.log"


def framework(titles: Iterable[str]) -> str:
    """The serving framework named by the targets' titles (`sglang::scheduler_TP0` -> `sglang`)."""
    names = sorted({m.group(1).lower() for t in titles if (m := _FRAMEWORK_RE.match(t))})
    return names[0] if len(names) == 1 else ""


def seconds(text: str, *, option: str, allow_zero: bool = False) -> float:
    """A command-line duration (`0.5`, `30s`, `2m`, `1h`) in seconds; `UsageError` if not one."""
    value = parse_duration(text.strip())
    if value is None and allow_zero and text.strip() in {"0", "0s", "0.0"}:
        value = 0.0
    if value is None:
        raise UsageError(
            f"{option} {text!r} is not a duration", tip="write it like 0.5, 30s, 2m or 1h"
        )
    return value
