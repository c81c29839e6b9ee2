"""Frozen data model shared by parsers, the bundle loader, analysis and rendering.

Everything ingested for one incident ends up in one `Bundle`. Parsers return
`ParseResult`s; the loader folds them into the bundle; analysis reads only the
bundle. All classes are frozen, slotted and keyword-only so that values can be
hashed, compared and shared between threads without copying.

Import every name from here (`from reporter.model import Bundle`); the modules group them:
`evidence` (kinds, `Location`, `ParseWarning`), `stacks` (frames, threads, process and
failed dumps), `metrics` (series and timeline events), `environment` (variables, command
lines, packages, excerpts), `goroutines` (Go dumps), `flight_recorder` (torch Flight
Recorder traces) and `bundle` (`ParseResult`, `Manifest`, `Bundle`).
"""

from __future__ import annotations

from reporter.model.bundle import (
    Bundle,
    EvidenceFile,
    Manifest,
    ParseResult,
    ProcessNote,
    RankHint,
)
from reporter.model.environment import (
    CodeExcerpt,
    CommandFlag,
    CommandLine,
    EnvFact,
    Environment,
    EnvVar,
    FileHash,
    Gpu,
    Package,
)
from reporter.model.evidence import (
    CONTEXT_KINDS,
    METRIC_KINDS,
    SUMMARISED_KINDS,
    EvidenceKind,
    Location,
    ParseWarning,
)
from reporter.model.flight_recorder import (
    FrEntry,
    FrGroupConfig,
    FrGroupStatus,
    FrOrigin,
    FrTrace,
)
from reporter.model.goroutines import (
    GoDumpForm,
    GoFrame,
    Goroutine,
    GoroutineDump,
)
from reporter.model.metrics import (
    EventKind,
    MetricKind,
    MetricPoint,
    MetricSeries,
    TimelineEvent,
    WedgeSettings,
)
from reporter.model.stacks import (
    FailedDump,
    FailureState,
    Frame,
    Local,
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
