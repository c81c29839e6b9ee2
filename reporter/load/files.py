"""Reading evidence files from disk: which files are evidence, their bytes within the size
limit, their text (refusing empty and binary files), their digest, and the files of a kind
with a binary form (a pickled Flight Recorder dump). The loader's file I/O, for
`reporter.load.bundle` and `reporter.load.assemble`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from reporter.core import fileio
from reporter.core.errors import EvidenceError, InputError
from reporter.core.fileio import check_regular, human_size, read_bytes_bounded
from reporter.evidence import kinds
from reporter.evidence.kinds.interface import BinaryForm, Read
from reporter.load.manifest import ManifestEntry
from reporter.model import EvidenceKind, Location, ParseResult, ParseWarning

# Bytes inspected for NUL characters when deciding that a file is binary.
_BINARY_PROBE = 8192


# Files in a bundle folder that are never evidence: notes and the scripts that made the evidence.
_NOT_EVIDENCE = (
    "README*",
    "*.md",
    "*.py",
    "*.sh",
    "*.toml",
    "*.j2",
    ".*",
    "*.go",
    "go.mod",
    "go.sum",
    *(
        # What reporter itself writes (reports, their backups, previews, charts, the
        # filing record, the issue index): a report saved beside the evidence must not
        # change the next analysis of it.
        "*.bak",
        "*.bak.*",
        "*.html",
        "*.svg",
        "*.sqlite3",
        "*.sqlite3-*",
        "*.lock",
        "*.tmp",
    ),
)


# Reporter's own Markdown (report, upstream draft) whatever it was renamed to: region markers
# or reporter front matter in the first lines.
_OWN_OUTPUT_RE = re.compile(
    r"\A(?:---\n(?:.*\n){0,40}?(?:reporter|kind: (?:incident-report|upstream-draft))\b"
    r"|[\s\S]{0,4096}?<!-- reporter:begin )"
)


_OWN_MARKER = "<!-- reporter:begin "


def own_output(text: str) -> bool:
    """`_OWN_OUTPUT_RE` on `text`, asked only when one of its two openings can be there."""
    if not text.startswith("---\n") and text.find(_OWN_MARKER, 0, 4096 + len(_OWN_MARKER)) < 0:
        return False  # the regex's scan of the first 4 KiB costs more than the parse
    return _OWN_OUTPUT_RE.match(text) is not None


_NOT_EVIDENCE_RE = re.compile("|".join(fnmatch.translate(p) for p in _NOT_EVIDENCE))


def walk(
    root: Path, *, skip: tuple[str, ...] = ()
) -> tuple[list[tuple[str, Path]], list[ParseWarning]]:
    """Every candidate evidence file below `root` as (relative posix path, path), sorted,
    and a warning for each folder not walked (too deep, unreadable).

    `skip` holds folder prefixes (`baseline/`) whose files are not evidence of this bundle.
    The walk is `fileio.walk`: iterative, links never followed into folders, depth capped.
    """
    found, warnings = walk_entries(root, skip=skip)
    return [(w.rel, w.path) for w in found], warnings


def walk_entries(
    root: Path, *, skip: tuple[str, ...] = ()
) -> tuple[list[fileio.Walked], list[ParseWarning]]:
    """`walk` with what the folder listing said of each file (a link, a regular file)."""
    walked = fileio.walk(root, skip=skip)
    found = [
        w
        for w in walked.files
        if not _NOT_EVIDENCE_RE.match(w.rel.rpartition("/")[2])
        and not (skip and w.rel.startswith(skip))
    ]
    warnings = [
        ParseWarning(source=Location(path=rel), message=f"skipped: a folder {why}")
        for rel, why in walked.skipped
    ]
    return found, warnings


def read_once(entry: ManifestEntry, *, max_file_bytes: int) -> bytes | None:
    """The bytes of a regular file within the limit, read once for the pickle check and the
    text reader; None when they cannot be read so (each reader then says why on its own)."""
    try:
        return read_bytes_bounded(
            entry.path,
            display=entry.display,
            max_bytes=max_file_bytes,
            listed_regular=entry.regular,
        )
    except InputError:
        return None


# Every kind's binary form, for a file whose kind is not declared (sniffed).
_FORMS = [(k.kind, k.binary) for k in kinds.BINARY if k.binary]


def read_binary(
    entry: ManifestEntry, *, max_file_bytes: int, data: bytes | None = None
) -> tuple[EvidenceKind, ParseResult, int, str] | None:
    """A file of a kind with a binary form (`KindEntry.binary`: a pickled Flight Recorder
    dump), parsed, with its kind, size and digest; None for every other file.

    Any pickle is taken for a Flight Recorder dump: one that holds code is refused by the
    parser, loudly. `data` is the file's bytes when already read (`read_once`).
    """
    forms = _FORMS if entry.kind is None else [f for f in _FORMS if f[0] is entry.kind]
    if not forms:
        return None
    size = len(data) if data is not None else 0
    if data is None:
        read = _binary_bytes(entry, forms, max_file_bytes=max_file_bytes)
        if read is None:
            return None
        data, size = read
    form = _binary_form(forms, data)
    if form is None:
        return None
    kind, binary = form
    facts = Read(source=entry.display, rank=entry.hint.rank if entry.hint else None)
    return kind, binary.parse(data, facts), size, digest(data)


def _binary_form(
    forms: Sequence[tuple[EvidenceKind, BinaryForm]], head: bytes
) -> tuple[EvidenceKind, BinaryForm] | None:
    """The first binary form whose magic bytes `head` starts with."""
    return next(((k, f) for k, f in forms if f.looks_like(head[: f.magic])), None)


def _binary_bytes(
    entry: ManifestEntry, forms: Sequence[tuple[EvidenceKind, BinaryForm]], *, max_file_bytes: int
) -> tuple[bytes, int] | None:
    """The bytes and size of a file whose first bytes are a binary form's, within the limit;
    None for any other file (the text reader then says why it is refused, if it is)."""
    try:
        # Only a regular file is opened: a FIFO or device would block or never end here; the
        # text reader refuses it with its reason.
        check_regular(Path(entry.path), display=entry.display)
    except InputError:
        return None
    try:
        with open(entry.path, "rb") as handle:  # noqa: PTH123 - one open for the peek and the read
            if _binary_form(forms, handle.read(max(f.magic for _, f in forms))) is None:
                return None
            size = os.fstat(handle.fileno()).st_size
            if size > max_file_bytes:
                raise EvidenceError(
                    f"{entry.display}: {human_size(size)} is larger than the "
                    f"{human_size(max_file_bytes)} limit for one evidence file",
                    tip="raise the limit with --max-file-size",
                )
            handle.seek(0)
            return handle.read(), size
    except OSError:
        return None  # the text reader reports unreadable files


def read_text(path: Path | str, *, display: str, max_file_bytes: int) -> str:
    """Read one evidence file as text, refusing empty, binary and oversized files."""
    return read_evidence(path, display=display, max_file_bytes=max_file_bytes)[0]


def digest(data: bytes) -> str:
    """A file's identity by content (`EvidenceFile.digest`): 16 hex digits of its sha256."""
    return hashlib.sha256(data).digest()[:8].hex()  # = hexdigest()[:16], half the text made


def read_evidence(path: Path | str, *, display: str, max_file_bytes: int) -> tuple[str, int, str]:
    """The text of one evidence file, its size in bytes and its digest; see `read_text`.

    Only regular files are read (a FIFO, device, socket or folder is refused before it
    is opened), and never past the size limit (`reporter.core.fileio`).
    """
    try:
        data = read_bytes_bounded(path, display=display, max_bytes=max_file_bytes)
    except InputError as err:
        if "larger than the" in err.message:
            raise EvidenceError(
                f"{display}: {err.message.split(': ', 1)[1].replace(' for one file', '')}"
                " for one evidence file",
                tip="split the file per process, or raise the limit with --max-file-size",
            ) from err
        raise EvidenceError(err.message, tip=err.tip) from err
    return evidence_text(data, display=display)


def evidence_text(data: bytes, *, display: str) -> tuple[str, int, str]:
    """`read_evidence` on bytes already read: refuses empty and binary files."""
    size = len(data)
    if not data or data.isspace():  # = `not data.strip()` (one set of blanks), no copy
        raise EvidenceError(
            f"{display}: the file is empty", tip="capture the dump again; py-spy may have failed"
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # UTF-16 with a BOM: Grafana's "Download for Excel" CSV, Windows tools' logs.
        return data.decode("utf-16", errors="replace"), size, digest(data)
    if data.find(b"\x00", 0, _BINARY_PROBE) >= 0 and not _nul_separated_text(data[:_BINARY_PROBE]):
        raise EvidenceError(
            f"{display}: binary data, not a text dump",
            tip="pass the text output of `py-spy dump` (or --json), not a core file or archive",
        )
    return data.decode("utf-8", errors="replace"), size, digest(data)


def _nul_separated_text(probe: bytes) -> bool:
    """True for a `/proc/PID/environ` or `cmdline` copy: text whose separators are NULs.

    Binary files (cores, archives, UTF-16 text) have other control bytes or far more NULs.
    """
    # setproctitle pads the title it writes over argv with NULs (an SGLang scheduler's
    # cmdline is `sglang::scheduler_TP0` and then hundreds of them): padding at the end
    # is no sign of binary data.
    body = probe.rstrip(b"\x00")
    if not body or body.count(b"\x00") * 3 > len(body):
        return False
    text = probe.decode("utf-8", errors="replace")
    if len(probe) == _BINARY_PROBE:
        # A multi-byte character cut at the end of the probe decodes as a replacement char.
        text = text.rstrip("\ufffd")
    return not any((c < " " and c not in "\x00\t\n\r") or c in "\x7f\ufffd" for c in text)
