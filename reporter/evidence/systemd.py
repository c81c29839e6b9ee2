"""`systemctl show UNIT` output: when the service started and stopped, as timeline events.

Input: the `KEY=VALUE` text of one or more units (`systemctl show a b` separates
units with a blank line). Output: `ParseResult.events`, one per timestamp that
says something (empty and `n/a` values are skipped), for example::

    Id=sglang.service
    MainPID=4242
    ExecMainStartTimestamp=Sun 2026-11-29 14:39:58 UTC
    ActiveEnterTimestamp=Sun 2026-11-29 14:39:58 UTC
    NRestarts=1

gives "sglang.service: main process started (PID 4242)" and "sglang.service:
became active (restarted 1 time)". Timestamps are `Day YYYY-MM-DD HH:MM:SS[.us] ZONE`
(or `@1764427198` with `--timestamp=unix`); a zone other than UTC/GMT or a numeric
offset is read as UTC with a warning (the abbreviation alone does not say the offset).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from reporter.core.times import from_epoch, in_range
from reporter.evidence._text import clean_lines, excerpt, warning_at
from reporter.model import EventKind, Location, ParseResult, ParseWarning, TimelineEvent

# Keys whose presence marks `systemctl show` output (for sniffing).
MARKER_KEYS = (
    "ExecMainStartTimestamp",
    "ActiveEnterTimestamp",
    "InactiveExitTimestamp",
    "ActiveExitTimestamp",
    "ExecMainPID",
)
_EVENTS = (
    ("InactiveExitTimestamp", "start requested (left inactive)"),
    ("ExecMainStartTimestamp", "main process started"),
    ("ActiveEnterTimestamp", "became active"),
    ("ActiveExitTimestamp", "began stopping"),
    ("ExecMainExitTimestamp", "main process exited"),
    ("InactiveEnterTimestamp", "became inactive"),
)
_KEY_RE = re.compile(r"([A-Za-z][A-Za-z0-9_]*)=(.*)")
_STAMP_RE = re.compile(
    r"(?:[A-Za-z]{3}\s+)?(\d{4})-(\d{2})-(\d{2})\s+(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?"
    r"(?:\s+(?P<zone>[A-Za-z][A-Za-z0-9_/+-]*|[+-]\d{2}:?\d{2}))?"
)


def looks_like(head: str) -> bool:
    """True when `head` has a line starting with one of `MARKER_KEYS` then `=`."""
    return any(re.search(rf"(?m)^{key}=", head) for key in MARKER_KEYS)


def parse(text: str, *, source: str) -> ParseResult:
    """Timeline events for every unit in `systemctl show` output."""
    events: list[TimelineEvent] = []
    warnings: list[ParseWarning] = []
    unit: dict[str, tuple[str, int]] = {}
    zone_warned = False

    def flush() -> None:
        nonlocal zone_warned
        if not unit:
            return
        name = (unit.get("Id") or unit.get("Names") or ("service", 0))[0].split()[0]
        pid = unit.get("MainPID", ("0", 0))[0]
        exec_pid = unit.get("ExecMainPID", ("0", 0))[0]
        restarts = unit.get("NRestarts", ("0", 0))[0]
        for key, what in _EVENTS:
            if key not in unit:
                continue
            value, number = unit[key]
            if not value.strip() or value.strip() == "n/a":
                continue
            moment, zoned = _stamp(value)
            if moment is None:
                warnings.append(
                    warning_at(
                        source, number, f"{key}: time {excerpt(value)} not understood; skipped"
                    )
                )
                continue
            if not zoned and not zone_warned:
                zone_warned = True
                warnings.append(
                    warning_at(
                        source,
                        number,
                        f"{key}: zone in {excerpt(value)} is not UTC or an offset; read as UTC",
                    )
                )
            text = f"{name}: {what}"
            if key == "ExecMainStartTimestamp":
                shown = pid if pid not in ("", "0") else exec_pid
                if shown not in ("", "0"):
                    text += f" (PID {shown})"
            elif key == "ActiveEnterTimestamp" and restarts not in ("", "0"):
                text += f" (restarted {restarts} time{'s' if restarts != '1' else ''} so far)"
            elif key == "ExecMainExitTimestamp":
                status = unit.get("ExecMainStatus", ("", 0))[0]
                code = unit.get("ExecMainCode", ("", 0))[0]
                if status:
                    text += f" (status {status}{', code ' + code if code else ''})"
            if events and events[-1].at == moment and events[-1].text.startswith(name + ":"):
                # systemd stamps several transitions of one start with the same time.
                previous = events[-1]
                events[-1] = TimelineEvent(
                    at=moment,
                    kind=EventKind.SERVICE,
                    text=f"{previous.text}; {text.removeprefix(name + ': ')}",
                    source=previous.source,
                )
                continue
            events.append(
                TimelineEvent(
                    at=moment,
                    kind=EventKind.SERVICE,
                    text=text,
                    source=Location(path=source, line=number),
                )
            )
        unit.clear()

    seen_key = False
    for index, raw in enumerate(clean_lines(text)):
        line = raw.strip()
        if not line:
            flush()
            continue
        match = _KEY_RE.fullmatch(line)
        if match is None:
            warnings.append(
                warning_at(
                    source, index + 1, f"not a KEY=VALUE line of `systemctl show`: {excerpt(line)}"
                )
            )
            continue
        seen_key = True
        unit.setdefault(match.group(1), (match.group(2), index + 1))
    flush()
    if not seen_key:
        warnings.append(warning_at(source, 0, "no `systemctl show` keys found"))
    elif not events and not warnings:
        warnings.append(
            warning_at(
                source,
                0,
                "no start or stop timestamps (ExecMainStartTimestamp, ActiveEnterTimestamp, ...)",
            )
        )
    return ParseResult(events=tuple(events), warnings=tuple(warnings[:20]))


def _stamp(value: str) -> tuple[datetime | None, bool]:
    """A systemd timestamp as UTC and whether its zone was understood."""
    value = value.strip()
    if value.startswith("@"):
        try:
            return from_epoch(float(value[1:])), True
        except ValueError:
            return None, False
    match = _STAMP_RE.fullmatch(value)
    if match is None:
        return None, False
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    micro = int((match.group(7) or "").ljust(6, "0") or 0)
    zone = match.group("zone") or ""
    tz: timezone = UTC
    zoned = zone.upper() in ("UTC", "GMT", "Z", "ETC/UTC")
    if zone[:1] in "+-" and zone:
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        if offset >= timedelta(hours=24):
            return None, False
        tz = timezone(-offset if zone[0] == "-" else offset)
        zoned = True
    try:
        moment = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz).astimezone(UTC)
    except ValueError:
        return None, False
    return (moment, zoned) if in_range(moment) else (None, False)
