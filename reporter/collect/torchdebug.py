"""Fetch stacks, py-spy dumps and Flight Recorder traces from torch's debug server; find FR dumps.

torch's debug server (`torch.distributed.debug.start_debug_server()`, torch >= 2.10) runs a
frontend on rank 0 that asks every rank's worker and answers with one HTML page per
endpoint: per rank a heading and the rank's answer in a `<pre>` block, or a failure line::

    <h2>Rank 1: http://host:40431/handler/fr_trace_json?</h2>
    <p>Failed to fetch: status=500</p>      (only when the rank failed)
    <pre>{ "version": "2.10", "entries": [...] }</pre>

The frontend's templates do not escape the answers, so the `<pre>` text is the rank's own.
Only GET requests are sent, each with a bounded timeout; every endpoint or rank that could
not be fetched becomes a `Failure`. Pages become per-rank files of the bundle:

    torch-debug/fr_trace/rank{r}.json        /fr_trace_json (kind flight-recorder)
    torch-debug/fr_trace_nccl/rank{r}.json   /fr_trace_nccl_json (NCCL only)
    torch-debug/pyspy/rank{r}.txt            /pyspy_dump (py-spy text; needs py-spy in the job)
    torch-debug/stacks/rank{r}.txt           /stacks (faulthandler text), for the ranks whose
                                             py-spy dump failed

One stack form per rank: the analysis compares a rank's snapshots to tell stuck from moving,
and a faulthandler and a py-spy dump of the same moment never compare equal, so /stacks is
kept only where /pyspy_dump gave nothing (a `Failure` says so for the others).

A watchdog's dump files are found by prefix: `TORCH_NCCL_DEBUG_INFO_TEMP_FILE` (default
`/tmp/nccl_trace_rank_`) or `TORCH_FR_DUMP_TEMP_FILE` followed by the rank.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from reporter.analysis.ranks import format_ranks
from reporter.evidence import flight_recorder
from reporter.model import EvidenceKind

DEFAULT_DUMP_PREFIX = "/tmp/nccl_trace_rank_"  # torch's own default; only read
DUMP_PREFIX_VARS = ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE")


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """One page of the debug server and where its per-rank answers go."""

    path: str
    folder: str
    suffix: str
    kind: EvidenceKind
    what: str
    optional: bool = False
    """A failure here is expected on some jobs (the NCCL trace on a gloo job)."""


# One row per page: path, folder under torch-debug/, file suffix, kind, what it is,
# optional (a failure is expected on some jobs: the NCCL trace on a gloo job).
_PAGES: tuple[tuple[str, str, str, EvidenceKind, str, bool], ...] = (
    ("/fr_trace_json", "fr_trace", ".json", EvidenceKind.FLIGHT_RECORDER,
     "Flight Recorder trace (JSON)", False),
    ("/fr_trace_nccl_json", "fr_trace_nccl", ".json", EvidenceKind.FLIGHT_RECORDER,
     "NCCL Flight Recorder trace (JSON)", True),
    ("/pyspy_dump", "pyspy", ".txt", EvidenceKind.PYSPY_TEXT, "py-spy dump", False),
    ("/stacks", "stacks", ".txt", EvidenceKind.FAULTHANDLER, "Python stacks (faulthandler)", False),
)  # fmt: skip
ENDPOINTS = tuple(
    Endpoint(
        path=path,
        folder=f"torch-debug/{folder}",
        suffix=suffix,
        kind=kind,
        what=what,
        optional=optional,
    )
    for path, folder, suffix, kind, what, optional in _PAGES
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RankAnswer:
    """One rank's block of a page: its worker address, the status, the text."""

    rank: int
    address: str
    ok: bool
    status: int | None
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Fetched:
    """One file to write into the bundle."""

    path: str
    text: str
    kind: EvidenceKind
    rank: int
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """Something that could not be fetched, and why."""

    what: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DebugServerResult:
    """What one pass over the debug server gave."""

    files: tuple[Fetched, ...]
    failures: tuple[Failure, ...]


_BLOCK_RE = re.compile(
    r"<h2>Rank (?P<rank>\d+): (?P<addr>[^<]*)</h2>\s*"
    r"(?:<p>Failed to fetch: status=(?P<status>\d+)</p>\s*)?"
    r"<pre>(?P<text>.*?)</pre>",
    re.DOTALL,
)


def parse_page(page: str) -> tuple[RankAnswer, ...]:
    """The per-rank blocks of one debug-server page, in rank order."""
    answers = [
        RankAnswer(
            rank=int(m.group("rank")),
            address=m.group("addr").strip(),
            ok=m.group("status") is None,
            status=int(m.group("status")) if m.group("status") else 200,
            text=m.group("text"),
        )
        for m in _BLOCK_RE.finditer(page)
    ]
    return tuple(sorted(answers, key=lambda a: a.rank))


def fetch_all(
    client: httpx.Client,
    base_url: str,
    *,
    timeout: float,
    endpoints: Sequence[Endpoint] = ENDPOINTS,
) -> DebugServerResult:
    """GET the endpoints of the debug server at `base_url`; never raises for network trouble."""
    files: list[Fetched] = []
    failures: list[Failure] = []
    base = base_url.rstrip("/")
    with_pyspy: set[int] = set()
    for endpoint in endpoints:
        url = base + endpoint.path
        try:
            response = client.get(url, timeout=timeout)
        except httpx.TimeoutException:
            failures.append(Failure(what=url, reason=f"no answer within {timeout:g} s"))
            continue
        except httpx.HTTPError as err:
            failures.append(Failure(what=url, reason=f"{type(err).__name__}: {err}"))
            continue
        if response.status_code != 200:
            first = response.text.strip().splitlines()[:1]
            detail = f": {first[0][:160]}" if first else ""
            failures.append(Failure(what=url, reason=f"HTTP {response.status_code}{detail}"))
            continue
        answers = parse_page(response.text)
        if not answers:
            failures.append(Failure(what=url, reason="no per-rank block in the page"))
            continue
        for answer in answers:
            if not answer.ok:
                first = answer.text.strip().splitlines()[:1]
                detail = f": {first[0][:160]}" if first else ""
                failures.append(
                    Failure(
                        what=f"{url} rank {answer.rank}",
                        reason=f"the rank answered {answer.status}{detail}",
                    )
                )
                continue
            if endpoint.kind is EvidenceKind.PYSPY_TEXT:
                with_pyspy.add(answer.rank)
            elif endpoint.kind is EvidenceKind.FAULTHANDLER and answer.rank in with_pyspy:
                continue
            files.append(
                Fetched(
                    path=f"{endpoint.folder}/rank{answer.rank}{endpoint.suffix}",
                    text=answer.text if answer.text.endswith("\n") else answer.text + "\n",
                    kind=endpoint.kind,
                    rank=answer.rank,
                    description=f"rank {answer.rank} {endpoint.what} from {url} "
                    f"(worker {answer.address})",
                )
            )
    kept = {f.rank for f in files if f.kind is EvidenceKind.FAULTHANDLER}
    dropped = sorted(with_pyspy - kept)
    if dropped and any(e.kind is EvidenceKind.FAULTHANDLER for e in endpoints):
        failures.append(
            Failure(
                what=f"{base}/stacks ranks {format_ranks(dropped)}",
                reason="not kept: the py-spy dump of the same ranks is (one stack form per rank)",
            )
        )
    return DebugServerResult(files=tuple(files), failures=tuple(failures))


@dataclass(frozen=True, slots=True, kw_only=True)
class DumpFile:
    """A Flight Recorder dump found on disk, and its path inside the bundle."""

    source: Path
    path: str
    rank: int | None


def dump_prefixes(environs: dict[int, str]) -> tuple[str, ...]:
    """Dump file prefixes: the default and those the targets' environments set."""
    prefixes = {DEFAULT_DUMP_PREFIX}
    for text in environs.values():
        for entry in re.split(r"[\x00\n]", text):
            name, _, value = entry.partition("=")
            if name in DUMP_PREFIX_VARS and value.strip():
                prefixes.add(value.strip())
    return tuple(sorted(prefixes))


def find_prefixed(prefix: str) -> tuple[DumpFile, ...]:
    """Files named `<prefix><rank>` (a watchdog's dump of each rank)."""
    base = Path(prefix)
    folder, stem = base.parent, base.name
    if not folder.is_dir():
        return ()
    found: list[DumpFile] = []
    for path in sorted(folder.iterdir()):
        rest = path.name[len(stem) :]
        if path.name.startswith(stem) and rest.isdigit() and path.is_file():
            found.append(
                DumpFile(
                    source=path,
                    path=f"fr/{_safe(str(folder))}/{path.name}",
                    rank=int(rest),
                )
            )
    return tuple(found)


def find_in_dir(folder: Path) -> tuple[DumpFile, ...]:
    """Files in `folder` (not below) that look like Flight Recorder dumps (pickle or JSON)."""
    found: list[DumpFile] = []
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        try:
            with path.open("rb") as handle:
                head = handle.read(8192)
        except OSError:
            continue
        if flight_recorder.sniff_bytes(head) or flight_recorder.sniff_text(
            head.decode("utf-8", errors="replace")
        ):
            found.append(
                DumpFile(
                    source=path,
                    path=f"fr/{_safe(folder.name or 'dumps')}/{path.name}",
                    rank=flight_recorder.rank_from_name(path.name),
                )
            )
    return tuple(found)


def _safe(text: str) -> str:
    """A bundle folder name from a host path: `/tmp/fr` -> `tmp_fr`."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_.")
    return cleaned or "dumps"
