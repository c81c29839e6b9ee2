"""Environment evidence: variables, command lines, packages, GPUs, file hashes, excerpts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reporter.model.evidence import Location


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvVar:
    """One environment variable as a process saw it (`/proc/PID/environ`, `env`, collect_env)."""

    name: str
    value: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandFlag:
    """One option of a command line: `--tp 4` and `--tp=4` give name `--tp`, value `"4"`.

    `value` is None for a bare switch (`--enable-metrics`).
    """

    name: str
    value: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandLine:
    """A process's argv, the program it runs and its options.

    `program` is the module for `python -m MOD`, else the script or executable.
    Example: `python3 -m sglang.launch_server --tp 4 --mem-fraction-static=0.8` gives
    program `sglang.launch_server`, flags `--tp=4`, `--mem-fraction-static=0.8`.
    """

    argv: tuple[str, ...]
    program: str
    flags: tuple[CommandFlag, ...] = ()
    positional: tuple[str, ...] = ()
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    """An installed distribution: `name` normalised as PyPI does (`flashinfer-python`).

    `origin` keeps a direct reference (`git+https://github.com/o/r@abc123`, `file:///...`)
    where the listing gave one; `version` is "" when it did not say.
    """

    name: str
    version: str
    origin: str = ""
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvFact:
    """A `key: value` fact from `sglang.check_env`, vLLM `collect_env` or `nvidia-smi`."""

    key: str
    value: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Gpu:
    """One GPU row of `nvidia-smi` (table or `--format=csv`); unknown numbers are None."""

    index: int
    name: str
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    utilization_pct: int | None = None
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class FileHash:
    """A deployed source file's sha256 (`sha256sum` output), to compare with a checkout."""

    path: str
    sha256: str
    source: Location


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """Everything environment evidence says; several files simply concatenate."""

    variables: tuple[EnvVar, ...] = ()
    cmdlines: tuple[CommandLine, ...] = ()
    packages: tuple[Package, ...] = ()
    facts: tuple[EnvFact, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    file_hashes: tuple[FileHash, ...] = ()

    @staticmethod
    def combined(parts: Sequence[Environment]) -> Environment:
        """The entries of every part, in order (one pass: no copy per part)."""
        return Environment(
            variables=tuple(v for p in parts for v in p.variables),
            cmdlines=tuple(c for p in parts for c in p.cmdlines),
            packages=tuple(k for p in parts for k in p.packages),
            facts=tuple(f for p in parts for f in p.facts),
            gpus=tuple(g for p in parts for g in p.gpus),
            file_hashes=tuple(h for p in parts for h in p.file_hashes),
        )

    def __bool__(self) -> bool:
        return bool(
            self.variables
            or self.cmdlines
            or self.packages
            or self.facts
            or self.gpus
            or self.file_hashes
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeExcerpt:
    """Lines of one source file as deployed: `lines[0]` is line `start` of `path`.

    `path` is repository-relative where known (`python/sglang/srt/managers/scheduler.py`).
    `file_sha256` is the hash of the whole deployed file, when recorded, so that a
    local checkout can be checked against it. `highlight` holds absolute line numbers.
    """

    path: str
    start: int
    lines: tuple[str, ...]
    highlight: tuple[int, ...] = ()
    repo: str = ""
    ref: str = ""
    file_sha256: str = ""
    note: str = ""
    source: Location

    @property
    def end(self) -> int:
        """The last line number shown."""
        return self.start + max(len(self.lines), 1) - 1
