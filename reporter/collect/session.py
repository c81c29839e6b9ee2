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
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reporter import __version__
from reporter.collect import dumps as dumping
from reporter.collect import envcap, plan, procfs, ptrace, scrape, torchdebug
from reporter.collect.dumps import DumpResult, DumpStatus
from reporter.collect.manifest import (
    CollectStatus,
    EventNote,
    EvidenceEntry,
    ManifestState,
    ManifestWriter,
    ProcessEntry,
    SkipNote,
    TargetNote,
)
from reporter.collect.plan import CollectRequest, Selection, Target
from reporter.errors import InputError, UsageError
from reporter.model import EvidenceKind
from reporter.secrets import mask_text, scrub
from reporter.text import plural
from reporter.times import iso
from reporter.writer import write_atomic

Progress = Callable[[str], None]
Tick = Callable[[str, int, int], None]
"""`tick(what, done, total)`: `py-spy dumps` and `/metrics scrapes` as they finish (for a bar)."""
# How often the main thread looks at the stop switch while it waits for dumps.
_WAIT_S = 0.1


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


def _now() -> datetime:
    return datetime.now(tz=UTC)


class _Session:
    """One run of `report collect` (state shared by the steps)."""

    def __init__(
        self,
        request: CollectRequest,
        progress: Progress,
        stop: threading.Event,
        tick: Tick | None = None,
    ) -> None:
        self.request = request
        self.progress = progress
        self.tick = tick
        self.dumps_done = 0
        self.stop = stop
        self.began = time.monotonic()
        self.root = request.out
        self.detector = None if request.raw_env else scrub.default_detector()
        self.dumps_ok = 0
        self.dumps_failed = 0
        self.scrapes_ok = 0
        self.scrapes_failed = 0
        self.processes: dict[int, procfs.ProcessInfo] = {}
        self.environs: dict[int, str] = {}
        self.advised: set[tuple[str, ...]] = set()
        self.said: set[str] = set()
        self.writer: ManifestWriter | None = None
        self.no_pyspy = ""
        self.dumped: set[int] = set()
        self.dump_reasons: dict[int, str] = {}
        self.targets: Sequence[Target] = ()

    # -- helpers ---------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.progress(f"[{time.monotonic() - self.began:5.1f}s] {text}")

    @property
    def w(self) -> ManifestWriter:
        assert self.writer is not None
        return self.writer

    def save_file(self, rel: str, text: str) -> None:
        write_atomic(self.root / rel, text)

    def note_skip(self, what: str, reason: str) -> None:
        self.w.skip(SkipNote(what=what, reason=reason, at=_now()))

    # -- setup -----------------------------------------------------------------------------------

    def check_out(self) -> None:
        out = self.root
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UsageError(
                f"{out}: already exists and is not an empty folder",
                tip="name a new folder; report collect never writes over evidence",
            )

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
                tip=("Python processes here: " + mask_text(", ".join(seen)))
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
        started = _now()
        mode = "blocking" if request.blocking else "non-blocking"
        title = request.title or _default_title(len(selection.targets), service, host, started)
        launchers = plan.launchers(
            self.processes.values(), [t.process.pid for t in selection.targets]
        )
        state = ManifestState(
            title=title,
            started_at=started,
            command=request.command,
            host=host,
            tool=f"reporter {__version__}",
            service=service,
            upstream=upstream,
            pyspy=envcap.program_version(pyspy, timeout=request.timeout) if pyspy else "",
            mode=mode + (" --locals" if request.with_locals else ""),
            ptrace=facts.describe(),
            wedge_window=request.wedge_window,
            targets=tuple(
                TargetNote(
                    pid=t.process.pid,
                    ppid=t.process.ppid,
                    uid=t.process.uid,
                    title=t.process.title,
                    selected_by=t.reason,
                    pgid=t.process.pgid,
                    launcher=launchers.get(t.process.pid),
                )
                for t in selection.targets
            ),
            processes=self.launcher_entries(sorted(set(launchers.values()))),
        )
        self.root.mkdir(parents=True, exist_ok=True)
        self.writer = ManifestWriter(root=self.root, state=state)
        for passed in selection.passed:
            self.note_skip(f"PID {passed.process.pid} ({passed.process.title[:60]})", passed.reason)
        self.w.event(EventNote(at=started, text=_start_text(request, len(selection.targets))))
        self.w.update(summary=self.summary_text(CollectStatus.RUNNING))
        self.w.save()

    # -- steps -----------------------------------------------------------------------------------

    def environment(self, targets: Sequence[Target]) -> None:
        titled: list[int] = []
        need_parent: set[int] = set()
        for target in targets:
            proc = target.process
            if _title_only(proc):
                titled.append(proc.pid)
                need_parent.add(proc.ppid)
            else:
                self.save_cmdline(proc.pid, f"command line of PID {proc.pid}")
            environ = envcap.capture_environ(proc.pid, detector=self.detector)
            if environ.error:
                self.note_skip(f"environment of PID {proc.pid}", environ.error)
                if "holds no variables" in environ.error:
                    need_parent.add(proc.ppid)
            else:
                self.save_environ(proc.pid, environ, f"environment of PID {proc.pid}")
        if titled:
            self.note_skip(
                "command line of PID " + ", ".join(map(str, titled)),
                "replaced by the process title (setproctitle); the parent's is saved instead",
            )
        for ppid in sorted(p for p in need_parent if p > 1):
            parent = self.processes.get(ppid)
            label = f"PID {ppid}" + (f" ({parent.title[:60]})" if parent else "")
            children = [t.process.pid for t in targets if t.process.ppid == ppid]
            who = f"parent of PID {', '.join(map(str, children))}"
            self.save_cmdline(ppid, f"command line of {label}, {who}")
            environ = envcap.capture_environ(ppid, detector=self.detector)
            if environ.error:
                self.note_skip(f"environment of {label}", environ.error)
            else:
                self.save_environ(
                    ppid,
                    environ,
                    f"environment of {label}, {who} (what they inherited at start; later "
                    "changes inside the parent are not visible here)",
                )
        self.w.save()
        saved = sum(1 for e in self.w.state.evidence if e.path.startswith("env/"))
        self.say(f"environment: {saved} files (command lines, environments)")

    def launcher_entries(self, pids: Sequence[int]) -> tuple[ProcessEntry, ...]:
        """The launchers' process-tree records, command lines redacted as evidence is."""
        out = []
        for pid in pids:
            proc = self.processes.get(pid)
            if proc is None:
                continue
            captured = envcap.capture_cmdline(pid, detector=self.detector)
            cmdline = " ".join(a for a in captured.text.split("\x00") if a) or proc.title
            out.append(ProcessEntry(pid=pid, ppid=proc.ppid, pgid=proc.pgid, cmdline=cmdline))
        return tuple(out)

    def save_cmdline(self, pid: int, what: str) -> None:
        captured = envcap.capture_cmdline(pid, detector=self.detector)
        if captured.error:
            self.note_skip(what, captured.error)
            return
        rel = plan.env_path(pid, "cmdline")
        self.save_file(rel, captured.text)
        redacted = f"; {captured.redacted} secret values redacted" if captured.redacted else ""
        if self.detector is None:
            redacted = "; raw (--raw-env)"
        self.w.add_evidence(
            EvidenceEntry(
                path=rel,
                kind=EvidenceKind.CMDLINE,
                captured_at=_now(),
                description=f"/proc/{pid}/cmdline: {what}{redacted}",
            )
        )

    def save_environ(self, pid: int, captured: envcap.Capture, what: str) -> None:
        rel = plan.env_path(pid, "environ")
        self.environs[pid] = captured.text
        self.save_file(rel, captured.text)
        if self.detector is None:
            redacted = "; raw (--raw-env): secrets not redacted"
        elif captured.redacted:
            redacted = f"; {captured.redacted} secret values redacted"
        else:
            redacted = "; no secret-looking value found"
        self.w.add_evidence(
            EvidenceEntry(
                path=rel,
                kind=EvidenceKind.ENVIRON,
                captured_at=_now(),
                description=f"/proc/{pid}/environ: {what}{redacted}",
            )
        )

    def dumps(
        self, targets: Sequence[Target], found: envcap.Found, facts: ptrace.PtraceFacts
    ) -> None:
        request = self.request
        if not targets:
            return
        pyspy = found.path
        if pyspy is None:
            where = f"at {found.searched}" if request.pyspy else f"in {found.searched}"
            reason = f"py-spy not found {where} (pip install py-spy, or pass --py-spy PATH)"
            self.note_skip("py-spy dumps", reason)
            self.no_pyspy = reason
            self.say(
                f"py-spy not found {where}: no stack dumps (pip install py-spy, or --py-spy PATH)"
            )
            self.w.save()
            return
        start = time.monotonic()
        workers = min(request.parallel, len(targets))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="py-spy") as pool:
            try:
                for k, offset in enumerate(plan.offsets(request.snapshots, request.interval)):
                    delay = start + offset - time.monotonic()
                    if (delay > 0 and self.stop.wait(delay)) or self.stop.is_set():
                        break
                    self.one_round(pool, targets, k, pyspy, facts)
                    self.w.save()
            except BaseException:
                # Running py-spy helpers watch this switch: the pool's shutdown must not
                # wait for them to time out.
                self.stop.set()
                raise
        self.w.update(summary=self.summary_text(CollectStatus.RUNNING))
        self.w.save()

    def descendant(self, pid: int, ancestor: int) -> bool:
        seen: set[int] = set()
        current = self.processes.get(pid)
        while current is not None and current.ppid > 0 and current.pid not in seen:
            seen.add(current.pid)
            if current.ppid == ancestor:
                return True
            current = self.processes.get(current.ppid)
        return False

    def one_round(
        self,
        pool: ThreadPoolExecutor,
        targets: Sequence[Target],
        k: int,
        pyspy: str,
        facts: ptrace.PtraceFacts,
    ) -> None:
        request = self.request
        began = time.monotonic()
        pending: dict[Future[DumpResult], Target] = {}
        for target in targets:
            argv = dumping.pyspy_argv(
                pyspy,
                target.process.pid,
                blocking=request.blocking,
                with_locals=request.with_locals,
            )
            future = pool.submit(
                dumping.take_dump,
                argv,
                pid=target.process.pid,
                snapshot=k,
                timeout=request.timeout,
                stop=self.stop,
                retry_transient=not request.blocking,
            )
            pending[future] = target
        results: list[tuple[Target, DumpResult]] = []
        while pending:
            done, _ = wait(list(pending), timeout=_WAIT_S, return_when=FIRST_COMPLETED)
            for future in done:
                target = pending.pop(future)
                result = future.result()
                results.append((target, result))
                self.record_dump(target, result, facts)
                self.dumps_done += 1
                if self.tick is not None:
                    self.tick("py-spy dumps", self.dumps_done, len(targets) * request.snapshots)
        ok = sum(1 for _, r in results if r.status is DumpStatus.OK)
        self.say(
            f"py-spy snapshot {k + 1}/{request.snapshots}: {ok} of {len(targets)} dumps ok "
            f"in {time.monotonic() - began:.2f} s"
        )

    def record_dump(self, target: Target, result: DumpResult, facts: ptrace.PtraceFacts) -> None:
        request = self.request
        proc = target.process
        what = f"py-spy dump of PID {proc.pid} ({proc.title[:60]}), snapshot {result.snapshot + 1}"
        if result.status in (DumpStatus.INTERRUPTED, DumpStatus.NOT_RUN):
            self.dump_reasons.setdefault(proc.pid, result.reason)
            if result.status is DumpStatus.NOT_RUN and result.reason not in self.said:
                self.said.add(result.reason)
                self.say(f"py-spy did not start: {result.reason}")
            self.note_skip(what, result.reason)
            return
        text = dumping.evidence_text(result)
        redacted = 0
        if result.status is DumpStatus.OK and request.with_locals and self.detector is not None:
            text, redacted = scrub.scrub_locals(text, self.detector)
        rel = plan.dump_path(proc.pid, result.snapshot)
        self.save_file(rel, text)
        mode = "blocking" if request.blocking else "--nonblocking"
        detail = (
            f"{mode}{' --locals' if request.with_locals else ''}, "
            f"snapshot {result.snapshot + 1} of {request.snapshots}, {result.seconds:.2f} s"
        )
        if result.attempts > 1:
            detail += f", {result.attempts} attempts"
        if redacted:
            detail += f", {redacted} secret locals redacted"
        if result.status is DumpStatus.OK:
            self.dumps_ok += 1
            self.dumped.add(proc.pid)
            description = f"py-spy dump of PID {proc.pid} ({proc.title[:80]}): {detail}"
        else:
            self.dumps_failed += 1
            self.dump_reasons[proc.pid] = result.reason
            description = (
                f"py-spy failed for PID {proc.pid} ({proc.title[:80]}): {result.reason}; {detail}"
            )
            self.note_skip(what, result.reason)
            self.say(f"PID {proc.pid}: py-spy failed: {result.reason}")
            if result.permission:
                self.advise(proc, facts)
        self.w.add_evidence(
            EvidenceEntry(
                path=rel,
                kind=EvidenceKind.PYSPY_TEXT,
                captured_at=result.started_at,
                description=description,
            )
        )

    def advise(self, proc: procfs.ProcessInfo, facts: ptrace.PtraceFacts) -> None:
        verdict = ptrace.assess(
            facts, target_uid=proc.uid, descendant=self.descendant(proc.pid, os.getpid())
        )
        steps = ptrace.advice(facts, verdict, target_uid=proc.uid)
        if steps in self.advised:
            return
        self.advised.add(steps)
        why = verdict.reason if not verdict.allowed else "refused although the usual rules allow it"
        first = f"py-spy may not read PID {proc.pid}: {why} ({facts.describe()})."
        self.say(first)
        # The CLI prints these lines again at the end; the manifest keeps them in [fields].
        self.w.update(advice=(*self.w.state.advice, first, *(f"what to do: {s}" for s in steps)))

    def packages(self, targets: Sequence[Target]) -> None:
        groups: dict[tuple[str, str, tuple[str, ...]], tuple[envcap.Interpreter, list[int]]] = {}
        for target in targets:
            if self.stop.is_set():
                return
            proc = target.process
            parent = self.processes.get(proc.ppid)
            environ = self.environs.get(proc.pid) or self.environs.get(proc.ppid)
            cwd, real_exe = envcap.read_cwd_and_exe(proc.pid)
            if real_exe is None:
                self.note_skip(
                    f"packages of PID {proc.pid}",
                    "its executable cannot be read (another user's process, or it exited)",
                )
                continue
            interpreter = envcap.choose_interpreter(
                proc, parent, environ=environ, cwd=cwd, real_exe=real_exe
            )
            groups.setdefault(interpreter.key, (interpreter, []))[1].append(proc.pid)
        for interpreter, pids in groups.values():
            if self.stop.is_set():
                return
            listed = envcap.list_packages(interpreter, timeout=self.request.timeout, stop=self.stop)
            who = "PID " + ", ".join(map(str, pids))
            if listed.error:
                self.note_skip(f"packages of {who}", listed.error)
                self.say(f"packages of {who}: {listed.error}")
                continue
            rel = plan.env_path(pids[0], "packages.txt")
            self.save_file(rel, listed.text)
            count = sum(1 for line in listed.text.splitlines() if line.strip())
            self.w.add_evidence(
                EvidenceEntry(
                    path=rel,
                    kind=EvidenceKind.PACKAGES,
                    captured_at=_now(),
                    description=f"{count} packages of the interpreter of {who} ({listed.note})",
                )
            )
            version = _service_version(self.w.state.service, listed.text)
            if version and not self.w.state.version:
                self.w.update(version=version)
            self.say(f"packages: {count} from {interpreter.argv0} ({who})")
        self.w.save()

    def units(self) -> None:
        systemctl = envcap.find_program("systemctl")
        for unit in self.request.units:
            if self.stop.is_set():
                return
            shown = envcap.systemctl_show(
                unit, timeout=self.request.timeout, stop=self.stop, systemctl=systemctl
            )
            if shown.error:
                self.note_skip(f"systemctl show {unit}", shown.error)
                self.say(f"unit {unit}: skipped: {shown.error}")
                continue
            rel = plan.unit_path(unit)
            self.save_file(rel, shown.text)
            self.w.add_evidence(
                EvidenceEntry(
                    path=rel,
                    kind=EvidenceKind.SYSTEMD_SHOW,
                    captured_at=_now(),
                    description=f"systemctl show {unit}",
                )
            )
            self.say(f"unit {unit}: saved")
        self.w.save()

    def queries(self) -> None:
        request = self.request
        if not request.prometheus:
            return
        end = _now()
        start = end - timedelta(seconds=request.range_seconds)
        step = plan.query_step(request.range_seconds, request.step_seconds)
        with scrape.make_client() as client:
            for index, query in enumerate(request.queries, start=1):
                if self.stop.is_set():
                    return
                answer = scrape.fetch_query_range(
                    client,
                    request.prometheus,
                    query,
                    start=start,
                    end=end,
                    step=step,
                    timeout=request.timeout,
                )
                if answer.error:
                    self.note_skip(f"Prometheus query {query!r}", answer.error)
                    self.say(f"query {index}: skipped: {answer.error}")
                    continue
                rel = plan.query_path(index, query)
                self.save_file(rel, answer.text)
                self.w.add_evidence(
                    EvidenceEntry(
                        path=rel,
                        kind=EvidenceKind.PROMETHEUS_JSON,
                        description=f"query_range {query!r} from {request.prometheus}, "
                        f"{iso(start)} to {iso(end)}, step {step:g} s",
                    )
                )
                self.say(f"query {index}: saved {rel}")
        self.w.save()

    # -- torch's debug server and Flight Recorder dump files --------------------------------------

    def torch_debug(self) -> None:
        request = self.request
        if not request.torch_debug:
            return
        with scrape.make_client() as client:
            result = torchdebug.fetch_all(client, request.torch_debug, timeout=request.timeout)
        for fetched in result.files:
            self.save_file(fetched.path, fetched.text)
            self.w.add_evidence(
                EvidenceEntry(
                    path=fetched.path,
                    kind=fetched.kind,
                    captured_at=_now(),
                    description=fetched.description,
                    rank=fetched.rank,
                )
            )
        for failure in result.failures:
            self.note_skip(failure.what, failure.reason)
        self.w.save()
        self.say(
            f"torch debug server: {plural(len(result.files), 'file')}, "
            f"{len(result.failures)} not fetched"
        )

    def fr_dumps(self) -> None:
        request = self.request
        found: list[torchdebug.DumpFile] = []
        for folder in request.fr_dirs:
            in_dir = torchdebug.find_in_dir(folder)
            if not in_dir:
                self.note_skip(f"Flight Recorder dumps in {folder}", "no dump file found there")
            found.extend(in_dir)
        for prefix in torchdebug.dump_prefixes(self.environs):
            found.extend(torchdebug.find_prefixed(prefix))
        copied = 0
        seen: set[str] = set()
        for dump in found:
            if dump.path in seen:
                continue
            seen.add(dump.path)
            try:
                data = dump.source.read_bytes()
            except OSError as err:
                self.note_skip(
                    f"Flight Recorder dump {dump.source}", f"cannot read ({err.strerror})"
                )
                continue
            target = self.root / dump.path
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            partial.write_bytes(data)
            partial.replace(target)
            self.w.add_evidence(
                EvidenceEntry(
                    path=dump.path,
                    kind=EvidenceKind.FLIGHT_RECORDER,
                    captured_at=_now(),
                    description=f"Flight Recorder dump copied from {dump.source}",
                    rank=dump.rank,
                )
            )
            copied += 1
        if copied:
            self.w.save()
            self.say(f"Flight Recorder dumps: {plural(copied, 'file')} copied")

    # -- metrics thread --------------------------------------------------------------------------

    def start_metrics(self) -> threading.Thread | None:
        request = self.request
        if not request.metrics_url:
            return None
        thread = threading.Thread(target=self.metrics, name="metrics-scrape", daemon=True)
        thread.start()
        count = plan.scrape_count(request.scrape_every, request.scrape_for)
        self.say(
            f"metrics: {count} scrapes of {request.metrics_url}, one every {request.scrape_every:g} s"
        )
        return thread

    def metrics(self) -> None:
        try:
            self.scrape_all()
        except Exception as err:  # a thread's error would vanish unseen: record it
            self.note_skip("the rest of the /metrics scrapes", f"the scraper stopped: {err!r}")
            self.say(f"metrics: the scraper stopped: {err!r}")

    def scrape_all(self) -> None:
        request = self.request
        assert request.metrics_url is not None
        path = self.root / plan.SCRAPES_PATH
        path.parent.mkdir(parents=True, exist_ok=True)
        first: list[datetime] = []
        last: list[datetime] = []
        with scrape.make_client() as client, path.open("a", encoding="utf-8") as sink:
            total = plan.scrape_count(request.scrape_every, request.scrape_for)

            def on_result(result: scrape.ScrapeResult) -> None:
                if self.tick is not None:
                    done = self.scrapes_ok + self.scrapes_failed + 1
                    self.tick("/metrics scrapes", done, total)
                if result.error:
                    self.scrapes_failed += 1
                    self.note_skip(
                        f"scrape of {request.metrics_url} at {iso(result.at)}", result.error
                    )
                    if self.scrapes_failed == 1:
                        self.say(f"metrics: scrape failed: {result.error}")
                    return
                # One write per scrape: an interruption never leaves half a scrape behind.
                sink.write(scrape.scrape_block(result.at, result.text))
                sink.flush()
                self.scrapes_ok += 1
                first[:] = first or [result.at]
                last[:] = [result.at]
                self.w.replace_evidence(self.scrapes_entry(first[0], last[0]))
                if self.scrapes_ok == 1:
                    self.w.save()

            scrape.scrape_loop(
                client,
                request.metrics_url,
                every=request.scrape_every,
                count=plan.scrape_count(request.scrape_every, request.scrape_for),
                timeout=min(request.timeout, max(request.scrape_every, 1.0)),
                stop=self.stop,
                on_result=on_result,
            )
        if not self.scrapes_ok:
            path.unlink(missing_ok=True)

    def scrapes_entry(self, first: datetime, last: datetime) -> EvidenceEntry:
        request = self.request
        failed = f", {self.scrapes_failed} failed" if self.scrapes_failed else ""
        return EvidenceEntry(
            path=plan.SCRAPES_PATH,
            kind=EvidenceKind.PROMETHEUS_TEXT,
            description=f"{self.scrapes_ok} scrapes of {request.metrics_url} every "
            f"{request.scrape_every:g} s, {iso(first)} to {iso(last)}{failed}; "
            "each after a `# scrape at` line",
        )

    def wait_metrics(self, thread: threading.Thread | None) -> None:
        if thread is None:
            return
        while thread.is_alive():
            thread.join(_WAIT_S)
        self.say(f"metrics: {self.scrapes_ok} scrapes saved, {self.scrapes_failed} failed")

    # -- end -------------------------------------------------------------------------------------

    def summary_text(self, status: CollectStatus) -> str:
        request = self.request
        state = self.w.state
        parts = [
            f"Collected with report collect ({state.tool}) on {state.host} from "
            f"{iso(state.started_at)}"
            + (f" to {iso(state.finished_at)}" if state.finished_at else "")
            + f"; {status.value}."
        ]
        if state.targets:
            titles = sorted({t.title[:60] for t in state.targets})
            parts.append(
                f"{plural(len(state.targets), 'process')} ({', '.join(titles[:6])}"
                + (", ..." if len(titles) > 6 else "")
                + f"); py-spy {state.mode}, {plural(request.snapshots, 'snapshot')} "
                f"{request.interval:g} s apart: {plural(self.dumps_ok, 'dump')}, "
                f"{self.dumps_failed} failed."
            )
        if request.metrics_url:
            parts.append(
                f"/metrics: {plural(self.scrapes_ok, 'scrape')} every {request.scrape_every:g} s "
                f"({self.scrapes_failed} failed)."
            )
        if request.prometheus:
            parts.append(
                f"Prometheus: {len(request.queries)} queries over {request.range_seconds:g} s."
            )
        if request.units:
            parts.append(f"Units: {', '.join(request.units)}.")
        parts.append(
            "Secrets in environments, command lines and locals were redacted at capture."
            if self.detector is not None
            else "Environments were captured raw (--raw-env)."
        )
        return " ".join(parts)

    def finish(self, status: CollectStatus) -> None:
        if self.writer is None:
            return
        finished = _now()
        self.w.update(status=status, finished_at=finished)
        if status is CollectStatus.INTERRUPTED:
            self.w.event(
                EventNote(at=finished, text="report collect was interrupted; the bundle is partial")
            )
        self.w.update(summary=self.summary_text(status))
        self.w.save()

    def missing_stacks(self, targets: Sequence[Target]) -> tuple[str, ...]:
        """Why no stack came back, per target, when none came back from any of them."""
        if not targets or self.request.snapshots < 1 or self.dumped:
            return ()
        lines = []
        for target in targets:
            proc = target.process
            why = self.no_pyspy or self.dump_reasons.get(proc.pid, "no dump was taken")
            lines.append(f"PID {proc.pid} ({proc.title[:60]}): {why}")
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
            files=len(state.evidence) if state else 0,
            skipped=state.skipped if state else (),
            advice=state.advice if state else (),
            seconds=time.monotonic() - self.began,
            missing_stacks=self.missing_stacks(self.targets)
            if status is CollectStatus.INCOMPLETE
            else (),
        )


def collect(
    request: CollectRequest,
    *,
    progress: Progress,
    stop: threading.Event,
    tick: Tick | None = None,
) -> CollectSummary:
    """Collect evidence into `request.out`; see the module docstring for the order of steps.

    Raises `UsageError`/`InputError` before anything is written when the request
    cannot be carried out (bad options, an existing folder, no matching process).
    Once the folder exists, a stop or an error leaves a valid partial bundle.
    """
    plan.validate(request)
    session = _Session(request, progress, stop, tick)
    session.check_out()
    selection = session.select()
    facts = ptrace.read_facts()
    pyspy = envcap.find_pyspy(request.pyspy)
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
            session.queries,
            lambda: session.wait_metrics(thread),
        )
        for step in steps:
            if stop.is_set():
                break
            step()
        status = CollectStatus.INTERRUPTED if stop.is_set() else CollectStatus.COMPLETE
        if status is CollectStatus.COMPLETE and session.missing_stacks(targets):
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
        session.say(
            f"incomplete: no stacks from {plural(len(selection.targets), 'process')} "
            f"it was asked to dump; {len(session.w.state.evidence)} files in {request.out}"
        )
    else:
        session.say(f"done: {len(session.w.state.evidence)} files in {request.out}")
    return session.summary(status)


def _title_only(proc: procfs.ProcessInfo) -> bool:
    """True when the command line is a process title (one word, no path): setproctitle's work."""
    return (
        len(proc.argv) == 1
        and "/" not in proc.argv[0]
        and " " not in proc.argv[0]
        and ("::" in proc.argv[0] or not proc.argv[0].startswith(("python", "pypy")))
    )


def _upstream_for(service: str) -> tuple[str, ...]:
    if not service:
        return ()
    from reporter.analysis.excerpts import default_upstream_rules

    return tuple(sorted({r.repo for r in default_upstream_rules() if r.module == service}))


def _service_version(service: str, freeze: str) -> str:
    """The installed version of the service's own distribution, from `name==version` lines."""
    if not service:
        return ""
    from reporter.analysis.excerpts import default_upstream_rules

    dists = {r.dist.lower() for r in default_upstream_rules() if r.module == service} or {service}
    for line in freeze.splitlines():
        name, sep, version = line.partition("==")
        if sep and name.strip().lower().replace("_", "-") in dists:
            return version.strip()
    return ""


def _default_title(count: int, service: str, host: str, started: datetime) -> str:
    what = plural(count, f"{service} process" if service else "process")
    if not count:
        what = "metrics"
    return f"Live capture of {what} on {host} ({started.strftime('%Y-%m-%d %H:%M')} UTC)"


def _start_text(request: CollectRequest, count: int) -> str:
    parts = []
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
    return "report collect started: " + "; ".join(parts)
