"""Frozen data model shared by parsers, the bundle loader, analysis and rendering.

Everything ingested for one incident ends up in one `Bundle`. Parsers return
`ParseResult`s; the loader folds them into the bundle; analysis reads only the
bundle. All classes are frozen, slotted and keyword-only so that values can be
hashed, compared and shared between threads without copying.

Import every name from here (`from reporter.model import Bundle`); the modules group them:
`stacks` (evidence kinds, `Location`, frames, threads, process and failed dumps),
`context` (the evidence around the stacks: metrics, events, environment, excerpts, Go
goroutines, Flight Recorder traces) and `bundle` (`ParseResult`, `Manifest`, `Bundle`).
"""

from __future__ import annotations

from reporter.model.bundle import (
    Bundle,
    Evidence,
    EvidenceFile,
    Manifest,
    ParseResult,
    ProcessNote,
    RankHint,
)
from reporter.model.context import (
    CodeExcerpt,
    CommandFlag,
    CommandLine,
    EnvFact,
    Environment,
    EnvVar,
    EventKind,
    FileHash,
    FrEntry,
    FrGroupConfig,
    FrGroupStatus,
    FrOrigin,
    FrTrace,
    GoDumpForm,
    GoFrame,
    Goroutine,
    GoroutineDump,
    Gpu,
    MetricKind,
    MetricPoint,
    MetricSeries,
    Package,
    TimelineEvent,
    WedgeSettings,
)
from reporter.model.stacks import (
    CONTEXT_KINDS,
    METRIC_KINDS,
    SUMMARISED_KINDS,
    EvidenceKind,
    FailedDump,
    FailureState,
    Frame,
    Local,
    Location,
    ParseWarning,
    ProcessDump,
    RankSource,
    Similarity,
    ThreadStack,
    ThreadStatus,
    innermost_python,
)

__all__ = [
    "CONTEXT_KINDS",
    "METRIC_KINDS",
    "SUMMARISED_KINDS",
    "Bundle",
    "CodeExcerpt",
    "CommandFlag",
    "CommandLine",
    "EnvFact",
    "EnvVar",
    "Environment",
    "EventKind",
    "Evidence",
    "EvidenceFile",
    "EvidenceKind",
    "FailedDump",
    "FailureState",
    "FileHash",
    "FrEntry",
    "FrGroupConfig",
    "FrGroupStatus",
    "FrOrigin",
    "FrTrace",
    "Frame",
    "GoDumpForm",
    "GoFrame",
    "Goroutine",
    "GoroutineDump",
    "Gpu",
    "Local",
    "Location",
    "Manifest",
    "MetricKind",
    "MetricPoint",
    "MetricSeries",
    "Package",
    "ParseResult",
    "ParseWarning",
    "ProcessDump",
    "ProcessNote",
    "RankHint",
    "RankSource",
    "Similarity",
    "ThreadStack",
    "ThreadStatus",
    "TimelineEvent",
    "WedgeSettings",
    "innermost_python",
]
