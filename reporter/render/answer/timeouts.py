"""Whether the wait ends on its own: collective timeouts and watchdogs, and where they were looked for.

Read from everything captured:

- command lines (`--watchdog-timeout 300`), parsed or raw: a `/proc/PID/cmdline` copy is
  NUL-separated, and a setproctitle title pads it with NULs and spaces;
- environments (`TORCH_NCCL_*TIMEOUT*`, `NCCL_TIMEOUT`, ...);
- `py-spy dump --locals` of the frames that set one up (`init_process_group(timeout=...)`);
- code excerpts that show such a call (`init_process_group(..., timeout=timedelta(seconds=900))`,
  `new_group(timeout=...)`);
- the Flight Recorder's entries (`timeout_ms`);
- logs: a timeout that already fired (gloo's `Timed out waiting 5000ms`, NCCL's watchdog).

Where nothing sets one, torch's own default applies to a torch.distributed collective: 30
minutes for gloo in every version, 10 minutes for NCCL since torch 2.2 (30 before), read
from the backend and version the evidence names (`library_default`). "No timeout found" is
said only where something was looked at (`captured`); without any, "not known".
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import wraps
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, TypeVar

from reporter.analysis.setupcalls import SETUP_CALL, code_timeouts
from reporter.core.times import clock
from reporter.model import Bundle, EventKind, FrOrigin, Local
from reporter.render.answer.records import Timeout
from reporter.render.answer.waits import dump_of

if TYPE_CHECKING:
    from reporter.analysis.result import Analysis

# Command-line options and environment variables that end a hung collective or kill a
# wedged server: SGLang's watchdog, torch's NCCL/gloo timeouts and heartbeat monitor.
_TIMEOUT_FLAG = re.compile(r"^--?[\w.-]*(timeout|watchdog)[\w.-]*$", re.IGNORECASE)
_TIMEOUT_IN_TEXT = re.compile(
    r"(?<![\w-])(--[\w.-]*(?:timeout|watchdog)[\w.-]*)(?:=|\s+)([^\s-][^\s]*)", re.IGNORECASE
)
_TIMEOUT_ENV = re.compile(
    r"^(TORCH_NCCL_\w*(TIMEOUT|HEARTBEAT|WATCHDOG)\w*|NCCL_TIMEOUT|TORCH_GLOO\w*TIMEOUT\w*"
    r"|GLOO_\w*TIMEOUT\w*|TORCH_DIST\w*TIMEOUT\w*|\w*WATCHDOG\w*|SGLANG_\w*DIST\w*TIMEOUT\w*"
    r"|VLLM_\w*(RPC_TIMEOUT|ENGINE_ITERATION_TIMEOUT)\w*)$"
)
# Frames whose `timeout` argument is the process group's collective timeout, or ends the
# wait itself (`monitored_barrier`).
_GROUP_SETUP = re.compile(
    r"(^|\.)(init_process_group|new_group|new_subgroups\w*|_new_process_group_helper"
    r"|init_distributed_environment|initialize_model_parallel|monitored_barrier)$"
)
_LOCALS = attrgetter("locals")
_FRAMES = attrgetter("frames")
_THREADS = attrgetter("threads")
_PARENT = attrgetter("parent_cmdline")
_CMDLINE = attrgetter("cmdline")
_R = TypeVar("_R")
# A process title (`sglang::scheduler_TP0`, `VLLM::Worker`) is not a command line.
_TITLE_ONLY = re.compile(r"^\S+::\S*$")
# `timedelta(seconds=900)`, `datetime.timedelta(minutes=30)`, `timedelta(0, 900)`.
_TIMEDELTA = re.compile(r"timedelta\((?P<args>[^()]*)\)")
_UNIT_SECONDS = {
    "weeks": 604800.0,
    "days": 86400.0,
    "hours": 3600.0,
    "minutes": 60.0,
    "seconds": 1.0,
    "milliseconds": 0.001,
    "microseconds": 0.000001,
}
# Log lines of a timeout that fired: gloo's, NCCL's watchdog, a blocking wait.
_FIRED = (
    re.compile(r"Timed out waiting (?P<ms>\d+)ms"),
    re.compile(r"Watchdog caught collective operation timeout.*?Timeout\(ms\)=(?P<ms>\d+)"),
    re.compile(r"ran for (?P<ms>\d+) milliseconds before timing out"),
    re.compile(r"timed out in blocking wait.*?Timeout\(ms\)=(?P<ms>\d+)"),
)
# The torch version and the backend, wherever the evidence names them.
_TORCH_VERSION = re.compile(r"\btorch\s*(?:==|=|\s)\s*v?(?P<v>\d+\.\d+(?:\.\d+)?(?:[+\w.-]*)?)")
_BACKEND_WORD = re.compile(r"\b(gloo|nccl)\b", re.IGNORECASE)
# torch's defaults (torch/distributed/constants.py; ProcessGroupNCCL since torch 2.2).
GLOO_DEFAULT_S = 1800.0
NCCL_DEFAULT_S = 600.0
NCCL_OLD_DEFAULT_S = 1800.0


def find_timeouts(bundle: Bundle) -> tuple[Timeout, ...]:
    """Collective timeouts and watchdogs in the evidence, each once: the ones that fired
    first (by time), then the ones set, sorted by name."""
    found: dict[tuple[str, str], str] = {}
    for cmdline in bundle.environment.cmdlines:
        for flag in cmdline.flags:
            if _TIMEOUT_FLAG.match(flag.name) and flag.value is not None:
                found.setdefault((flag.name, flag.value), str(cmdline.source))
    # Every match starts with `--`: most process titles have none, and when no command line
    # has one (asked of each distinct one at once), no dump is read.
    lines = {*map(_CMDLINE, bundle.dumps), *map(_PARENT, bundle.dumps)} - {None}
    for dump in bundle.dumps if "--" in "\0".join(lines) else ():
        for text in (dump.cmdline, dump.parent_cmdline):
            if not text or "--" not in text:
                continue
            for match in _TIMEOUT_IN_TEXT.finditer(cmdline_text(text)):
                found.setdefault((match.group(1), match.group(2)), str(dump.source))
    for var in bundle.environment.variables:
        if _TIMEOUT_ENV.match(var.name) and "DUMP" not in var.name:
            found.setdefault((var.name, var.value), str(var.source))
    for function, local, where in _setup_locals(bundle):
        if local.name == "timeout" and local.repr not in ("None", ""):
            found.setdefault((f"{function}(timeout=)", local.repr), where)
    for excerpt in bundle.excerpts:
        for call, value, line in code_timeouts(excerpt.lines, excerpt.start):
            name = f"{call}(timeout=) at {excerpt.path}:{line}"
            found.setdefault((name, value), str(excerpt.source))
    for trace in bundle.flight_recorder:
        for entry in trace.entries:
            if entry.timeout_ms and trace.origin is not FrOrigin.WATCHDOG_LOG:
                found.setdefault(("timeout_ms", str(entry.timeout_ms)), str(entry.source))
                break
    set_here = [
        Timeout(name=name, value=value, source=source, seconds=seconds_of(name, value))
        for (name, value), source in sorted(found.items())
    ]
    return (*fired(bundle), *set_here)


def shown_code_timeouts(analysis: Analysis) -> tuple[Timeout, ...]:
    """Timeouts passed in the code excerpts the report shows (cut from `source_root` or the
    frames' files): `init_process_group(timeout=timedelta(seconds=900)) at x.py:12`."""
    views = analysis.excerpts.excerpts if analysis.excerpts is not None else ()
    found: dict[tuple[str, str], str] = {}
    for view in views:
        for call, value, line in code_timeouts(view.lines, view.start):
            found.setdefault(
                (f"{call}(timeout=) at {view.path}:{line}", value), f"{view.path}:{line}"
            )
    return tuple(
        Timeout(name=name, value=value, source=source, seconds=seconds_of(name, value))
        for (name, value), source in sorted(found.items())
    )


def cmdline_text(text: str) -> str:
    """A command line as words: NULs (a `/proc/PID/cmdline` copy, setproctitle's padding)
    read as spaces, runs of blanks as one."""
    return " ".join(text.replace("\0", " ").split())


def seconds_of(name: str, value: str) -> float | None:
    """A timeout's length in seconds where its value says: `timedelta(minutes=15)`, a
    `*_ms` / `*MS*` name's milliseconds, or a plain number of seconds for an env var or
    flag whose name says timeout. None otherwise."""
    match = _TIMEDELTA.search(value)
    if match is not None:
        total = 0.0
        for position, arg in enumerate(a.strip() for a in match.group("args").split(",")):
            if not arg:
                continue
            key, eq, number = arg.partition("=")
            unit = key.strip() if eq else ("days", "seconds", "microseconds")[min(position, 2)]
            try:
                total += float(number if eq else key) * _UNIT_SECONDS[unit]
            except (KeyError, ValueError):
                return None
        return total
    try:
        number = float(value)
    except ValueError:
        return None
    if name.lower().endswith(("_ms", "ms")) or "MS" in name:
        return number / 1000
    return number if "timeout" in name.lower() else None


def fired(bundle: Bundle) -> list[Timeout]:
    """Timeouts the logs say fired, earliest first, each log line once."""
    out: list[Timeout] = []
    seen: set[str] = set()
    for event in sorted(bundle.events, key=lambda e: e.at):
        if event.kind is not EventKind.LOG:
            continue
        for pattern in _FIRED:
            match = pattern.search(event.text)
            if match is None:
                continue
            key = match.group(0)
            if key in seen:
                break
            seen.add(key)
            ms = int(match.group("ms"))
            out.append(
                Timeout(
                    name=key,
                    value=str(ms),
                    source=str(event.source),
                    kind="fired",
                    seconds=ms / 1000,
                    at=f"{clock(event.at)[:8]} UTC",
                )
            )
            break
    for trace in bundle.flight_recorder:
        if trace.origin is not FrOrigin.WATCHDOG_LOG:
            continue
        for entry in trace.entries:
            if not entry.timeout_ms:
                continue
            where = f"rank {trace.rank}" if trace.rank is not None else "a rank"
            key = f"NCCL watchdog: {where}'s {entry.op} #{entry.seq_id} timed out"
            if key in seen:
                continue
            seen.add(key)
            when = trace.captured_at
            out.append(
                Timeout(
                    name=key,
                    value=str(entry.timeout_ms),
                    source=str(entry.source),
                    kind="fired",
                    seconds=entry.timeout_ms / 1000,
                    at=f"{clock(when)[:8]} UTC" if when is not None else "",
                )
            )
    return out


def library_default(bundle: Bundle, analysis: Analysis) -> Timeout | None:
    """torch's own collective timeout for the backend and version in the evidence, when
    the waits are torch.distributed collectives; None when they are not (or not known).

    The backend comes from `--locals` (`backend='gloo'`), code excerpts (`backend="nccl"`),
    native frames (`gloo::`, `ProcessGroupNCCL`), the manifest's notes, and a CPU-only
    torch build (`+cpu`: no NCCL); the version from the manifest or `pip freeze`."""
    shown = _torch_collectives(analysis)
    if not shown:
        return None
    version, version_source = torch_version(bundle)
    backend, backend_source = _backend(bundle, analysis, version)
    # Cited: where the backend is said (`--locals`, code), else the dump that shows the
    # torch collective; the manifest is named in the words (it has no line to cite).
    source = backend_source if backend_source not in ("", "bundle.toml") else shown
    major_minor = _major_minor(version)
    said = " (bundle.toml)" if "bundle.toml" in (version_source, backend_source) else ""
    which = f" in torch {version}{said}" if version else ""
    if backend == "gloo":
        return Timeout(
            name="torch's gloo default",
            value=f"30 min{which}",
            source=source,
            kind="default",
            seconds=GLOO_DEFAULT_S,
        )
    if backend == "nccl":
        old = major_minor is not None and major_minor < (2, 2)
        before = "" if major_minor is not None else "; 30 min before torch 2.2"
        return Timeout(
            name="torch's NCCL default",
            value=f"{'30' if old else '10'} min{which or '; torch version not known' + before}",
            source=source,
            kind="default",
            seconds=NCCL_OLD_DEFAULT_S if old else NCCL_DEFAULT_S,
        )
    return Timeout(
        name="torch's default timeout",
        value=f"30 min for gloo, 10 min for NCCL since torch 2.2{which}; the backend is not "
        "in the evidence",
        source=source,
        kind="default",
        seconds=None,
    )


def _torch_collectives(analysis: Analysis) -> str:
    """The dump (`file:line`) of a process waiting in a torch.distributed call (by its
    frames' files), or "" when none does."""
    for cls in analysis.classes:
        if not cls.collective:
            continue
        if any("torch/distributed" in (f.file or "") for f in cls.frames):
            return dump_of(analysis, cls) or "the stacks"
    return ""


def torch_version(bundle: Bundle) -> tuple[str, str]:
    """(torch's version, where it is said): `pip freeze`, then the manifest's `version` and
    notes; ("", "") when the evidence does not say."""
    for package in bundle.environment.packages:
        if package.name.lower() == "torch":
            return package.version, str(package.source)
    texts = [bundle.manifest.version, *(v for _, v in bundle.manifest.fields)]
    for text in texts:
        match = _TORCH_VERSION.search(text)
        if match is not None:
            return match.group("v"), "bundle.toml"
    return "", ""


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _backend(bundle: Bundle, analysis: Analysis, version: str) -> tuple[str, str]:
    """("gloo" | "nccl" | "", where it is said)."""
    for _, local, where in _setup_locals(bundle):
        word = _BACKEND_WORD.search(local.repr) if local.name == "backend" else None
        if word:
            return word.group(1).lower(), where
    for excerpt in bundle.excerpts:
        text = "\n".join(excerpt.lines)
        match = re.search(r"backend\s*=\s*['\"](gloo|nccl)['\"]", text, re.IGNORECASE)
        if match:
            return match.group(1).lower(), str(excerpt.source)
    for cls in analysis.classes:
        names = " ".join(f.function for f in cls.frames)
        if "ProcessGroupNCCL" in names or "nccl" in names.lower():
            return "nccl", ""
        if "gloo::" in names or "ProcessGroupGloo" in names:
            return "gloo", ""
    for _, value in bundle.manifest.fields:
        words = {w.lower() for w in _BACKEND_WORD.findall(value)}
        if len(words) == 1:
            return words.pop(), "bundle.toml"
    if "+cpu" in version:
        # A CPU-only build has no NCCL: its collectives run on gloo.
        return "gloo", "bundle.toml"
    return "", ""


def _setup_locals(bundle: Bundle) -> Iterator[tuple[str, Local, str]]:
    """(function, local, thread's source) for each `--locals` value of a frame that sets up
    a process group (`_GROUP_SETUP`)."""
    for dump in bundle.dumps if _any_locals(bundle) else ():
        for thread in dump.threads:
            for frame in filter(_LOCALS, thread.frames):
                if _GROUP_SETUP.search(frame.function):
                    for local in frame.locals:
                        yield frame.short_function, local, str(thread.source)


def _per_bundle(compute: Callable[[Bundle], _R]) -> Callable[[Bundle], _R]:
    """`compute`, answered once for the bundle asked last (by identity: the answer's
    composer asks `captured` three times and `_any_locals` twice of one bundle, and
    comparing bundles would cost more than the answer). The bundle is held by a weak
    reference: a long-running `report watch` does not keep a round's bundle alive."""
    last: list[tuple[weakref.ref[Bundle], _R]] = []

    @wraps(compute)
    def ask(bundle: Bundle) -> _R:
        if last and last[0][0]() is bundle:
            return last[0][1]
        answer = compute(bundle)
        last[:] = [(weakref.ref(bundle), answer)]
        return answer

    return ask


@_per_bundle
def _any_locals(bundle: Bundle) -> bool:
    """Whether any frame shows `--locals`, by C-level iteration. The parser gives the
    threads that show one stack (a class's ranks, a rank's snapshots) one tuple of
    frames, so each distinct tuple is read once: 2,600 of 49,000 at 4,096 ranks."""
    stacks = list(map(_FRAMES, chain.from_iterable(map(_THREADS, bundle.dumps))))
    distinct = dict(zip(map(id, stacks), stacks, strict=True)).values()
    return any(map(_LOCALS, chain.from_iterable(distinct)))


@_per_bundle
def captured(bundle: Bundle) -> tuple[str, ...]:
    """What timeouts were looked for in: `command lines`, `environment`, `Flight Recorder`,
    `code`, `logs` (empty: nothing that could hold one was captured)."""
    out: list[str] = []
    lines = (
        bool(bundle.environment.cmdlines)
        or any(map(_PARENT, bundle.dumps))
        # Each distinct command line once: the snapshots of one process repeat it.
        or not all(map(_title_only, set(map(_CMDLINE, bundle.dumps))))
    )
    if lines:
        out.append("command lines")
    if bundle.environment.variables:
        out.append("environment")
    if any(e.timeout_ms is not None for t in bundle.flight_recorder for e in t.entries):
        out.append("Flight Recorder")
    if _shows_setup(e.lines for e in bundle.excerpts):
        out.append("code")
    return tuple(out)


def _title_only(cmdline: str | None) -> bool:
    """A process title (`sglang::scheduler_TP0`) or nothing: not a command line."""
    if not cmdline:
        return True
    if "\0" not in cmdline and _TITLE_ONLY.match(cmdline):
        return True  # already one word: `cmdline_text` would give it back as it is
    return _TITLE_ONLY.match(cmdline_text(cmdline)) is not None


def _shows_setup(texts: Iterable[Sequence[str]]) -> bool:
    return any(SETUP_CALL.search("\n".join(lines)) for lines in texts)
