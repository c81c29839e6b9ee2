"""What one run of `report collect` shares between its steps, and the helpers they use.

`SessionState` holds the request, the progress and tick callbacks, the stop switch, the
clock, the manifest writer and the counts; the steps (`capture.ProcessSteps`,
`services.ServiceSteps`) and `session.collect` build on it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from reporter.collect import envcap, logtail, plan, procfs
from reporter.collect.manifest import (
    CollectStatus,
    EvidenceEntry,
    ManifestWriter,
    SkipNote,
)
from reporter.collect.outdir import OutDir
from reporter.collect.plan import CollectRequest, Target
from reporter.core import inert
from reporter.core.text import plural
from reporter.core.times import iso
from reporter.core.writer import write_atomic
from reporter.evidence import kinds
from reporter.model import EvidenceKind
from reporter.secrets import mask_text, scrub

Progress = Callable[[str], None]
Tick = Callable[[str, int, int], None]
"""`tick(what, done, total)`: `py-spy dumps` and `/metrics scrapes` as they finish (for a bar)."""
Clock = Callable[[], datetime]
"""The wall clock of a collection: timestamps in the manifest (UTC, aware)."""
# How often the main thread looks at the stop switch while it waits for dumps.
WAIT_S = 0.1


def utc_now() -> datetime:
    """The current time, UTC."""
    return datetime.now(tz=UTC)


class SessionState:
    """One run of `report collect` (state shared by the steps)."""

    def __init__(
        self,
        request: CollectRequest,
        progress: Progress,
        stop: threading.Event,
        tick: Tick | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.request = request
        self.clock = clock
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
        self.out: OutDir | None = None
        """`--out`, held open from the first write to the end (`outdir`)."""
        self.no_pyspy = ""
        self.dumped: set[int] = set()
        self.dump_reasons: dict[int, str] = {}
        self.targets: Sequence[Target] = ()
        self._titles: dict[tuple[int, int], str] = {}
        self.debug_files = 0
        self.queries_ok = 0
        self.failed_reads: dict[str, str] = {}
        """The first reason each URL source ("metrics", "torch-debug", "prometheus") failed."""

    # --- masking: the one place `report collect` calls it, besides the /proc copies'
    # scrubbers (`envcap`) and the manifest's writer (docs/architecture.md).

    def masked(self, text: str) -> str:
        """Free text about the targets (a reason, a tool's output, a process title), secrets
        masked whatever `--raw-env` says: it is no environment or command line."""
        return mask_text(text)

    def scrubbed_locals(self, text: str) -> tuple[str, int]:
        """py-spy `--locals` text with secret values replaced, and how many (none under
        `--raw-env`)."""
        if self.detector is None:
            return text, 0
        return scrub.scrub_locals(text, self.detector)

    def scrubbed_bytes(self, data: bytes) -> tuple[bytes, int]:
        """A copied binary file (a Flight Recorder dump) with secrets overwritten by `*`, byte
        for byte, so a pickle still loads; how many (none under `--raw-env`)."""
        if self.detector is None:
            return data, 0
        return scrub.mask_bytes(data, self.detector)

    def say(self, text: str) -> None:
        """One progress line: the target's text in it (py-spy's errors, titles) is made
        inert here and masked by the terminal's edge (`progress` is the CLI's)."""
        self.progress(f"[{time.monotonic() - self.began:5.1f}s] {inert.for_terminal(text)}")

    def title_of(self, proc: procfs.ProcessInfo, limit: int = 60) -> str:
        """A process's command line as collect shows it: secrets masked first (a token cut
        in half would no longer look like one), then inert, then cut to `limit`."""
        key = (proc.pid, limit)
        shown = self._titles.get(key)
        if shown is None:
            argv = proc.argv
            if argv and self.detector is not None:
                argv, _count = scrub.scrub_argv(argv, self.detector)
            text = " ".join(argv) if argv else f"[{proc.comm}]"
            shown = self._titles[key] = inert.one_line(text, limit=limit)
        return shown

    @property
    def w(self) -> ManifestWriter:
        assert self.writer is not None
        return self.writer

    def save_file(self, rel: str, text: str, *, nul: bool = False, mask: bool = True) -> int:
        """Write `text` as the bundle file `rel`, made safe first (`shielded`); returns the
        number of secrets masked."""
        text, masked = self.shielded(text, nul=nul, mask=mask)
        if self.out is not None:
            self.out.write_text(rel, text)
        else:
            write_atomic(self.root / rel, text)
        return masked

    def shielded(self, text: str, *, nul: bool = False, mask: bool = True) -> tuple[str, int]:
        """The target's text as collect writes it: escape sequences, control, bidi and
        zero-width characters removed (the terminal's filter: `cat` of a bundle file is
        safe), secrets masked (unless --raw-env). `nul`: NUL-separated (environ,
        cmdline), each part filtered on its own; `mask=False`: already scrubbed."""
        if nul:
            text = "\x00".join(inert.for_document(part) for part in text.split("\x00"))
        else:
            text = inert.for_document(text)
        if not mask or self.detector is None:
            return text, 0
        return self.detector.mask(text)

    def note_skip(self, what: str, reason: str) -> None:
        self.w.skip(SkipNote(what=what, reason=reason, at=self.now()))

    def summary_text(self, status: CollectStatus) -> str:
        """The manifest's `summary`: what was collected so far, in one paragraph."""
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

    def now(self) -> datetime:
        """The clock's time (UTC)."""
        return self.clock()

    def keep(
        self,
        rel: str,
        text: str,
        kind: EvidenceKind,
        description: str,
        *,
        rank: int | None = None,
        stamped: bool = True,
        captured_at: datetime | None = None,
        host: str = "",
    ) -> None:
        """Save `text` as the evidence file `rel` and list it in the manifest
        (`stamped`: with the capture time, `captured_at` when given; a span of time says
        when on its own). `host`: the remote host it came from (`remote.py`), "" for this one."""
        scrubbed = kind in (EvidenceKind.ENVIRON, EvidenceKind.CMDLINE)
        masked = self.save_file(rel, text, nul=scrubbed, mask=not scrubbed)
        if masked:
            description += f"; {plural(masked, 'secret value')} masked"
        self.w.add_evidence(
            EvidenceEntry(
                path=rel,
                kind=kind,
                captured_at=(captured_at or self.now()) if stamped else None,
                description=description,
                rank=rank,
                host=host,
            )
        )

    def keep_proc_copy(
        self,
        pid: int,
        name: str,
        captured: envcap.Capture,
        what: str,
        *,
        base: str = "",
        host: str = "",
    ) -> bool:
        """Save a `/proc/PID/cmdline` or `environ` copy (`envcap.cmdline_evidence`) as
        evidence, or note why there is none; False then. The one way both are written,
        locally and for a remote host (`base` = `hosts/<host>/`, `host` its name)."""
        if captured.error:
            self.note_skip(what + (f" on {host}" if host else ""), captured.error)
            return False
        if self.detector is None:
            note = "; raw (--raw-env)" + (": secrets not redacted" if name == "environ" else "")
        elif captured.redacted:
            note = f"; {captured.redacted} secret values redacted"
        else:
            note = "; no secret-looking value found" if name == "environ" else ""
        self.keep(
            base + plan.env_path(pid, name),
            captured.text,
            EvidenceKind.CMDLINE if name == "cmdline" else EvidenceKind.ENVIRON,
            f"/proc/{pid}/{name}" + (f" on {host}" if host else "") + f": {what}{note}",
            host=host,
        )
        return True

    def keep_round_read(
        self,
        name: str,
        pid: int,
        k: int,
        text: str,
        proc: procfs.ProcessInfo | str,
        *,
        base: str = "",
        host: str = "",
    ) -> None:
        """Save one per-round `/proc` read (`procread.read_round`: the status copy, or one of
        the reads for the waits) of `pid` after snapshot `k` as its kind's entry says
        (`kinds.CAPTURED[name].capture`: the manifest's words), or note why there is none
        (""). The one way they are written, locally and for a remote host (`base` =
        `hosts/<host>/`, `host` its name), at the same place under `base`, through `keep`
        (the secret policy)."""
        on = f" on {host}" if host else ""
        entry = kinds.CAPTURED.get(name)
        if entry is None or entry.capture is None:
            raise ValueError(f"not a per-round read: {name!r}")
        if not text:
            self.note_skip(*entry.capture.missing(pid, k, on))
            return
        if isinstance(proc, procfs.ProcessInfo):
            title = self.title_of(proc)
        else:
            title = inert.one_line(proc, limit=60)
        self.keep(
            base + plan.proc_path(pid, k, name),
            text,
            entry.kind,
            entry.capture.described(text, pid=pid, k=k, on=on, title=title),
            host=host,
        )

    def keep_log(
        self,
        source: str,
        name: str,
        got: logtail.Tail,
        *,
        since: datetime | None = None,
        taken: set[str],
        base: str = "",
        host: str = "",
    ) -> None:
        """Save one log (`logtail.Tail`) or note why there is none: `source` "file" (the
        tail of the `--log` file `name`), "journal" (the unit `name`) or "kernel" (dmesg).
        `taken`: the `logs/` paths already used under `base` (two `app.log` in two folders
        stay apart). The one way logs are written, locally and for a remote host."""
        on = f" on {host}" if host else ""
        when = f" since {iso(since)}" if since is not None else ""
        if source == "file":
            what, says = f"--log {name}", name
            rel = "" if got.error else plan.log_path(name, taken)
        elif source == "journal":
            what, says, rel = (
                f"journal of {name}",
                f"journalctl -u {name}{when}",
                plan.journal_path(name),
            )
        elif source == "kernel":
            what, rel = "the kernel's log (dmesg)", plan.KERNEL_LOG_PATH
            says = f"dmesg --time-format iso{when}" + (
                " (the earliest target's start)" if when else ""
            )
        else:
            raise ValueError(f"not a kind of log: {source!r}")
        if got.error:
            self.note_skip(what + on, got.error)
            if not host:
                self.say(f"{what}: skipped: {got.error}")
            return
        taken.add(rel)
        cut = f" ({got.cut})" if got.cut else ""
        self.keep(
            base + rel,
            got.text,
            EvidenceKind.LOG,
            f"{says}{on}: {plural(got.lines, 'line')}{cut}, read after the last snapshot",
            stamped=False,
            host=host,
        )
        if not host:
            self.say(f"{what}: {plural(got.lines, 'line')}{cut}")
