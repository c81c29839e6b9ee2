"""What one process says about its identity: title, file name, `--locals`, manifest hint.

Pure readers of one clue each; `ranks.identify` weighs them against each other. Titles
are setproctitle-style (`sglang::scheduler_DP1_TP3`, `VLLM::Worker_TP0_EP0`,
`VllmWorker rank=3`); file names carry ranks as `rank3.txt`, `tp_3.json`, `worker-3.log`.
Several parallel dimensions give a global rank by mixed radix over (DP, PP, TP)::

    radix_rank({"DP": 1, "TP": 3}, {"DP": 2, "PP": 1, "TP": 4}) == 1*4 + 3 == 7
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from pathlib import PurePosixPath

from reporter.model import Frame, ProcessDump, RankHint, ThreadStack

DIM_ORDER = ("DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP")
RADIX_DIMS = ("DP", "PP", "TP")
_DIM_SET = frozenset(DIM_ORDER)
_DIM = re.compile(r"(ATTN_CP|MOE_DP|DP|PP|TP|EP)(\d+)")
_DIM_LOOKAHEAD = r"(?:ATTN_CP|MOE_DP|DP|PP|TP|EP)\d"
_TITLE_ROLE = re.compile(rf"[A-Za-z][A-Za-z0-9]*(?:_(?!{_DIM_LOOKAHEAD})[A-Za-z][A-Za-z0-9]*)*")
_OLD_DP_SUFFIX = re.compile(r"_(\d+)$")
_WORKER_RANK = re.compile(r"\brank[=:\s_-]*(\d+)", re.IGNORECASE)
_FILE_RANK = re.compile(
    r"(?:^|[^a-z0-9])(?:rank|tp|worker|proc|gpu)[-_]?(\d+)(?![0-9])", re.IGNORECASE
)

# Roles that are never ranks (compared case-insensitively).
NON_RANK_ROLES = frozenset(
    {
        "detokenizer",
        "tokenizer",
        "data_parallel_controller",
        "launcher",
        "resource-tracker",
        "forkserver",
        "router",
        "api_server",
        "apiserver",
        "dpcoordinator",
    }
)
# Coordinators that do the model's work themselves only when no rank process exists
# besides them (vLLM's EngineCore runs the model in-process at TP=1).
COORDINATOR_ROLES = frozenset({"enginecore"})
_CMDLINE_ROLES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"multiprocessing\.resource_tracker"), "resource-tracker"),
    (re.compile(r"multiprocessing\.forkserver"), "forkserver"),
    (re.compile(r"launch_server|sglang\s+serve|vllm\s+serve|vllm\.entrypoints"), "launcher"),
    (re.compile(r"torchrun|torch\.distributed\.(?:run|launch)"), "launcher"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TitleInfo:
    """What a process title says: role, parallel dims, and a direct rank (`VllmWorker rank=3`)."""

    role: str | None = None
    dims: tuple[tuple[str, int], ...] = ()
    rank: int | None = None


def sorted_dims(dims: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """Dims in the conventional order: DP, PP, ATTN_CP, MOE_DP, TP, EP."""
    if len(dims) == 1:
        # One dim (`TP3`), the common case of every rank of a big job: nothing to order.
        ((dim, value),) = dims.items()
        return ((dim, value),) if dim in _DIM_SET else ()
    return tuple([(d, dims[d]) for d in DIM_ORDER if d in dims])


def radix_rank(dims: Mapping[str, int], sizes: Mapping[str, int]) -> int:
    """The global rank of `dims` by mixed radix over (DP, PP, TP) with these sizes."""
    rank = 0
    for dim in RADIX_DIMS:
        rank = rank * sizes[dim] + dims.get(dim, 0)
    return rank


def parse_title(title: str | None) -> TitleInfo:
    """Role, dims and rank from a process title or command line.

    Dims are read only from setproctitle-style titles (`prefix::name_TP3`) so
    that ordinary command lines (`train.py --tp 2`) never yield a rank.
    """
    if not title:
        return TitleInfo()
    text = title.strip()
    head = text.split(None, 1)[0] if text else ""
    if "::" in head:
        name = head.split("::", 1)[1]
        role_match = _TITLE_ROLE.match(name)
        role = role_match.group(0) if role_match else None
        rest = name[role_match.end() :] if role_match else name
        dims = {d: int(n) for d, n in _DIM.findall(rest)}
        old = _OLD_DP_SUFFIX.fullmatch(rest) if not dims else None
        if old is not None:
            # Older SGLang titled DP schedulers `sglang::scheduler_{dp_rank}`.
            dims["DP"] = int(old.group(1))
        # Every rank's title is read: most name no `rank`, which `lower` tells at C speed
        # (the pattern ignores case; "rank" has no letter that folds differently).
        rank_match = _WORKER_RANK.search(text) if "rank" in text.lower() else None
        return TitleInfo(
            role=role.split(".")[0] if role else None,
            dims=sorted_dims(dims),
            rank=int(rank_match.group(1)) if rank_match else None,
        )
    if head.startswith("VllmWorker"):
        rank_match = _WORKER_RANK.search(text)
        return TitleInfo(role="VllmWorker", rank=int(rank_match.group(1)) if rank_match else None)
    for pattern, role in _CMDLINE_ROLES:
        if pattern.search(text):
            return TitleInfo(role=role)
    return TitleInfo()


def rank_from_filename(path: str) -> int | None:
    """Rank from a file name (`rank3.txt`, `rank_3.json`, `tp3.txt`, `worker-3.log`), else
    from its folder (`rank3/dump.txt`)."""
    parts = PurePosixPath(path).parts
    for part in reversed(parts[-2:]):
        stem = part.split(".", 1)[0]
        match = _FILE_RANK.search(stem)
        if match is not None:
            return int(match.group(1))
    return None


_LOCAL_NAMES = (
    "global_rank",
    "rank",
    "tp_rank",
    "dp_rank",
    "pp_rank",
    "local_rank",
    "world_size",
    "tp_size",
    "dp_size",
    "pp_size",
)
LOCAL_DIMS = {"tp_rank": "TP", "dp_rank": "DP", "pp_rank": "PP"}
SIZE_DIMS = {"tp_size": "TP", "dp_size": "DP", "pp_size": "PP"}


def _starts_at_module(thread: ThreadStack) -> bool:
    for frame in reversed(thread.frames):
        if frame.native or frame.function.startswith("0x"):
            continue
        return frame.function == "<module>" or frame.file.endswith("runpy.py")
    return False


def main_thread(dump: ProcessDump) -> ThreadStack | None:
    """The main thread: named `MainThread`, else thread id == PID, else the thread whose
    outermost Python frame is a `<module>` (other threads start in `Thread._bootstrap`),
    else the first thread."""
    threads = dump.threads
    if threads and threads[0].name == "MainThread":
        return threads[0]  # py-spy's usual order: cheaper than the memo's first look
    # Asked about a dozen times a dump by different passes: found once, kept on the dump.
    try:
        return dump.main_memo
    except AttributeError:
        pass
    thread = _find_main(dump)
    object.__setattr__(dump, "main_memo", thread)
    return thread


def _find_main(dump: ProcessDump) -> ThreadStack | None:
    if not dump.threads:
        return None
    for thread in dump.threads:
        if thread.name == "MainThread":
            return thread
    if dump.pid is not None:
        pid_text = str(dump.pid)
        for thread in dump.threads:
            if thread.thread_id == pid_text or thread.os_thread_id == dump.pid:
                return thread
    for thread in dump.threads:
        if _starts_at_module(thread):
            return thread
    return dump.threads[0]


_LOCALS = attrgetter("locals")
_FRAMES = attrgetter("frames")


def has_locals(frames: Iterable[Frame]) -> bool:
    """Whether any of `frames` shows `--locals` (a C-level scan: it runs per thread)."""
    return any(map(_LOCALS, frames))


def dump_has_locals(dump: ProcessDump) -> bool:
    """Whether any thread of `dump` shows `--locals`."""
    return any(map(_LOCALS, chain.from_iterable(map(_FRAMES, dump.threads))))


def read_locals(dump: ProcessDump) -> dict[str, int]:
    """Integer identity arguments of the main thread; the outermost frame wins per name,
    because process entry functions carry the identity and inner helpers reuse names."""
    thread = main_thread(dump)
    found: dict[str, int] = {}
    if thread is None:
        return found
    for frame in [*filter(_LOCALS, thread.frames)]:
        for local in frame.locals:
            if local.is_arg and local.name in _LOCAL_NAMES:
                try:
                    found[local.name] = int(local.repr.strip())
                except ValueError:
                    continue
    return found


# -- grouping dumps into processes ---------------------------------------------------------------


class HintIndex:
    """Manifest rank hints by path. A dump's path and a hint's path match when one is a
    path-part suffix of the other (`bundle/rank0.txt` vs `rank0.txt`); both directions
    are dict lookups over path suffixes, so thousands of hints stay cheap."""

    def __init__(self, hints: Sequence[tuple[str, RankHint]]) -> None:
        self._exact: dict[str, RankHint] = {}
        self._suffix: dict[str, RankHint | None] = {}
        for path, hint in hints:
            parts = PurePosixPath(path).parts
            self._exact.setdefault("/".join(parts), hint)
            for i in range(len(parts)):
                key = "/".join(parts[i:])
                # A suffix shared by two different hints names neither.
                self._suffix[key] = hint if self._suffix.get(key, hint) is hint else None

    def __bool__(self) -> bool:
        """False when there is no hint at all."""
        return bool(self._exact)

    def find(self, path: str) -> RankHint | None:
        """The hint for `path`, if any."""
        if not self._exact:
            return None
        parts = PurePosixPath(path).parts
        for i in range(len(parts)):
            found = self._exact.get("/".join(parts[i:]))
            if found is not None:
                return found
        return self._suffix.get("/".join(parts))


OS_THREAD_ID = attrgetter("os_thread_id")


def same_process(
    first: ProcessDump, dump: ProcessDump, *, tids: tuple[set[int], set[int]] | None = None
) -> bool:
    """Whether two dumps of one (host, PID) can be the same process.

    Not when they show different titles (command lines), interpreters (path or version), or
    when each shows threads besides the main one and no such thread id is in both: two
    containers whose entry points are both PID 1, or a PID reused after a restart. Native
    thread ids only (py-spy's `Thread 4712`, `os_thread_id` in `--json`): the main thread's
    id is the PID itself, so it says nothing here. `tids` passes both sides' helper thread
    ids when the caller has them already."""
    if not headers_agree(first, dump):
        return False
    ours, others = tids if tids is not None else (helper_tids(first), helper_tids(dump))
    return not (ours and others and not ours & others)


def headers_agree(first: ProcessDump, dump: ProcessDump) -> bool:
    """No title, interpreter path or version that both dumps give differs."""
    # Spelled out, not looped over pairs: asked of every snapshot of every rank.
    if first.cmdline and dump.cmdline and first.cmdline != dump.cmdline:
        return False
    if first.python_exe and dump.python_exe and first.python_exe != dump.python_exe:
        return False
    return not (
        first.python_version and dump.python_version and first.python_version != dump.python_version
    )


def helper_tids(dump: ProcessDump) -> set[int]:
    """Native ids of a dump's threads besides the main one (a C-level scan: every dump)."""
    return set(map(OS_THREAD_ID, dump.threads)).difference((None, dump.pid))
