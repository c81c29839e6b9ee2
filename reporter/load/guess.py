"""Guesses for `report init`: the upstream repository, the world size and evidence globs.

Pure functions over a loaded `Bundle` and the upstream rules (`reporter/data/upstream.toml`).
Each guess carries the evidence behind it; `report init` writes them as commented-out
lines for a person to confirm, never as settings.

The repository is scored from three kinds of evidence, strongest first: a process title
or command line that names the package (`sglang::scheduler_TP0`, `python -m vllm...`),
an installed distribution, and frames inside the package. Libraries every stack goes
through (torch, triton, zmq) only win when no serving framework is in sight.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from reporter.model import Bundle, EvidenceKind

# Below these modules in most stacks; evidence for them says little about where to file.
_LIBRARIES = frozenset({"torch", "triton", "zmq", "transformers", "flashinfer"})
# Files of one kind in one folder from which a glob is worth suggesting.
_GLOB_MIN = 3
_WORLD_VARS = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")
_PARALLEL_FLAGS = {
    "--tp": "tp",
    "--tp-size": "tp",
    "--tensor-parallel-size": "tp",
    "--dp": "dp",
    "--dp-size": "dp",
    "--data-parallel-size": "dp",
    "--pp": "pp",
    "--pp-size": "pp",
    "--pipeline-parallel-size": "pp",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """One guess for a `bundle.toml` key, and why."""

    key: str
    value: str | int | list[str]
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """The part of an upstream rule a guess needs: import name, distribution, repository."""

    module: str
    dist: str
    repo: str


def upstream(bundle: Bundle, rules: Sequence[Rule]) -> Suggestion | None:
    """The likeliest upstream repository, or None when nothing points anywhere."""
    score: Counter[str] = Counter()
    reasons: dict[str, list[str]] = defaultdict(list)
    by_module = {r.module: r for r in rules}
    by_dist = {r.dist.lower(): r for r in rules}

    titles = [d.cmdline for d in bundle.dumps if d.cmdline]
    titles += [" ".join(c.argv) for c in bundle.environment.cmdlines]
    for module, rule in by_module.items():
        # Titles are often upper-cased (`VLLM::Worker_TP0`): match without case.
        pattern = re.compile(rf"(?<![\w.-]){re.escape(module)}(?:::|\.|\b)", re.IGNORECASE)
        hit = next((t for t in titles if pattern.search(t)), None)
        if hit is not None:
            score[rule.repo] += 100
            reasons[rule.repo].append(f"process {hit[:60]!r}")
    for package in bundle.environment.packages:
        dist = by_dist.get(package.name.lower())
        if dist is not None and not any("package" in r for r in reasons[dist.repo]):
            score[dist.repo] += 10
            reasons[dist.repo].append(f"package {package.name} {package.version}".rstrip())
    frames: Counter[str] = Counter()
    for dump in bundle.dumps:
        for thread in dump.threads:
            for frame in thread.frames:
                head = _module_of(frame.file)
                if head in by_module:
                    frames[head] += 1
    for module, count in frames.items():
        repo = by_module[module].repo
        score[repo] += min(count, 9)
        reasons[repo].append(f"{count} frames in {module}/")
    if not score:
        return None

    def rank(repo: str) -> tuple[bool, int, str]:
        module = next(r.module for r in rules if r.repo == repo)
        return (module in _LIBRARIES, -score[repo], repo)

    best = min(score, key=rank)
    return Suggestion(key="upstream", value=[best], why="; ".join(reasons[best]))


def _module_of(path: str) -> str:
    """The top-level package of a frame's file: `.../site-packages/sglang/srt/x.py` -> sglang."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if "site-packages" in parts:
        index = parts.index("site-packages")
        return parts[index + 1] if index + 1 < len(parts) else ""
    return parts[0] if len(parts) > 1 else ""


def world_size(bundle: Bundle, ranks: Sequence[int] = ()) -> Suggestion | None:
    """The world size from the environment, the launch flags, or the ranks seen."""
    for var in bundle.environment.variables:
        if var.name in _WORLD_VARS and var.value.isdigit() and int(var.value) > 0:
            return Suggestion(
                key="world_size",
                value=int(var.value),
                why=f"{var.name}={var.value} in {var.source}",
            )
    for cmdline in bundle.environment.cmdlines:
        sizes: dict[str, int] = {}
        for flag in cmdline.flags:
            axis = _PARALLEL_FLAGS.get(flag.name)
            if axis and flag.value and flag.value.isdigit():
                sizes[axis] = int(flag.value)
        if sizes:
            product = 1
            for size in sizes.values():
                product *= size
            shown = " x ".join(f"{axis} {size}" for axis, size in sorted(sizes.items()))
            return Suggestion(key="world_size", value=product, why=f"{shown} on the command line")
    if ranks:
        top = max(ranks) + 1
        return Suggestion(
            key="world_size",
            value=top,
            why=f"ranks 0-{top - 1} seen ({len(set(ranks))} of them); more may have been lost",
        )
    return None


def globs(files: Sequence[tuple[str, EvidenceKind]]) -> list[Suggestion]:
    """A glob per folder, suffix and kind holding at least three files."""
    groups: dict[tuple[str, str, EvidenceKind], list[str]] = defaultdict(list)
    for rel, kind in files:
        path = PurePosixPath(rel)
        groups[(str(path.parent), path.suffix, kind)].append(rel)
    out = []
    for (folder, suffix, kind), members in sorted(groups.items(), key=lambda g: g[0][:2]):
        if len(members) < _GLOB_MIN:
            continue
        pattern = f"*{suffix}" if folder == "." else f"{folder}/*{suffix}"
        out.append(
            Suggestion(
                key="evidence",
                value=[pattern, kind.value],
                why=f"{len(members)} {kind.value} files in {folder}/",
            )
        )
    return out
