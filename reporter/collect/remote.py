"""Capture on other hosts through engines that already reach them: OpenSSH, or a command template.

`report collect --ssh node-a --ssh node-b --match 'sglang::scheduler_TP'` runs the capture on
each host with the system's `ssh` (its config, agent, jump hosts and known_hosts apply;
`BatchMode=yes`, so it never asks for a password or a host key). `--exec TEMPLATE --host NAME`
runs it through any command that runs its arguments somewhere else, `{host}` replaced by the
name: `kubectl exec -n prod {host} --`, `srun --jobid 4242 --overlap -w {host}`,
`docker exec {host}`.

What runs there is `probe.py`, sent as one argument (`python3 -c '<bootstrap>'`: the program
and this run's options, compressed and base64-encoded), so a host needs `python3` and py-spy but
never `reporter`, nothing is installed or left behind, and no port or daemon is involved. An
argument rather than stdin: `kubectl exec` and `docker exec` pass stdin only with `-i`, and
`srun` hands it to one task, while every engine passes its arguments on. ssh (also as a
template's command) joins them into one shell line, so it gets them shell-quoted; other
engines get them as they are.

Bounded fan-out: at most `parallel` hosts at once (default 16), each under a deadline (its
ssh or exec process group is killed at the deadline; what came back before it is kept, and the
probe stops starting dumps itself before then). A host that cannot be reached, or whose capture
failed, is recorded with the reason in `[[collect.remote]]`; the rest of the bundle stands.

Bundle layout: `hosts/<host>/pyspy/pid4711-s0.txt`, `hosts/<host>/env/pid4711.environ`,
`hosts/<host>/proc/pid4711-s0.fds`, `hosts/<host>/logs/kernel.log`, ...,
each `[[evidence]]` with `host = "<host>"`. Everything that comes back goes through the same
secret policy as a local capture before it is written (environments, command lines, locals).
"""

from __future__ import annotations

import base64
import json
import shlex
import threading
import time
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reporter.collect import dumps as dumping
from reporter.collect import envcap, hostprocs, logtail, plan, procread
from reporter.collect import hostrecords as check
from reporter.collect.dumps import DumpResult, DumpStatus
from reporter.collect.envcap import PACKAGES_SCRIPT
from reporter.collect.manifest import ProcessEntry, RemoteNote, TargetNote
from reporter.collect.plan import CollectRequest
from reporter.collect.remotehosts import (
    CONNECT_TIMEOUT,
    RETURN_MARGIN,
    RemoteHost,
    engine_env,
    host_deadline,
    host_folders,
)
from reporter.collect.runner import Finished, run_bounded
from reporter.collect.state import WAIT_S, SessionState
from reporter.core import inert
from reporter.core.errors import OutputError
from reporter.core.text import plural
from reporter.model import EvidenceKind

# Seconds between two rewrites of bundle.toml while hosts come back (see `record_host`).
SAVE_EVERY = 2.0

# What one host may send (a broken or hostile host must not fill the collector's memory,
# disk or time). Bytes: `--max-size` per host (`run_host`); records:
# `hostrecords.MAX_HOST_RECORDS`. The probe sends about ten records and files per target
# and snapshot, so these leave room for hundreds of targets.
MAX_HOST_FILES = 5_000
# Skip notes kept per host; the rest are counted in one note.
MAX_HOST_NOTES = 200
# Seconds a host's records may take to be written once its command ended, when its
# deadline has already passed (the deadline covers writing too, past this floor).
WRITE_FLOOR = 5.0


def probe_options(request: CollectRequest, deadline: float) -> dict[str, Any]:
    """What the probe is asked to do (see `probe.main`)."""
    remote = request.remote
    return {
        "match": request.match,
        "pids": list(request.pids),
        "children_of": request.children_of,
        "snapshots": request.snapshots,
        "interval": request.interval,
        "timeout": request.timeout,
        "blocking": request.blocking,
        "locals": request.with_locals,
        "parallel": plan.DEFAULT_PARALLEL,
        "pyspy": remote.pyspy if remote is not None else None,
        # The probe stops starting work this long before the collector gives up on it.
        "deadline": max(1.0, deadline - CONNECT_TIMEOUT - RETURN_MARGIN),
        "transient": list(dumping.TRANSIENT),
        "packages_script": PACKAGES_SCRIPT,
        # Who we are, so that a probe on this very host leaves us out.
        "collector": hostprocs.whoami(),
        # The products' environment scripts, run as locally (`envcap.run_env_script`).
        "env_scripts": [list(e) for e in envcap.ENV_SCRIPTS],
        "env_script_timeout": max(request.timeout, envcap.ENV_SCRIPT_TIMEOUT),
        "env_script_max_chars": envcap.ENV_SCRIPT_MAX_CHARS,
        # Read after each round of dumps, as a local capture does (`procread.ROUND_READS`).
        "round_reads": list(procread.ROUND_READS),
        # The logs, read on the host by the local code (`logtail`, `probe.logs`).
        "logs": list(request.logs),
        "log_lines": request.log_lines,
        "log_bytes": request.log_bytes,
        "journal": request.journal,
        "kernel_log": request.kernel_log,
    }


HOST_MODULES = (
    "reporter.collect.procread",
    "reporter.collect.logtail",
    "reporter.collect.hostprocs",
    "reporter.collect.probe",
)
"""The modules the probe program carries to each host, in import order: each standard
library only and Python 3.8+ (a test holds them to it). On the host they are importable
under their usual names (`from reporter.collect import probe`), so the same code reads
`/proc` here and there: a per-round read added to such a module for a local capture
comes to remote hosts by naming the module here and calling it from `probe.round_reads`."""

# Runs first on the host: makes each carried module importable by its name, then starts
# the probe. A `reporter` installed on the host is never imported instead.
_LOADER = """\
import json, sys, types
def _carry(modules):
    for name, source in modules:
        parts = name.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            if package not in sys.modules:
                made = types.ModuleType(package)
                made.__path__ = []
                sys.modules[package] = made
                if i > 1:
                    setattr(sys.modules[".".join(parts[: i - 1])], parts[i - 1], made)
        module = types.ModuleType(name)
        module.__file__ = "<carried " + name + ">"
        sys.modules[name] = module
        setattr(sys.modules[".".join(parts[:-1])], parts[-1], module)
        exec(compile(source, module.__file__, "exec"), module.__dict__)
"""


def probe_program(python: str, options: dict[str, Any]) -> list[str]:
    """`python3 -c '<bootstrap>'`: the carried modules, the probe's start and its options in
    one shell-safe argument."""
    here = Path(__file__).resolve().parents[2]
    modules = [
        (name, (here / Path(*name.split("."))).with_suffix(".py").read_text(encoding="utf-8"))
        for name in HOST_MODULES
    ]
    source = (
        _LOADER
        + f"_carry(json.loads({json.dumps(json.dumps(modules))}))\n"
        + "sys.modules['reporter.collect.probe'].main("
        + f"json.loads({json.dumps(json.dumps(options))}))\n"
    )
    blob = base64.b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii")
    boot = f'import base64,zlib;exec(zlib.decompress(base64.b64decode("{blob}")))'
    return [*shlex.split(python), "-c", boot]


# -- one host ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HostRun:
    """What came back from one host: the probe's records and how the command ended."""

    host: RemoteHost
    records: tuple[dict[str, Any], ...]
    finished: Finished
    noise: tuple[str, ...] = ()
    """Lines on stdout that were not the probe's (a login script's greeting), first few."""
    capped: str = ""
    """Why the host's output was cut (a cap it went past, named), "" when it was not."""
    ended_at: float = 0.0
    """`time.monotonic()` when its command ended; its deadline counts from the start."""

    @property
    def began_at(self) -> float:
        """`time.monotonic()` when its command started."""
        return self.ended_at - self.finished.seconds


def run_host(
    host: RemoteHost,
    program: Sequence[str],
    *,
    deadline: float,
    stop: threading.Event | None,
    env: Mapping[str, str] | None = None,
    max_bytes: int = 64 << 20,
) -> HostRun:
    """Run the probe on one host and read its records (also those before a timeout), at
    most `max_bytes` of them (`--max-size`): past it, or past `MAX_HOST_RECORDS`, the
    host's command is ended and the host is `capped`."""
    sink = check.RecordSink(max_bytes)
    if stop is not None and stop.is_set():  # stopped before its turn came: never started
        done = Finished(argv=tuple(host.argv(program)), returncode=None, stopped=True)
        return HostRun(host=host, records=(), finished=done, ended_at=time.monotonic())
    done = run_bounded(
        host.argv(program),
        timeout=deadline,
        stop=stop,
        env=env if env is not None else engine_env(),
        on_stdout=sink,
        # stderr is read for the reason of a failure: its last lines are enough.
        max_output=min(max_bytes, 1 << 20),
    )
    sink.close()
    capped = sink.capped
    if done.flooded and not capped:
        capped = "it wrote more than 1 MiB of errors (stderr); the rest was not read"
    return HostRun(
        host=host,
        records=tuple(sink.records),
        finished=done,
        noise=tuple(sink.noise),
        capped=capped,
        ended_at=time.monotonic(),
    )


def failure_reason(run: HostRun) -> str:
    """Why a host gave no usable answer, in one line (ssh's or the engine's own words)."""
    done = run.finished
    if done.launch_error:
        return done.launch_error
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if done.returncode == 127 or ("not found" in last and "python" in last.lower()):
        return f"the remote Python was not found ({last or 'exit status 127'}); name it with --remote-python"
    if last:
        return last[:300]
    if run.noise:
        return f"the remote side printed {run.noise[0]!r} and no capture"
    return f"exit status {done.returncode}, no output"


# -- the step ------------------------------------------------------------------------------------


class RemoteSteps(SessionState):
    """The remote fan-out step, over the shared session state."""

    lock: threading.Lock
    saved_at: float
    save_cost: float
    folders: dict[str, str]
    """Each host's folder under `hosts/` (`host_folders`)."""

    def remote_capture(self, hosts: Sequence[RemoteHost]) -> None:
        """Capture on every host, `parallel` at a time; record each as it finishes."""
        request = self.request
        remote = request.remote
        assert remote is not None
        self.lock = threading.Lock()
        self.saved_at = 0.0
        self.save_cost = 0.0
        self.folders = host_folders([h.name for h in hosts])
        deadline = host_deadline(request)
        program = probe_program(remote.python, probe_options(request, deadline))
        environment = engine_env(remote.exec_env)
        done_hosts = 0
        started = time.monotonic()
        with ThreadPoolExecutor(
            max_workers=min(remote.parallel, len(hosts)), thread_name_prefix="remote"
        ) as pool:
            pending: dict[Future[HostRun], RemoteHost] = {
                pool.submit(
                    run_host,
                    h,
                    program,
                    deadline=deadline,
                    stop=self.stop,
                    env=environment,
                    max_bytes=request.max_size,
                ): h
                for h in hosts
            }
            try:
                while pending:
                    finished, _ = wait(list(pending), timeout=WAIT_S, return_when=FIRST_COMPLETED)
                    for future in finished:
                        pending.pop(future)
                        self.record_host(future.result())
                        done_hosts += 1
                        if self.tick is not None:
                            self.tick("hosts", done_hosts, len(hosts))
            except BaseException:
                self.stop.set()  # the running ssh commands watch it
                raise
        order = {h.name: i for i, h in enumerate(hosts)}
        notes = tuple(sorted(self.w.state.remotes, key=lambda n: order.get(n.host, len(order))))
        self.w.update(remotes=notes)
        ok = sum(1 for n in notes if n.status == "complete")
        self.say(
            f"hosts: {ok} of {len(hosts)} complete in {time.monotonic() - started:.1f} s"
            + "".join(
                f"; {n.host}: {n.status} ({n.reason})" for n in notes if n.status != "complete"
            )
        )
        self.w.update(summary=self.summary_text(self.w.state.status))
        self.w.save()

    def write_until(self, run: HostRun) -> float:
        """When writing `run`'s records must stop (`time.monotonic()`): the host's deadline,
        counted from its start, but at least `WRITE_FLOOR` seconds from now."""
        return max(run.began_at + host_deadline(self.request), time.monotonic() + WRITE_FLOOR)

    def record_host(self, run: HostRun) -> None:
        """Write what one host sent (secrets redacted) and its `[[collect.remote]]` note.

        The host's tables go once, atomically, to its own part (`bundle.d/<host>.toml`)
        before this returns; the head (`bundle.toml`: fields, events, entries not in a part)
        is rewritten at most every `SAVE_EVERY` seconds, and never more often than ten times
        its own rendering time (it is always rewritten at the end). A hard kill loses at
        most the head's changes since its last save (its fields and the entries in no part),
        never a finished host's tables or a file."""
        with self.lock:
            since = self.w.mark()
            recorder = _Recorder(self, run, until=self.write_until(run))
            recorder.record()
            # The host's tables go to a part of their own: later saves skip them.
            self.w.seal(run.host.name, recorder.base.removeprefix("hosts/"), since=since)
            began = time.monotonic()
            if began - self.saved_at >= max(SAVE_EVERY, 10 * self.save_cost):
                self.w.save()
                self.saved_at = time.monotonic()
                self.save_cost = self.saved_at - began


def _ignore(_record: Mapping[str, Any]) -> None:
    """Records with nothing to write (`hello`, `end`): read where they are needed."""


class _Recorder:
    """Turns one host's records into bundle files, manifest entries and its outcome.

    Every value in a record is checked before it is used (`check.pid`, `check.text`...): a
    record that does not pass costs that record only, with one skip note that never
    repeats the value. Writing stops at `MAX_HOST_FILES` files or at `until` (the host's
    deadline), and the host is then `incomplete` with the cap named."""

    def __init__(self, session: RemoteSteps, run: HostRun, *, until: float) -> None:
        self.s = session
        self.run = run
        self.until = until
        self.name = run.host.name
        folders = getattr(session, "folders", None) or {}
        self.base = f"hosts/{folders.get(self.name) or host_folders([self.name])[self.name]}"
        self.titles: dict[int, str] = {}
        self.ok = 0
        self.failed = 0
        self.files = 0
        self.notes = 0
        self.bad: dict[str, int] = {}
        """Records not understood, by kind."""
        self.capped = run.capped
        self.reasons: list[str] = []
        self.lost: list[int] = []
        """Snapshots the probe did not take (its deadline would have passed first)."""
        self.logs_taken: set[str] = set()
        """The `logs/` paths used on this host (`keep_log`)."""

    def skip(self, what: str, reason: str) -> None:
        """A skip note for this host, at most `MAX_HOST_NOTES` of them (then counted)."""
        self.notes += 1
        if self.notes <= MAX_HOST_NOTES:
            # The host's text, inert: no escape sequence or bidi override in bundle.toml.
            self.s.note_skip(inert.for_document(what), inert.for_document(reason))

    def record(self) -> None:
        run, s = self.run, self.s
        kinds = {r["t"] for r in run.records}
        hello = next((r for r in run.records if r["t"] == "hello"), None)
        targets = 0
        for number, record in enumerate(run.records, start=1):
            if time.monotonic() > self.until:
                self.capped = self.capped or (
                    f"its deadline (--host-timeout) passed while its records were written; "
                    f"{len(run.records) - number + 1:,} of {len(run.records):,} were not"
                )
                break
            if self.files >= MAX_HOST_FILES:
                self.capped = (self.capped + "; " if self.capped else "") + (
                    f"it sent more than {MAX_HOST_FILES:,} files (the cap per host); the rest "
                    "were not written"
                )
                break
            kind = record["t"]
            try:
                getattr(self, f"on_{kind}", _ignore)(record)
            except Exception as err:  # one bad record costs that record, never the run
                self.bad[kind] = self.bad.get(kind, 0) + 1
                if isinstance(err, OutputError):
                    why = f"not written: {err}"
                    self.reasons.append(why)
                else:
                    known = isinstance(err, check.BadRecordError)
                    why = f"not understood: {err if known else type(err).__name__}"
                self.skip(f"record {number} ({kind}) from {self.name}", why)
            else:
                targets += kind == "target"
        if self.bad:
            self.notes -= 1  # this summary is always kept
            self.skip(
                f"records from {self.name}",
                f"{sum(self.bad.values())} left out ("
                + ", ".join(f"{n} {k}" for k, n in sorted(self.bad.items()))
                + "); the others are kept",
            )
        if self.notes > MAX_HOST_NOTES:
            s.note_skip(
                f"notes on {self.name}",
                f"{self.notes - MAX_HOST_NOTES} more notes not listed (at most "
                f"{MAX_HOST_NOTES} per host)",
            )
        hostname = ""
        if hello is not None and isinstance(hello.get("hostname"), str):
            hostname = inert.one_line(hello["hostname"], limit=255)
        done = run.finished
        if done.stopped:
            status, reason = "interrupted", "report collect was interrupted"
        elif self.capped:
            status, reason = "incomplete", f"{self.capped}; what came before is kept"
        elif done.timed_out and "end" not in kinds:
            status = "timeout"
            reason = f"no answer within {done.seconds:.0f} s (--host-timeout)" + (
                "; what came before is kept" if hello is not None else ""
            )
        elif hello is None:
            status, reason = "failed", failure_reason(run)
        elif "end" not in kinds:
            status, reason = "failed", f"the capture ended early: {failure_reason(run)}"
        elif not self.ok:
            status = "incomplete"
            reason = "; ".join(dict.fromkeys(self.reasons)) or "no stack came back"
        elif self.bad:
            status = "partial"
            reason = (
                f"{plural(sum(self.bad.values()), 'record')} of {len(run.records)} left out "
                "(not understood or not written: see the skip notes); the others are kept"
            )
        elif self.lost:
            status = "partial"
            rounds = self.s.request.snapshots
            taken = rounds - len(set(self.lost))
            reason = (
                f"{taken} of {plural(rounds, 'snapshot')} taken: the host's deadline would "
                "have passed before the next one (--host-timeout; see `report collect --help`)"
            )
        else:
            status, reason = "complete", ""
        reason = inert.one_line(self.s.masked(reason), limit=2000)
        note = RemoteNote(
            host=self.name,
            via=run.host.via,
            status=status,
            reason=reason,
            hostname=hostname,
            targets=targets,
            dumps=self.ok,
            failed_dumps=self.failed,
            seconds=done.seconds,
        )
        s.w.add_remote(note)
        if status != "complete":
            s.note_skip(f"host {self.name}", f"{status}: {reason}")
        s.say(
            f"{self.name}: {status}"
            + (f" ({reason})" if reason else "")
            + f"; {plural(targets, 'process')}, {plural(self.ok, 'dump')} in {done.seconds:.1f} s"
        )

    def keep(self, rel: str, text: str, kind: EvidenceKind, description: str, **kw: Any) -> None:
        """As a local capture keeps a file (`SessionState.keep`), under `hosts/<host>/`."""
        self.files += 1
        self.s.keep(f"{self.base}/{rel}", text, kind, description, host=self.name, **kw)

    def on_target(self, r: dict[str, Any]) -> None:
        pid = check.pid(r)
        note = TargetNote(
            pid=pid,
            ppid=check.pid(r, "ppid"),
            uid=check.small_int(r, "uid"),
            title=check.text(r, "title", limit=4096),
            selected_by=check.text(r, "selected_by", limit=200),
            pgid=check.small_int(r, "pgid"),
            launcher=check.small_int(r, "launcher"),
            host=self.name,
        )
        self.titles[pid] = note.title
        self.s.w.add_target(note)

    def on_process(self, r: dict[str, Any]) -> None:
        argv = check.strings(r, "argv", limit=1 << 16)
        data = "\x00".join(argv).encode("utf-8", "replace") + b"\x00"
        text = envcap.cmdline_evidence(data, detector=self.s.detector).text
        entry = ProcessEntry(
            pid=check.pid(r),
            ppid=check.pid(r, "ppid"),
            pgid=check.small_int(r, "pgid"),
            cmdline=" ".join(a for a in text.split("\x00") if a),
            host=self.name,
        )
        self.s.w.add_process(entry)

    def on_passed(self, r: dict[str, Any]) -> None:
        self.skip(
            f"PID {check.pid(r)} on {self.name} ({check.text(r, 'title', limit=60)})",
            check.text(r, "reason", limit=2000, required=True),
        )

    def on_skip(self, r: dict[str, Any]) -> None:
        lost = r.get("lost") or []
        if not isinstance(lost, list):
            raise check.BadRecordError("'lost' is not a list of snapshots")
        rounds = self.s.request.snapshots
        self.lost += [check.snapshot({"snapshot": k}, rounds) for k in lost[:rounds]]
        self.skip(
            f"{check.text(r, 'what', limit=300, required=True)} on {self.name}",
            check.text(r, "reason", limit=2000, required=True),
        )

    def on_nomatch(self, r: dict[str, Any]) -> None:
        request = self.s.request
        what = check.text(r, "error", limit=2000) or (
            f"no process matches {request.match!r}" if request.match else "no process found"
        )
        similar = check.strings(r, "similar", limit=80)[:20]
        self.reasons.append(
            what + (f" (Python processes there: {', '.join(similar)})" if similar else "")
        )

    def on_file(self, r: dict[str, Any]) -> None:
        kind, pid = check.text(r, "kind", limit=20, required=True), check.pid(r)
        if kind not in ("cmdline", "environ"):
            return
        try:
            data = base64.b64decode(check.text(r, "b64", required=True), validate=True)
        except ValueError:
            raise check.BadRecordError("'b64' is not base64") from None
        detector = self.s.detector
        if kind == "cmdline":
            captured = envcap.cmdline_evidence(data, detector=detector)
        else:
            captured = envcap.environ_evidence(data, detector=detector)
        self.files += 1
        self.s.keep_proc_copy(
            pid,
            kind,
            captured,
            check.text(r, "what", limit=300),
            base=f"{self.base}/",
            host=self.name,
        )

    def on_pyspy(self, r: dict[str, Any]) -> None:
        refused = check.strings(r, "refused", limit=1000)[:50]
        uid = check.small_int(r, "uid")
        others = "someone other than root" + (f" or uid {uid}" if uid != 0 else "")
        path = check.text(r, "path", limit=4096)
        if path:
            version = check.text(r, "version", limit=200)
            if version:
                self.s.w.update(pyspy=inert.one_line(version, limit=200))
            if refused:
                self.skip(
                    f"py-spy copies on {self.name}",
                    f"passed over, as {others} could have changed them (not run as uid "
                    f"{uid}): " + "; ".join(refused) + f"; {path} was used",
                )
            return
        where = check.text(r, "searched", limit=2000)
        if refused:
            first = refused[0].split(" (", 1)[0]
            reason = (
                f"py-spy on {self.name} was found only where {others} could have changed "
                f"it, so it was not run as uid {uid}: "
                + "; ".join(refused)
                + f". Check it, then name it with --remote-py-spy {first} (or install py-spy "
                "in a root-owned folder on that host's PATH)"
            )
        else:
            reason = (
                f"py-spy not found on {self.name} (looked in {where}); install it there "
                "(pip install py-spy) or name it with --remote-py-spy PATH"
            )
        self.reasons.append(reason)
        self.skip(f"py-spy dumps on {self.name}", reason)

    def on_dump(self, r: dict[str, Any]) -> None:
        request = self.s.request
        pid, snapshot = check.pid(r), check.snapshot(r, request.snapshots)
        finished = Finished(
            argv=(),
            returncode=check.small_int(r, "returncode"),
            stdout=check.text(r, "stdout"),
            stderr=check.text(r, "stderr", limit=1 << 16),
            seconds=check.seconds(r, "seconds"),
            timed_out=r.get("timed_out") is True,
            launch_error=check.text(r, "launch_error", limit=2000),
        )
        status, reason = dumping.outcome(finished, timeout=request.timeout)
        result = DumpResult(
            pid=pid,
            snapshot=snapshot,
            started_at=check.when(r, "started_at"),
            seconds=finished.seconds,
            status=status,
            returncode=finished.returncode,
            stdout=finished.stdout,
            stderr=finished.stderr,
            reason=reason,
            attempts=check.small_int(r, "attempts", default=1) or 1,
        )
        text = dumping.evidence_text(result)
        redacted = 0
        if status is DumpStatus.OK and request.with_locals:
            text, redacted = self.s.scrubbed_locals(text)
        title = self.titles.get(pid, "")[:80]
        mode = "blocking" if request.blocking else "--nonblocking"
        detail = (
            f"{mode}{' --locals' if request.with_locals else ''}, snapshot {snapshot + 1} of "
            f"{request.snapshots}, {result.seconds:.2f} s"
            + (f", {result.attempts} attempts" if result.attempts > 1 else "")
            + (f", {redacted} secret locals redacted" if redacted else "")
        )
        if status is DumpStatus.OK:
            description = f"py-spy dump of PID {pid} ({title}) on {self.name}: {detail}"
        else:
            description = (
                f"py-spy failed for PID {pid} ({title}) on {self.name}: {reason}; {detail}"
            )
        self.keep(
            plan.dump_path(pid, snapshot),
            text,
            EvidenceKind.PYSPY_TEXT,
            description,
            captured_at=result.started_at,
        )
        # Counted once written: a dump that could not be written is not evidence.
        if status is DumpStatus.OK:
            self.ok += 1
            self.s.dumps_ok += 1
        else:
            self.failed += 1
            self.s.dumps_failed += 1
            self.reasons.append(f"PID {pid}: {reason}")
            self.skip(f"py-spy dump of PID {pid} on {self.name}, snapshot {snapshot + 1}", reason)

    def on_round(self, r: dict[str, Any]) -> None:
        pid, k = check.pid(r), check.snapshot(r, self.s.request.snapshots)
        name = check.text(r, "name", limit=40, required=True)
        if name not in procread.ROUND_READS:
            raise check.BadRecordError("'name' is not a read the probe was asked for")
        title = self.titles.get(pid, "")
        if self.s.detector is not None:
            title = self.s.masked(title)
        self.files += 1
        self.s.keep_round_read(
            name, pid, k, check.text(r, "text", required=True), title, base=f"{self.base}/",
            host=self.name,
        )  # fmt: skip

    def on_log(self, r: dict[str, Any]) -> None:
        source = check.text(r, "source", limit=16, required=True)
        if source not in ("file", "journal", "kernel"):
            raise check.BadRecordError("'source' is not a kind of log")
        since = check.when(r, "since") if r.get("since") else None
        got = logtail.Tail(
            text=check.text(r, "text"),
            lines=check.small_int(r, "lines", default=0) or 0,
            size=check.small_int(r, "size", default=0) or 0,
            cut=check.text(r, "cut", limit=4096),
            error=check.text(r, "error", limit=4096),
        )
        self.files += 1
        self.s.keep_log(
            source,
            check.text(r, "name", limit=4096),
            got,
            since=since,
            taken=self.logs_taken,
            base=f"{self.base}/",
            host=self.name,
        )

    def on_envscript(self, r: dict[str, Any]) -> None:
        pids = check.pids(r)
        known = {e[1]: e for e in envcap.ENV_SCRIPTS}
        module_name = check.text(r, "module", limit=200, required=True)
        if module_name not in known:  # only the scripts we asked for
            raise check.BadRecordError("'module' is not a script the probe was asked to run")
        _dist, module, kind, name = known[module_name]
        who = "PID " + ", ".join(map(str, pids[:20]))
        self.keep(
            plan.env_path(pids[0], name),
            self.s.masked(check.text(r, "text", required=True)),
            EvidenceKind(kind),
            f"python -m {module} via {check.text(r, 'via', limit=300)} on {self.name} ({who})",
        )

    def on_packages(self, r: dict[str, Any]) -> None:
        pids = check.pids(r)
        text = check.text(r, "text")
        run_as = check.text(r, "as", limit=100)
        count = sum(1 for line in text.splitlines() if line.strip())
        self.keep(
            plan.env_path(pids[0], "packages.txt"),
            text,
            EvidenceKind.PACKAGES,
            f"{count} packages of the interpreter of PID {', '.join(map(str, pids[:20]))} on "
            f"{self.name} (importlib.metadata via {check.text(r, 'via', limit=300)}"
            + (f", run as {run_as}" if run_as else "")
            + ")",
        )
