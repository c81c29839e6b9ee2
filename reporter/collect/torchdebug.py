"""Fetch stacks, py-spy dumps and Flight Recorder traces from torch's debug server; find FR dumps.

torch's debug server (`torch.distributed.debug.start_debug_server()`, torch >= 2.10) runs a
frontend on rank 0 that asks every rank's worker and answers with one HTML page per
endpoint: per rank a heading and the rank's answer in a `<pre>` block, or a failure line::

    <h2>Rank 1: http://host:40431/handler/fr_trace_json?</h2>
    <p>Failed to fetch: status=500</p>      (only when the rank failed)
    <pre>{ "version": "2.10", "entries": [...] }</pre>

The frontend's templates do not escape the answers, so the `<pre>` text is the rank's own.
Only GET requests are sent, each one bounded read (`httpread`: one deadline for the whole
request, a size cap); every endpoint or rank that could not be fetched becomes a `Failure`. Pages become per-rank files of the bundle:

    torch-debug/fr_trace/rank{r}.json        /fr_trace_json (kind flight-recorder)
    torch-debug/fr_trace_nccl/rank{r}.json   /fr_trace_nccl_json (NCCL only)
    torch-debug/pyspy/rank{r}.txt            /pyspy_dump (py-spy text; needs py-spy in the job)
    torch-debug/stacks/rank{r}.txt           /stacks (faulthandler text), for the ranks whose
                                             py-spy dump failed

One stack form per rank: the analysis compares a rank's snapshots to tell stuck from moving,
and a faulthandler and a py-spy dump of the same moment never compare equal, so /stacks is
kept only where /pyspy_dump gave nothing (a `Failure` says so for the others).

A watchdog's dump files on disk are `frfiles`' job.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from reporter.analysis.ranks import format_ranks
from reporter.collect.httpread import Limits, fetch
from reporter.core import inert
from reporter.model import EvidenceKind


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


# One rank's heading (bounded: a rank number of a million digits is not a rank).
_HEAD_RE = re.compile(r"<h2>Rank (\d{1,9}): ([^<]{0,2048})</h2>\s{0,256}")
_FAILED_RE = re.compile(r"<p>Failed to fetch: status=(\d{1,9})</p>\s{0,256}")


def parse_page(page: str) -> tuple[RankAnswer, ...]:
    """The per-rank blocks of one debug-server page, in rank order.

    One pass with `str.find` (linear in the page): a block whose `<pre>` never closes
    ends the page, where a backtracking `<pre>(.*?)</pre>` search would rescan the rest
    of the page from every heading.
    """
    answers = []
    at = page.find("<h2>Rank ")
    while at >= 0:
        head = _HEAD_RE.match(page, at)
        if head is None:
            at = page.find("<h2>Rank ", at + 1)
            continue
        cursor = head.end()
        failed = _FAILED_RE.match(page, cursor)
        if failed is not None:
            cursor = failed.end()
        if not page.startswith("<pre>", cursor):
            at = page.find("<h2>Rank ", cursor)
            continue
        closing = page.find("</pre>", cursor + 5)
        if closing < 0:
            break  # unclosed: nothing after it is a complete block
        answers.append(
            RankAnswer(
                rank=int(head.group(1)),
                address=head.group(2).strip(),
                ok=failed is None,
                status=int(failed.group(1)) if failed is not None else 200,
                text=page[cursor + 5 : closing],
            )
        )
        at = page.find("<h2>Rank ", closing + 6)
    return tuple(sorted(answers, key=lambda a: a.rank))


def fetch_all(
    client: httpx.Client,
    base_url: str,
    *,
    limits: Limits,
    stop: threading.Event | None = None,
    endpoints: Sequence[Endpoint] = ENDPOINTS,
) -> DebugServerResult:
    """GET the endpoints of the debug server at `base_url`, each one bounded read
    (`httpread.fetch`); never raises for network trouble."""
    files: list[Fetched] = []
    failures: list[Failure] = []
    base = base_url.rstrip("/")
    with_pyspy: set[int] = set()
    for endpoint in endpoints:
        if stop is not None and stop.is_set():
            failures.append(Failure(what=base + endpoint.path, reason="interrupted"))
            continue
        url = base + endpoint.path
        try:
            request = client.build_request("GET", url)
        except httpx.HTTPError as err:
            failures.append(Failure(what=url, reason=f"{type(err).__name__}: {err}"))
            continue
        answer = fetch(client, request, limits=limits, stop=stop, what=f"the {endpoint.path} page")
        if answer.error:
            failures.append(Failure(what=url, reason=answer.error))
            continue
        if answer.status != 200:
            first = inert.one_line(answer.text, limit=160)
            detail = f": {first}" if first else ""
            failures.append(Failure(what=url, reason=f"HTTP {answer.status}{detail}"))
            continue
        answers = parse_page(answer.text)
        if not answers:
            failures.append(Failure(what=url, reason="no per-rank block in the page"))
            continue
        for block in answers:
            if not block.ok:
                first = inert.one_line(block.text, limit=160)
                detail = f": {first}" if first else ""
                failures.append(
                    Failure(
                        what=f"{url} rank {block.rank}",
                        reason=f"the rank answered {block.status}{detail}",
                    )
                )
                continue
            if endpoint.kind is EvidenceKind.PYSPY_TEXT:
                with_pyspy.add(block.rank)
            elif endpoint.kind is EvidenceKind.FAULTHANDLER and block.rank in with_pyspy:
                continue
            files.append(
                Fetched(
                    path=f"{endpoint.folder}/rank{block.rank}{endpoint.suffix}",
                    text=block.text if block.text.endswith("\n") else block.text + "\n",
                    kind=endpoint.kind,
                    rank=block.rank,
                    description=f"rank {block.rank} {endpoint.what} from {url} "
                    f"(worker {inert.one_line(block.address, limit=200)})",
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
