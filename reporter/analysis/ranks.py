"""Rank identity: which process is which rank, and which dumps are snapshots of it.

Input: a `Bundle`. Output: a `RankMap` with one `RankedProcess` per process
(its snapshots in capture order) split into ranks and other processes
(launcher, detokenizer, resource tracker, ...), the world size and notes.

Evidence, strongest first: the manifest's rank hint for the dump's file,
`--locals` arguments of the main thread (`rank`, `global_rank`, `tp_rank`,
`dp_rank`, `pp_rank`, `local_rank`), the process title
(`sglang::scheduler_DP1_TP3`, `VLLM::Worker_TP0_EP0`, `VllmWorker rank=3`),
the file name (`rank3.txt`, `tp_3.json`, `worker-3.log`), else the PID.
Several parallel dimensions give a global rank by mixed radix over
(DP, PP, TP), each size being the largest index seen + 1 (or a `*_size`
argument when larger)::

    sglang::scheduler_DP1_TP3 with DP sizes 2, TP size 4 -> rank 1*4 + 3 = 7

`RANK` in the process's environ evidence ranks just below `--locals`. File names are the
weakest source: a number equal to the dump's PID, or ranks in the thousands for a handful
of processes, are not ranks (a warning says so).

Ranks are numbered within an *instance* (one server, job or launcher): before ranks are
final, the rank processes are split by the strongest instance signal (`instances.py`:
the manifest's `instance`, the parent process, the rendezvous, ports). Two processes never
share one rank label: when nothing separates them they are split by PID order, with a
warning, and each part is marked `ambiguous`. Each `Instance` has its own world size and
failed dumps.

The clues themselves are read in `clues.py`; compact rank sets (`[0-3,7]`) are
`ranksets.py`'s, re-exported here with the other names callers import from this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter

from reporter.analysis.clues import (
    COORDINATOR_ROLES,
    LOCAL_DIMS,
    NON_RANK_ROLES,
    OS_THREAD_ID,
    RADIX_DIMS,
    SIZE_DIMS,
    HintIndex,
    has_locals,
    headers_agree,
    helper_tids,
    radix_rank,
    read_locals,
    sorted_dims,
)
from reporter.analysis.clues import DIM_ORDER as DIM_ORDER  # re-exported: their old home
from reporter.analysis.clues import TitleInfo as TitleInfo
from reporter.analysis.clues import main_thread as main_thread
from reporter.analysis.clues import parse_title as parse_title
from reporter.analysis.clues import rank_from_filename as rank_from_filename
from reporter.analysis.instances import (
    ProcessFacts,
    partition,
    process_facts,
    signals,
    unit_pids,
)
from reporter.analysis.rankfailed import LARGEST_SEEN, failed_ranks, world_size
from reporter.analysis.rankfailed import failure_state as failure_state  # re-exported
from reporter.analysis.ranksets import format_ranks as format_ranks
from reporter.analysis.ranksets import parse_ranks as parse_ranks
from reporter.analysis.result import FailedRank, RankIdentity
from reporter.model import Bundle, Frame, ProcessDump, RankHint, RankSource


@dataclass(frozen=True, slots=True, kw_only=True)
class RankedProcess:
    """A process with its snapshots and its rank identity; `unit` is its rank, or its PID
    when ranks are unknown. `pid` is the first PID seen for it (`identity.pid` the latest
    snapshot's, where a rank's snapshots come from several PIDs)."""

    identity: RankIdentity
    unit: int
    pid: int | None
    group: str
    snapshots: tuple[ProcessDump, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """One server, job or launcher: ranks are numbered within it.

    `id` is "1", "2", ... by smallest PID; `label` says what it is (`launcher PID 4700
    (--port=30000)`), `how` which signal separated it from the others ("" when alone).
    """

    id: str
    label: str
    how: str
    ranks: tuple[RankedProcess, ...]
    world_size: int | None
    world_detail: str
    failed: tuple[FailedRank, ...]
    ambiguous: bool = False
    """True when nothing in the evidence separated it: processes were split by PID order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RankMap:
    """Processes split into ranks (sorted by instance, then unit) and others, plus what was
    learnt on the way. `world_size`, `failed` and so on describe the whole bundle when there
    is one instance; `instances` holds each instance's own view (always at least one when
    there are ranks)."""

    unit: str
    ranks: tuple[RankedProcess, ...]
    others: tuple[RankedProcess, ...]
    world_size: int | None
    world_detail: str
    failed: tuple[FailedRank, ...]
    unidentified: tuple[str, ...]
    warnings: tuple[str, ...]
    instances: tuple[Instance, ...] = ()


@dataclass(slots=True, eq=False)
class _Candidate:
    """Evidence gathered for one PID (or one PID-less file) before ranks are final."""

    first: int
    pid: int | None
    dumps: list[tuple[int, ProcessDump]]
    paths: list[str]
    title: str | None = None
    role: str | None = None
    dims: dict[str, int] = field(default_factory=dict)
    dim_sources: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    world: int | None = None
    rank: int | None = None
    source: RankSource = RankSource.PID
    detail: str = ""
    group: str | None = None
    notes: list[str] = field(default_factory=list)
    signals: dict[str, str] = field(default_factory=dict)
    instance: str = "1"
    host: str = ""
    incarnation: int = 0
    """0, 1, ...: processes of one host that share a PID (containers, a PID reused) in the
    order their first dump appears."""
    shown_host: bool = False
    """Name the host in labels and keys: the bundle holds several hosts."""
    tids: set[int] | None = None
    """Native ids of the first dump's threads besides the main one (see `clues.same_process`);
    None until a second dump of its (host, PID) asks."""


def _snapshot_order(dumps: list[tuple[int, ProcessDump]]) -> tuple[ProcessDump, ...]:
    """Capture order: by time when every dump is dated, else by place in the bundle (the
    order `_gather` and `_merge_same_rank` keep `dumps` in)."""
    if None not in [d.captured_at for _, d in dumps]:
        return tuple([d for _, d in sorted(dumps, key=lambda item: (item[1].captured_at, item[0]))])
    return tuple([d for _, d in dumps])


_FIRST = itemgetter(0)


def _gather(bundle: Bundle) -> list[_Candidate]:
    """One candidate per process: a process is (host, PID), and dumps of one (host, PID)
    that cannot be one process (`clues.same_process`) are several processes."""
    by_key: dict[tuple[object, ...], list[_Candidate]] = {}
    for index, dump in enumerate(bundle.dumps):
        # Without a PID a file is one process, unless its parser numbered several (`slot`).
        key: tuple[object, ...] = (
            ("pid", dump.host, dump.pid)
            if dump.pid is not None
            else ("file", dump.source.path, dump.slot)
        )
        known = by_key.setdefault(key, [])
        cand = None
        for other in known:
            first = other.dumps[0][1]
            if not headers_agree(first, dump):
                continue
            ours = other.tids
            if ours is None:
                ours = other.tids = helper_tids(first)
            # `clues.same_process`, with C-level set work: a helper thread in both, or none in one.
            if not ours or not ours.isdisjoint(map(OS_THREAD_ID, dump.threads)):
                cand = other
                break
            if not helper_tids(dump):
                cand = other
                break
        if cand is None:
            cand = _Candidate(
                first=index,
                pid=dump.pid,
                dumps=[],
                paths=[],
                host=dump.host,
                incarnation=len(known),
            )
            known.append(cand)
        cand.dumps.append((index, dump))
        if dump.source.path not in cand.paths:
            cand.paths.append(dump.source.path)
        if cand.title is None and dump.cmdline:
            cand.title = dump.cmdline
    out = sorted([c for known in by_key.values() for c in known], key=_BY_FIRST)
    if len({c.host for c in out}) > 1:
        for cand in out:
            cand.shown_host = True
    return out


_BY_FIRST = attrgetter("first")


def _label(cand: _Candidate) -> str:
    if cand.pid is not None:
        what = f"PID {cand.pid}" + (
            f" on {cand.host or '(host not named)'}" if cand.shown_host else ""
        )
    else:
        slot = cand.dumps[0][1].slot if cand.dumps else 0
        where = f"{cand.paths[0]}:{cand.dumps[0][1].source.line}" if slot else cand.paths[0]
        what = f"the dump in {where}"
    return f"{what} ({cand.title})" if cand.title else what


def _read_evidence(
    cand: _Candidate,
    hints: HintIndex,
    per_file: dict[str, int],
    warnings: list[str],
) -> None:
    title = parse_title(cand.title)
    cand.role = title.role
    # Only a file that holds this one process can speak for it.
    own_paths = [p for p in cand.paths if per_file[p] == 1]
    hint: RankHint | None = None
    shared_hint: str | None = None
    if hints:
        hint = next((h for h in (hints.find(p) for p in own_paths) if h is not None), None)
        shared_hint = next(
            (p for p in cand.paths if per_file[p] > 1 and hints.find(p) is not None), None
        )
    if hint is None and shared_hint is not None:
        warnings.append(
            f"manifest rank hint for {shared_hint} ignored: the file holds "
            f"{per_file[shared_hint]} processes"
        )
    loc: dict[str, int] = {}
    passed: tuple[Frame, ...] | None = None
    for _, dump in cand.dumps:
        # Most dumps show no `--locals`: a C-level scan of the main thread says so, once
        # for a stuck process's snapshots (they share one frames tuple).
        thread = main_thread(dump)
        if thread is None or thread.frames is passed:
            continue
        if not has_locals(thread.frames):
            passed = thread.frames
            continue
        for name, value in read_locals(dump).items():
            loc.setdefault(name, value)
    if loc:
        for name, dim in SIZE_DIMS.items():
            if name in loc:
                cand.sizes[dim] = loc[name]
    cand.world = loc.get("world_size")

    # Parallel dims: the title first, then locals fill in (a title is set from
    # the same variables, so on conflict the title stays and we say so).
    cand.dims = dict(title.dims)
    if title.dims:
        cand.dim_sources.append(f"process title {cand.title}")
    from_locals = []
    for name, dim in LOCAL_DIMS.items() if loc else ():
        if name not in loc:
            continue
        if dim in cand.dims and cand.dims[dim] != loc[name]:
            warnings.append(
                f"{_label(cand)}: argument {name}={loc[name]} disagrees with the title's "
                f"{dim}{cand.dims[dim]}; keeping the title"
            )
            continue
        if dim not in cand.dims:
            cand.dims[dim] = loc[name]
            from_locals.append(f"{name}={loc[name]}")
    if from_locals:
        cand.dim_sources.append("--locals arguments " + ", ".join(from_locals))

    if hint is not None and hint.role:
        cand.role = hint.role
    if hint is not None and hint.group:
        cand.group = hint.group
    if hint is not None and hint.instance:
        cand.signals["manifest"] = hint.instance
    if hint is not None and hint.rank is not None:
        cand.rank, cand.source = hint.rank, RankSource.MANIFEST
        cand.detail = f"rank {hint.rank} from the manifest entry for {own_paths[0]}"
        return
    for name in ("global_rank", "rank") if loc else ():
        if name in loc:
            cand.rank, cand.source = loc[name], RankSource.LOCALS
            cand.detail = f"rank {loc[name]} from the --locals argument {name}={loc[name]}"
            return
    if _has_radix(cand.dims):
        # Final rank is set once the bundle-wide sizes are known.
        cand.source = (
            RankSource.LOCALS if from_locals and not title.dims else RankSource.PROCESS_TITLE
        )
        return
    if title.rank is not None:
        cand.rank, cand.source = title.rank, RankSource.PROCESS_TITLE
        cand.detail = f"rank {title.rank} from the process title {cand.title}"
        return
    for path in own_paths:
        file_rank = rank_from_filename(path)
        if file_rank is not None:
            cand.rank, cand.source = file_rank, RankSource.FILENAME
            cand.detail = f"rank {file_rank} from the file name {path}"
            return
    if "local_rank" in loc:
        cand.rank, cand.source = loc["local_rank"], RankSource.LOCALS
        cand.detail = (
            f"rank {loc['local_rank']} from the --locals argument local_rank "
            "(unique on one node only)"
        )
        return
    if cand.dims:
        cand.notes.append("dims " + " ".join(f"{d}{n}" for d, n in sorted_dims(cand.dims)))


def _has_radix(dims: dict[str, int]) -> bool:
    """Whether `dims` holds DP, PP or TP (asked of every process)."""
    return not dims.keys().isdisjoint(RADIX_DIMS)


def _radix(cands: list[_Candidate]) -> tuple[dict[str, int], str]:
    sizes = {d: 1 for d in RADIX_DIMS}
    # Over each process's own dims (usually one), not every dim name: one pass per rank.
    for cand in cands:
        for dim, index in cand.dims.items():
            if dim in sizes and index + 1 > sizes[dim]:
                sizes[dim] = index + 1
        for dim, size in cand.sizes.items():
            if dim in sizes and size > sizes[dim]:
                sizes[dim] = size
    text = ", ".join(f"{d}={sizes[d]}" for d in RADIX_DIMS)
    return sizes, text


def _global_tp(cands: list[_Candidate]) -> bool:
    """True for the DP-attention layout: the TP index is global and DP names the attention
    group it falls in (SGLang with `--enable-dp-attention` titles `DP1_TP2`, `DP1_TP3` for
    global ranks 2 and 3 of a TP-4 world): every process's TP // (TP size / DP size) equals
    its DP. A standard DP layout restarts TP at 0 in every DP group and never matches; a
    capture holding only `DP0_TP0` and `DP1_TP1` of a standard layout would, and is read as
    DP attention."""
    dimmed = [c for c in cands if "DP" in c.dims and "TP" in c.dims]
    if len(dimmed) < 2 or len(dimmed) != len([c for c in cands if c.dims]):
        return False
    dp_size = max(c.dims["DP"] for c in dimmed) + 1
    tp_size = max(c.dims["TP"] for c in dimmed) + 1
    if dp_size < 2 or tp_size % dp_size:
        return False
    block = tp_size // dp_size
    return all(c.dims["TP"] // block == c.dims["DP"] for c in dimmed)


def _apply_radix(cands: list[_Candidate]) -> dict[str, int] | None:
    dimmed = [c for c in cands if c.rank is None and _has_radix(c.dims)]
    if not dimmed:
        return None
    if _global_tp([c for c in cands if c.dims]):
        return _apply_global_tp(cands, dimmed)
    sizes, size_text = _radix([c for c in cands if c.dims])
    multi = sum(1 for d in RADIX_DIMS if sizes[d] > 1) > 1
    for cand in dimmed:
        rank = radix_rank(cand.dims, sizes)
        cand.rank = rank
        coords = " ".join([f"{d}{n}" for d, n in sorted_dims(cand.dims)])
        how = "; ".join(cand.dim_sources)
        if multi:
            cand.detail = (
                f"rank {rank} from {coords} ({how}); mixed radix over DP, PP, TP with sizes "
                f"{size_text} (largest index seen + 1)"
            )
        else:
            cand.detail = f"rank {rank} from {coords} ({how})"
    return sizes


def _apply_global_tp(cands: list[_Candidate], dimmed: list[_Candidate]) -> dict[str, int]:
    """Ranks of the DP-attention layout: PP x TP with TP global; DP is the attention group."""
    sizes, _ = _radix([c for c in cands if c.dims])
    sizes = {**sizes, "DP": 1}
    for cand in dimmed:
        rank = radix_rank({d: n for d, n in cand.dims.items() if d != "DP"}, sizes)
        cand.rank = rank
        coords = " ".join(f"{d}{n}" for d, n in sorted_dims(cand.dims))
        how = "; ".join(cand.dim_sources)
        cand.detail = (
            f"rank {rank} from {coords} ({how}); DP attention layout: the TP index is global "
            "(every TP index lies in its DP group's block), DP names the attention group"
        )
    return sizes


def _group_key(cand: _Candidate) -> str:
    if cand.group:
        return cand.group
    if "DP" not in cand.dims and "PP" not in cand.dims:
        return ""  # TP only, or no dims: one group
    # TP ranks of one DP/PP slice form one collective group; EP and the
    # attention/MoE splits are sub-groupings of it.
    return " ".join(f"{d}{cand.dims[d]}" for d in ("DP", "PP") if d in cand.dims)


def _finish(
    cand: _Candidate, unit: int, rank: int | None, group: str, *, multi: bool = False
) -> RankedProcess:
    if rank is not None:
        key = f"rank:{rank}"
    elif cand.pid is not None:
        where = f"@{cand.host}" if cand.shown_host else ""
        again = f"#{cand.incarnation + 1}" if cand.incarnation else ""
        key = f"pid:{cand.pid}{where}{again}"
    else:
        slot = cand.dumps[0][1].slot if cand.dumps else 0
        place = f"{cand.paths[0]}#{slot}" if slot else cand.paths[0]
        key = f"file:{place}"
    if multi and rank is not None:
        # Ranks repeat across instances; the key stays unique.
        key = f"instance:{cand.instance}/{key}"
    source = cand.source if rank is not None else RankSource.PID
    detail = cand.detail
    if rank is None:
        base = (
            f"no rank found; PID {cand.pid} stands in"
            if cand.pid is not None
            else f"no rank or PID; {_label(cand)[len('the dump in ') :]} numbered {unit} by position in the bundle"
        )
        detail = "; ".join([base, *cand.notes])
    snapshots = _snapshot_order(cand.dumps)
    latest = snapshots[-1].pid if snapshots else None
    identity = RankIdentity(
        key=key,
        rank=rank,
        role=cand.role,
        dims=sorted_dims(cand.dims),
        source=source,
        detail=detail,
        pid=latest if latest is not None else cand.pid,
        title=cand.title,
        instance=cand.instance,
        host=cand.host,
    )
    return RankedProcess(
        identity=identity, unit=unit, pid=cand.pid, group=group, snapshots=snapshots
    )


def _merge_same_rank(
    ranked: list[_Candidate], warnings: list[str]
) -> tuple[list[_Candidate], list[_Candidate]]:
    """One process per rank: candidates with one rank from different files are snapshots of it;
    two in one file (the same moment) cannot both be that rank."""
    by_rank: dict[int, _Candidate] = {}
    dropped: list[_Candidate] = []
    for cand in ranked:
        assert cand.rank is not None
        kept = by_rank.get(cand.rank)
        if kept is None:
            by_rank[cand.rank] = cand
            continue
        if set(kept.paths) & set(cand.paths):
            warnings.append(
                f"{_label(cand)} also claims rank {cand.rank}, like {_label(kept)} in the same "
                "file; it is listed with the other processes"
            )
            cand.notes.append(f"claims rank {cand.rank}, already taken by {_label(kept)}")
            dropped.append(cand)
            continue
        kept.dumps.extend(cand.dumps)
        kept.dumps.sort(key=_FIRST)  # place in the bundle, as `_snapshot_order` reads it
        kept.paths.extend(p for p in cand.paths if p not in kept.paths)
        if cand.pid is not None and cand.pid != kept.pid:
            kept.detail += f"; PID {cand.pid} in {', '.join(cand.paths)} taken as a later snapshot"
    return sorted(by_rank.values(), key=lambda c: c.rank or 0), dropped


def _env_rank(cand: _Candidate, facts: ProcessFacts | None, warnings: list[str]) -> None:
    """`RANK` from the process's environ evidence, when nothing stronger named the rank."""
    if facts is None or cand.source in (RankSource.MANIFEST, RankSource.LOCALS):
        return
    if cand.source is RankSource.PROCESS_TITLE and (cand.rank is not None or cand.dims):
        return
    value = facts.env("RANK")
    if value is None or not value.strip().isdigit():
        return
    if cand.rank is not None and cand.source is RankSource.FILENAME and cand.rank != int(value):
        warnings.append(
            f"{_label(cand)}: RANK={value} in its environment overrules rank {cand.rank} from "
            "the file name (the weakest source)"
        )
    cand.rank, cand.source = int(value), RankSource.ENVIRON
    cand.detail = f"rank {value} from RANK={value} in the process's environment"


def _sanity(cands: list[_Candidate], warnings: list[str]) -> None:
    """Overrule file-name ranks that cannot be ranks: a number equal to the dump's PID is a
    PID, and numbers far beyond the processes seen are no ranks either."""
    for cand in cands:
        if cand.source is RankSource.FILENAME and cand.rank is not None and cand.rank == cand.pid:
            warnings.append(
                f"{_label(cand)}: the number {cand.rank} in the file name is its PID, not a "
                "rank; file names are the weakest rank source"
            )
            cand.notes.append(f"file name number {cand.rank} is the PID")
            cand.rank, cand.source, cand.detail = None, RankSource.PID, ""
    named = [c for c in cands if c.source is RankSource.FILENAME and c.rank is not None]
    if not named:
        return
    top = max(c.rank or 0 for c in named)
    processes = len(cands)
    # Evidence folders hold a handful to a few hundred ranks; a rank in the thousands with a
    # few processes seen is a PID or a port in a file name.
    if top >= 1024 and top + 1 > 8 * processes:
        warnings.append(
            f"file names give ranks up to {top} for {processes} processes: implausible, so the "
            "numbers in these file names are not taken as ranks (weakest source overruled)"
        )
        for cand in named:
            cand.notes.append(f"file name number {cand.rank} ignored as implausible")
            cand.rank, cand.source, cand.detail = None, RankSource.PID, ""


def identify(bundle: Bundle) -> RankMap:
    """Group the bundle's dumps into processes, separate instances, and give each process
    its rank identity within its instance."""
    warnings: list[str] = []
    cands = _gather(bundle)
    per_file: dict[str, int] = {}
    for cand in cands:
        for path in cand.paths:
            per_file[path] = per_file.get(path, 0) + 1
    hints = HintIndex(bundle.rank_hints)
    facts = process_facts(bundle)
    units = unit_pids(bundle)
    for cand in cands:
        _read_evidence(cand, hints, per_file, warnings)
        pid_facts = facts.get((cand.host, cand.pid)) if cand.pid is not None else None
        _env_rank(cand, pid_facts, warnings)
        cand.signals.update(signals(pid_facts, units))
    _sanity(cands, warnings)

    # A process whose children were dumped and that names no role of its own is
    # their launcher (SGLang's launch_server, torchrun's agent, mp.spawn's parent).
    parents = {
        (d.host, d.parent_pid) for c in cands for _, d in c.dumps if d.parent_pid is not None
    }
    parents |= {(f.host, f.ppid) for f in facts.values() if f.ppid is not None}
    for cand in cands:
        if (
            cand.role is None
            and cand.rank is None
            and not cand.dims
            and (cand.host, cand.pid) in parents
        ):
            cand.role = "launcher"
    demote_coordinators = any(
        (c.rank is not None or _has_radix(c.dims))
        and (c.role or "").lower() not in COORDINATOR_ROLES
        for c in cands
    )

    def is_other(cand: _Candidate) -> bool:
        if cand.source is RankSource.MANIFEST:
            return False
        role = (cand.role or "").lower()
        return role in NON_RANK_ROLES or (demote_coordinators and role in COORDINATOR_ROLES)

    claimants = [c for c in cands if (c.rank is not None or _has_radix(c.dims)) and not is_other(c)]
    if not claimants:
        return _pid_map(bundle, cands, is_other, hints, per_file, warnings)

    final = partition(claimants, warnings)
    # Instances numbered by their smallest PID (then first appearance).
    final.sort(key=lambda p: min((c.pid if c.pid is not None else 1 << 62, c.first) for c in p[2]))
    multi = len(final) > 1

    instances: list[Instance] = []
    ranks: list[RankedProcess] = []
    dropped_all: list[_Candidate] = []
    world = None
    world_detail = ""
    all_failed: list[FailedRank] = []
    claimed_failures: set[int] = set()
    for number, (label, how, members, ambiguous) in enumerate(final, start=1):
        ident = str(number)
        for cand in members:
            cand.instance = ident
        sizes = _apply_radix(members)
        merged, dropped = _merge_same_rank(members, warnings)
        dropped_all.extend(dropped)
        part_ranks = [_finish(c, c.rank or 0, c.rank, _group_key(c), multi=multi) for c in merged]
        failed = failed_ranks(bundle, hints, per_file, part_ranks, "rank", facts, claimed_failures)
        world, world_detail = world_size(
            bundle,
            [c.world for c in members if c.world is not None],
            part_ranks,
            sizes,
            "rank",
            failed,
        )
        if multi and bundle.manifest.world_size is not None:
            world_detail = "from the manifest (one value for every instance)"
        if world is not None and world_detail == LARGEST_SEEN and world > 8 * len(part_ranks) + 8:
            warnings.append(
                f"the largest rank seen ({world - 1}) is far beyond the {len(part_ranks)} rank "
                "processes seen: the world size is not inferred from it"
            )
            world, world_detail = None, ""
        instances.append(
            Instance(
                id=ident,
                label=_instance_label(label, part_ranks) if multi else "",
                how=how if multi else "",
                ranks=tuple(part_ranks),
                world_size=world,
                world_detail=world_detail,
                failed=failed,
                ambiguous=ambiguous,
            )
        )
        ranks.extend(part_ranks)
        all_failed.extend(failed)
    # Failures no instance could claim still count, without a rank.
    for index, failure in enumerate(bundle.failures):
        if index not in claimed_failures:
            all_failed.append(FailedRank(failure=failure, rank=None, state=failure_state(failure)))

    taken = {id(c) for c in claimants}
    dropped_ids = {id(c) for c in dropped_all}
    others: list[RankedProcess] = []
    unidentified: list[str] = []
    rest = [c for c in cands if id(c) not in taken] + dropped_all
    for cand in sorted(rest, key=lambda c: c.first):
        if not is_other(cand) and id(cand) not in dropped_ids:
            unidentified.append(_label(cand))
            warnings.append(f"{_label(cand)}: no rank identity; left out of the rank analysis")
        others.append(_finish(cand, cand.pid if cand.pid is not None else cand.first, None, ""))
    counts = {len(p.snapshots) for p in ranks}
    if len(counts) > 1:
        warnings.append(
            f"ranks have different numbers of snapshots ({min(counts)} to {max(counts)})"
        )
    if multi:
        warnings.append(
            f"{len(instances)} instances (servers or jobs) in the evidence, each with its own "
            "ranks: " + "; ".join(f"instance {i.id}: {i.label}" for i in instances)
        )
    single = instances[0] if not multi else None
    return RankMap(
        unit="rank",
        ranks=tuple(ranks),
        others=tuple(sorted(others, key=lambda p: (p.pid is None, p.pid or 0, p.identity.key))),
        world_size=single.world_size if single else None,
        world_detail=single.world_detail if single else "",
        failed=tuple(all_failed),
        unidentified=tuple(unidentified),
        warnings=tuple(warnings),
        instances=tuple(instances),
    )


def _instance_label(label: str, ranks: list[RankedProcess]) -> str:
    """What an instance is, for people: the signal that separated it and its rank PIDs."""
    pids = sorted(p.pid for p in ranks if p.pid is not None)
    shown = ", ".join(str(p) for p in pids[:6]) + (", ..." if len(pids) > 6 else "")
    base = label or "all rank processes"
    return f"{base}; rank PIDs {shown}" if pids else base


def _pid_map(
    bundle: Bundle,
    cands: list[_Candidate],
    is_other: Callable[[_Candidate], bool],
    hints: HintIndex,
    per_file: dict[str, int],
    warnings: list[str],
) -> RankMap:
    """No process has a rank identity: PIDs stand in for ranks, one instance. When no dump
    names a PID (faulthandler, pasted fragments), or one PID names several processes (on
    several hosts, in several containers), the processes are only numbered by position:
    the unit is "process", not "PID"."""
    pids = [c.pid for c in cands if c.pid is not None]
    unit = "pid" if pids and len(set(pids)) == len(pids) else "process"
    if pids and unit == "process":
        warnings.append(
            "the same PID names several processes (several hosts or containers), and no rank "
            "identity tells them apart: processes are numbered by their place in the evidence"
        )
    ranks: list[RankedProcess] = []
    others: list[RankedProcess] = []
    for number, cand in enumerate(cands):
        if unit == "pid":
            unit_id = cand.pid if cand.pid is not None else cand.first
        else:
            # PIDs that repeat number their processes 0, 1, ... in order of appearance.
            unit_id = number if pids else cand.first
        proc = _finish(cand, unit_id, None, _group_key(cand))
        (others if is_other(cand) else ranks).append(proc)
    ranks.sort(key=lambda p: p.unit)
    failed = failed_ranks(bundle, hints, per_file, ranks, unit, {}, set())
    counts = {len(p.snapshots) for p in ranks}
    if len(counts) > 1:
        warnings.append(
            f"ranks have different numbers of snapshots ({min(counts)} to {max(counts)})"
        )
    return RankMap(
        unit=unit,
        ranks=tuple(ranks),
        others=tuple(sorted(others, key=lambda p: (p.pid is None, p.pid or 0, p.identity.key))),
        world_size=None,
        world_detail="",
        failed=failed,
        unidentified=(),
        warnings=tuple(warnings),
        instances=(
            Instance(
                id="1",
                label="",
                how="",
                ranks=tuple(ranks),
                world_size=None,
                world_detail="",
                failed=failed,
            ),
        ),
    )
