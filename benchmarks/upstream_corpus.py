"""A seeded generator of upstream issues with known duplicates, for evaluation and latency runs.

Everything is invented here (names, titles, bodies); the shapes follow real trackers of
serving and training stacks. The unit is a *family*: one bug with one stuck call chain

    outer loop (project)  ->  entry  ->  feature functions  ->  collective / wait

(e.g. `run_scheduler_process > event_loop_overlap > on_idle > check_hicache_events >
writing_check > all_reduce`) and, for desyncs, the stack of the ranks that went on.
Families share outer loops and collectives, and families of one component share its
words, so near misses are everywhere: the same `all_reduce` under another caller, the
same component with another bug, the same title words, and *siblings*: another bug of
the same component through the same callers that parts only in the innermost frames.

`generate(seed, families, distractors)` returns issues (JSONL objects) and queries:

* each *query family* has 1-3 duplicates in the corpus, written the way duplicates are:
  the original report with a fenced py-spy dump of all ranks; a rephrased report with the
  stuck rank's stack pasted outside a fence (py-spy 0.3 style names, other line numbers);
  "still happens in v0.5.x" with a short body and maybe a watchdog traceback or only
  the other ranks' stack; a tracking issue that names the functions but has no stack;
* its query is what `report search-upstream` builds from a bundle (title, summary, the
  stuck class's stack at weight 1 and the other class at 0.35) or, for some, from a
  pasted traceback (`query_from_text`);
* distractors: other families' reports (no query), component issues without a hang
  (feature requests, performance, crashes), and generic issues.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reporter.model import Frame as ModelFrame
from reporter.upstream.extract import stack_keys
from reporter.upstream.query import MOVING_STACK_WEIGHT, Query, QueryStack, query_from_text

Frame = tuple[str, str]  # (function, file)

SGL = "sgl-project/sglang"
VLLM = "vllm-project/vllm"
TORCH = "pytorch/pytorch"

C10D = "torch/distributed/distributed_c10d.py"
COLLECTIVES: dict[str, list[Frame]] = {
    "all_reduce": [("all_reduce", C10D)],
    "broadcast": [("broadcast", C10D)],
    "all_gather_into_tensor": [("all_gather_into_tensor", C10D)],
    "barrier": [("barrier", C10D)],
    "all_gather_object": [("all_gather", C10D), ("all_gather_object", C10D)],
    "broadcast_object_list": [("broadcast", C10D), ("broadcast_object_list", C10D)],
    "reduce_scatter_tensor": [("reduce_scatter_tensor", C10D)],
    "recv": [("recv", C10D)],
}


@dataclass(frozen=True)
class Project:
    """Where a family lives: its repo, outer frames (outermost first) and entry points."""

    repo: str
    outer: tuple[Frame, ...]
    entries: tuple[Frame, ...]
    side_entries: tuple[Frame, ...]
    version: str
    package_dir: str
    components: tuple[tuple[str, str, str], ...]  # (name, flag, noun)


PROJECTS = (
    Project(
        repo=SGL,
        outer=(
            ("run_scheduler_process", "sglang/srt/managers/scheduler.py"),
            ("event_loop_overlap", "sglang/srt/managers/scheduler.py"),
        ),
        entries=(
            ("on_idle", "sglang/srt/managers/scheduler.py"),
            ("process_input_requests", "sglang/srt/managers/scheduler.py"),
            ("get_next_batch_to_run", "sglang/srt/managers/scheduler.py"),
            ("run_batch", "sglang/srt/managers/scheduler.py"),
            ("process_batch_result", "sglang/srt/managers/scheduler.py"),
        ),
        side_entries=(
            ("recv_requests", "sglang/srt/managers/scheduler.py"),
            ("self_check_during_idle", "sglang/srt/managers/scheduler.py"),
        ),
        version="0.4",
        package_dir="sglang/srt",
        components=(
            ("HiCache", "--enable-hierarchical-cache", "hicache"),
            ("LoRA", "--enable-lora", "lora"),
            ("EAGLE speculative decoding", "--speculative-algorithm EAGLE", "eagle"),
            ("DP attention", "--enable-dp-attention", "dp_attn"),
            ("PD disaggregation", "--disaggregation-mode decode", "disagg"),
            ("pipeline parallelism", "--pp-size 2", "pp"),
            ("expert parallelism", "--enable-ep-moe", "expert"),
            ("radix cache", "--radix-eviction-policy lfu", "radix"),
            ("structured output", "--grammar-backend xgrammar", "grammar"),
            ("multimodal inputs", "--enable-multimodal", "mm"),
            ("weight updates", "--enable-weight-sync", "weights"),
            ("mamba hybrid models", "--enable-mamba-cache", "mamba"),
        ),
    ),
    Project(
        repo=VLLM,
        outer=(
            ("worker_main", "vllm/v1/executor/multiproc_executor.py"),
            ("worker_busy_loop", "vllm/v1/executor/multiproc_executor.py"),
        ),
        entries=(
            ("execute_model", "vllm/v1/worker/gpu_worker.py"),
            ("determine_available_memory", "vllm/v1/worker/gpu_worker.py"),
            ("compile_or_warm_up_model", "vllm/v1/worker/gpu_worker.py"),
            ("sample_tokens", "vllm/v1/worker/gpu_model_runner.py"),
        ),
        side_entries=(
            ("dequeue", "vllm/distributed/device_communicators/shm_broadcast.py"),
            ("acquire_read", "vllm/distributed/device_communicators/shm_broadcast.py"),
        ),
        version="0.8",
        package_dir="vllm",
        components=(
            ("prefix caching", "--enable-prefix-caching", "prefix"),
            ("speculative decoding", "--speculative-config", "spec"),
            ("LoRA", "--enable-lora", "lora"),
            ("custom all-reduce", "--disable-custom-all-reduce=false", "custom_ar"),
            ("pipeline parallel", "--pipeline-parallel-size 2", "pipeline"),
            ("expert parallel", "--enable-expert-parallel", "ep"),
            ("chunked prefill", "--enable-chunked-prefill", "chunk"),
            ("sleep mode", "--enable-sleep-mode", "sleep"),
            ("async scheduling", "--async-scheduling", "async_sched"),
        ),
    ),
    Project(
        repo=TORCH,
        outer=(
            ("main", "train.py"),
            ("train", "train.py"),
        ),
        entries=(
            ("train_step", "train.py"),
            ("evaluate", "train.py"),
            ("save_checkpoint", "train.py"),
        ),
        side_entries=(
            ("load_batch", "train.py"),
            ("log_metrics", "train.py"),
        ),
        version="2.6",
        package_dir="torch/distributed",
        components=(
            ("FSDP", "fully_shard", "fsdp"),
            ("DDP", "DistributedDataParallel", "ddp"),
            ("distributed checkpoint", "torch.distributed.checkpoint", "dcp"),
            ("elastic agent", "torchrun --nnodes 2", "elastic"),
            ("gloo backend", "backend='gloo'", "gloo"),
            ("object collectives", "all_gather_object", "objcoll"),
            ("DTensor", "distribute_tensor", "dtensor"),
        ),
    ),
)

VERBS = (
    "check", "sync", "flush", "update", "poll", "drain", "commit", "prepare", "gather",
    "merge", "reconcile", "refresh", "release", "evict", "load", "publish", "collect",
    "apply", "balance", "finalize",
)  # fmt: skip
OBJECTS = (
    "events", "state", "queue", "batch", "counts", "metadata", "buffers", "pages", "stats",
    "handles", "plan", "tokens", "indices",
)  # fmt: skip
TRIGGERS = (
    "an idle period", "a burst of long prompts", "a client abort", "a weight update",
    "warmup", "the first request", "a few hours of traffic", "a request with images",
    "a long-context request", "a scale-down", "a checkpoint save", "an eviction storm",
)  # fmt: skip
SYMPTOMS = (
    "The server stops answering; /health still returns 200.",
    "GPU utilisation drops to 0% and requests time out.",
    "Nothing is generated and there is no error in the logs.",
    "All requests queue up and never finish.",
    "Throughput goes to zero and the process has to be killed.",
    "The job does not crash, it just sits there.",
    "Clients see timeouts; the workers look alive but idle.",
    "After that, every request hangs until we restart.",
)  # fmt: skip
HANG_WORDS = ("hangs", "deadlocks", "gets stuck", "freezes", "stalls", "wedges")
GENERIC_TOPICS = (
    ("Feature request: {c} metrics in Prometheus", "Please export {c} counters so we can size deployments."),
    ("Docs: how to tune {c}", "The documentation of {flag} is unclear about memory use."),
    ("{c}: slower than expected on H100", "Throughput with {flag} is 30% lower than without it."),
    ("Support {c} with FP8 weights", "Loading an FP8 checkpoint with {flag} raises NotImplementedError."),
    ("Crash: KeyError in {c} after restart", "KeyError: 'req_pool_idx' when {flag} is on and the server restarts."),
    ("[RFC] Redesign {c}", "Proposal to restructure {c}; discussion welcome."),
    ("{c} test flaky in CI", "test_{noun} fails one run in ten with a timeout in CI."),
    ("Memory leak with {c}", "RSS grows by 1 GB per hour with {flag}."),
)  # fmt: skip
OTHER_TITLES = (
    "OOM on long prompts", "Tokenizer returns wrong offsets", "Wrong logprobs with top_k",
    "Install fails on Python 3.12", "Docker image missing libnccl", "Add Llama 4 support",
    "Benchmark script crashes on empty dataset", "Health endpoint returns 500 under load",
    "Slow startup when downloading weights", "Typo in README", "Streaming ends early",
    "CUDA graph capture fails on A10", "Add arm64 wheels", "JSON mode ignores schema",
)  # fmt: skip


@dataclass
class Family:
    """One bug: where it lives, its stuck chain (outermost first) and the other ranks' chain."""

    key: str
    project: Project
    component: str
    flag: str
    noun: str
    chain: list[Frame]
    collective: str
    side: list[Frame]
    trigger: str
    error: str | None
    issues: list[dict[str, Any]] = field(default_factory=list)

    def stuck_stack(self) -> list[Frame]:
        """Innermost first: collective frames, then the chain up to the outer loop."""
        frames = [*self.project.outer, *self.chain]
        return list(reversed(COLLECTIVES[self.collective])) + list(reversed(frames))

    def side_stack(self) -> list[Frame]:
        """Innermost first: the other ranks' stack (where the ranks went on)."""
        return list(reversed([*self.project.outer, *self.side]))


@dataclass(frozen=True)
class EvalQuery:
    """A query with the (repo, number) of its known duplicates."""

    family: str
    query: Query
    relevant: frozenset[tuple[str, int]]
    kind: str


@dataclass
class Corpus:
    """Generated issues (JSONL objects) and labelled queries."""

    issues: list[dict[str, Any]]
    queries: list[EvalQuery]


class _Writer:
    """Formats stacks and bodies; owns the random source and issue numbers."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.numbers: dict[str, int] = {SGL: 3000, VLLM: 14000, TORCH: 140000}
        self.day = 0

    def number(self, repo: str) -> int:
        self.numbers[repo] += self.rng.randint(1, 9)
        return self.numbers[repo]

    def stamp(self) -> str:
        self.day += 1
        month = 1 + (self.day // 28) % 12
        year = 2024 + self.day // 336
        return f"{year}-{month:02d}-{1 + self.day % 28:02d}T{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d}:00Z"

    def pyspy_thread(self, frames: Sequence[Frame], *, tid: int, qualified: bool = True) -> str:
        lines = [f'Thread {tid} (idle): "MainThread"']
        for function, path in frames:
            name = function
            if (
                qualified
                and path.endswith("scheduler.py")
                and function not in ("run_scheduler_process",)
            ):
                name = f"Scheduler.{function}"
            lines.append(f"    {name} ({path}:{self.rng.randint(40, 3200)})")
        return "\n".join(lines)

    def pyspy_dump(self, family: Family, ranks: int) -> str:
        parts = []
        for rank in range(ranks):
            pid = self.rng.randint(1000, 60000)
            stuck = rank < max(1, ranks // 2)
            frames = family.stuck_stack() if stuck else family.side_stack()
            frames = self.decorate(frames)
            title = f"{family.project.repo.split('/')[1]}::worker_TP{rank}"
            parts.append(
                f"Process {pid}: {title}\nPython v3.10.12 (/usr/bin/python3.10)\n\n"
                + self.pyspy_thread(frames, tid=pid)
                + f'\nThread {pid + 7} (idle): "watchdog"\n    watchdog_thread ({family.project.package_dir}/utils.py:88)'
                + "\n    run (threading.py:953)\n    _bootstrap_inner (threading.py:1016)\n    _bootstrap (threading.py:973)"
            )
        return "\n\n".join(parts)

    def decorate(self, frames: list[Frame]) -> list[Frame]:
        """Add the generic wrappers real stacks carry (dropped again by extraction)."""
        out = list(frames)
        if out and out[0][1] == C10D and self.rng.random() < 0.7:
            out.insert(1, ("wrapper", "torch/distributed/c10d_logger.py"))
        if self.rng.random() < 0.5:
            out.insert(len(out) - 1, ("decorate_context", "torch/utils/_contextlib.py"))
        if self.rng.random() < 0.5:
            out.extend(
                [
                    ("run", "multiprocessing/process.py"),
                    ("_bootstrap", "multiprocessing/process.py"),
                ]
            )
        return out

    def traceback(self, frames: Sequence[Frame], error: str) -> str:
        """A traceback of `frames` (innermost first), as Python prints it."""
        prefix = "/usr/local/lib/python3.10/dist-packages/"
        lines = ["Traceback (most recent call last):"]
        for function, path in reversed(frames):
            lines.append(
                f'  File "{prefix}{path}", line {self.rng.randint(40, 3200)}, in {function}'
            )
            lines.append(f"    {function}_impl(self)")
        lines.append(error)
        return "\n".join(lines)

    def env(self, project: Project) -> str:
        gpus = self.rng.choice(("8x H100 80GB", "4x A100 40GB", "2x L40S", "8x H20", "4x RTX 4090"))
        return (
            "### Environment\n\n```\n"
            f"{project.repo.split('/')[1]}: {project.version}.{self.rng.randint(0, 9)}\n"
            f"torch: 2.{self.rng.randint(4, 7)}.{self.rng.randint(0, 2)}+cu124\nGPU: {gpus}\n"
            f"CUDA: 12.{self.rng.randint(1, 8)}\n```"
        )


def _make_families(rng: random.Random, count: int) -> list[Family]:
    families: list[Family] = []
    used: set[str] = set()
    while len(families) < count:
        project = rng.choice(PROJECTS)
        component, flag, noun = rng.choice(project.components)
        depth = rng.choice((1, 2, 2, 3))
        chain_names: list[str] = []
        for _ in range(depth):
            for _attempt in range(20):
                name = f"{rng.choice(VERBS)}_{noun}_{rng.choice(OBJECTS)}"
                if name not in used:
                    used.add(name)
                    chain_names.append(name)
                    break
        module = f"{project.package_dir}/{noun}/{rng.choice(('manager', 'cache', 'worker', 'runner', 'state'))}.py"
        entry = rng.choice(project.entries)
        side_entry = rng.choice(project.side_entries)
        chain = [entry, *((n, module) for n in chain_names)]
        collective = rng.choice(tuple(COLLECTIVES))
        error = None
        if rng.random() < 0.5:
            op = collective.upper().replace("_INTO_TENSOR", "_BASE")
            error = (
                f"torch.distributed.DistBackendError: [Rank {rng.randint(0, 7)}] Watchdog caught "
                f"collective operation timeout: WorkNCCL(SeqNum={rng.randint(100, 99999)}, "
                f"OpType={op}, NumelIn={rng.randint(1, 64)}, NumelOut={rng.randint(1, 512)}, "
                "Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
            )
        families.append(
            Family(
                key=f"f{len(families):03d}",
                project=project,
                component=component,
                flag=flag,
                noun=noun,
                chain=chain,
                collective=collective,
                side=[side_entry],
                trigger=rng.choice(TRIGGERS),
                error=error,
            )
        )
    return families


def _sibling(rng: random.Random, family: Family) -> Family:
    """Another bug of `family`'s component sharing its callers but not its innermost frames."""
    module = family.chain[-1][1]
    inner = f"{rng.choice(VERBS)}_{family.noun}_{rng.choice(OBJECTS)}_v2"
    chain = (
        [*family.chain[:-1], (inner, module)]
        if len(family.chain) > 2
        else [*family.chain, (inner, module)]
    )
    return Family(
        key=f"{family.key}-sibling",
        project=family.project,
        component=family.component,
        flag=family.flag,
        noun=family.noun,
        chain=chain,
        collective=rng.choice(tuple(COLLECTIVES)),
        side=list(family.side),
        trigger=rng.choice(TRIGGERS),
        error=None,
    )


def _title(rng: random.Random, family: Family, style: str) -> str:
    hang = rng.choice(HANG_WORDS)
    c = family.component
    fn = family.chain[-1][0]
    options = {
        "report": (
            f"[Bug] Server {hang} after {family.trigger} with {c} enabled",
            f"{c}: requests stuck forever after {family.trigger}",
            f"Deadlock with {family.flag} and tp={rng.choice((2, 4, 8))}",
            f"Ranks disagree in {family.collective} when {c} is on",
            f"{c} + TP: GPUs idle, no output, no error",
        ),
        "rephrase": (
            f"Inference {hang} forever, GPU at 0% ({c})",
            f"Stuck in {fn} with {family.flag}",
            f"Workers wait in {family.collective} forever after {family.trigger}",
            f"No tokens generated after {family.trigger}",
        ),
        "still": (
            f"still happens in v0.5.{rng.randint(0, 4)}: {c} hang",
            f"Regression: {c} deadlock is back in v0.5.{rng.randint(0, 4)}",
            f"Same hang as before on the latest release ({c})",
        ),
        "tracking": (
            f"[Tracking] {c}: ranks diverge before {family.collective}",
            f"[Tracking] {c} hangs",
        ),
    }
    return rng.choice(options[style])


def _body(w: _Writer, family: Family, style: str, refs: Sequence[int]) -> str:
    rng = w.rng
    project = family.project
    symptom = " ".join(rng.sample(SYMPTOMS, 2))
    fn = family.chain[-1][0]
    if style == "report":
        ranks = rng.choice((2, 4, 4, 8))
        return (
            f"### Describe the bug\n\nWith `{family.flag}` the service {rng.choice(HANG_WORDS)} "
            f"after {family.trigger}. {symptom}\n\npy-spy dump of every rank:\n\n```\n"
            f"{w.pyspy_dump(family, ranks)}\n```\n\nSome ranks are in `{family.collective}`, the "
            f"others are not.\n\n### Reproduction\n\n```\npython -m {project.repo.split('/')[1]}.launch "
            f"--tp {ranks} {family.flag}\n```\n\n{w.env(project)}\n"
        )
    if style == "rephrase":
        stack = w.decorate(family.stuck_stack())[: rng.randint(3, 9)]
        return (
            f"{symptom}\n\nThis is what rank 0 shows (the other ranks look idle):\n\n"
            f"{w.pyspy_thread(stack, tid=rng.randint(100, 9999), qualified=False)}\n\n"
            f"Any workaround? We run {family.component} in production.\n\n{w.env(project)}\n"
        )
    if style == "still":
        ref = f"Same as #{refs[0]}. " if refs else ""
        roll = rng.random()
        if roll < 0.4 and family.error:
            evidence = (
                "\n\nThe NCCL watchdog eventually fired:\n\n```\n"
                + w.traceback(family.stuck_stack()[: rng.randint(4, 8)], family.error)
                + "\n```"
            )
        elif roll < 0.7:
            evidence = (
                "\n\nOne of the ranks that did not hang:\n\n```\n"
                + w.pyspy_thread(w.decorate(family.side_stack()), tid=rng.randint(100, 9999))
                + "\n```"
            )
        else:
            evidence = ""
        return f"{ref}Still seeing this on the latest release with tp={rng.choice((2, 4, 8))}.{evidence}\n"
    # tracking
    links = ", ".join(f"#{n}" for n in refs) or "several reports"
    chain = " -> ".join(f"`{name}`" for name, _ in family.chain[1:])
    return (
        f"Tracking the {family.component} hangs reported in {links}.\n\n"
        f"Root cause: {chain} runs a `{family.collective}` only on some ranks, so the others "
        f"never join and the group waits forever.\n\n- [ ] make `{fn}` collective on every rank\n"
        "- [ ] add a timeout\n- [ ] regression test\n"
    )


def _issue(w: _Writer, repo: str, title: str, body: str, labels: Sequence[str]) -> dict[str, Any]:
    number = w.number(repo)
    stamp = w.stamp()
    state = "closed" if w.rng.random() < 0.4 else "open"
    return {
        "repo": repo,
        "number": number,
        "title": title,
        "body": body,
        "state": state,
        "labels": list(labels),
        "created_at": stamp,
        "updated_at": stamp,
        "url": f"https://github.com/{repo}/issues/{number}",
    }


def _query(w: _Writer, family: Family) -> tuple[Query, str]:
    """What a user's bundle (or pasted traceback) gives for a new occurrence."""
    rng = w.rng
    title = _title(rng, family, rng.choice(("report", "rephrase")))
    summary = " ".join(rng.sample(SYMPTOMS, 2)) + f" It started after {family.trigger}."
    if family.error and rng.random() < 0.25:
        text = f"{title}\n\n{summary}\n\n" + w.traceback(family.stuck_stack(), family.error)
        return query_from_text(text, repos=[family.project.repo]), "text"

    def keys(frames: list[Frame]) -> tuple[str, ...]:
        return stack_keys([ModelFrame(function=f, file=p) for f, p in w.decorate(frames)])

    stacks = [QueryStack(keys=keys(family.stuck_stack()), weight=1.0, label="[0-1]")]
    if rng.random() < 0.8:
        stacks.append(
            QueryStack(keys=keys(family.side_stack()), weight=MOVING_STACK_WEIGHT, label="[2-3]")
        )
    collective = family.collective
    text = "\n".join([title, summary, f"Collective desync: ranks [0-1] are stuck in {collective}."])
    query = Query(repos=(family.project.repo,), title=title, text=text, stacks=tuple(stacks))
    return query, "bundle"


def generate(seed: int = 7, *, families: int = 60, distractors: int = 600) -> Corpus:
    """`families` labelled queries with their duplicates, hidden among at least
    `distractors` other issues."""
    rng = random.Random(seed)
    w = _Writer(rng)
    query_families = _make_families(rng, families)
    other_families = _make_families(rng, max(10, families))
    issues: list[dict[str, Any]] = []
    queries: list[EvalQuery] = []
    for family in query_families:
        styles = ["report", *rng.sample(("rephrase", "still", "tracking"), rng.randint(0, 2))]
        if rng.random() < 0.35:
            # The report that would rank easiest is missing: only the harder kinds remain.
            styles = [rng.choice(("rephrase", "still", "tracking"))] + (
                [rng.choice(("still", "tracking"))] if rng.random() < 0.5 else []
            )
        numbers: list[int] = []
        for style in styles:
            issue = _issue(
                w,
                family.project.repo,
                _title(rng, family, style),
                _body(w, family, style, numbers),
                ("bug",) if style != "tracking" else ("tracking",),
            )
            numbers.append(issue["number"])
            issues.append(issue)
        query, kind = _query(w, family)
        relevant = frozenset((family.project.repo, n) for n in numbers)
        queries.append(EvalQuery(family=family.key, query=query, relevant=relevant, kind=kind))
    dis: list[dict[str, Any]] = []
    # Sibling bugs: another hang of the same component through the same callers that
    # parts only near the top of the stack (as `writing_check` and `loading_check` would
    # under `check_hicache_events`). Words are shared; the innermost frames are not.
    siblings = [_sibling(rng, family) for family in query_families if rng.random() < 0.7]
    # Other hangs: same loops and collectives, other callers; some share a component.
    for family in [*siblings, *other_families]:
        for style in rng.sample(("report", "rephrase", "still"), rng.randint(1, 3)):
            dis.append(
                _issue(
                    w,
                    family.project.repo,
                    _title(rng, family, style),
                    _body(w, family, style, []),
                    ("bug",),
                )
            )
    # Component issues without a hang, and unrelated issues, up to the requested count.
    pool = query_families + other_families
    while len(dis) < distractors:
        family = rng.choice(pool)
        if rng.random() < 0.6:
            title_t, body_t = rng.choice(GENERIC_TOPICS)
            values = {"c": family.component, "flag": family.flag, "noun": family.noun}
            title, body = title_t.format(**values), body_t.format(**values)
            if rng.random() < 0.3:
                body += (
                    "\n\n```\n"
                    + w.traceback(family.side_stack()[:3], "KeyError: 'req_pool_idx'")
                    + "\n```"
                )
        else:
            title = rng.choice(OTHER_TITLES)
            body = f"{rng.choice(SYMPTOMS)} Seen with {family.flag}.\n\n{w.env(family.project)}"
        dis.append(_issue(w, family.project.repo, title, body + "\n", ("question",)))
    issues.extend(dis)
    rng.shuffle(issues)
    return Corpus(issues=issues, queries=queries)


def bulk(seed: int, count: int) -> list[dict[str, Any]]:
    """`count` issues for latency runs: the labelled corpus repeated with new numbers."""
    out: list[dict[str, Any]] = []
    round_ = 0
    while len(out) < count:
        corpus = generate(seed + round_, families=60, distractors=900)
        for issue in corpus.issues:
            issue = dict(issue)
            issue["number"] = issue["number"] + 1_000_000 * (round_ + 1)
            out.append(issue)
            if len(out) == count:
                break
        round_ += 1
    return out
