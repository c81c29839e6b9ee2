"""The evidence around the stacks: environment, changes since the baseline, code, Go clients.

`analyze()` calls these after the stack verdict: `go_clients` buckets the Go
goroutine dumps (their events go on the timeline, their sentence next to the
verdict); `complete` adds the allowlisted environment, the diff against the
bundle's baseline and the code excerpts to the finished `Analysis`. Pure: source
files are seen only through the `SourceReader` passed in.

The modules behind each part are imported only when the bundle holds that kind of
evidence, so a bundle of py-spy dumps alone pays nothing for them at start-up.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from reporter.analysis.environment import summarize
from reporter.analysis.excerpts import code_excerpts
from reporter.analysis.result import Analysis, Similarity
from reporter.model import Bundle, TimelineEvent

if TYPE_CHECKING:
    from reporter.analysis.excerpts import SourceReader
    from reporter.analysis.goroutines import GoroutineAnalysis
    from reporter.analysis.wedge import WedgeReport


def go_clients(bundle: Bundle, similarity: Similarity) -> GoroutineAnalysis | None:
    """Buckets of the bundle's Go goroutine dumps, or None without any."""
    if not bundle.goroutine_dumps:
        return None
    # Lazy: start-up; `report analyze` must not load reporter.analysis.goroutines.
    from reporter.analysis.goroutines import analyze_goroutines

    return analyze_goroutines(bundle.goroutine_dumps, similarity=similarity)


def clients_events(goroutines: GoroutineAnalysis | None) -> tuple[TimelineEvent, ...]:
    """The Go dumps' timeline entries (capture, and since when clients wait), or ()."""
    if goroutines is None:
        return ()
    # Lazy: start-up; `report analyze` must not load reporter.analysis.goroutines.
    from reporter.analysis.goroutines import goroutine_events

    return goroutine_events(goroutines)


def clients_sentence(goroutines: GoroutineAnalysis | None, wedge: WedgeReport | None) -> str:
    """`Clients: ... waiting since at least 17:41 UTC; server wedge onset 17:40 UTC.` or "".

    Computed once per analysis (`Analysis.clients_sentence`); every output reads it there.
    """
    if goroutines is None:
        return ""
    # Lazy: start-up; `report analyze` must not load reporter.analysis.goroutines.
    from reporter.analysis.goroutines import clients_line

    onset = wedge.episode.onset if wedge is not None and wedge.episode is not None else None
    return clients_line(goroutines, onset)


def _may_have_code(bundle: Bundle, sources: SourceReader | None) -> bool:
    """Whether excerpts can show anything: code to cut, or a version to link to."""
    return bool(
        sources is not None
        or bundle.excerpts
        or bundle.environment.packages
        or bundle.manifest.upstream_ref
    )


def complete(
    analysis: Analysis, bundle: Bundle, *, sources: SourceReader | None, context: int = 6
) -> Analysis:
    """`analysis` with `environment`, `diff` (when a baseline exists) and `excerpts` set.

    Automatic excerpts show `context` lines on each side of a frame's line.
    """
    environment = None
    if bundle.environment:
        environment = summarize(bundle.environment)
    diff = None
    if bundle.baseline is not None:
        # Lazy: start-up; `report analyze` must not load reporter.analysis.diff.
        from reporter.analysis.diff import diff_bundles

        diff = diff_bundles(bundle.baseline, bundle, good_name="baseline", bad_name="this run")
    excerpts = None
    if _may_have_code(bundle, sources):
        found = code_excerpts(bundle, analysis, reader=sources, context=context)
        excerpts = found if found else None
    return replace(analysis, environment=environment, diff=diff, excerpts=excerpts)
