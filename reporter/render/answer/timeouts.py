"""Whether the wait ends on its own: collective timeouts and watchdogs, and where they were looked for.

Read from command lines (`--watchdog-timeout 300`), environments (`TORCH_NCCL_*TIMEOUT*`,
`NCCL_TIMEOUT`, ...), the Flight Recorder's entries (`timeout_ms`, the group's collective
timeout) and `py-spy dump --locals` of the frames that set one up
(`init_process_group(timeout=...)`). "No timeout found" is said only where something
was looked at: `captured` names the command lines and environments the bundle holds, and
without any the answer is "not known".
"""

from __future__ import annotations

import re
from itertools import chain
from operator import attrgetter

from reporter.model import Bundle
from reporter.render.answer.records import Timeout

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
# A process title (`sglang::scheduler_TP0`, `VLLM::Worker`) is not a command line.
_TITLE_ONLY = re.compile(r"^\S+::\S*$")


def find_timeouts(bundle: Bundle) -> tuple[Timeout, ...]:
    """Collective timeouts and watchdogs in the evidence, each once, sorted by name."""
    found: dict[tuple[str, str], str] = {}
    for cmdline in bundle.environment.cmdlines:
        for flag in cmdline.flags:
            if _TIMEOUT_FLAG.match(flag.name) and flag.value is not None:
                found.setdefault((flag.name, flag.value), str(cmdline.source))
    for dump in bundle.dumps:
        for text in (dump.cmdline, dump.parent_cmdline):
            if not text or "--" not in text:
                continue  # every match starts with `--`; most titles have none
            for match in _TIMEOUT_IN_TEXT.finditer(text):
                found.setdefault((match.group(1), match.group(2)), str(dump.source))
    for var in bundle.environment.variables:
        if _TIMEOUT_ENV.match(var.name) and "DUMP" not in var.name:
            found.setdefault((var.name, var.value), str(var.source))
    for dump in bundle.dumps if _any_locals(bundle) else ():
        for thread in dump.threads:
            for frame in filter(_LOCALS, thread.frames):
                if not _GROUP_SETUP.search(frame.function):
                    continue
                for local in frame.locals:
                    if local.name == "timeout" and local.repr not in ("None", ""):
                        name = f"{frame.short_function}(timeout=)"
                        found.setdefault((name, local.repr), str(thread.source))
    for trace in bundle.flight_recorder:
        for entry in trace.entries:
            if entry.timeout_ms:
                found.setdefault(("timeout_ms", str(entry.timeout_ms)), str(entry.source))
                break
    return tuple(
        Timeout(name=name, value=value, source=source)
        for (name, value), source in sorted(found.items())
    )


def _any_locals(bundle: Bundle) -> bool:
    """Whether any frame shows `--locals`: C-level iteration over millions of frames."""
    threads = chain.from_iterable(map(_THREADS, bundle.dumps))
    return any(map(_LOCALS, chain.from_iterable(map(_FRAMES, threads))))


def captured(bundle: Bundle) -> tuple[str, ...]:
    """What timeouts were looked for in: `command lines`, `environment`, `Flight Recorder`,
    `--locals` (empty: nothing that could hold one was captured)."""
    out: list[str] = []
    lines = (
        bool(bundle.environment.cmdlines)
        or any(map(_PARENT, bundle.dumps))
        # Each distinct command line once: the snapshots of one process repeat it.
        or any(not _TITLE_ONLY.match(c.strip()) for c in {d.cmdline for d in bundle.dumps} if c)
    )
    if lines:
        out.append("command lines")
    if bundle.environment.variables:
        out.append("environment")
    if any(e.timeout_ms is not None for t in bundle.flight_recorder for e in t.entries):
        out.append("Flight Recorder")
    return tuple(out)
