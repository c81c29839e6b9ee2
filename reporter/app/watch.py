"""The `report watch` use case: poll, decide, capture at the onset, report, hand off.

The loop (`watch`) polls every `every` seconds through `collect.watch.Poller` (bounded
reads of the named URLs and `/proc`), and each poll's decisions go out as events. When
a poll says wedged and the cooldown allows, `capture` runs `report collect`'s session
(non-blocking py-spy dumps and `/proc` reads only), adds the ring of metric history from
before the onset, analyzes the bundle and either drafts a new report into `reports` or,
when an open report has the same signature, adds the occurrence to its "Seen again"
region (`render.seenagain`). Then the disk budget of `out_dir` is kept (oldest bundles
first, never the newest of a signature) and `--on-capture` runs with its deadline.
Nothing here prints: events go to `emit`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reporter.app import report as reports
from reporter.collect import CollectStatus
from reporter.collect import collect as run_collect
from reporter.collect.httpread import Limits
from reporter.collect.runner import helper_env, run_bounded
from reporter.collect.scrape import make_client
from reporter.collect.watch import Poller
from reporter.core import inert
from reporter.core.fileio import read_text_bounded
from reporter.core.times import iso
from reporter.core.writer import locked, write_atomic
from reporter.load.manifest import MANIFEST_NAME
from reporter.render import answer, seenagain

if TYPE_CHECKING:
    from reporter.analysis import online
    from reporter.collect.plan import CollectRequest
    from reporter.collect.watch import Observation, Poller
    from reporter.model import WedgeSettings

# The name of each capture folder, by the time of the decision (UTC), and its record.
BUNDLE_SUFFIX = "-wedge"
RECORD = "watch.json"
DEFAULT_BUDGET = 2 << 30

# Exit codes (also in `report watch --help`).
EXIT_OK = 0
EXIT_CAPTURE_FAILED = 1
EXIT_NO_CAPTURE = 3
"""`--once` ended (SIGTERM, `--max-time`) before any capture."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One thing the watcher did or saw: `kind`, when, one line, and its fields."""

    kind: str
    at: datetime
    text: str
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def at_text(self) -> str:
        """`at` in ISO 8601 (UTC, milliseconds)."""
        return iso(self.at)


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchRequest:
    """Everything `report watch` was asked to do (the CLI's options, checked)."""

    metrics_urls: tuple[str, ...]
    health_url: str | None
    health_timeout: float
    settings: WedgeSettings
    every: float
    history: float
    cooldown: float
    out_dir: Path
    reports: Path
    budget: int
    collect: CollectRequest
    """The capture, as `report collect` would take it (`out` is set per capture)."""
    on_capture: tuple[str, ...] = ()
    on_capture_timeout: float = 30.0
    once: bool = False
    max_time: float | None = None


@dataclass(slots=True)
class _Memory:
    """What the loop remembers between polls."""

    last_capture: datetime | None = None
    targets: tuple[int, ...] | None = None
    states: dict[str, str] = field(default_factory=dict)
    captures: int = 0


def watch(
    request: WatchRequest,
    *,
    emit: Callable[[Event], None],
    stop: threading.Event,
    now: Callable[[], datetime] | None = None,
) -> int:
    """Run until `stop` is set (SIGTERM), `--max-time` passes, or the first capture with
    `--once`; returns the exit code."""
    clock = now or (lambda: datetime.now(tz=UTC))
    request.out_dir.mkdir(parents=True, exist_ok=True)
    request.reports.mkdir(parents=True, exist_ok=True)
    memory = _Memory(last_capture=_newest_capture(request.out_dir))
    limits = request.collect.limits
    with make_client() as client:
        poller = Poller(
            client=client,
            urls=request.metrics_urls,
            settings=request.settings,
            every=request.every,
            keep=request.history,
            limits=limits,
            health_url=request.health_url,
            health_limits=Limits(request.health_timeout, 1 << 20) if request.health_url else None,
            targets=request.collect,
            stop=stop,
            now=clock,
        )
        emit(_started(request, clock()))
        started = time.monotonic()
        failed = False
        while not stop.is_set():
            began = time.monotonic()
            observation = poller.poll()
            if stop.is_set():
                break
            _report_observation(observation, memory, emit)
            wedged = observation.wedged
            if wedged is not None:
                trigger, decision = wedged
                outcome = _maybe_capture(request, poller, memory, trigger, decision, emit, stop)
                if outcome is not None:
                    failed = failed or not outcome
                    if request.once:
                        emit(Event(kind="stop", at=clock(), text="stopping: --once captured"))
                        return EXIT_OK if outcome else EXIT_CAPTURE_FAILED
            if request.max_time is not None and time.monotonic() - started >= request.max_time:
                emit(Event(kind="stop", at=clock(), text="stopping: --max-time reached"))
                break
            stop.wait(max(0.0, request.every - (time.monotonic() - began)))
        else:
            emit(Event(kind="stop", at=clock(), text="stopping: asked to (SIGTERM or Ctrl-C)"))
    if request.once:
        return EXIT_NO_CAPTURE
    return EXIT_CAPTURE_FAILED if failed else EXIT_OK


def _started(request: WatchRequest, at: datetime) -> Event:
    what = [*request.metrics_urls, *([request.health_url] if request.health_url else [])]
    window = request.settings.window_seconds
    return Event(
        kind="start",
        at=at,
        text=(
            f"watching {', '.join(what)} every {request.every:g} s; a wedge is zero output "
            f"with work waiting for {window:g} s; captures into {request.out_dir}, reports "
            f"into {request.reports}, at most one per {request.cooldown:g} s"
        ),
        fields={
            "metrics_urls": list(request.metrics_urls),
            "health_url": request.health_url,
            "every": request.every,
            "for": window,
            "cooldown": request.cooldown,
            "out_dir": str(request.out_dir),
            "reports": str(request.reports),
        },
    )


def _report_observation(
    observation: Observation, memory: _Memory, emit: Callable[[Event], None]
) -> None:
    """Emit a decision when a source's state changes (and every wedged or stalling poll),
    errors as they come, and the targets when they change."""
    for url, decision in observation.decisions:
        state = decision.state.value
        changed = memory.states.get(url) != state
        memory.states[url] = state
        if changed or state in {"wedged", "stalling"}:
            emit(
                Event(
                    kind="decision",
                    at=observation.at,
                    text=decision.text,
                    fields=_decision_fields(decision, url),
                )
            )
    for error in observation.errors:
        emit(Event(kind="read-error", at=observation.at, text=error))
    if observation.health_text:
        key = "health:" + ("hung" if observation.health is not None else observation.health_text)
        if memory.states.get("health") != key or "hung" in observation.health_text:
            memory.states["health"] = key
            emit(Event(kind="health", at=observation.at, text=observation.health_text))
    if observation.targets is not None and observation.targets != memory.targets:
        before = memory.targets
        memory.targets = observation.targets
        pids = ", ".join(map(str, observation.targets)) or "none"
        text = (
            f"{len(observation.targets)} process(es) ({pids})"
            if before is None
            else f"changed (a restart?): now {pids}, were {', '.join(map(str, before)) or 'none'}"
        )
        emit(
            Event(
                kind="targets",
                at=observation.at,
                text=text,
                fields={"pids": list(observation.targets)},
            )
        )


def _decision_fields(decision: online.Decision, url: str) -> dict[str, Any]:
    return {
        "source": url,
        "state": decision.state.value,
        "onset": iso(decision.onset) if decision.onset else None,
        "stalled_for": round(decision.stalled_for, 3),
        "window": decision.window,
        "output": decision.output,
        "waiting": decision.waiting,
        "signals": dict(decision.parts),
        "samples": decision.samples,
    }


def _maybe_capture(
    request: WatchRequest,
    poller: Poller,
    memory: _Memory,
    trigger: online.Trigger,
    decision: online.Decision,
    emit: Callable[[Event], None],
    stop: threading.Event,
) -> bool | None:
    """Capture unless the cooldown holds it back; True or False for a capture, None for none."""
    if memory.last_capture is not None:
        since = (decision.at - memory.last_capture).total_seconds()
        if since < request.cooldown:
            key = "cooldown"
            if memory.states.get(key) != iso(memory.last_capture):
                memory.states[key] = iso(memory.last_capture)
                emit(
                    Event(
                        kind="cooldown",
                        at=decision.at,
                        text=(
                            f"wedged, not captured: the last capture was {since:.0f} s ago, "
                            f"under the {request.cooldown:g} s cooldown"
                        ),
                    )
                )
            return None
    memory.last_capture = decision.at
    memory.captures += 1
    result = capture(request, poller, trigger, decision, emit=emit, stop=stop)
    return result is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture:
    """What one capture produced."""

    bundle: Path
    report: Path
    headline: str
    signature: str
    verdict: str
    seen_again: bool


def capture(
    request: WatchRequest,
    poller: Poller,
    trigger: online.Trigger,
    decision: online.Decision,
    *,
    emit: Callable[[Event], None],
    stop: threading.Event,
) -> Capture | None:
    """Collect, add the history, analyze, report, keep the budget, hand off."""
    at = decision.at
    folder = _free_folder(request.out_dir, at)
    emit(
        Event(
            kind="capture",
            at=at,
            text=f"capturing into {folder} ({trigger.value}: {decision.text})",
            fields={"bundle": str(folder), "trigger": trigger.value},
        )
    )
    made = replace(
        request.collect,
        out=folder,
        title="",
        wedge_window=decision.window,
        command=request.collect.command,
    )
    summary = run_collect(made, progress=lambda _line: None, stop=stop)
    for name, text in poller.history():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    _add_events(folder, trigger, decision)
    record: dict[str, Any] = {
        "trigger": trigger.value,
        "decision": decision.text,
        "at": iso(at),
        "onset": iso(decision.onset) if decision.onset else None,
        "collect": summary.status.value,
    }
    if summary.status is CollectStatus.INTERRUPTED:
        write_atomic(folder / RECORD, json.dumps(record, indent=2) + "\n")
        emit(Event(kind="capture-failed", at=_now(), text=f"{folder}: interrupted"))
        return None
    try:
        made_report = _report(folder, request, decision)
    except Exception as err:  # the watcher must outlive one bad capture: it is recorded
        record["error"] = str(err)
        write_atomic(folder / RECORD, json.dumps(record, indent=2) + "\n")
        emit(Event(kind="capture-failed", at=_now(), text=f"{folder}: no report ({err})"))
        return None
    record.update(signature=made_report.signature, report=str(made_report.report))
    write_atomic(folder / RECORD, json.dumps(record, indent=2) + "\n")
    emit(
        Event(
            kind="seen-again" if made_report.seen_again else "report",
            at=_now(),
            text=(
                f"{'seen again, added to' if made_report.seen_again else 'drafted'} "
                f"{made_report.report}: {made_report.headline} "
                f"(signature {made_report.signature}; collect {summary.status.value}, "
                f"{summary.dumps_ok} dumps)"
            ),
            fields={
                "bundle": str(folder),
                "report": str(made_report.report),
                "headline": made_report.headline,
                "signature": made_report.signature,
                "verdict": made_report.verdict,
                "collect": summary.status.value,
            },
        )
    )
    for dropped in keep_budget(request.out_dir, request.budget):
        emit(Event(kind="dropped", at=_now(), text=f"disk budget: removed {dropped}"))
    if request.on_capture:
        emit(_hand_off(request, made_report, at, stop))
    return made_report


def _add_events(folder: Path, trigger: online.Trigger, decision: online.Decision) -> None:
    """The watcher's decision on the report's timeline: `[[event]]` tables in bundle.toml."""
    manifest = folder / MANIFEST_NAME
    if not manifest.is_file():
        return
    tables = []
    if decision.onset is not None:
        what = "output stopped" if trigger.value == "metrics" else "the first hung health probe"
        tables.append((decision.onset, f"report watch: {what} (onset)"))
    tables.append((decision.at, f"report watch decided, and captured: {decision.text}"))
    # JSON string escapes are TOML basic-string escapes.
    added = "".join(
        f"\n[[event]]\nat = {iso(at)}\ntext = {json.dumps(text, ensure_ascii=True)}\n"
        for at, text in tables
    )
    text = read_text_bounded(manifest, max_bytes=64 << 20)
    write_atomic(manifest, text.rstrip("\n") + "\n" + added)


def _now() -> datetime:
    """The wall clock, for the time of an event after the decision (a capture takes seconds)."""
    return datetime.now(tz=UTC)


def _free_folder(out_dir: Path, at: datetime) -> Path:
    """`<out_dir>/20261207T134001Z-wedge` (a suffix when that name is taken)."""
    base = out_dir / f"{at:%Y%m%dT%H%M%SZ}{BUNDLE_SUFFIX}"
    folder, n = base, 1
    while folder.exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


def _report(folder: Path, request: WatchRequest, decision: online.Decision) -> Capture:
    """Analyze the bundle; draft a report, or add "seen again" to the open one."""
    at = decision.at
    bundle, analysis = reports.load_and_analyze([folder], reports.Options())
    headline = answer.build(bundle, analysis).title
    signature = analysis.signature.hash
    for path, record in reports.report_records(request.reports):
        if record.signature == signature and seenagain.is_open(record.status):
            # One inert line: a metric name or a path never breaks the report's layout.
            line = inert.one_line(f"bundle `{folder}`; {decision.text}", limit=800)
            item = seenagain.Occurrence(at=iso(at), text=line)
            with locked(path):
                text = read_text_bounded(path, max_bytes=reports.REPORT_MAX_BYTES)
                write_atomic(path, seenagain.add(text, item), backup=True)
            return Capture(
                bundle=folder,
                report=path,
                headline=headline,
                signature=signature,
                verdict=analysis.verdict.value,
                seen_again=True,
            )
    target = request.reports / reports.default_report_path(bundle, analysis, now=at).name
    if target.exists():  # a closed report of this signature: a new one beside it
        target = target.with_name(f"{target.stem}-{at:%H%M%S}.md")
    drafted = reports.draft(
        [folder], out=target, options=reports.Options(), now=at, reports=request.reports
    )
    return Capture(
        bundle=folder,
        report=drafted.path,
        headline=headline,
        signature=signature,
        verdict=analysis.verdict.value,
        seen_again=False,
    )


def _hand_off(request: WatchRequest, made: Capture, at: datetime, stop: threading.Event) -> Event:
    """Run `--on-capture` (no shell) with the placeholders filled and the env set."""
    import os

    values = {
        "report": str(made.report),
        "headline": made.headline,
        "bundle": str(made.bundle),
        "signature": made.signature,
        "verdict": made.verdict,
    }
    argv = [_fill(word, values) for word in request.on_capture]
    env = helper_env()
    env.update({f"REPORT_{k.upper()}": v for k, v in values.items()})
    env.setdefault("PATH", os.defpath)
    done = run_bounded(
        argv, timeout=request.on_capture_timeout, stop=stop, env=env, max_output=1 << 20
    )
    if done.launch_error:
        text = f"--on-capture: {done.launch_error}"
    elif done.timed_out:
        text = f"--on-capture: killed after its {request.on_capture_timeout:g} s deadline"
    else:
        text = f"--on-capture: {argv[0]} exited {done.returncode} in {done.seconds:.2f} s"
    return Event(
        kind="hand-off",
        at=_now(),
        text=text,
        fields={
            "argv": argv,
            "exit": done.returncode,
            "timed_out": done.timed_out,
            "stdout": done.stdout[-2000:],
            "stderr": done.stderr[-2000:],
        },
    )


def _fill(word: str, values: dict[str, str]) -> str:
    """`{report}`, `{headline}`, `{bundle}`, `{signature}`, `{verdict}` in one argument."""
    for key, value in values.items():
        word = word.replace("{" + key + "}", value)
    return word


def _newest_capture(out_dir: Path) -> datetime | None:
    """The time of the newest capture already in `out_dir` (the cooldown outlives a restart)."""
    times = [at for at, _, _ in _captures(out_dir)]
    return max(times) if times else None


def _captures(out_dir: Path) -> list[tuple[datetime, Path, str]]:
    """(time, folder, signature) of every capture folder in `out_dir`, oldest first."""
    found: list[tuple[datetime, Path, str]] = []
    if not out_dir.is_dir():
        return found
    for folder in out_dir.iterdir():
        if not folder.is_dir() or BUNDLE_SUFFIX not in folder.name:
            continue
        try:
            at = datetime.strptime(folder.name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            continue
        signature = ""
        with contextlib.suppress(OSError, ValueError, AttributeError):
            signature = str(
                json.loads((folder / RECORD).read_text(encoding="utf-8")).get("signature") or ""
            )
        found.append((at, folder, signature))
    found.sort(key=lambda item: (item[0], item[1].name))
    return found


def _size(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
    return total


def keep_budget(out_dir: Path, budget: int) -> list[Path]:
    """Remove the oldest capture folders until `out_dir` holds at most `budget` bytes;
    the newest capture of each signature is never removed. Returns what was removed."""
    captures = _captures(out_dir)
    sizes = {folder: _size(folder) for _, folder, _ in captures}
    total = sum(sizes.values())
    newest: dict[str, Path] = {}
    for _, folder, signature in captures:
        newest[signature or folder.name] = folder
    keep = set(newest.values())
    removed: list[Path] = []
    for _, folder, _ in captures:
        if total <= budget:
            break
        if folder in keep:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        total -= sizes[folder]
        removed.append(folder)
    return removed
