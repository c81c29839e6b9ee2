"""Carry out a collection: select processes, then environment, dumps, packages, units, metrics.

Input: a checked `CollectRequest`, a progress callback (one line per step, for
stderr) and a stop switch (set on Ctrl-C). Output: the bundle folder, and a
`CollectSummary` of what was taken and skipped.

Order, chosen so the cheapest and most telling evidence lands first: the
`/proc` copies (instant), then the py-spy rounds (snapshot k of every target
starts at t0 + k * interval, at most `parallel` py-spy at a time), then package
listings, `systemctl show` and Prometheus queries. `/metrics` scrapes run in a
thread beside all of it for their own window. `bundle.toml` is saved after every
step and once more at the end; a stop (or an error) ends the run at the next
step boundary with status `interrupted` (or `failed`) and a manifest that lists
every file written. Nothing here signals a target or talks to its serving API.

The steps live beside this module: `capture` (the processes: environment, py-spy,
packages) and `services` (units, queries, torch's debug server, Flight Recorder files,
the `/metrics` thread), over the shared `state.SessionState`; this module selects the
targets, starts the manifest, runs the steps in order and ends the run.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from reporter import __version__
from reporter.analysis.excerpts import default_upstream_rules
from reporter.collect import envcap, manifest, outdir, plan, procfs, ptrace
from reporter.collect.capture import ProcessSteps
from reporter.collect.manifest import (
    CollectStatus,
    EventNote,
    ManifestState,
    ManifestWriter,
    RemoteNote,
    SkipNote,
    TargetNote,
)
from reporter.collect.plan import CollectRequest, Selection, Target
from reporter.collect.remote import RemoteSteps
from reporter.collect.remotehosts import RemoteHost, remote_hosts, validate_remote
from reporter.collect.services import ServiceSteps
from reporter.collect.state import Clock, Progress, Tick, utc_now
from reporter.core import inert
from reporter.core.errors import InputError
from reporter.core.fileio import human_size
from reporter.core.text import plural


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectSummary:
    """What a collection produced."""

    out: Path
    status: CollectStatus
    targets: int
    dumps_ok: int
    dumps_failed: int
    scrapes: int
    files: int
    skipped: tuple[SkipNote, ...]
    advice: tuple[str, ...]
    seconds: float
    missing_stacks: tuple[str, ...] = ()
    """Status `incomplete`: per target, `PID 4711 (title): why no stack came back`."""
    missing: tuple[str, ...] = ()
    """Status `incomplete`: per URL it was asked to read, why nothing came back from it."""
    hosts: tuple[RemoteNote, ...] = ()
    """`--ssh`/`--exec`: each host's outcome, in the order named."""


class _Session(ProcessSteps, ServiceSteps, RemoteSteps):
    """One run of `report collect`: setup, the steps (from the bases), and the end."""

    def check_out(self) -> None:
        """Refuse an `--out` that is not new or an empty folder of ours, before anything
        runs (`claim_out` checks again, race-free, when the run starts writing)."""
        outdir.check_new_out(self.root)

    def claim_out(self, state: ManifestState) -> None:
        """Take `--out` for this run (`outdir.OutDir.claim`) and start the manifest in it."""
        self.out = outdir.OutDir.claim(self.root)
        self.writer = ManifestWriter(root=self.root, state=state, files=self.out)

    def select(self) -> Selection:
        request = self.request
        if not request.wants_processes:
            return Selection(targets=())
        processes = procfs.list_processes()
        selection = plan.select_targets(
            processes, request, own_pid=os.getpid(), is_python=procfs.looks_like_python
        )
        if not selection.targets:
            own = {os.getpid()} | plan.ancestors(processes, os.getpid())
            seen = plan.similar_titles(processes, own=own)
            passed = "; ".join(f"{p.process.pid}: {p.reason}" for p in selection.passed[:4])
            what = f"no process matches {request.match!r}" if request.match else "no process found"
            if request.children_of is not None:
                what += f" among the descendants of PID {request.children_of}"
            raise InputError(
                what + (f" (passed over: {passed})" if passed else ""),
                tip=(
                    "Python processes here: "
                    + ", ".join(inert.one_line(self.masked(title), limit=80) for title in seen)
                )
                if seen
                else "check the pattern with `ps -eo pid,args`",
            )
        for proc in processes:
            self.processes[proc.pid] = proc
        return selection

    def start(self, selection: Selection, pyspy: str | None, facts: ptrace.PtraceFacts) -> None:
        request = self.request
        titles = [t.process.title for t in selection.targets]
        service = plan.framework(titles)
        upstream = _upstream_for(service)
        host = socket.gethostname()
        started = self.now()
        mode = "blocking" if request.blocking else "non-blocking"
        label = _default_title(len(selection.targets), service, host, started)
        launchers = plan.launchers(
            self.processes.values(), [t.process.pid for t in selection.targets]
        )
        state = ManifestState(
            title=request.title or "",
            label=label,
            started_at=started,
            command=request.command,
            host=host,
            tool=f"reporter {__version__}",
            service=service,
            upstream=upstream,
            pyspy=envcap.program_version(pyspy, timeout=request.timeout) if pyspy else "",
            mode=mode + (" --locals" if request.with_locals else ""),
            ptrace=facts.describe(),
            limits=(
                f"{request.timeout:g} s per request (connect, headers and body) and per "
                f"helper run; {human_size(request.max_size)} per answer (after "
                "decompression), copied file and helper output"
            ),
            wedge_window=request.wedge_window,
            targets=tuple(
                TargetNote(
                    pid=t.process.pid,
                    ppid=t.process.ppid,
                    uid=t.process.uid,
                    title=self.title_of(t.process, 4096),
                    selected_by=t.reason,
                    pgid=t.process.pgid,
                    launcher=launchers.get(t.process.pid),
                )
                for t in selection.targets
            ),
            processes=self.launcher_entries(sorted(set(launchers.values()))),
        )
        self.claim_out(state)
        for passed in selection.passed:
            self.note_skip(
                f"PID {passed.process.pid} ({self.title_of(passed.process)})", passed.reason
            )
        self.w.event(EventNote(at=started, text=_start_text(request, len(selection.targets))))
        self.w.update(summary=self.summary_text(CollectStatus.RUNNING))
        self.w.save()

    def start_remote(self, hosts: Sequence[RemoteHost]) -> None:
        """The manifest of a remote collection: hosts instead of local targets."""
        request = self.request
        started = self.now()
        mode = "blocking" if request.blocking else "non-blocking"
        label = f"Live capture on {plural(len(hosts), 'host')} ({started.strftime('%Y-%m-%d %H:%M')} UTC)"
        state = ManifestState(
            title=request.title or "",
            label=label,
            started_at=started,
            command=request.command,
            host=socket.gethostname(),
            tool=f"reporter {__version__}",
            mode=mode + (" --locals" if request.with_locals else ""),
            wedge_window=request.wedge_window,
        )
        self.claim_out(state)
        self.w.event(EventNote(at=started, text=_start_text(request, 0, hosts=len(hosts))))
        self.w.update(summary=self.summary_text(CollectStatus.RUNNING))
        self.w.save()

    def finish(self, status: CollectStatus) -> None:
        if self.writer is None:
            return
        finished = self.now()
        self.w.update(status=status, finished_at=finished)
        if status is CollectStatus.INTERRUPTED:
            self.w.event(
                EventNote(at=finished, text="report collect was interrupted; the bundle is partial")
            )
        self.w.update(summary=self.summary_text(status))
        try:
            self.w.join()
            if self.w.kept_edit:
                self.say(
                    f"bundle.toml was edited during the run and is kept as it is; the "
                    f"collection's own manifest is {manifest.SIDE_NAME} beside it"
                )
        finally:
            if self.out is not None:
                self.out.close()

    def missing_stacks(self, targets: Sequence[Target]) -> tuple[str, ...]:
        """Why no stack came back, per target, when none came back from any of them."""
        if not targets or self.request.snapshots < 1 or self.dumped:
            return ()
        lines = []
        for target in targets:
            proc = target.process
            why = self.no_pyspy or self.dump_reasons.get(proc.pid, "no dump was taken")
            lines.append(f"PID {proc.pid} ({self.title_of(proc)}): {why}")
        return tuple(lines)

    def summary(self, status: CollectStatus) -> CollectSummary:
        state = self.writer.state if self.writer else None
        return CollectSummary(
            out=self.root,
            status=status,
            targets=len(state.targets) if state else 0,
            dumps_ok=self.dumps_ok,
            dumps_failed=self.dumps_failed,
            scrapes=self.scrapes_ok,
            files=self.writer.files_listed if self.writer else 0,
            skipped=state.skipped if state else (),
            advice=state.advice if state else (),
            seconds=time.monotonic() - self.began,
            missing_stacks=self.missing_stacks(self.targets)
            if status is CollectStatus.INCOMPLETE
            else (),
            missing=self.missing_sources() if status is CollectStatus.INCOMPLETE else (),
            hosts=state.remotes if state else (),
        )

    def missing_sources(self) -> tuple[str, ...]:
        """Each URL it was asked to read that gave nothing at all, and why (the first reason)."""
        request = self.request
        out = []
        if request.metrics_url and not self.scrapes_ok:
            out.append(
                f"{request.metrics_url}: no scrape succeeded ({self.failed_reads.get('metrics', 'no attempt')})"
            )
        if request.torch_debug and not self.debug_files:
            out.append(
                f"{request.torch_debug}: nothing fetched ({self.failed_reads.get('torch-debug', 'no attempt')})"
            )
        if request.prometheus and not self.queries_ok:
            out.append(
                f"{request.prometheus}: no query answered ({self.failed_reads.get('prometheus', 'no attempt')})"
            )
        return tuple(out)


def collect(
    request: CollectRequest,
    *,
    progress: Progress,
    stop: threading.Event,
    tick: Tick | None = None,
    clock: Clock = utc_now,
) -> CollectSummary:
    """Collect evidence into `request.out`; see the module docstring for the order of steps.
    `clock` stamps the manifest (the application layer passes its own).

    Raises `UsageError`/`InputError` before anything is written when the request
    cannot be carried out (bad options, an existing folder, no matching process).
    Once the folder exists, a stop or an error leaves a valid partial bundle.
    """
    plan.validate(request)
    if request.remote is not None:
        validate_remote(request)
    session = _Session(request, progress, stop, tick, clock)
    session.check_out()
    if request.remote is not None:
        return _collect_remote(session, remote_hosts(request.remote))
    selection = session.select()
    facts = ptrace.read_facts()
    pyspy = envcap.find_pyspy(request.pyspy)
    if pyspy.path is None and not request.pyspy:
        near = [t.process for t in selection.targets]
        pyspy = envcap.find_pyspy_near(near, session.processes, pyspy.searched)
    session.start(selection, pyspy.path, facts)
    session.say(
        f"collecting into {request.out}: {plural(len(selection.targets), 'process')}"
        + (
            f" ({', '.join(str(t.process.pid) for t in selection.targets[:8])})"
            if selection.targets
            else ""
        )
        + f"; {facts.describe()}"
    )
    status = CollectStatus.FAILED
    thread = None
    session.targets = selection.targets
    try:
        thread = session.start_metrics()
        targets = selection.targets
        steps: tuple[Callable[[], None], ...] = (
            lambda: session.environment(targets),
            session.torch_debug,
            session.fr_dumps,
            lambda: session.dumps(targets, pyspy, facts),
            lambda: session.packages(targets),
            session.units,
            session.logs,
            session.queries,
            lambda: session.wait_metrics(thread),
        )
        for step in steps:
            if stop.is_set():
                break
            step()
        status = CollectStatus.INTERRUPTED if stop.is_set() else CollectStatus.COMPLETE
        if status is CollectStatus.COMPLETE and (
            session.missing_stacks(targets) or session.missing_sources()
        ):
            status = CollectStatus.INCOMPLETE
    except KeyboardInterrupt:
        status = CollectStatus.INTERRUPTED
    finally:
        if status not in (CollectStatus.COMPLETE, CollectStatus.INCOMPLETE):
            stop.set()  # ends the scrape thread too
        if thread is not None:
            thread.join(request.timeout + 1.0)
        session.finish(status)
    if status is CollectStatus.INTERRUPTED:
        session.say(
            f"interrupted: partial bundle in {request.out} (valid: report analyze reads it)"
        )
    elif status is CollectStatus.INCOMPLETE:
        what = (
            [f"no stacks from {plural(len(selection.targets), 'process')} it was asked to dump"]
            if session.missing_stacks(selection.targets)
            else []
        )
        what += [f"nothing from {line.split(': ', 1)[0]}" for line in session.missing_sources()]
        session.say(
            f"incomplete: {'; '.join(what)}; {session.w.files_listed} files in {request.out}"
        )
    else:
        session.say(f"done: {session.w.files_listed} files in {request.out}")
    return session.summary(status)


def _collect_remote(session: _Session, hosts: Sequence[RemoteHost]) -> CollectSummary:
    """The remote collection: every host through ssh or the template, then the services
    (torch's debug server, Prometheus, `/metrics`) from here as usual."""
    request = session.request
    session.start_remote(hosts)
    session.say(
        f"collecting into {request.out} from {plural(len(hosts), 'host')} "
        f"({', '.join(h.name for h in hosts[:8])}{', ...' if len(hosts) > 8 else ''}), "
        f"{request.remote.parallel if request.remote else 1} at a time"
    )
    status = CollectStatus.FAILED
    thread = None
    try:
        thread = session.start_metrics()
        steps: tuple[Callable[[], None], ...] = (
            session.torch_debug,
            lambda: session.remote_capture(hosts),
            session.queries,
            lambda: session.wait_metrics(thread),
        )
        for step in steps:
            if stop_now(session):
                break
            step()
        status = _remote_status(session)
    except KeyboardInterrupt:
        status = CollectStatus.INTERRUPTED
    finally:
        if status not in (CollectStatus.COMPLETE, CollectStatus.INCOMPLETE, CollectStatus.PARTIAL):
            session.stop.set()
        if thread is not None:
            thread.join(request.timeout + 1.0)
        session.finish(status)
    notes = session.w.state.remotes
    missing = [n for n in notes if n.status != "complete"]
    if status is CollectStatus.INTERRUPTED:
        session.say(
            f"interrupted: partial bundle in {request.out} (valid: report analyze reads it)"
        )
    elif missing:
        session.say(
            f"{status.value}: {len(notes) - len(missing)} of {plural(len(notes), 'host')} gave "
            f"stacks; not from " + ", ".join(f"{n.host} ({n.status})" for n in missing)
        )
    else:
        session.say(f"done: {session.w.files_listed} files in {request.out}")
    return session.summary(status)


def stop_now(session: _Session) -> bool:
    """True once the user asked the collection to stop."""
    return session.stop.is_set()


def _remote_status(session: _Session) -> CollectStatus:
    if session.stop.is_set():
        return CollectStatus.INTERRUPTED
    notes = session.w.state.remotes
    if not any(n.status in ("complete", "partial") for n in notes):
        return CollectStatus.INCOMPLETE
    if all(n.status == "complete" for n in notes):
        return CollectStatus.COMPLETE
    return CollectStatus.PARTIAL


def _upstream_for(service: str) -> tuple[str, ...]:
    if not service:
        return ()

    return tuple(sorted({r.repo for r in default_upstream_rules() if r.module == service}))


def _default_title(count: int, service: str, host: str, started: datetime) -> str:
    what = plural(count, f"{service} process" if service else "process")
    if not count:
        what = "metrics"
    return f"Live capture of {what} on {host} ({started.strftime('%Y-%m-%d %H:%M')} UTC)"


def _start_text(request: CollectRequest, count: int, *, hosts: int = 0) -> str:
    parts = []
    if hosts:
        mode = "blocking" if request.blocking else "non-blocking"
        parts.append(
            f"{plural(hosts, 'host')} through "
            + ("ssh" if request.remote and request.remote.exec_template is None else "--exec")
            + f", {plural(request.snapshots, mode + ' py-spy snapshot')} "
            f"{request.interval:g} s apart on each"
        )
    if count:
        mode = "blocking" if request.blocking else "non-blocking"
        parts.append(
            f"{plural(count, 'process')}, {plural(request.snapshots, mode + ' py-spy snapshot')} "
            f"{request.interval:g} s apart"
        )
    if request.metrics_url:
        parts.append(f"/metrics every {request.scrape_every:g} s for {request.scrape_for:g} s")
    if request.prometheus:
        parts.append(f"{len(request.queries)} Prometheus queries")
    if request.units:
        parts.append(f"systemctl show {' '.join(request.units)}")
    if request.logs:
        parts.append(f"the last {request.log_lines} lines of {plural(len(request.logs), 'log')}")
    return "report collect started: " + "; ".join(parts)
