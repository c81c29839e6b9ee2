"""What an upstream maintainer reads first: the title, the opening sentence and the
reproduction, told in the engine's words from what the evidence knows.

Input: the analysed bundle and the repository. Output: a `Story` (plain strings, not yet
redacted: the draft passes each through the upstream policy's redaction). The story
names the component and its mode (`SGLang PD decode`, `vLLM`, `DP attention`), the
parallel sizes (`TP=2, DP=2`), the model, and who waits where for whom, in the project's
words (`TP0 in all_reduce from check_hicache_events while TP1 idles in on_idle`); never
PIDs, ports, hosts or this machine's paths. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reporter.analysis import Analysis, Verdict
from reporter.analysis.environment import ShownCommand
from reporter.analysis.result import StackClass, WaitsFor
from reporter.model import Bundle
from reporter.secrets import REDACTED

TITLE_MAX = 99
# Launcher options, by what they say (SGLang's, vLLM's and torchrun's spellings).
_SIZE_FLAGS = {
    "TP": ("--tp", "--tp-size", "--tensor-parallel-size", "-tp"),
    "DP": ("--dp", "--dp-size", "--data-parallel-size", "-dp"),
    "PP": ("--pp", "--pp-size", "--pipeline-parallel-size", "-pp"),
    "EP": ("--ep", "--ep-size", "--expert-parallel-size"),
}
_MODEL_FLAGS = ("--model-path", "--model", "--served-model-name")
_PRODUCTS = {"sglang": "SGLang", "vllm": "vLLM", "pytorch": "torch.distributed"}
# Option values that hold a secret or this machine's paths are shown masked.
_SECRET_FLAG_RE = re.compile(r"(?i)(token|key|secret|password|passwd|auth)")
_ABS_PATH_RE = re.compile(r"(?<![\w:/<])/(?:[\w.+@-]+/)*([\w.+@-]+)")
_INTERPRETER_RE = re.compile(r"^(?:.*/)?(python[\d.]*)$")
# The engines' own launchers: a command line whose program is one of these is the launch
# line a maintainer can run; anything else (a wrapper or test script) is not.
_LAUNCHERS = frozenset(
    (
        "sglang.launch_server",
        "sglang.launch_router",
        "sglang_router.launch_server",
        "vllm.entrypoints.openai.api_server",
        "vllm.entrypoints.api_server",
        "torchrun",
        "torch.distributed.run",
        "torch.distributed.launch",
    )
)
# Program + first positional word that launch the engine (`vllm serve MODEL`, `sglang serve`).
_LAUNCH_VERBS = {"vllm": ("serve",), "sglang": ("serve",)}
# Engine options as the launchers spell them: the ones a wrapper's command line passes on.
_ENGINE_OPTION_RE = re.compile(
    r"^--(model|model-path|tokenizer|served-model-name|tp|tp-size|tensor-parallel-size|dp|"
    r"dp-size|data-parallel-size|pp|pp-size|pipeline-parallel-size|ep|ep-size|"
    r"expert-parallel-size|enable-\S+|disable-\S+|disaggregation-\S+|hicache-\S+|"
    r"attention-backend|kv-cache-dtype|dtype|quantization|mem-fraction-static|"
    r"chunked-prefill-size|max-running-requests|max-model-len|gpu-memory-utilization|"
    r"cuda-graph-\S+|speculative-\S+|schedule-policy|load-balance-method|trust-remote-code)$"
)
# Modes that change which ranks meet in which collective, as the engines name them, and
# where the evidence shows them: a launcher flag, the service's or the capture's title, or
# the engine's own class names in the hung stack (SGLang's HiCache is `HiRadixCache`).
_MODE_FLAGS = (
    ("HiCache", ("--enable-hierarchical-cache",)),
    ("DP attention", ("--enable-dp-attention",)),
)
_MODE_WORDS = (
    ("HiCache", re.compile(r"(?i)\bhicache\b|hierarchical[- ]cache|HiRadixCache")),
    ("DP attention", re.compile(r"(?i)\bdp[- _]attention\b")),
)
# Per-run values: a maintainer's run picks its own (and they tell about this machine).
_PER_RUN_FLAGS = frozenset(
    ("--port", "--nccl-port", "--master-port", "--host", "--master-addr", "--dist-init-addr")
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Story:
    """The draft's first words: `title` (no prefix, under 100 characters), `sentence` (one
    plain sentence), the reproduction lines, and one line per healthy instance."""

    component: str
    title: str
    sentence: str
    model: str
    mode: str
    sizes: tuple[tuple[str, int], ...]
    command: str
    """The engine's own launch line (`python3 -m sglang.launch_server ...`, `vllm serve ...`),
    masked; "" when the evidence holds none."""
    wrapper: str
    """The command that ran instead when it is not the engine's launcher (a wrapper or test
    script), masked; the draft says the launch line was not captured."""
    engine_options: str
    """The engine's options the wrapper was given (`--tp-size 2 --disaggregation-mode decode`)."""
    moments: int
    """Capture moments of the hung ranks: dumps taken together in several formats count once."""
    trigger: str
    reproduction: tuple[str, ...]
    healthy: tuple[str, ...]
    hung_instance: str | None


def mask_path(text: str) -> str:
    """Absolute paths of this machine shown by their last part (`/opt/venv/bin/python` ->
    `python`, `/models/Qwen3-8B` -> `<path>/Qwen3-8B`); site-packages paths keep the
    package part. URLs are left alone."""

    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        for marker in ("site-packages/", "dist-packages/"):
            if marker in whole:
                return whole.split(marker, 1)[1]
        if _INTERPRETER_RE.match(whole):
            return match.group(1)
        return f"<path>/{match.group(1)}"

    return _ABS_PATH_RE.sub(one, text)


def _product(repo: str, bundle: Bundle) -> str:
    owner_name = repo.lower()
    for key, name in _PRODUCTS.items():
        if key in owner_name:
            return name
    service = (bundle.manifest.service or "").lower()
    for key, name in _PRODUCTS.items():
        if key in service:
            return name
    return repo.rsplit("/", 1)[-1]


def _flag(command: ShownCommand | None, names: Sequence[str]) -> str | None:
    if command is None:
        return None
    for flag in command.flags:
        if flag.name in names:
            return flag.value if flag.value is not None else ""
    return None


def _hung_instance(analysis: Analysis) -> str | None:
    if len(analysis.instances) < 2:
        return None
    if analysis.waits_for:
        return analysis.waits_for[0].instance
    for instance in analysis.instances:
        if instance.verdict is not Verdict.PROGRESSING:
            return instance.id
    return None


def _launcher(analysis: Analysis, hung: str | None) -> ShownCommand | None:
    """The launcher command of the hung instance: one whose options name the instance's
    sizes or mode when several launchers were captured, else the first one."""
    commands = analysis.environment.commands if analysis.environment else ()
    if not commands:
        return None
    if hung is not None and len(commands) > 1:
        pids = next((i.pids for i in analysis.instances if i.id == hung), ())
        for command in commands:
            if any(f"pid{pid}" in command.source for pid in pids):
                return command
        # Collectors save the launcher's command line as pidN.cmdline of the parent: the
        # instance's label names that PID.
        label = next((i.label for i in analysis.instances if i.id == hung), "")
        for command in commands:
            found = re.search(r"pid(\d+)", command.source)
            if found and f"PID {found.group(1)}" in label:
                return command
    return commands[0]


def _sizes(
    analysis: Analysis, command: ShownCommand | None, hung: str | None
) -> list[tuple[str, int]]:
    sizes: list[tuple[str, int]] = []
    for dim, names in _SIZE_FLAGS.items():
        value = _flag(command, names)
        if value and value.isdigit():
            sizes.append((dim, int(value)))
    if sizes:
        return sizes
    # No launcher options: the ranks' own coordinates (process titles such as
    # `sglang::scheduler_DP1_TP0`) give the sizes seen.
    seen: dict[str, set[int]] = {}
    for process in analysis.processes:
        if hung is not None and process.identity.instance != hung:
            continue
        for dim, coordinate in process.identity.dims:
            seen.setdefault(dim, set()).add(coordinate)
    return [
        (dim, max(values) + 1) for dim, values in seen.items() if len(values) > 1 or dim == "TP"
    ]


def _label_value(bundle: Bundle, name: str) -> str:
    for series in bundle.series:
        for key, value in series.labels:
            if key == name and value:
                return value
    return ""


def _mode(
    bundle: Bundle, analysis: Analysis, command: ShownCommand | None, hung: str | None
) -> str:
    """`PD decode`, `DP attention`, `HiCache`, joined by ` + `: the modes the launcher's
    flags, the service's or capture's title, or the engine's class names in the hung
    ranks' stacks show; "" when none does."""
    pd = _flag(command, ("--disaggregation-mode",))
    if not pd:
        engine = _label_value(bundle, "engine_type")
        pd = engine if engine in ("prefill", "decode") else ""
    parts = [f"PD {pd}"] if pd and pd != "null" else []
    titles = " ".join((bundle.manifest.title or "", bundle.manifest.service or ""))
    frames = " ".join(
        f.function for c in analysis.classes if hung is None or c.instance == hung for f in c.frames
    )
    for name, flags in _MODE_FLAGS:
        words = dict(_MODE_WORDS)[name]
        if (
            _flag(command, flags) is not None
            or words.search(titles)
            or (name == "HiCache" and words.search(frames))
        ):
            parts.append(name)
    return " + ".join(dict.fromkeys(parts))


def moments(analysis: Analysis, hung: str | None) -> int:
    """How many snapshots of the hung ranks the "unchanged across N snapshots" claim rests
    on: the longest series of one rank's dumps in one format from one folder (3 text
    snapshots count 3; the --json, --locals and --subprocesses dumps taken once besides
    them are the same moments in other formats and do not add). The most any rank has."""
    most = 0
    for process in analysis.processes:
        if hung is not None and process.identity.instance != hung:
            continue
        if process.identity.rank is None:
            continue
        series: dict[tuple[str, bool, str], int] = {}
        for dump in process.snapshots:
            key = (
                dump.kind.value,
                any(f.locals for t in dump.threads for f in t.frames),
                dump.source.path.rpartition("/")[0],
            )
            series[key] = series.get(key, 0) + 1
        most = max(most, max(series.values(), default=0))
    return most or analysis.snapshots


def is_launcher(command: ShownCommand | None) -> bool:
    """True when `command` is an engine's own launch line (`python -m sglang.launch_server`,
    `vllm serve`, `torchrun`), not a wrapper or test script that starts it."""
    if command is None:
        return False
    program = command.program.rsplit("/", 1)[-1]
    if program in _LAUNCHERS:
        return True
    verbs = _LAUNCH_VERBS.get(program, ())
    return bool(command.positional) and command.positional[0] in verbs


def _engine_options(command: ShownCommand | None) -> str:
    """The engine options a wrapper's command line carries (masked like the launch line)."""
    if command is None:
        return ""
    kept = ShownCommand(
        program="",
        flags=tuple(f for f in command.flags if _ENGINE_OPTION_RE.match(f.name)),
        positional=(),
        source=command.source,
    )
    return _command_line(kept).strip() if kept.flags else ""


def _model(bundle: Bundle, command: ShownCommand | None) -> str:
    value = _flag(command, _MODEL_FLAGS) or _label_value(bundle, "model_name")
    # A local checkout of the weights is named by its folder (`/models/Qwen3-8B` -> `Qwen3-8B`).
    return mask_path(value).removeprefix("<path>/") if value else ""


def _command_line(command: ShownCommand | None) -> str:
    """The launcher as a maintainer would type it: interpreter and paths masked, secret
    values replaced."""
    if command is None:
        return ""
    program = command.program
    words: list[str] = []
    if program:
        first = (
            f"python3 -m {program}"
            if "." in program and "/" not in program and not program.endswith(".py")
            else mask_path(program)
        )
        words.append(first.removeprefix("<path>/"))
        words.extend(mask_path(p) for p in command.positional)
    for flag in command.flags:
        name, value = flag.name, flag.value
        if value is None:
            words.append(name)
        elif _SECRET_FLAG_RE.search(name):
            # The local mark: the draft's redaction numbers it like every secret.
            words.append(f"{name} {REDACTED}")
        elif name in _PER_RUN_FLAGS:
            # Left out: the redaction would take the value for a host name anyway.
            continue
        else:
            shown = mask_path(value)
            words.append(f"{name} {shown!r}" if " " in shown else f"{name} {shown}")
    return " ".join(words)


def rank_names(analysis: Analysis, ranks: Sequence[int], hung: str | None) -> str:
    """`TP0`, `TP0-1`, `ranks 2-3`: the ranks as the engine names them (its process titles'
    coordinates when they have one dimension that varies), else by global rank."""
    dims: dict[int, tuple[tuple[str, int], ...]] = {}
    for process in analysis.processes:
        if process.identity.rank is not None and (
            hung is None or process.identity.instance == hung
        ):
            dims[process.identity.rank] = process.identity.dims
    names = [dims.get(r, ()) for r in ranks]
    varying = {
        d
        for entry in dims.values()
        for d, _ in entry
        if len({v for e in dims.values() for dd, v in e if dd == d}) > 1
    }
    if varying and all(names):
        # `TP0-1`, or `DP1 TP0-1` when the ranks share every other coordinate.
        parts: list[str] = []
        for dim in sorted(varying, key=lambda d: (d != "DP", d != "PP", d)):
            values = sorted({v for entry in names for d, v in entry if d == dim})
            if len(values) > 1 and dim != sorted(varying, key=lambda d: (d != "TP", d))[0]:
                parts = []
                break
            parts.append(f"{dim}{span(values)}")
        if parts:
            return " ".join(parts)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return f"ranks {span(sorted(ranks))}"


def span(values: Sequence[int]) -> str:
    """`0-3` for a run of numbers, else `0,2,5`."""
    if not values:
        return ""
    if list(values) == list(range(values[0], values[-1] + 1)) and len(values) > 1:
        return f"{values[0]}-{values[-1]}"
    return ",".join(str(v) for v in values)


def _function(at: str) -> str:
    """`HiRadixCache.writing_check (tp_desync.py:66)` -> `writing_check`."""
    name = at.split(" (", 1)[0].strip()
    for prefix in ("idle in ", "running ", "stuck in ", "in "):
        name = name.removeprefix(prefix)
    return name.rsplit(".", 1)[-1]


def _caller(stack_class: StackClass | None, collective: str) -> str:
    """The engine's function that called into the collective: the first frame past the
    collective that is not torch's own wrapper or a thin distributed helper."""
    if stack_class is None:
        return ""
    skip = re.compile(
        r"(?i)(^|\.)(_exception_logger|wrapper|all_reduce|all_gather|broadcast|"
        r"barrier|recv|send|reduce_scatter|tensor_model_parallel_\w+|"
        r"GroupCoordinator\.\w+|\w*_object)$"
    )
    for frame in stack_class.frames:
        name = frame.function
        if name == collective or skip.search(name) or "torch/" in frame.short_file:
            continue
        return name.rsplit(".", 1)[-1]
    return ""


def _class_of(analysis: Analysis, ranks: Sequence[int], hung: str | None) -> StackClass | None:
    for stack_class in analysis.classes:
        if hung is not None and stack_class.instance != hung:
            continue
        if set(ranks) <= set(stack_class.ranks):
            return stack_class
    return None


def _waits(analysis: Analysis, wait: WaitsFor, hung: str | None) -> tuple[str, str]:
    """(short, long) of who waits where for whom."""
    waiting = rank_names(analysis, wait.waiting.ranks, hung)
    waited = rank_names(analysis, wait.waited.ranks, hung)
    collective = wait.waiting.collective
    cls = _class_of(analysis, wait.waiting.ranks, hung)
    site = _caller(cls, collective) or _function(wait.waiting.at)
    # The branch point's caller names the engine step better than the innermost helper.
    outer = ""
    if cls is not None:
        names = [f.function.rsplit(".", 1)[-1] for f in cls.frames]
        if site in names:
            index = names.index(site)
            if index + 1 < len(names) and names[index + 1].startswith(
                ("check_", "process_", "prepare_", "execute_", "forward")
            ):
                outer = names[index + 1]
    where = outer or site
    state = wait.waited.state
    other_at = _function(wait.waited.at)
    other_cls = _class_of(analysis, wait.waited.ranks, hung)
    if other_cls is not None and state == "idle" and len(other_cls.frames) > 1:
        # The engine's loop step that idles (`on_idle`) says more than the helper it polls.
        names = [f.function.rsplit(".", 1)[-1] for f in other_cls.frames]
        if other_at in names:
            index = names.index(other_at)
            if index + 1 < len(names) and not names[index + 1].startswith(
                ("event_loop", "run_", "worker_main")
            ):
                other_at = names[index + 1]
    if state == "idle":
        other = f"{waited} {'idles' if len(wait.waited.ranks) == 1 else 'idle'} in {other_at}"
    elif state == "moving":
        other = (
            f"{waited} {'keeps' if len(wait.waited.ranks) == 1 else 'keep'} running ({other_at})"
        )
    elif wait.kind == "p2p":
        other = f"{waited} waits in {other_at}"
    else:
        other = f"{waited} is {state} in {other_at}"
    verb = "waits" if len(wait.waiting.ranks) == 1 and not waiting.startswith("ranks") else "wait"
    short = f"{waiting} in {collective} from {where} while {other}"
    long = f"{waiting} {verb} in {collective} (called from {where}) while {other}"
    return short, long


def _what(bundle: Bundle, analysis: Analysis, hung: str | None) -> tuple[str, str]:
    """(short, long) of what happens, in the engine's words."""
    verdict = analysis.verdict
    if verdict is Verdict.COLLECTIVE_DESYNC and analysis.waits_for:
        return _waits(analysis, analysis.waits_for[0], hung)
    if verdict is Verdict.P2P_DEADLOCK:
        pairs = [w for w in analysis.waits_for if w.kind == "p2p"]
        sites = sorted({_function(w.waiting.at) for w in pairs}) or sorted(
            {_function(c.call_site) for c in analysis.classes if c.call_site}
        )
        text = "every stage waits in recv, none sends"
        if sites:
            text += f" ({', '.join(sites)})"
        # Pairs only where the evidence names both ends; else say what would name them.
        named = sorted(
            {
                f"{rank_names(analysis, w.waiting.ranks, hung)} waits for "
                f"{rank_names(analysis, w.waited.ranks, hung)}"
                for w in pairs
                if w.waited.ranks
            }
        )
        at = f" ({', '.join(sites)})" if sites else ""
        if named:
            long = f"every stage waits in recv{at} and none sends: {'; '.join(named)}"
        else:
            long = (
                f"every stage waits in recv{at} and none sends; the dumps name no peer "
                "(a py-spy --locals dump would show each recv's src/dst)"
            )
        return text, long
    if verdict is Verdict.THREAD_DEADLOCK and analysis.thread_deadlocks:
        cycle = analysis.thread_deadlocks[0]
        locks = [t.waits_for.split(" <", 1)[0].split(" (", 1)[0] for t in cycle.threads]
        short = f"lock-order deadlock between {len(cycle.threads)} threads ({' and '.join(locks)})"
        return short, short
    if verdict is Verdict.ALL_STUCK and analysis.classes:
        cls = analysis.classes[0]
        name = cls.collective or cls.wait or _function(cls.frames[0].function if cls.frames else "")
        site = _caller(cls, name)
        short = f"every rank stuck in {name}" + (f" from {site}" if site else "")
        return short, short
    if verdict is Verdict.CRASHED:
        return (
            "a rank crashed and the others wait for it",
            "a rank crashed and the others wait for it",
        )
    if analysis.wedge is not None and analysis.wedge.episode is not None:
        short = "generation stops while requests queue (metrics only, no stacks yet)"
        return (
            short,
            "generation output fell to zero while requests kept queueing; no stack dump was captured",
        )
    if verdict is Verdict.PROGRESSING:
        return (
            "every rank keeps making progress (no hang seen)",
            "every rank kept making progress across the snapshots",
        )
    return (
        "stops making progress (cause not known)",
        "it stops making progress; the evidence does not show where",
    )


def _trigger(analysis: Analysis) -> str:
    """The timeline's last event before the onset (the wedge's onset, else the first dump)."""
    onset = None
    if analysis.wedge is not None and analysis.wedge.episode is not None:
        onset = analysis.wedge.episode.onset
    events = [
        e
        for e in analysis.timeline
        if e.kind.value not in ("dump", "dump-failed", "metric", "wedge")
    ]
    if onset is None:
        dumps = [e.at for e in analysis.timeline if e.kind.value == "dump"]
        onset = min(dumps) if dumps else None
    if onset is None:
        return ""
    before = [e for e in events if e.at <= onset and not e.text.startswith("report collect")]
    if not before:
        return ""
    last = before[-1]
    return f"{' '.join(last.text.split())} ({last.kind.value}, {(onset - last.at).total_seconds():.0f} s before it stopped)"


def _healthy(analysis: Analysis, hung: str | None) -> tuple[str, ...]:
    lines: list[str] = []
    for instance in analysis.instances:
        if instance.id == hung or instance.verdict is not Verdict.PROGRESSING:
            continue
        count = len(instance.ranks) or len(instance.pids)
        lines.append(
            f"Another instance captured at the same time ({count} ranks) kept making progress "
            f"in every snapshot; its stacks are left out."
        )
    return tuple(lines)


def build_story(
    bundle: Bundle, analysis: Analysis, repo: str, *, title_max: int = TITLE_MAX
) -> Story:
    """The title (at most `title_max` characters: the form's prefix is the caller's),
    first sentence and reproduction; see the module docstring."""
    hung = _hung_instance(analysis)
    command = _launcher(analysis, hung)
    product = _product(repo, bundle)
    mode = _mode(bundle, analysis, command, hung)
    sizes = tuple(_sizes(analysis, command, hung))
    model = _model(bundle, command)
    size_text = ", ".join(f"{dim}={n}" for dim, n in sizes)
    named = " ".join(p for p in (product, mode) if p)
    component = named + (f" ({size_text})" if size_text else "")
    # The title also names the model when it fits: two hangs at the same place in
    # different deployments get different titles.
    # The model by its own name (`meta-llama/Llama-3.1-8B` -> `Llama-3.1-8B`): the title is short.
    model_name = model.rsplit("/", 1)[-1]
    with_model = named + (
        f" ({', '.join(p for p in (size_text, model_name) if p)})" if size_text or model else ""
    )
    short, long = _what(bundle, analysis, hung)
    # The longest telling that fits: everything, then without the calling function, then
    # without "hangs", then without the model, then without the parenthesis.
    without_site = re.sub(r" from [\w.]+ while", " while", short)
    bare = re.sub(r" \([^()]*\)$", "", without_site)
    candidates = (
        f"{with_model} hangs: {short}",
        f"{with_model} hangs: {without_site}",
        f"{with_model}: {without_site}",
        f"{component} hangs: {short}",
        f"{component}: {short}",
        f"{component} hangs: {without_site}",
        f"{component}: {without_site}",
        f"{component} hangs: {bare}",
        f"{component}: {bare}",
    )
    title = next((c for c in candidates if len(c) <= title_max), candidates[-1])
    if len(title) > title_max:
        title = title[: title_max - 1].rstrip() + "…"
    serving = f" serving {model}" if model else ""
    seen_at = moments(analysis, hung)
    seen = (
        f", unchanged across {seen_at} snapshots"
        if seen_at > 1 and analysis.classes and analysis.verdict is not Verdict.PROGRESSING
        else ""
    )
    sentence = f"{component}{serving} hangs: {long}{seen}."
    launcher = is_launcher(command)
    cmd = _command_line(command) if launcher else ""
    wrapper = "" if launcher else _command_line(command)
    trigger = _trigger(analysis)
    lines: list[str] = []
    if model:
        lines.append(f"Model: {model}")
    if mode:
        lines.append(f"Mode: {mode}")
    if size_text:
        lines.append(f"Parallelism: {size_text}")
    if trigger:
        lines.append(f"Last event before the hang: {trigger}")
    return Story(
        component=component,
        title=title,
        sentence=sentence,
        model=model,
        mode=mode,
        sizes=sizes,
        command=cmd,
        wrapper=wrapper,
        engine_options="" if launcher else _engine_options(command),
        moments=seen_at,
        trigger=trigger,
        reproduction=tuple(lines),
        healthy=_healthy(analysis, hung),
        hung_instance=hung,
    )
