"""The environment as a report may show it: allowlisted variables, options, key packages, GPUs.

Input: the bundle's `Environment` (every variable and value, as captured).
Output: an `EnvironmentSummary` that holds only what `reporter/data/env.toml`
allows, with secret-looking values replaced by `[redacted]`; the bundle keeps
the rest. Secret detection is `reporter.secrets` (shared with `report diff`, collect,
lint and upstream drafts); an `env.toml` `[secret]` table may only add names and shapes.
The compiled `env.toml` is `env_rules.py`'s. The records below are also the `environment`
object of `analyze --json` (`reporter.model.document` writes them; their JSON keys are
the ones named in `spec`).

Shape, by example::

    EnvironmentSummary(
        variables=(ShownVariable(name="NCCL_DEBUG", values=("INFO",), redacted=False,
                                 sources=("env/rank0.environ",)), ...),
        hidden=241, redacted=1,
        commands=(ShownCommand(program="sglang.launch_server",
                               flags=(CommandFlag(name="--tp", value="4"), ...), ...),),
        packages=(ShownPackage(name="torch", version="2.8.0+cu126", ...), ...), ...)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reporter.analysis.env_rules import REDACTED as REDACTED  # re-exported: their old home
from reporter.analysis.env_rules import Secrets as Secrets
from reporter.analysis.env_rules import ShowRules as ShowRules
from reporter.analysis.env_rules import default_rules as default_rules
from reporter.analysis.env_rules import parse_show_rules as parse_show_rules
from reporter.model import CommandFlag, CommandLine, EnvFact, Environment, Gpu, Package
from reporter.model.document import Count, document, spec


@document
class ShownVariable:
    """One allowlisted environment variable.

    Its distinct values in first-seen order (secret ones replaced), and where it was seen.
    """

    name: str
    values: tuple[str, ...]
    redacted: bool
    sources: tuple[str, ...]


@document
class ShownCommand:
    """One command line.

    Its options' secret values replaced (`--api-key [redacted]`); `value` None for a switch.
    """

    program: str
    flags: tuple[CommandFlag, ...]
    positional: tuple[str, ...]
    source: str


@document
class ShownPackage:
    """One key package.

    `others` are the different versions other files reported.
    """

    name: str
    version: str
    origin: str
    source: str
    others: tuple[str, ...] = spec(name="other_versions", default=())


@document
class EnvironmentSummary:
    """The allowlisted, redacted view of the environment (like the report's).

    What the report, upstream drafts and `analyze --json` show of the environment evidence.
    """

    variables: tuple[ShownVariable, ...]
    hidden: Count = spec(name="hidden_variables")
    redacted: Count = spec(name="redacted_variables")
    commands: tuple[ShownCommand, ...]
    packages: tuple[ShownPackage, ...]
    package_count: Count
    gpus: tuple[Gpu, ...]
    facts: tuple[EnvFact, ...]
    sources: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(
            self.variables
            or self.hidden
            or self.commands
            or self.packages
            or self.package_count
            or self.gpus
            or self.facts
        )


def summarize(environment: Environment, rules: ShowRules | None = None) -> EnvironmentSummary:
    """The allowlisted, redacted view of `environment` (sorted by name; GPUs by index)."""
    rules = rules or default_rules()
    secrets = rules.secrets
    by_name: dict[str, tuple[list[str], list[str]]] = {}
    for var in environment.variables:
        values, sources = by_name.setdefault(var.name, ([], []))
        if var.value not in values:
            values.append(var.value)
        if var.source.path not in sources:
            sources.append(var.source.path)
    shown: list[ShownVariable] = []
    redacted = 0
    for name in sorted(by_name):
        values, sources = by_name[name]
        # The allowlist decides what is shown, never what is scanned: every shown value
        # goes through the secret policy whatever its name.
        if not rules.shows(name, values):
            continue
        masked = tuple(dict.fromkeys(secrets.shown(name, v) or "" for v in values))
        secret = masked != tuple(values)
        if secret:
            redacted += 1
        shown.append(
            ShownVariable(
                name=name,
                values=masked,
                redacted=secret,
                sources=tuple(sources),
            )
        )
    return EnvironmentSummary(
        variables=tuple(shown),
        hidden=len(by_name) - len(shown),
        redacted=redacted,
        commands=_commands(environment.cmdlines, secrets),
        packages=_key_packages(environment.packages, rules.key_packages),
        package_count=len({p.name for p in environment.packages}),
        gpus=_gpus(environment.gpus),
        facts=_facts(environment.facts, rules.key_facts, secrets),
        sources=_sources(environment),
    )


def _commands(cmdlines: Sequence[CommandLine], secrets: Secrets) -> tuple[ShownCommand, ...]:
    out: list[ShownCommand] = []
    seen: set[tuple[str, ...]] = set()
    for cmd in cmdlines:
        if cmd.argv in seen:
            continue
        seen.add(cmd.argv)
        out.append(
            ShownCommand(
                program=cmd.program,
                flags=tuple(
                    CommandFlag(name=f.name, value=secrets.shown(f.name, f.value))
                    for f in cmd.flags
                ),
                positional=tuple(secrets.shown("", p) or "" for p in cmd.positional),
                source=str(cmd.source),
            )
        )
    return tuple(out)


def _key_packages(packages: Sequence[Package], key: Sequence[str]) -> tuple[ShownPackage, ...]:
    first: dict[str, Package] = {}
    versions: dict[str, list[str]] = {}
    for package in packages:
        first.setdefault(package.name, package)
        seen = versions.setdefault(package.name, [])
        if package.version and package.version not in seen:
            seen.append(package.version)
    out: list[ShownPackage] = []
    for name in key:
        if name not in first:
            continue
        package = first[name]
        out.append(
            ShownPackage(
                name=name,
                version=package.version,
                origin=package.origin,
                source=str(package.source),
                others=tuple(v for v in versions[name] if v != package.version),
            )
        )
    return tuple(out)


def _gpus(gpus: Sequence[Gpu]) -> tuple[Gpu, ...]:
    """One row per index: the one with memory figures wins (nvidia-smi over check_env)."""
    best: dict[int, Gpu] = {}
    for gpu in gpus:
        current = best.get(gpu.index)
        if current is None or (current.memory_total_mib is None and gpu.memory_total_mib):
            best[gpu.index] = gpu
    return tuple(best[i] for i in sorted(best))


def _facts(facts: Sequence[EnvFact], key: re.Pattern[str], secrets: Secrets) -> tuple[EnvFact, ...]:
    out: dict[str, EnvFact] = {}
    for fact in facts:
        if key.match(fact.key) and fact.key not in out:
            value = secrets.shown(fact.key, fact.value) or ""
            out[fact.key] = EnvFact(key=fact.key, value=value, source=fact.source)
    return tuple(out.values())


def _sources(environment: Environment) -> tuple[str, ...]:
    paths: dict[str, None] = {}
    for group in (
        environment.variables,
        environment.cmdlines,
        environment.packages,
        environment.facts,
        environment.gpus,
        environment.file_hashes,
    ):
        for item in group:
            paths.setdefault(item.source.path, None)
    return tuple(paths)
