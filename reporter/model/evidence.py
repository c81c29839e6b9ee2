"""What an evidence file is and the places in it: kinds, `Location`, `ParseWarning`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class EvidenceKind(StrEnum):
    """What an evidence file holds, as declared in a manifest or sniffed from content."""

    PYSPY_TEXT = "pyspy-text"
    PYSPY_JSON = "pyspy-json"
    FAULTHANDLER = "faulthandler"
    PROMETHEUS_TEXT = "prometheus-text"
    PROMETHEUS_JSON = "prometheus-json"
    GRAFANA_CSV = "grafana-csv"
    SYSTEMD_SHOW = "systemd-show"
    LOG = "log"
    ENVIRON = "environ"
    CMDLINE = "cmdline"
    PACKAGES = "packages"
    SGLANG_CHECK_ENV = "sglang-check-env"
    VLLM_COLLECT_ENV = "vllm-collect-env"
    NVIDIA_SMI = "nvidia-smi"
    SOURCE_HASHES = "source-hashes"
    CODE_EXCERPT = "code-excerpt"
    GOROUTINES = "goroutines"
    FLIGHT_RECORDER = "flight-recorder"
    UNKNOWN = "unknown"


# Kinds holding a metric history (charted in the report).
METRIC_KINDS = frozenset(
    {EvidenceKind.PROMETHEUS_TEXT, EvidenceKind.PROMETHEUS_JSON, EvidenceKind.GRAFANA_CSV}
)
# Kinds summarised in a report section of their own and never embedded raw: environment
# files hold every variable (secrets too); excerpts and goroutine dumps have their sections.
SUMMARISED_KINDS = frozenset(
    {
        EvidenceKind.ENVIRON,
        EvidenceKind.CMDLINE,
        EvidenceKind.PACKAGES,
        EvidenceKind.SGLANG_CHECK_ENV,
        EvidenceKind.VLLM_COLLECT_ENV,
        EvidenceKind.NVIDIA_SMI,
        EvidenceKind.SOURCE_HASHES,
        EvidenceKind.CODE_EXCERPT,
        EvidenceKind.GOROUTINES,
        EvidenceKind.FLIGHT_RECORDER,
    }
)
# Evidence around the stacks; its problems are warnings even when the manifest names the file.
CONTEXT_KINDS = METRIC_KINDS | SUMMARISED_KINDS | {EvidenceKind.SYSTEMD_SHOW, EvidenceKind.LOG}


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """A place in an evidence file: the path as the user named it and a 1-based line."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@dataclass(frozen=True, slots=True, kw_only=True)
class ParseWarning:
    """Something a tolerant parser skipped or guessed, with where it happened."""

    source: Location
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"
