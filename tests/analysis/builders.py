"""Build model objects for analysis tests from compact specs, without the parsers.

Frames are written as py-spy prints them, innermost first; `[name=value]`
adds `--locals` arguments::

    dump(pid=101, title="sglang::scheduler_TP0",
         main=["all_reduce (torch/distributed/distributed_c10d.py:2501)",
               "check_hicache_events (sglang/srt/managers/scheduler.py:900)",
               "run_scheduler_process (sglang/srt/managers/scheduler.py:2500) [tp_rank=0]"],
         threads={"watchdog": ["watchdog_thread (sglang/srt/managers/scheduler.py:77)"]})
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from reporter.model import (
    Bundle,
    EvidenceKind,
    FailedDump,
    Frame,
    Local,
    Location,
    Manifest,
    ParseWarning,
    ProcessDump,
    RankHint,
    ThreadStack,
    ThreadStatus,
)

_FRAME = re.compile(
    r"(?P<function>.+?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)(?:\s*\[(?P<locals>[^\]]*)\])?"
)
_NATIVE_FILE = re.compile(r"\.(?:so(?:\.\d+)*|c|cc|cpp)$")


def frame(spec: str) -> Frame:
    """`"function (file:line) [arg=value, ...]"` -> Frame; `.so`/`.c` files are native."""
    match = _FRAME.fullmatch(spec.strip())
    if match is None:
        raise ValueError(f"bad frame spec: {spec!r}")
    local_text = match.group("locals") or ""
    local_items = tuple(
        Local(name=name.strip(), repr=value.strip(), is_arg=True)
        for name, _, value in (
            item.partition("=") for item in local_text.split(",") if item.strip()
        )
    )
    file = match.group("file")
    return Frame(
        function=match.group("function"),
        file=file,
        line=int(match.group("line")) if match.group("line") else None,
        native=bool(_NATIVE_FILE.search(file)) or match.group("function").startswith("0x"),
        locals=local_items,
    )


def frames(specs: Sequence[str]) -> tuple[Frame, ...]:
    """Several frames, innermost first."""
    return tuple(frame(s) for s in specs)


def thread(
    specs: Sequence[str],
    *,
    name: str | None = "MainThread",
    thread_id: str = "1",
    source: str = "dump.txt",
    status: ThreadStatus = ThreadStatus.IDLE,
) -> ThreadStack:
    """One thread from frame specs."""
    return ThreadStack(
        thread_id=thread_id,
        status=status,
        name=name,
        frames=frames(specs),
        source=Location(path=source, line=1),
    )


def dump(
    *,
    pid: int | None,
    title: str | None = None,
    main: Sequence[str] = (),
    threads: Mapping[str, Sequence[str]] | Sequence[tuple[str | None, Sequence[str]]] = (),
    source: str = "dump.txt",
    captured_at: datetime | None = None,
    kind: EvidenceKind = EvidenceKind.PYSPY_TEXT,
    main_name: str | None = "MainThread",
) -> ProcessDump:
    """A process dump: the main thread (id = PID) then the named other threads."""
    items = list(threads.items()) if isinstance(threads, Mapping) else list(threads)
    base = pid if pid is not None else 1
    stacks = [thread(main, name=main_name, thread_id=str(base), source=source)]
    stacks.extend(
        thread(specs, name=name, thread_id=str(base + 1 + i), source=source)
        for i, (name, specs) in enumerate(items)
    )
    return ProcessDump(
        pid=pid,
        kind=kind,
        cmdline=title,
        python_version="3.11.7",
        threads=tuple(stacks),
        captured_at=captured_at,
        source=Location(path=source, line=1),
    )


def failure(
    *, pid: int | None, reason: str = "Error: No such process", source: str = "dump.txt"
) -> FailedDump:
    """A failed dump."""
    return FailedDump(pid=pid, reason=reason, source=Location(path=source, line=1))


def bundle(
    *dumps: ProcessDump,
    failures: Sequence[FailedDump] = (),
    world_size: int | None = None,
    rank_hints: Sequence[tuple[str, RankHint]] = (),
    warnings: Sequence[ParseWarning] = (),
) -> Bundle:
    """A bundle of the given dumps, in capture order."""
    return Bundle(
        root=None,
        manifest=Manifest(world_size=world_size),
        dumps=tuple(dumps),
        failures=tuple(failures),
        warnings=tuple(warnings),
        rank_hints=tuple(rank_hints),
    )


# Common stack pieces (innermost first) for SGLang-like schedulers.
BOOT = (
    "BaseProcess.run (multiprocessing/process.py:108)",
    "BaseProcess._bootstrap (multiprocessing/process.py:314)",
    "_main (multiprocessing/spawn.py:135)",
    "spawn_main (multiprocessing/spawn.py:122)",
    "<module> (<string>:1)",
)
LOOP = "Scheduler.event_loop_overlap_disagg_decode (sglang/srt/disaggregation/decode.py:800)"
ENTRY = "run_scheduler_process (sglang/srt/managers/scheduler.py:2500)"


def scheduler_stack(*top: str, loop: str = LOOP) -> list[str]:
    """`top` frames (innermost first) under the decode event loop and process bootstrap."""
    return [*top, loop, ENTRY, *BOOT]


ALL_REDUCE = (
    "all_reduce (torch/distributed/distributed_c10d.py:2501)",
    "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)",
)
BROADCAST = (
    "broadcast (torch/distributed/distributed_c10d.py:2401)",
    "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)",
    "broadcast_pyobj (sglang/srt/utils.py:1100)",
)
