"""The steps of `report collect` that read the target processes: command lines and
environments, py-spy rounds, and the interpreters' package listings."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from reporter.analysis.excerpts import default_upstream_rules
from reporter.collect import dumps as dumping
from reporter.collect import envcap, plan, procfs, procread, ptrace
from reporter.collect.dumps import DumpResult, DumpStatus
from reporter.collect.manifest import (
    CollectStatus,
    EvidenceEntry,
    ProcessEntry,
)
from reporter.collect.plan import Target
from reporter.collect.state import WAIT_S, SessionState
from reporter.core.text import plural
from reporter.model import EvidenceKind


class ProcessSteps(SessionState):
    """Steps over the selected processes."""

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
            label = f"PID {ppid}" + (f" ({self.title_of(parent)})" if parent else "")
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
            cmdline = " ".join(a for a in captured.text.split("\x00") if a) or self.title_of(
                proc, 4096
            )
            out.append(ProcessEntry(pid=pid, ppid=proc.ppid, pgid=proc.pgid, cmdline=cmdline))
        return tuple(out)

    def save_cmdline(self, pid: int, what: str) -> None:
        self.keep_proc_copy(
            pid, "cmdline", envcap.capture_cmdline(pid, detector=self.detector), what
        )

    def save_environ(self, pid: int, captured: envcap.Capture, what: str) -> None:
        self.environs[pid] = captured.text
        self.keep_proc_copy(pid, "environ", captured, what)

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
            if found.refused:
                # A copy the target's user could change is never run with our rights.
                where = "only where someone other than root could change it: " + "; ".join(
                    found.refused
                )
                first = found.refused[0].split(" (", 1)[0]
                reason = f"py-spy found {where}; not run. Check it, then pass --py-spy {first}"
            self.note_skip("py-spy dumps", reason)
            self.no_pyspy = reason
            self.say(f"{reason}: no stack dumps")
            self.proc_rounds(targets)
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

    def proc_rounds(self, targets: Sequence[Target]) -> None:
        """Without py-spy, the `/proc` reads of each round still: states, threads, fds,
        sockets and the process family say much about a wait between processes."""
        start = time.monotonic()
        for k, offset in enumerate(plan.offsets(self.request.snapshots, self.request.interval)):
            delay = start + offset - time.monotonic()
            if (delay > 0 and self.stop.wait(delay)) or self.stop.is_set():
                break
            self.round_reads(targets, k)
            self.w.save()
        self.say(f"/proc reads: {plural(self.request.snapshots, 'round')} without stacks")

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
                max_output=request.max_size,
            )
            pending[future] = target
        results: list[tuple[Target, DumpResult]] = []
        while pending:
            done, _ = wait(list(pending), timeout=WAIT_S, return_when=FIRST_COMPLETED)
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
        if request.blocking:
            self.nonblocking_fallback(results, k, pyspy, facts)
        self.round_reads(targets, k)

    def nonblocking_fallback(
        self,
        results: Sequence[tuple[Target, DumpResult]],
        k: int,
        pyspy: str,
        facts: ptrace.PtraceFacts,
    ) -> None:
        """A `--nonblocking` dump of each target whose blocking dump could not suspend it
        (already stopped) or timed out: it shows where a frozen process stands."""
        for target, result in results:
            if self.stop.is_set() or not dumping.wants_nonblocking(result):
                continue
            pid = target.process.pid
            argv = dumping.pyspy_argv(
                pyspy, pid, blocking=False, with_locals=self.request.with_locals
            )
            again = dumping.take_dump(
                argv,
                pid=pid,
                snapshot=k,
                timeout=self.request.timeout,
                stop=self.stop,
                retry_transient=True,
                max_output=self.request.max_size,
            )
            self.record_dump(
                target,
                again,
                facts,
                path=plan.nonblocking_path(pid, k),
                why=f"after the blocking dump failed ({result.reason})",
            )

    def round_reads(self, targets: Sequence[Target], k: int) -> None:
        """What `/proc` shows of every target after snapshot `k`: the status copy (State T
        or D explains a rank that does not move or cannot be dumped) and what the waits
        between processes need (threads' states and wchans, the fd table, its socket rows,
        parent and children). Read by `procread.read_round` and written by `keep_round_read`,
        as a remote host's are; each file capped, each process's reads bounded by a
        deadline, every file through the secret policy."""
        procs = {t.process.pid: t.process for t in targets}
        for pid, name, text in procread.read_round(list(procs), k, timeout=self.request.timeout):
            self.keep_round_read(name, pid, k, text, procs[pid])

    def record_dump(
        self,
        target: Target,
        result: DumpResult,
        facts: ptrace.PtraceFacts,
        *,
        path: str | None = None,
        why: str = "",
    ) -> None:
        """Save one dump (or its error text) and list it; `path` and `why` for the
        `--nonblocking` dump taken after a blocking one failed."""
        request = self.request
        proc = target.process
        what = (
            f"py-spy dump of PID {proc.pid} ({self.title_of(proc)}), snapshot {result.snapshot + 1}"
        )
        if result.status in (DumpStatus.INTERRUPTED, DumpStatus.NOT_RUN):
            self.dump_reasons.setdefault(proc.pid, result.reason)
            if result.status is DumpStatus.NOT_RUN and result.reason not in self.said:
                self.said.add(result.reason)
                self.say(f"py-spy did not start: {result.reason}")
            self.note_skip(what, result.reason)
            return
        text = dumping.evidence_text(result)
        redacted = 0
        if result.status is DumpStatus.OK and request.with_locals:
            text, redacted = self.scrubbed_locals(text)
        rel = path or plan.dump_path(proc.pid, result.snapshot)
        # The whole text goes through the policy, the first line too: py-spy's header is
        # the target's full command line.
        redacted += self.save_file(rel, text)
        mode = "blocking" if request.blocking and path is None else "--nonblocking"
        if why:
            mode = f"{mode} {why}"
        detail = (
            f"{mode}{' --locals' if request.with_locals else ''}, "
            f"snapshot {result.snapshot + 1} of {request.snapshots}, {result.seconds:.2f} s"
        )
        if result.attempts > 1:
            detail += f", {result.attempts} attempts"
        if redacted:
            detail += f", {redacted} secret values masked"
        if result.status is DumpStatus.OK:
            self.dumps_ok += 1
            self.dumped.add(proc.pid)
            description = f"py-spy dump of PID {proc.pid} ({self.title_of(proc, 80)}): {detail}"
        else:
            self.dumps_failed += 1
            self.dump_reasons[proc.pid] = result.reason
            description = f"py-spy failed for PID {proc.pid} ({self.title_of(proc, 80)}): {result.reason}; {detail}"
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
        groups: dict[object, tuple[envcap.Interpreter, list[int]]] = {}
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
            count = sum(1 for line in listed.text.splitlines() if line.strip())
            self.keep(
                plan.env_path(pids[0], "packages.txt"),
                listed.text,
                EvidenceKind.PACKAGES,
                f"{count} packages of the interpreter of {who} ({listed.note})",
            )
            version = _service_version(self.w.state.service, listed.text)
            if version and not self.w.state.version:
                self.w.update(version=version)
            self.say(f"packages: {count} from {interpreter.argv0} ({who})")
            self.env_script(interpreter, pids, listed.text)
        self.w.save()

    def env_script(self, interpreter: envcap.Interpreter, pids: list[int], freeze: str) -> None:
        """The product's environment report (`python -m sglang.check_env`, vLLM's
        `collect_env`) from the target's interpreter: what its bug form asks for, so an
        upstream draft has the version and environment without a TODO."""
        found = envcap.env_script_for(freeze)
        if found is None or self.stop.is_set():
            return
        _dist, module, kind, name = found
        timeout = max(self.request.timeout, envcap.ENV_SCRIPT_TIMEOUT)
        ran = envcap.run_env_script(interpreter, module, timeout=timeout, stop=self.stop)
        who = "PID " + ", ".join(map(str, pids))
        if ran.error:
            self.note_skip(f"python -m {module} for {who}", ran.error)
            self.say(f"environment script: {ran.error}")
            return
        # Masked whatever --raw-env says: a tool's report, not the environment itself.
        text = self.masked(ran.text)
        self.keep(plan.env_path(pids[0], name), text, EvidenceKind(kind), f"{ran.note} ({who})")
        self.say(f"environment script: python -m {module} ({who})")


def _title_only(proc: procfs.ProcessInfo) -> bool:
    """True when the command line is a process title (one word, no path): setproctitle's work."""
    return (
        len(proc.argv) == 1
        and "/" not in proc.argv[0]
        and " " not in proc.argv[0]
        and ("::" in proc.argv[0] or not proc.argv[0].startswith(("python", "pypy")))
    )


def _service_version(service: str, freeze: str) -> str:
    """The installed version of the service's own distribution, from `name==version` lines."""
    if not service:
        return ""

    dists = {r.dist.lower() for r in default_upstream_rules() if r.module == service} or {service}
    for line in freeze.splitlines():
        name, sep, version = line.partition("==")
        if sep and name.strip().lower().replace("_", "-") in dists:
            return version.strip()
    return ""
