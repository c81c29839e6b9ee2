"""The logs `report collect` keeps: the tail of each `--log` file, and the journal of the
targets' systemd units since the service started.

`--log PATH` (repeatable; a glob is fine: `--log '/var/log/sglang/*.log'`) keeps the last
`--log-lines` lines of each file, never more than `--log-size` bytes: a 40 GB log is read
from its end, never whole. Only regular files are read (a FIFO would block the collector).

For a target that runs in a systemd service (`/proc/PID/cgroup` ends in `name.service`),
and for each `--unit`, `journalctl -u UNIT --since <service start> -n LINES` is kept,
bounded by `--timeout` and the size cap. Where there is no `journalctl` or no journald
running (a container, this lab), the journal is skipped with the reason, and the rest of
the capture goes on.

With process targets, the kernel's log since the earliest target started (`dmesg
--time-format iso`, the same caps) is kept too: the OOM killer, hung-task warnings ("task
python3:4711 blocked for more than 120 seconds") and storage or driver errors are there.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reporter.collect.runner import run_bounded

DEFAULT_LOG_LINES = 5000
DEFAULT_LOG_BYTES = 4 << 20
# Where journald listens: without it there is no journal to read.
JOURNAL_SOCKETS = ("/run/systemd/journal/socket", "/run/systemd/journal/stdout")
_SERVICE_RE = re.compile(r"^[A-Za-z0-9:_.@\\-]+\.service$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Tail:
    """The end of one log file: the text kept, and how it was cut."""

    text: str = ""
    lines: int = 0
    size: int = 0
    """The file's size when read."""
    cut: str = ""
    """How it was cut (`last 5000 lines of 81234`, `last 4.0 MiB`); "" when whole."""
    error: str = ""


def expand(patterns: tuple[str, ...]) -> tuple[list[Path], list[tuple[str, str]]]:
    """The files the `--log` patterns name, in order without repeats, and (pattern, why)
    for each that names no readable regular file."""
    found: list[Path] = []
    missing: list[tuple[str, str]] = []
    for pattern in patterns:
        expanded = str(Path(pattern).expanduser())
        # An absolute glob (`/var/log/*.log`) is no `Path.glob` pattern: the module's glob.
        names = sorted(glob.glob(expanded)) if glob.has_magic(pattern) else [expanded]  # noqa: PTH207
        files = []
        for name in names:
            try:
                mode = os.stat(name).st_mode  # noqa: PTH116 - one call, follows the operator's link
            except OSError as err:
                if not glob.has_magic(pattern):
                    missing.append((pattern, f"cannot read it ({err.strerror or err})"))
                continue
            if stat.S_ISREG(mode):
                files.append(Path(name))
            elif not glob.has_magic(pattern):
                missing.append((pattern, "not a regular file (a FIFO or device would block)"))
        if glob.has_magic(pattern) and not files:
            missing.append((pattern, "no regular file matches"))
        for path in files:
            if path not in found:
                found.append(path)
    return found, missing


def tail(path: Path, *, max_lines: int, max_bytes: int) -> Tail:
    """The last `max_lines` lines of `path`, at most `max_bytes` bytes, read from its end."""
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        return Tail(error=f"cannot read it ({err.strerror or err})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Tail(error="not a regular file")
        start = max(0, info.st_size - max_bytes)
        os.lseek(fd, start, os.SEEK_SET)
        data = b""
        while len(data) < max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes - len(data)))
            if not chunk:
                break
            data += chunk
    except OSError as err:
        return Tail(error=f"cannot read it ({err.strerror or err})")
    finally:
        os.close(fd)
    cut = ""
    if start > 0:
        # The first line read is a part line: it starts mid-way.
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
        cut = f"last {_mib(max_bytes)} of {_mib(info.st_size)}"
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    if len(lines) > max_lines:
        cut = f"last {max_lines} lines" + (f" of the {cut}" if cut else f" of {len(lines)}")
        lines = lines[-max_lines:]
    return Tail(text="".join(lines), lines=len(lines), size=info.st_size, cut=cut)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def unit_of(pid: int, *, proc: str = "/proc") -> str | None:
    """The system service a process runs in (`sglang.service`), from its cgroup; None when
    it runs in none (a shell, a container, a user service, a `.scope`)."""
    try:
        text = Path(f"{proc}/{pid}/cgroup").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        if "/user@" in path:
            continue  # a user's own service manager: not `journalctl -u`
        for part in reversed(path.split("/")):
            if _SERVICE_RE.match(part):
                return part
    return None


_KERNEL_STAMP_RE = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})")


def kernel_log(
    *,
    since: datetime | None,
    dmesg: str | None,
    max_lines: int,
    max_bytes: int,
    timeout: float,
    stop: threading.Event | None,
) -> Tail:
    """The kernel's ring buffer since `since` (`dmesg --time-format iso`): where the OOM
    killer, hung-task warnings and driver or filesystem errors are; or why not."""
    if dmesg is None:
        return Tail(error="dmesg is not installed here")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}
    done = run_bounded(
        [dmesg, "--time-format", "iso"], timeout=timeout, stop=stop, env=env, max_output=1 << 26
    )
    if done.launch_error:
        return Tail(error=f"dmesg could not start: {done.launch_error}")
    if done.returncode != 0 and not done.stdout:
        first = next((x for x in done.stderr.splitlines() if x.strip()), "no output")
        return Tail(error=f"dmesg: {first} (kernel.dmesg_restrict, or no CAP_SYSLOG)")
    lines = done.stdout.splitlines(keepends=True)
    if since is not None:
        floor = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        # ISO stamps in UTC compare as text; a line without one belongs to the one above.
        kept: list[str] = []
        keep = False
        for line in lines:
            match = _KERNEL_STAMP_RE.match(line)
            if match:
                keep = _utc_text(line, match.group(1)) >= floor
            if keep:
                kept.append(line)
        lines = kept
    cut = ""
    if len(lines) > max_lines:
        cut = f"last {max_lines} lines of {len(lines)}"
        lines = lines[-max_lines:]
    text = "".join(lines)
    if len(text.encode()) > max_bytes:
        text = text.encode()[-max_bytes:].decode("utf-8", errors="replace").split("\n", 1)[-1]
        cut = f"last {_mib(max_bytes)}"
    return Tail(text=text, lines=text.count("\n"), size=len(text), cut=cut)


def _utc_text(line: str, stamp: str) -> str:
    """A dmesg ISO stamp as UTC text (dmesg writes local time with its offset)."""
    rest = line[len(stamp) :]
    match = re.match(r"[,.]\d+([+-]\d{2}):?(\d{2})", rest)
    if match is None:
        return stamp
    sign = 1 if match.group(1)[0] == "+" else -1
    offset = timedelta(hours=int(match.group(1)[1:]), minutes=int(match.group(2))) * sign
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S") - offset
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def journald_running() -> bool:
    """True when journald's sockets exist (a systemd host, not a bare container)."""
    return any(Path(p).exists() for p in JOURNAL_SOCKETS)


def journal(
    unit: str,
    *,
    since: datetime | None,
    journalctl: str | None,
    max_lines: int,
    max_bytes: int,
    timeout: float,
    stop: threading.Event | None,
) -> Tail:
    """`journalctl -u UNIT --since SINCE -n MAX_LINES` text, bounded, or why not."""
    if journalctl is None:
        return Tail(error="journalctl is not installed here (not a systemd host)")
    if not journald_running():
        return Tail(error="journald is not running here (no /run/systemd/journal socket)")
    argv = [journalctl, "-u", unit, "--no-pager", "-q", "-o", "short-iso-precise"]
    argv += ["-n", str(max_lines)]
    if since is not None:
        argv += ["--since", f"@{int(since.timestamp())}"]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "SYSTEMD_PAGER": ""}
    done = run_bounded(argv, timeout=timeout, stop=stop, env=env, max_output=max_bytes)
    if done.launch_error:
        return Tail(error=f"journalctl could not start: {done.launch_error}")
    if done.timed_out and not done.stdout:
        return Tail(error=f"journalctl gave nothing within {timeout:g} s")
    if done.returncode not in (0, None) and not done.stdout:
        first = next((x for x in done.stderr.splitlines() if x.strip()), "no output")
        return Tail(error=f"journalctl -u {unit}: {first}")
    cut = ""
    if done.flooded:
        cut = f"stopped at {_mib(done.flooded)}"
    elif done.timed_out:
        cut = f"stopped after {timeout:g} s"
    text = done.stdout
    return Tail(text=text, lines=text.count("\n"), size=len(text), cut=cut)
