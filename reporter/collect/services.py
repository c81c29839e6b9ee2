"""The steps of `report collect` that ask services and folders: systemd units, Prometheus
queries, torch's debug server, Flight Recorder dump files, and the `/metrics` thread."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from datetime import datetime, timedelta

from reporter.collect import envcap, frfiles, logtail, plan, procread, scrape, torchdebug
from reporter.collect.manifest import (
    EvidenceEntry,
)
from reporter.collect.runner import run_bounded
from reporter.collect.state import WAIT_S, SessionState
from reporter.core.text import plural
from reporter.core.times import iso
from reporter.evidence import systemd
from reporter.model import EvidenceKind


class ServiceSteps(SessionState):
    """Steps that talk to services and read dump folders."""

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
            self.keep(
                plan.unit_path(unit),
                shown.text,
                EvidenceKind.SYSTEMD_SHOW,
                f"systemctl show {unit}",
            )
            self.say(f"unit {unit}: saved")
        self.w.save()

    def logs(self) -> None:
        """The tail of each `--log` file, and the journal of the targets' systemd services
        (and of each `--unit`) since the service started; each capped in lines and bytes.
        Written by `keep_log`, as a remote host's logs are."""
        request = self.request
        files, missing = logtail.expand(request.logs)
        taken: set[str] = set()
        for pattern, why in missing:
            self.keep_log("file", pattern, logtail.Tail(error=why), taken=taken)
        for path in files:
            if self.stop.is_set():
                return
            got = logtail.tail(path, max_lines=request.log_lines, max_bytes=request.log_bytes)
            self.keep_log("file", str(path), got, taken=taken)
        if request.journal:
            self.journals(taken)
        if request.kernel_log and self.targets:
            self.kernel_log(taken)
        self.w.save()

    def kernel_log(self, taken: set[str]) -> None:
        request = self.request
        btime = procread.boot_time()
        ticks = [procread.start_ticks(t.process.pid) for t in self.targets]
        known = [t for t in ticks if t is not None]
        since = procread.started(min(known), btime) if known and btime is not None else None
        got = logtail.kernel_log(
            since=since,
            dmesg=envcap.find_program("dmesg"),
            max_lines=request.log_lines,
            max_bytes=request.log_bytes,
            timeout=request.timeout,
            run=log_runner(self.stop),
        )
        self.keep_log("kernel", "", got, since=since, taken=taken)

    def journals(self, taken: set[str]) -> None:
        request = self.request
        units: dict[str, list[int]] = {unit: [] for unit in request.units}
        for target in self.targets:
            unit = logtail.unit_of(target.process.pid)
            if unit is not None:
                units.setdefault(unit, []).append(target.process.pid)
        if not units:
            return
        journalctl = envcap.find_program("journalctl")
        systemctl = envcap.find_program("systemctl")
        for unit, pids in units.items():
            if self.stop.is_set():
                return
            since = self._service_start(unit, pids, systemctl)
            got = logtail.journal(
                unit,
                since=since,
                journalctl=journalctl,
                max_lines=request.log_lines,
                max_bytes=request.log_bytes,
                timeout=request.timeout,
                run=log_runner(self.stop),
            )
            self.keep_log("journal", unit, got, since=since, taken=taken)

    def _service_start(self, unit: str, pids: list[int], systemctl: str | None) -> datetime | None:
        """When the service's main process started (`systemctl show`), else the earliest
        start of its targets (`/proc`); None when neither is known."""
        shown = envcap.systemctl_show(
            unit, timeout=self.request.timeout, stop=self.stop, systemctl=systemctl
        )
        if not shown.error:
            starts = [
                e.at
                for e in systemd.parse(shown.text, source=unit).events
                if "main process started" in e.text or "became active" in e.text
            ]
            if starts:
                return min(starts)
        btime = procread.boot_time()
        if btime is None:
            return None
        ticks = [t for t in map(procread.start_ticks, pids) if t is not None]
        return procread.started(min(ticks), btime) if ticks else None

    def queries(self) -> None:
        request = self.request
        if not request.prometheus:
            return
        end = self.now()
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
                    limits=request.limits,
                    stop=self.stop,
                )
                if answer.error:
                    self.failed_reads.setdefault("prometheus", answer.error)
                    self.note_skip(f"Prometheus query {query!r}", answer.error)
                    self.say(f"query {index}: skipped: {answer.error}")
                    continue
                rel = plan.query_path(index, query)
                self.keep(
                    rel,
                    answer.text,
                    EvidenceKind.PROMETHEUS_JSON,
                    f"query_range {query!r} from {request.prometheus}, "
                    f"{iso(start)} to {iso(end)}, step {step:g} s",
                    stamped=False,
                )
                self.queries_ok += 1
                self.say(f"query {index}: saved {rel}")
        self.w.save()

    def torch_debug(self) -> None:
        request = self.request
        if not request.torch_debug:
            return
        with scrape.make_client() as client:
            result = torchdebug.fetch_all(
                client, request.torch_debug, limits=request.limits, stop=self.stop
            )
        for fetched in result.files:
            self.keep(
                fetched.path, fetched.text, fetched.kind, fetched.description, rank=fetched.rank
            )
        self.debug_files += len(result.files)
        for failure in result.failures:
            self.failed_reads.setdefault("torch-debug", f"{failure.what}: {failure.reason}")
            self.note_skip(failure.what, failure.reason)
        self.w.save()
        self.say(
            f"torch debug server: {plural(len(result.files), 'file')}, "
            f"{len(result.failures)} not fetched"
        )

    def fr_dumps(self) -> None:
        request = self.request
        found: list[frfiles.DumpFile] = []
        for folder in request.fr_dirs:
            in_dir = frfiles.find_in_dir(folder)
            if not in_dir:
                self.note_skip(f"Flight Recorder dumps in {folder}", "no dump file found there")
            found.extend(in_dir)
        for prefix in frfiles.dump_prefixes(self.environs):
            try:
                found.extend(frfiles.find_prefixed(prefix))
            except frfiles.RefusedError as err:
                self.note_skip(f"Flight Recorder dumps at {prefix}*", str(err))
        copied = 0
        seen: set[str] = set()
        for dump in found:
            if dump.path in seen or self.stop.is_set():
                continue
            seen.add(dump.path)
            try:
                data = frfiles.read_dump(
                    dump, owners=self.dump_owners(), max_bytes=request.max_size
                )
            except frfiles.RefusedError as err:
                self.note_skip(f"Flight Recorder dump {dump.source}", str(err))
                continue
            data, masked = self.scrubbed_bytes(data)
            if self.out is not None:
                self.out.write(dump.path, data)
            else:
                target = self.root / dump.path
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(target.name + ".partial")
                partial.write_bytes(data)
                partial.replace(target)
            note = f"; {plural(masked, 'secret value')} masked" if masked else ""
            self.w.add_evidence(
                EvidenceEntry(
                    path=dump.path,
                    kind=EvidenceKind.FLIGHT_RECORDER,
                    captured_at=self.now(),
                    description=f"Flight Recorder dump copied from {dump.source}{note}",
                    rank=dump.rank,
                )
            )
            copied += 1
        if copied:
            self.w.save()
            self.say(f"Flight Recorder dumps: {plural(copied, 'file')} copied")

    def dump_owners(self) -> frozenset[int]:
        """Who may own a dump file: the targets' users; the collector's when none is known."""
        uids = {t.process.uid for t in self.targets if t.process.uid is not None}
        return frozenset(uids or {os.getuid()})

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
        if self.out is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        first: list[datetime] = []
        last: list[datetime] = []
        with (
            scrape.make_client() as client,
            (
                self.out.append(plan.SCRAPES_PATH)
                if self.out is not None
                else path.open("a", encoding="utf-8")
            ) as sink,
        ):
            total = plan.scrape_count(request.scrape_every, request.scrape_for)

            def on_result(result: scrape.ScrapeResult) -> None:
                if self.tick is not None:
                    done = self.scrapes_ok + self.scrapes_failed + 1
                    self.tick("/metrics scrapes", done, total)
                if result.error:
                    self.scrapes_failed += 1
                    self.failed_reads.setdefault("metrics", result.error)
                    self.note_skip(
                        f"scrape of {request.metrics_url} at {iso(result.at)}", result.error
                    )
                    if self.scrapes_failed == 1:
                        self.say(f"metrics: scrape failed: {result.error}")
                    return
                # One write per scrape: an interruption never leaves half a scrape behind.
                block, _masked = self.shielded(scrape.scrape_block(result.at, result.text))
                sink.write(block)
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
                limits=replace(
                    request.limits, deadline=min(request.timeout, max(request.scrape_every, 1.0))
                ),
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
            thread.join(WAIT_S)
        self.say(f"metrics: {self.scrapes_ok} scrapes saved, {self.scrapes_failed} failed")


def log_runner(stop: threading.Event | None) -> logtail.Runner:
    """`logtail.Runner` here: `runner.run_bounded`, stopped by `stop` too."""

    def run(argv: list[str], timeout: float, env: dict[str, str], max_bytes: int) -> logtail.Ran:
        done = run_bounded(argv, timeout=timeout, stop=stop, env=env, max_output=max_bytes)
        return logtail.Ran(
            stdout=done.stdout,
            stderr=done.stderr,
            returncode=done.returncode,
            timed_out=done.timed_out,
            launch_error=done.launch_error,
            flooded=done.flooded,
        )

    return run
