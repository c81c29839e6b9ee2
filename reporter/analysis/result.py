"""Frozen result types of the analysis layer: what `analyze()` returns.

The renderer and the CLI read only these; the records of the Go clients live here too,
those of the environment view in `reporter.analysis.environment` and of the Flight
Recorder in `reporter.analysis.fr_result`. Each record is also its `--json` object
(`@document`, `reporter.model.document`). Rank sets are sorted tuples of ints: ranks when the bundle
names them, PIDs when it does not (`Analysis.rank_unit` says which); records holding one
derive from `RankSet`, whose `label` is its compact form (`[0-3,7]`). Frame tuples say in
their docstring whether they run innermost or outermost first.

Shape of a desync, by example::

    Analysis(verdict=Verdict.COLLECTIVE_DESYNC, confidence=Confidence.MEDIUM,
             classes=(StackClass(ranks=(0, 1), collective="all_reduce", ...),
                      StackClass(ranks=(2, 3), collective=None,
                                 wait="zmq-poll", ...)),
             branch_point=BranchPoint(shared=Frame(function="event_loop", ...),
                                      branches=(Branch(ranks=(0, 1), ...), ...)),
             ...)
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

from reporter.analysis.ranksets import RankSet
from reporter.analysis.wedge import WedgeReport
from reporter.model import (
    FailedDump,
    Frame,
    GoDumpForm,
    GoFrame,
    Location,
    ProcessDump,
    RankSource,
    TimelineEvent,
)
from reporter.model import Similarity as Similarity  # re-exported: its old home
from reporter.model.document import AS_OBJECT, Count, document, spec

if TYPE_CHECKING:
    # Annotations only: keeps loading this module cheap; none of these imports it back.
    from reporter.analysis.diff import EnvDiff
    from reporter.analysis.environment import EnvironmentSummary
    from reporter.analysis.fr_result import FlightRecorderAnalysis


class Verdict(StrEnum):
    """The headline finding."""

    COLLECTIVE_DESYNC = "collective-desync"
    ALL_STUCK = "all-stuck"
    PROGRESSING = "progressing"
    INCONCLUSIVE = "inconclusive"
    P2P_DEADLOCK = "p2p-deadlock"
    """Point-to-point waits close a cycle in which no pair meets (both sides in `recv`)."""
    CRASHED = "crashed"
    """A faulthandler `Fatal Python error` report, and no rank left waiting for the crashed one."""
    THREAD_DEADLOCK = "thread-deadlock"
    """Threads of one process that each hold a lock another of them is acquiring."""
    GIL_HELD = "gil-held"
    """One thread holds the GIL at the same line in every snapshot while the others wait."""
    LOOP_BLOCKED = "loop-blocked"
    """An asyncio event loop's thread sits in a synchronous call under a coroutine or
    callback in every snapshot: nothing else on that loop runs."""
    STUCK = "stuck"
    """One process (no other rank to wait for) blocked at the same place in every snapshot."""
    BUSY = "busy"
    """One process on CPU at the same line in every snapshot, waiting for nothing."""
    IDLE = "idle"
    """One process waiting for work by design (an event loop in `select`) in every snapshot."""
    # The waits beyond collectives (reporter/data/wait_rules.toml, waits_verdict.py).
    ENDED = "ended"
    """The hang is over: a logged timeout or watchdog ended the wait; the ranks are gone."""
    KERNEL_WAIT = "kernel-wait"
    """A process in State D (the latest copy): it waits for the kernel (FUSE, NFS, disk, driver)."""
    FORK_LOCK = "fork-lock"
    """A forked child waits on a lock inherited locked: no thread of it can release it."""
    PIPE_DEADLOCK = "pipe-deadlock"
    """A child blocks writing a full pipe its parent does not read, while the parent waits for it."""
    DEAD_WORKER = "dead-worker"
    """A consumer or parent waits for a worker that is dead (zombie, gone, crashed)."""
    ACTOR_CYCLE = "actor-cycle"
    """Ray actor methods wait (`ray.get`) for each other in a cycle."""
    CHILD_WAIT = "child-wait"
    """A parent waits for a child that is stuck on its own."""
    WAITING_ON_WORKERS = "waiting-on-workers"
    """A consumer waits for live workers' replies (slow or stuck workers, not an idle consumer)."""


class Confidence(StrEnum):
    """How far the verdict can be trusted; every step down has a note."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class RankState(StrEnum):
    """A rank's main stack across snapshots; `MIXED` only for classes of several states."""

    STUCK = "stuck"
    MOVING = "moving"
    IDLE = "idle"
    """Outside any collective, polling or sleeping in an idle loop in every snapshot."""
    UNKNOWN = "unknown"
    MIXED = "mixed"
    STOPPED = "stopped"
    """Stopped by a signal or a debugger (`/proc/PID/status` State T or t, or py-spy could
    not suspend it): it runs no code until it is continued."""
    UNINTERRUPTIBLE = "uninterruptible"
    """In uninterruptible sleep in the kernel (State D) across the capture."""
    UNRESPONSIVE = "unresponsive"
    """py-spy could not attach to it within its timeout, and nothing says why."""
    CRASHED = "crashed"
    """It died of a fatal error faulthandler reported (SIGSEGV, SIGABRT, ...)."""


@document
class RankIdentity:
    """Who a process is: `rank` None for non-rank processes and PID-only identities.

    `key` is unique in one analysis: `rank:3`, `pid:1234` or `file:<path>`.
    `dims` are the parallel coordinates found (`(("DP", 1), ("TP", 3))`),
    `detail` says in words how the identity was derived.
    """

    key: str
    rank: int | None
    role: str | None
    dims: tuple[tuple[str, int], ...]
    source: RankSource
    detail: str
    pid: int | None
    title: str | None
    instance: str = "1"
    """The instance (server, job) the rank belongs to; ranks are numbered within it."""
    host: str = ""
    """The host the process ran on; "" when the evidence does not name it."""


@document
class Crash:
    """A fatal error faulthandler reported for one process (`Fatal Python error: ...`).

    `what` is faulthandler's words (`Segmentation fault`, `Aborted`), `signal` the signal
    they name (`SIGSEGV`; "" for a fatal error raised by the interpreter itself);
    `frames` are the crashing (current) thread's, innermost first; `at` its innermost
    application frame, `copy_blocks_to_host (crashed_rank.py:99)`.
    """

    what: str
    signal: str
    thread: str
    frames: tuple[Frame, ...]
    at: str
    source: Location
    captured_at: datetime | None = None


@document
class Condition:
    """Why a process takes no part any more.

    Whatever its stacks say: stopped, in uninterruptible sleep, unresponsive to py-spy, or
    crashed. `why` says it in words with the evidence (`State T (stopped) in status/rank2.status:3;
    py-spy could not suspend it in 3 dumps`); `sources` cite it as `file:line`; `at` is
    where it was last seen (`build_prefix_mask (stopped_rank.py:107)`), "" when no stack
    of it exists.
    """

    state: RankState
    why: str
    sources: tuple[str, ...]
    at: str = ""
    wchan: str = ""
    tracer_pid: int | None = None
    crash: Crash | None = spec(default=None, written=False)
    """The fatal error, when crashed; `analyze --json` lists it under `crashes`."""


@document
class RankProcess:
    """One process with its snapshots in capture order and its state across them."""

    identity: RankIdentity
    snapshots: tuple[ProcessDump, ...]
    state: RankState
    condition: Condition | None = None
    """Set when process state evidence (`/proc` status, py-spy's failures, a crash report)
    overrules what the stacks alone would say; `state` is then `condition.state`."""
    unit: int | None = None
    """Its number in `classes[].ranks` (rank, PID or place), within its instance; None for
    processes that are not ranks. PIDs can repeat across hosts: look processes up by
    (instance, unit), not by PID."""


@document
class StackClass(RankSet):
    """One equivalence class of main-thread stacks.

    Ranks whose stacks are equal at the chosen similarity. `frames` are innermost first, taken from the smallest rank's latest
    snapshot. `collective` and `wait` come from the frames above the first
    application frame; `wait` is set only when there is no collective.
    """

    collective: str | None
    wait: str | None
    state: RankState
    frames: tuple[Frame, ...] = spec("innermost first, `function (file)`")
    pids: tuple[int, ...]
    instance: str = "1"
    """The instance (server, job) whose ranks these are; "1" when the bundle holds one."""
    call_site: str | None = None
    """Where the collective or wait is called from: `writing_check (tp_desync.py:60)`."""


@document
class TreeNode(RankSet):
    """A node of the merged prefix tree; the root has `frame=None` and all ranks.

    Children are sorted by (smallest rank, frame text).
    """

    frame: Frame | None
    children: tuple[TreeNode, ...]


@document
class Branch(RankSet):
    """One side of a branch point: `frames` outermost first, from the first frame
    that differs from the other classes down to the collective / wait or the
    innermost informative frame."""

    frames: tuple[Frame, ...]
    collective: str | None


@document
class BranchPoint:
    """Where the classes part: `common` outermost first, `shared` its deepest informative frame."""

    shared: Frame | None
    common: tuple[Frame, ...]
    branches: tuple[Branch, ...]


@document
class IdleThread(RankSet):
    """One set-aside idle thread.

    A background thread idle by design, listed so that nothing is hidden.
    """

    thread_name: str
    why: str


@document
class ThreadGroup:
    """Non-main threads of one normalised name (`worker-3` -> `worker`) across ranks."""

    name: str
    tree: TreeNode
    classes: tuple[StackClass, ...]


@document
class Signature:
    """The hang signature.

    Stable: readable `text` and the first 12 hex digits of its sha256.
    """

    hash: str = spec("12 hex digits")
    text: str


@document
class FailedRank:
    """A failed dump with the rank it belongs to, where that can be told."""

    failure: FailedDump
    rank: int | None
    state: str = "error"
    """`gone` (the process no longer exists), `refused` (no ptrace rights), `timeout`, `error`."""


@document
class Waiting:
    """Ranks blocked in one collective (operation + call site) of their group."""

    ranks: tuple[int, ...]
    pids: tuple[int, ...]
    collective: str
    at: str
    """The call site, `writing_check (tp_desync.py:60)`; "" when the stack has none."""
    group: str | None = None
    """The process group where `--locals` shows it (`default`, its name, or `non-default`
    for a group object); else None."""
    group_ranks: tuple[int, ...] = ()
    """The ranks the wait is compared against: every rank of the instance for the default
    group (or for a group whose known members all wait in it), the group's ranks from the
    titles or the manifest otherwise; () when not known."""


@document
class WaitedFor:
    """Ranks of the same group that are not in that collective, and where they are.

    `state`: `idle`, `stuck`, `moving`, `unknown` (one snapshot), `gone` (the dump failed
    because the process no longer exists) or `missing` (no evidence of it at all).
    `at`: `idle in on_idle (decode.py:812)`, `in all_reduce from forward (model.py:9)`,
    `waiting in queue-get in get_batch (worker.py:40)`, or "" for gone and missing ranks.
    """

    ranks: tuple[int, ...]
    pids: tuple[int, ...]
    state: str
    at: str


@document
class WaitsFor:
    """One edge of the waits-for relation: `waiting` cannot finish until `waited` joins."""

    waiting: Waiting
    waited: WaitedFor
    group: str = ""
    instance: str = "1"
    kind: str = "collective"
    """`collective` (the waiting ranks' group waits for every member), or `p2p`: one rank
    waits in a point-to-point call for its peer (`waited`)."""
    peer_source: str = ""
    """For `p2p`: where the peer was read (`--locals src=2 in recv`, a Flight Recorder entry)."""


@document
class P2pCycle(RankSet):
    """Ranks whose point-to-point waits close a cycle.

    `order` runs along the waits from the smallest rank (`(0, 3, 2, 1)`: 0 waits for 3, ...),
    () when the ranks wait on each other in more than one cycle. `directions` are the
    members' `recv` / `send` / `either`; `sites` their call sites. `deadlock` is True when
    every member is stuck and no two members meet (a recv answered by the matching send).
    """

    order: tuple[int, ...]
    directions: tuple[str, ...]
    sites: tuple[str, ...]
    deadlock: bool


@document
class InstanceVerdict:
    """One instance (server, job) of a bundle that holds several.

    A server, job or launcher, with its own verdict; `how` says what separated it.
    """

    id: str
    label: str
    pids: tuple[int, ...]
    ranks: tuple[int, ...]
    verdict: Verdict
    confidence: Confidence
    how: str = spec(name="separated_by")
    summary: str


@document
class HostRow:
    """One host: its ranks, their states, its failed dumps and how its capture went.

    One host of a multi-host bundle (`reporter.analysis.hosts`); the capture is
    `[[collect.remote]]`'s.
    """

    name: str
    status: str
    """`complete`, `incomplete`, `failed`, `timeout`, `interrupted` from the collection;
    `loaded` for a host known only from the evidence (hand-written manifest, bundle folders)."""
    reason: str
    ranks: tuple[int, ...]
    """Units (`classes[].ranks`) of the rank processes on the host, sorted."""
    label: str
    """The ranks as a compact set, per instance when there are several: `[0-3]`, `1:[0-3] 2:[0-1]`."""
    pids: tuple[int, ...]
    states: Annotated[tuple[tuple[str, int], ...], AS_OBJECT] = spec(
        "state -> how many of its ranks are in it"
    )
    """(state, count) of its rank processes, in a fixed order."""
    failed_dumps: Count
    others: Count
    """Processes on it that are not ranks (launchers, detokenizers)."""

    @property
    def missing(self) -> bool:
        """True when the collection got no stack from this host."""
        return self.status in {"failed", "timeout", "interrupted", "incomplete"}


@document
class CodeView:
    """One code excerpt.

    As the report shows it; `lines` empty when the source was not found. `path` is the repository path when an upstream rule applies, else the path as known.
    `origin` is `excerpt file`, `source root` or `frame`; `cite` names the evidence.
    """

    title: str
    path: str
    start: int
    end: int
    lines: tuple[str, ...]
    highlight: tuple[int, ...]
    permalink: str | None
    """None when no upstream rule gives one."""
    ref_note: str
    status: str = spec("local against deployed")
    origin: str = spec("excerpt file, source root or frame")
    cite: str


@document
class ExcerptAnalysis:
    """The code excerpts shown, and notes.

    The excerpts, explicit first, and notes on what could not be resolved.
    """

    excerpts: tuple[CodeView, ...]
    notes: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.excerpts)


@document
class Analysis:
    """Everything the analysis found in one bundle.

    `classes`, `tree`, `thread_groups` and `idle_threads` describe each rank's
    latest snapshot; `processes[i].state` and the class states say what the
    earlier snapshots add. `snapshots` is the most any rank has. `others` are
    processes that are not ranks (launcher, detokenizer, ...). `warnings` holds
    the bundle's parse warnings (`file:line: message`) then the analysis's own.
    """

    verdict: Verdict
    confidence: Confidence
    confidence_notes: tuple[str, ...]
    summary: str
    snapshots: int
    rank_unit: str
    processes: tuple[RankProcess, ...]
    others: tuple[RankProcess, ...]
    classes: tuple[StackClass, ...]
    tree: TreeNode
    thread_groups: tuple[ThreadGroup, ...]
    idle_threads: tuple[IdleThread, ...]
    branch_point: BranchPoint | None
    missing_ranks: tuple[int, ...]
    failed: tuple[FailedRank, ...]
    laggards: tuple[int, ...]
    signature: Signature
    warnings: tuple[str, ...]
    wedge: WedgeReport | None = None
    """What the metric history says about a wedge; None when the bundle has no metrics."""
    timeline: tuple[TimelineEvent, ...] = ()
    """Every dated fact of the bundle in order (reporter.analysis.timeline)."""
    environment: EnvironmentSummary | None = None
    """Allowlisted, redacted view of the environment evidence; None when there is none."""
    diff: EnvDiff | None = None
    """Changes since the baseline bundle (manifest `baseline` or `--baseline`); None without one."""
    excerpts: ExcerptAnalysis | None = None
    """Code at the branch point and the class frames, with permalinks; None when nothing to show."""
    goroutines: GoroutineAnalysis | None = None
    """Go client goroutine buckets; None when the bundle has no goroutine dump."""
    clients_sentence: str = ""
    """The one sentence about waiting Go clients (`Clients: 34 goroutines waiting for ...`), said
    at the end of `summary`, in the report's clients section and in upstream drafts; "" without."""
    waits_for: tuple[WaitsFor, ...] = ()
    """Who waits for whom in each group where ranks hold a collective others are not in."""
    instances: tuple[InstanceVerdict, ...] = ()
    """Per-instance verdicts when the bundle holds several servers or jobs; () for one."""
    flight_recorder: FlightRecorderAnalysis | None = None
    """Flight Recorder traces aligned by sequence id; None when the bundle has none."""
    p2p_cycles: tuple[P2pCycle, ...] = ()
    """Cycles of point-to-point waits (`p2p-deadlock` when one is a deadlock)."""
    p2p_deadlock: str = ""
    """For `p2p-deadlock`: `p2p deadlock: 0<->2, 1<->3: both sides wait in recv, none sends`."""
    thread_deadlocks: tuple[ThreadDeadlock, ...] = ()
    """Lock cycles between threads of one process (reporter.analysis.threads)."""
    blocked_threads: tuple[BlockedThreads, ...] = ()
    """Per process, threads blocked in every snapshot that no proven cycle explains."""
    hosts: tuple[HostRow, ...] = ()
    """One row per host when the evidence names several, or a host's capture failed; () else."""
    rule: str = ""
    """The id of the rule of `reporter/data/verdicts.toml` that decided the verdict."""
    headline: str = ""
    """The winning rule's title, filled in; "" when the answer block composes it from the
    waits-for edges (the collective and point-to-point verdicts)."""
    who_waits: str = ""
    """The winning rule's "Who waits for whom" line, filled in; "" as for `headline`."""
    what: str = ""
    """The winning rule's "What" line, filled in; "" as for `headline`."""
    recovers: str = ""
    """The winning rule's "Recovers on its own" answer, filled in; "" when it rests on the
    timeouts found (the collective verdicts)."""
    rule_evidence: tuple[str, ...] = ()
    """The `file:line` citations the winning rule's headline, What, Who and Recovers lines
    rest on: the evidence of the wait edges that decided it (`pyspy/pid15011-s2.txt:1`); ()
    when those lines rest on the stack classes' dumps (every rule not decided by an edge)."""
    said: str = ""
    """The part of `summary` the rule's headline, What and Who lines already say (the
    one-process paragraph): the summary block leaves it out of its verdict paragraph."""
    rule_steps: tuple[tuple[str, str], ...] = ()
    """The winning rule's own next steps, (action, why), filled in."""
    graph: object | None = None
    """The wait-for graph the verdict was decided over: a `reporter.analysis.waitgraph.Graph`
    (typed loosely here because waitgraph's `GraphContext` holds an `Analysis`)."""


# -- Threads of one process (reporter.analysis.threads) ------------------------------------------


@document
class LockThread:
    """One blocked thread.

    Blocked acquiring a lock (or at one line) in every snapshot of its process. `waits_at` / `holding_from` are `file:line` (`thread_deadlock.py:54`): the line it blocks
    at, and where it took the first lock it holds ("" when not known). Locks are named as
    the code does, with the class of `self` (`Stats.lock`), and the object where `--locals`
    shows it (`Stats.lock <Stats at 0x7fb79c7b7050>`). `how` says what showed the wait:
    `source line` (a `with` or `.acquire()` at that line), `native frames`
    (`lock_PyThread_acquire_lock`), `threading frames`, or `unknown`.
    """

    tid: str
    name: str | None
    waits_at: str = spec("file:line of the lock it is acquiring")
    waits_in: str
    waits_for: str = spec("the lock as the code names it (Stats.lock); empty if unknown")
    holding: tuple[str, ...]
    holding_from: str = spec("file:line where it took the lock it holds; empty if unknown")
    how: str
    source: str


@document
class ThreadDeadlock:
    """Threads of one process each waiting for a lock the next one holds.

    The threads close a cycle. `proof` is `objects` when every lock in the cycle is one object (its address in
    `--locals`, or a module global), `names` when locks are matched by the names the code
    uses (the same attribute of the same class), which two instances could share. `behind`
    are other blocked threads waiting for a lock a cycle member holds.
    """

    pid: int | None
    rank: int | None
    proof: str = spec("objects (the same lock objects) or names")
    snapshots: Count
    threads: tuple[LockThread, ...]
    behind: tuple[LockThread, ...]
    sources: tuple[str, ...]


@document
class BlockedThreads:
    """Threads blocked in every snapshot with no proven lock cycle.

    Threads of one process blocked at one place. `settle` says which capture would decide it (`py-spy dump --locals` twice, the source).
    """

    pid: int | None
    rank: int | None
    snapshots: Count
    settle: str = spec("the capture that would decide it")
    threads: tuple[LockThread, ...]


# -- Go clients (reporter.analysis.goroutines) ---------------------------------------------------


@document
class GoBucket:
    """Goroutines with the same stack (at the chosen similarity) in one dump.

    `frames` come from the first goroutine (innermost first); `top` is the innermost
    frame that is not plumbing; `waiting_since` is capture time minus the longest
    wait, when both are known.
    """

    count: int
    ids: tuple[int, ...]
    state: str
    min_minutes: int | None
    max_minutes: int | None
    untimed: int
    top: GoFrame | None
    created_by: GoFrame | None
    frames: tuple[GoFrame, ...]
    runtime: bool
    client_wait: str
    source: Location
    summary: str
    waiting_since: datetime | None


@document
class GoDumpSummary:
    """One dump: its buckets (largest first) and the runtime's own, set aside."""

    source: Location
    form: GoDumpForm
    headline: str
    captured_at: datetime | None
    total: int
    buckets: tuple[GoBucket, ...]
    runtime: tuple[GoBucket, ...]


@document
class GoroutineAnalysis:
    """All Go dumps of the bundle; `waiting` holds the client-wait buckets, largest first."""

    dumps: tuple[GoDumpSummary, ...]
    waiting: tuple[GoBucket, ...]
    similarity: Similarity

    def __bool__(self) -> bool:
        return bool(self.dumps)
