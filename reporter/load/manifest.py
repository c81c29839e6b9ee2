"""Read, check and write `bundle.toml`, the manifest of an evidence bundle.

Reading: `parse_manifest` turns the text into a `Manifest` and the list of evidence
entries, each resolved inside the bundle. Types and ranges are checked with an error
naming the line and a fix (`rank = true` and `world_size = 9223372036854775807` are
refused); a file listed twice is kept once and unknown keys are kept out, both with
a warning (unknown keys with a "did you mean" from the known ones).

Parts: a bundle whose many-host collection was cut short has its hosts' tables in
`bundle.d/` (`[collect] parts`); `parse_manifest` joins them after the head first
(`reporter.load.parts`), so both forms read alike.

Writing: `TomlDocument` is the one TOML writer of the project (`report init`,
`report collect`, the upstream filing record). Values go through tomlkit, so every
string is escaped by a maintained TOML library (U+007F included), and the text is
read back with `tomllib` before anyone writes it. tomlkit rather than tomli-w: these
files are edited by people, and tomlkit keeps comments, which `report init` writes.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reporter.core import fileio, hostnames
from reporter.core.errors import ManifestError
from reporter.core.fileio import file_kind
from reporter.core.times import iso, parse_duration
from reporter.load.parts import MANIFEST_NAME as MANIFEST_NAME
from reporter.load.parts import PARTS_DIR, join_parts, read_parts
from reporter.model import (
    EventKind,
    EvidenceKind,
    HostNote,
    Location,
    Manifest,
    ParseWarning,
    ProcessNote,
    RankHint,
    TimelineEvent,
    WedgeSettings,
)

if TYPE_CHECKING:
    from tomlkit.items import Item

# Far above any real job (the largest published runs have ~10^5 ranks), far below
# what would make a rank list or a "missing ranks" sweep run out of memory.
MAX_WORLD_SIZE = 1 << 20
KINDS = {kind.value: kind for kind in EvidenceKind if kind is not EvidenceKind.UNKNOWN}
# The keys each table may hold; anything else is warned about and ignored.
TOP_KEYS = (
    "title",
    "upstream",
    "service",
    "version",
    "world_size",
    "fields",
    "evidence",
    "event",
    "wedge",
    "baseline",
    "source_root",
    "upstream_ref",
    "collect",
    "host",
)
EVIDENCE_KEYS = (
    "path",
    "kind",
    "captured_at",
    "rank",
    "role",
    "group",
    "instance",
    "host",
    "description",
)
EVENT_KEYS = ("at", "text")
WEDGE_KEYS = ("output", "waiting", "context", "window")
UPSTREAM_REF_KEYS = ("repo", "package", "module", "tag", "commit", "version", "path_prefix")


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestEntry:
    """One evidence file to load: from an `[[evidence]]` table, or found by walking."""

    path: Path | str
    """Where to read it: a `Path`, or the walk's string for one (no `Path` built per file)."""
    display: str
    kind: EvidenceKind | None = None
    captured_at: datetime | None = None
    hint: RankHint | None = None
    description: str = ""
    host: str = ""
    """The host the file was captured on (its table's `host`, else the manifest's)."""
    regular: bool = False
    """The folder's listing showed a regular file here (`fileio.Walked.regular`): the
    read need not stat it first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestRead:
    """What `parse_manifest` made of `bundle.toml`."""

    manifest: Manifest
    entries: tuple[ManifestEntry, ...]
    warnings: tuple[ParseWarning, ...]


# ---------------------------------------------------------------------------- writing


class TomlDocument:
    """A TOML file written top to bottom: comments, keys, tables and arrays of tables.

    The layout (order, blank lines, comments) is ours; every key, value and table
    name is written by tomlkit, and `text()` checks that `tomllib` reads the result.
    """

    def __init__(self) -> None:
        self._lines: list[str] = []

    def comment(self, text: str) -> TomlDocument:
        """`# text` lines; control characters (not allowed in TOML comments) escaped."""
        for line in text.split("\n"):
            self._lines.append(f"# {_printable(line)}".rstrip())
        return self

    def blank(self) -> TomlDocument:
        """An empty line, between groups of keys."""
        self._lines.append("")
        return self

    def key(self, name: str, value: object, *, comment: str = "") -> TomlDocument:
        """`name = value` in the current table, with an optional trailing comment."""
        # Lazy: start-up; `report analyze` reads bundle.toml (tomllib) and writes none.
        import tomlkit

        line = f"{tomlkit.key(name).as_string()} = {toml_value(value)}"
        self._lines.append(f"{line}  # {_printable(comment)}" if comment else line)
        return self

    def table(self, name: str) -> TomlDocument:
        """A blank line and `[name]` (dotted names nest)."""
        self._lines += ["", f"[{_dotted(name)}]"]
        return self

    def array_table(self, name: str) -> TomlDocument:
        """A blank line and one more `[[name]]` (dotted names nest: `collect.target`)."""
        self._lines += ["", f"[[{_dotted(name)}]]"]
        return self

    def text(self) -> str:
        """The document as TOML text, read back once to make sure it is valid."""
        out = "\n".join(self._lines) + "\n"
        tomllib.loads(out)  # a file we cannot read back must never be written
        return out

    def lines(self) -> tuple[str, ...]:
        """The lines written so far (a piece another document takes in with `extend`)."""
        return tuple(self._lines)

    def __len__(self) -> int:
        """How many lines are written so far."""
        return len(self._lines)

    def extend(self, lines: tuple[str, ...]) -> TomlDocument:
        """Take in lines another document wrote (`lines`): one `[[name]]` piece, say."""
        self._lines += lines
        return self

    def text_of_checked(self, unchecked: list[tuple[int, int]]) -> str:
        """The document as TOML text, reading back only the lines not checked before.

        `unchecked` lists (start, end) line ranges that hold everything but pieces already
        read back on their own (each a run of `[[name]]` tables, which stays valid next to
        others of its kind): the cost of a rewrite follows what is new, not the whole file.
        """
        tomllib.loads("\n".join(line for a, b in unchecked for line in self._lines[a:b]))
        return "\n".join(self._lines) + "\n"


def _dotted(name: str) -> str:
    # Lazy: start-up; `report analyze` reads bundle.toml (tomllib) and writes none.
    import tomlkit

    return ".".join(tomlkit.key(part).as_string() for part in name.split("."))


def _printable(text: str) -> str:
    """`text` with the control characters TOML refuses in comments as `\\uXXXX`."""
    return re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04X}", text)


def toml_item(value: object) -> Item:
    """`value` as a TOML item; datetimes in UTC with milliseconds, like `times.iso`."""
    # Lazy: start-up; `report analyze` reads bundle.toml (tomllib) and writes none.
    import tomlkit
    from tomlkit.items import Item

    if isinstance(value, Item):
        return value
    if isinstance(value, datetime):
        # tomlkit would print microseconds; parsing our own text keeps the house form.
        return tomlkit.value(iso(value))
    if isinstance(value, tuple):
        value = list(value)
    return tomlkit.item(value)


def toml_seconds(moment: datetime) -> Item:
    """A TOML date-time in UTC to the second (`2026-11-29T14:43:41Z`)."""
    # Lazy: start-up; `report analyze` reads bundle.toml (tomllib) and writes none.
    import tomlkit

    utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    return tomlkit.value(f"{utc:%Y-%m-%dT%H:%M:%SZ}")


# Characters that reorder or hide text (bidi marks, embeddings, overrides and isolates,
# zero-width ones, C1 controls): tomlkit writes them raw, so `cat bundle.toml` would show
# a host's or a title's text reordered. Escaped as `\uXXXX` (lossless: TOML reads them back).
_HIDDEN_RE = re.compile(
    r"[\x80-\x9f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)


def toml_value(value: object) -> str:
    """`value` as TOML value text (a string quoted and escaped, a list inline); characters
    that hide or reorder text written as `\\uXXXX` escapes."""
    text = toml_item(value).as_string()
    return _HIDDEN_RE.sub(lambda m: f"\\u{ord(m.group()):04X}", text)


# ---------------------------------------------------------------------------- reading


def _unknown_keys(
    table: Mapping[str, object], known: Sequence[str], *, where: str, text: str
) -> list[ParseWarning]:
    """A warning for every key not in `known`, with the nearest known key as a hint."""
    out: list[ParseWarning] = []
    for key in table:
        if key in known:
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else f"; known keys: {', '.join(known)}"
        out.append(
            ParseWarning(
                source=Location(path=MANIFEST_NAME, line=_line_of(text, key)),
                message=f"unknown key `{where}{key}` ignored{hint}",
            )
        )
    return out


def parse_manifest(
    text: str, *, root: Path, metric_name: Callable[[str], object] | None = None
) -> ManifestRead:
    """Parse and check `bundle.toml`; every evidence path must resolve inside `root`.

    `metric_name` returns None for a `[wedge]` name that is not a metric selector
    (the evidence layer knows the syntax; this module sits below it).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ManifestError(
            f"{MANIFEST_NAME}: {err}",
            tip="fix the TOML syntax; `report init` writes a valid example",
        ) from err
    parts = _parts_folder(data, text, root)
    if parts is not None:
        # A collection cut short: its hosts' tables are in the parts (line numbers below
        # count in the joined text, the head's own lines first).
        text = join_parts(text, read_parts(root, parts))
        data = tomllib.loads(text)
    host = _host(data.get("host"), text, where="host")
    manifest = Manifest(
        title=_string(data, "title", text),
        upstream=tuple(_strings(data, "upstream", text)),
        service=_string(data, "service", text),
        version=_string(data, "version", text),
        world_size=_optional_int(data, "world_size", text),
        # Kept in the manifest's order: the author chose it (summary first, say).
        fields=tuple((str(k), str(v)) for k, v in _table(data, "fields", text).items()),
        events=_events(data, text),
        wedge=_wedge(data, text, metric_name),
        baseline=_inside(data, "baseline", text, root),
        source_root=_inside(data, "source_root", text, root),
        upstream_ref=_upstream_ref(data, text),
        processes=_collect_processes(data, host),
        host=host,
        hosts=_collect_hosts(data),
    )
    raw_entries = data.get("evidence", [])
    if not isinstance(raw_entries, list):
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, 'evidence')}: `evidence` must be an array of tables",
            tip="write each file as a [[evidence]] table",
        )
    warnings = _unknown_keys(data, TOP_KEYS, where="", text=text)
    if isinstance(data.get("wedge"), dict):
        warnings += _unknown_keys(data["wedge"], WEDGE_KEYS, where="wedge.", text=text)
    for name, known in (("event", EVENT_KEYS), ("evidence", EVIDENCE_KEYS)):
        for table in data.get(name, []) if isinstance(data.get(name), list) else []:
            if isinstance(table, dict):
                warnings += _unknown_keys(table, known, where=f"{name}.", text=text)
    entries: dict[str, ManifestEntry] = {}
    resolved_root = root.resolve()
    for raw in raw_entries:
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, '[[evidence]]')}: every [[evidence]] needs a `path`",
                tip='add path = "relative/file.txt"',
            )
        entry_host = _host(raw.get("host"), text, where="evidence.host") or host
        for entry in _expand_entry(
            raw, root=root, resolved_root=resolved_root, text=text, host=entry_host
        ):
            if entry.display in entries:
                # Two entries for one file would load it twice: every dump counted twice.
                warnings.append(
                    ParseWarning(
                        source=Location(path=MANIFEST_NAME, line=_line_of(text, raw["path"])),
                        message=f"{entry.display} is listed more than once; loaded once, "
                        "with its first entry's settings",
                    )
                )
                continue
            entries[entry.display] = entry
    return ManifestRead(
        manifest=manifest, entries=tuple(entries.values()), warnings=tuple(warnings)
    )


def _parts_folder(data: dict[str, Any], text: str, root: Path) -> str | None:
    """`[collect] parts`: the folder of the head's parts, checked to be inside the bundle."""
    collect = data.get("collect")
    folder = collect.get("parts") if isinstance(collect, dict) else None
    if folder is None:
        return None
    where = f"{MANIFEST_NAME}:{_line_of(text, 'parts')}"
    if not isinstance(folder, str) or not folder or Path(folder).is_absolute():
        raise ManifestError(
            f"{where}: `collect.parts` must name a folder inside the bundle",
            tip=f'write parts = "{PARTS_DIR}", or remove the key',
        )
    if ".." in Path(folder).parts or not (root / folder).resolve().is_relative_to(root.resolve()):
        raise ManifestError(
            f"{where}: `collect.parts` {folder!r} points outside the bundle",
            tip=f'write parts = "{PARTS_DIR}"',
        )
    return folder


def _glob(root: Path, pattern: str, line: int) -> list[Path]:
    """The files under `root` a glob matches (`fileio.walk`: no recursion, links not
    followed into folders); folders it matches are not evidence and are passed over, and
    a glob that matches only folders is an error saying so."""
    regex = fileio.glob_regex(pattern.removeprefix("./"))
    walked = fileio.walk(root, hidden=True)
    files = [w.path for w in walked.files if regex.match(w.rel)]
    if not files:
        folders = [w.rel for w in walked.folders if regex.match(w.rel)]
        if folders:
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: {pattern!r} matches only folders "
                f"({', '.join(folders[:3])}{', ...' if len(folders) > 3 else ''})",
                tip=f"name the files in them, e.g. {folders[0] + '/*.txt'!r}",
            )
    return files


def _expand_entry(
    raw: dict[str, Any], *, root: Path, resolved_root: Path, text: str, host: str = ""
) -> Iterable[ManifestEntry]:
    pattern: str = raw["path"]
    line = _line_of(text, pattern)
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ManifestError(
            f"{MANIFEST_NAME}:{line}: evidence path {pattern!r} points outside the bundle",
            tip="copy the file into the bundle folder and use a relative path",
        )
    kind_name = raw.get("kind")
    kind: EvidenceKind | None = None
    if kind_name is not None:
        if not isinstance(kind_name, str) or kind_name not in KINDS:
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, str(kind_name))}: unknown evidence kind {kind_name!r}",
                tip="use one of: " + ", ".join(sorted(KINDS)) + " (or leave it out to sniff)",
            )
        kind = KINDS[kind_name]
    captured_at = _datetime(raw.get("captured_at"), text)
    rank = raw.get("rank")
    if rank is not None and (
        not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < MAX_WORLD_SIZE
    ):
        raise ManifestError(
            f"{MANIFEST_NAME}:{line}: `rank` must be an integer from 0 "
            f"to {MAX_WORLD_SIZE - 1}, got {_shown(rank)}",
            tip="write the rank as a plain number, e.g. rank = 3, or leave it out",
        )
    for key in ("role", "group", "instance", "description"):
        if key in raw and not isinstance(raw[key], str):
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: `{key}` must be a string, got {_shown(raw[key])}",
                tip=f'quote it: {key} = "..."',
            )
    hint = None
    if rank is not None or raw.get("role") or raw.get("group") or raw.get("instance"):
        hint = RankHint(
            rank=rank,
            role=_opt_str(raw.get("role")),
            group=_opt_str(raw.get("group")),
            instance=_opt_str(raw.get("instance")),
        )
    wildcard = any(c in pattern for c in "*?[")
    matches = _glob(root, pattern, line) if wildcard else [root / pattern]
    if not matches:
        raise ManifestError(
            f"{MANIFEST_NAME}:{line}: no file matches {pattern!r}",
            tip="fix the path or remove the [[evidence]] entry",
        )
    for path in matches:
        try:
            resolved = path.resolve(strict=path.is_symlink())
        except (OSError, RuntimeError):
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: {path.relative_to(root).as_posix()} is a symbolic "
                "link that loops or leads nowhere",
                tip="replace the link with the file it should point to",
            ) from None
        if not resolved.is_relative_to(resolved_root):
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: evidence path {pattern!r} resolves outside the bundle",
                tip="copy the file into the bundle folder instead of linking to it",
            )
        if not path.is_file():
            rel = path.relative_to(root).as_posix()
            try:
                mode = path.stat().st_mode
            except OSError:
                raise ManifestError(
                    f"{MANIFEST_NAME}:{line}: {rel} does not exist",
                    tip="fix the path or remove the [[evidence]] entry",
                ) from None

            # A FIFO or device listed as evidence (issue 16): named as such, never opened.
            raise ManifestError(
                f"{MANIFEST_NAME}:{line}: {rel} is {file_kind(mode)}, not a regular file",
                tip="list regular files only (copy the data into a file first)",
            )
        yield ManifestEntry(
            path=path,
            display=path.relative_to(root).as_posix(),
            kind=kind,
            captured_at=captured_at,
            hint=hint,
            description=_opt_str(raw.get("description")) or "",
            host=host,
        )


def _host(value: object, text: str, *, where: str) -> str:
    """A `host` value: "" when absent; a host name (`hostnames`, the grammar `report collect`
    takes), else a `ManifestError` that does not repeat the value (it may be a secret)."""
    if value is None:
        return ""
    problem = hostnames.host_problem(value) if isinstance(value, str) else "not a string"
    if problem:
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, 'host')}: `{where}` must be a host name "
            f"([USER@]NAME[:PORT]): {problem}",
            tip='write it like host = "node-3" or host = "10.0.0.7"',
        )
    assert isinstance(value, str)
    return value


def _collect_hosts(data: dict[str, Any]) -> tuple[HostNote, ...]:
    """`[[collect.remote]]`: the hosts a multi-host `report collect` tried, with their outcome.
    Tolerant like `_collect_processes`: a table without a string `host` is skipped."""
    collect = data.get("collect")
    raw = collect.get("remote", []) if isinstance(collect, dict) else []
    out: list[HostNote] = []
    for table in raw if isinstance(raw, list) else []:
        if not isinstance(table, dict) or not isinstance(table.get("host"), str):
            continue
        texts = {k: v for k, v in table.items() if isinstance(v, str)}
        out.append(
            HostNote(
                name=texts["host"],
                status=texts.get("status", "complete"),
                reason=texts.get("reason", ""),
                via=texts.get("via", ""),
            )
        )
    return tuple(out)


def _events(data: dict[str, Any], text: str) -> tuple[TimelineEvent, ...]:
    """The `[[event]]` tables (`at`, `text`): what the operator did or saw, for the timeline."""
    raw = data.get("event", [])
    if not isinstance(raw, list):
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, 'event')}: `event` must be an array of tables",
            tip='write each one as [[event]] with at = 2026-07-14T08:30:00Z and text = "..."',
        )
    # The n-th [[event]] header is the n-th table: its line is the event's source.
    headers = [m.start() for m in re.finditer(r"(?m)^[ \t]*\[\[[ \t]*event[ \t]*\]\]", text)]
    out: list[TimelineEvent] = []
    for position, table in enumerate(raw):
        at_char = headers[position] if position < len(headers) else -1
        line = text.count("\n", 0, at_char) + 1 if at_char >= 0 else 0
        where = f"{MANIFEST_NAME}:{line}"
        if not isinstance(table, dict) or not isinstance(table.get("text"), str):
            raise ManifestError(
                f"{where}: every [[event]] needs `text`", tip='add text = "what happened"'
            )
        moment = _datetime(table.get("at"), text, key="at")
        if moment is None:
            raise ManifestError(
                f"{where}: every [[event]] needs `at`", tip="add at = 2026-07-14T08:30:00Z (UTC)"
            )
        out.append(
            TimelineEvent(
                at=moment,
                kind=EventKind.MANUAL,
                text=" ".join(table["text"].split()),
                source=Location(path=MANIFEST_NAME, line=line),
            )
        )
    return tuple(out)


def _wedge(
    data: dict[str, Any], text: str, metric_name: Callable[[str], object] | None
) -> WedgeSettings | None:
    """The `[wedge]` table: metric names (`output`, `waiting`, `context`) and `window`."""
    if "wedge" not in data:
        return None
    table = _table(data, "wedge", text)
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("output", "waiting", "context"):
        value = _string_list(table, key, text, label=f"wedge.{key}", what="metric names")
        for name in value:
            if metric_name is not None and metric_name(name) is None:
                raise ManifestError(
                    f"{MANIFEST_NAME}:{_line_of(text, name)}: {name!r} is not a metric name",
                    tip='write it like "sglang:num_queue_reqs" or "x_total{mode=\\"decode\\"}"',
                )
        lists[key] = tuple(value)
    window: float | None = None
    if "window" in table:
        window = parse_duration(table["window"])
        if window is None:
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, 'window')}: `wedge.window` must be a duration",
                tip='write it like "60s", "2m" or a number of seconds',
            )
    return WedgeSettings(
        output=lists["output"],
        waiting=lists["waiting"],
        context=lists["context"],
        window_seconds=window,
    )


def _inside(data: dict[str, Any], key: str, text: str, root: Path) -> str:
    """A path key (`baseline`, `source_root`) that must name something inside the bundle."""
    value = _string(data, key, text)
    if not value:
        return ""
    where = f"{MANIFEST_NAME}:{_line_of(text, key)}"
    if Path(value).is_absolute() or ".." in Path(value).parts:
        raise ManifestError(
            f"{where}: {key} {value!r} points outside the bundle",
            tip="copy it into the bundle folder and use a relative path",
        )
    target = root / value
    if not target.exists():
        raise ManifestError(f"{where}: {key} {value!r} does not exist in the bundle")
    if not target.resolve().is_relative_to(root.resolve()):
        raise ManifestError(f"{where}: {key} {value!r} resolves outside the bundle")
    return value


def _collect_processes(data: dict[str, Any], host: str = "") -> tuple[ProcessNote, ...]:
    """`[[collect.target]]` and `[[collect.process]]`: the process tree `report collect`
    recorded, per (host, PID) (a table's `host`, else the manifest's). Tolerant: an entry
    without an integer `pid` is skipped (the table is the collector's own record, not
    something the loader must enforce)."""
    collect = data.get("collect")
    if not isinstance(collect, dict):
        return ()
    out: dict[tuple[str, int], ProcessNote] = {}
    for key in ("target", "process"):
        entries = collect.get(key, [])
        if not isinstance(entries, list):
            continue
        for raw in entries:
            if not isinstance(raw, dict) or not isinstance(raw.get("pid"), int):
                continue

            def num(name: str, raw: dict[str, Any] = raw) -> int | None:
                value = raw.get(name)
                return value if isinstance(value, int) and not isinstance(value, bool) else None

            def text_of(name: str, raw: dict[str, Any] = raw) -> str:
                value = raw.get(name)
                return value if isinstance(value, str) else ""

            where = text_of("host") or host
            out.setdefault(
                (where, raw["pid"]),
                ProcessNote(
                    pid=raw["pid"],
                    ppid=num("ppid"),
                    pgid=num("pgid"),
                    title=text_of("title"),
                    cmdline=text_of("cmdline"),
                    launcher=num("launcher"),
                    host=where,
                ),
            )
    return tuple(out.values())


def _upstream_ref(data: dict[str, Any], text: str) -> tuple[tuple[str, str], ...]:
    """`[upstream_ref]`: how to turn the installed version into a git ref for permalinks."""
    table = _table(data, "upstream_ref", text)
    out: list[tuple[str, str]] = []
    for key, value in table.items():
        where = f"{MANIFEST_NAME}:{_line_of(text, key)}"
        if key not in UPSTREAM_REF_KEYS:
            raise ManifestError(
                f"{where}: unknown key `upstream_ref.{key}`",
                tip="use: " + ", ".join(UPSTREAM_REF_KEYS),
            )
        if not isinstance(value, str):
            raise ManifestError(f"{where}: `upstream_ref.{key}` must be a string")
        out.append((key, value))
    return tuple(out)


def _line_of(text: str, needle: str) -> int:
    """1-based line of the first occurrence of `needle` in the manifest (0 if absent)."""
    index = text.find(needle)
    return text.count("\n", 0, index) + 1 if index >= 0 else 0


def _string(data: dict[str, Any], key: str, text: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ManifestError(f"{MANIFEST_NAME}:{_line_of(text, key)}: `{key}` must be a string")
    return value


def _string_list(
    table: dict[str, Any], key: str, text: str, *, label: str, what: str = "strings"
) -> list[str]:
    """A list of strings (one string is taken as a list of one)."""
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, key)}: `{label}` must be a list of {what}"
        )
    return list(value)


def _strings(data: dict[str, Any], key: str, text: str) -> list[str]:
    value = _string_list(data, key, text, label=key)
    for repo in value:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, repo)}: upstream {repo!r} is not owner/name",
                tip='write it like "sgl-project/sglang"',
            )
    return list(value)


def _table(data: dict[str, Any], key: str, text: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ManifestError(f"{MANIFEST_NAME}:{_line_of(text, key)}: `[{key}]` must be a table")
    return value


def _optional_int(data: dict[str, Any], key: str, text: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_WORLD_SIZE:
        raise ManifestError(
            f"{MANIFEST_NAME}:{_line_of(text, key)}: `{key}` must be an integer from 1 to "
            f"{MAX_WORLD_SIZE}, got {_shown(value)}",
            tip=f"write the number of ranks the job runs, e.g. {key} = 8, or leave it out",
        )
    return value


def _opt_str(value: object) -> str | None:
    return str(value) if value is not None else None


def _datetime(value: object, text: str, *, key: str = "captured_at") -> datetime | None:
    """A TOML datetime or ISO string; naive values are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as err:
            raise ManifestError(
                f"{MANIFEST_NAME}:{_line_of(text, value)}: {key} {value!r} is not a date-time",
                tip="write it as 2026-07-14T08:34:44Z",
            ) from err
    else:
        raise ManifestError(f"{MANIFEST_NAME}:{_line_of(text, key)}: {key} must be a date-time")
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _shown(value: object) -> str:
    """A wrong value as the error shows it: TOML spelling for booleans, capped length."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
