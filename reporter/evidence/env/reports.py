"""The runtimes' own environment reports: `python3 -m sglang.check_env` and vLLM's
`collect_env.py` (old `vLLM Version: 0.6.6` and sectioned `vLLM Version   : 0.9.1` layouts,
`[pip3] torch==2.7.0` lines and its environment-variable tail)."""

from __future__ import annotations

import re

from reporter.evidence._text import Unrecognised, clean_lines
from reporter.evidence.env.grammar import FREEZE_PIN_RE, VERSION_RE, normalise_package
from reporter.model import EnvFact, Environment, EnvVar, Gpu, Location, Package, ParseResult

_PIP_TAG_RE = re.compile(r"\[(pip3?|conda)\]\s+(.*)\Z")
_GPU_LINE_RE = re.compile(r"GPU ([\d, ]++):\s*+(\S.*)\Z")
_SECTION_RULE_RE = re.compile(r"={5,}\s*\Z")
_ENV_LINE_RE = re.compile(r"([A-Z_][A-Z0-9_]*)=(.*)\Z")
# check_env prints these names for packages whose import name differs from the PyPI one.
_CHECK_ENV_PACKAGES = {"pytorch": "torch", "sgl_kernel": "sgl-kernel", "flashinfer": "flashinfer"}
# check_env keys that are facts even though the value looks like a version.
_CHECK_ENV_FACTS = frozenset(
    ("python", "cuda driver version", "nvcc", "cuda_home", "ulimit soft", "hypervisor vendor")
)


def parse_sglang_check_env(text: str, *, source: str) -> ParseResult:
    """`python3 -m sglang.check_env`: package versions, GPUs and `key: value` facts.

    The `NVIDIA Topology:` matrix and its legend are kept as one fact per block.
    """
    return _parse_key_values(text, source, what="`sglang.check_env` output", versions=True)


def parse_vllm_collect_env(text: str, *, source: str) -> ParseResult:
    """vLLM `collect_env.py`: `key : value` facts, `[pip3]` / `[conda]` packages,
    GPUs, the vLLM version and the environment variables it lists at the end."""
    return _parse_key_values(text, source, what="vLLM `collect_env` output", versions=False)


def _parse_key_values(text: str, source: str, *, what: str, versions: bool) -> ParseResult:
    """`key: value` facts and the packages among them.

    With `versions`, any `name: 1.2.3` line is a package (check_env's style); else
    only the `[pip3]` / `[conda]` lines and the PyTorch / vLLM version lines are.
    """
    facts: list[EnvFact] = []
    packages: list[Package] = []
    variables: list[EnvVar] = []
    gpus: list[Gpu] = []
    odd = Unrecognised(source, what)
    block: tuple[str, int, list[str]] | None = None

    def close() -> None:
        nonlocal block
        if block is not None:
            key, number, body = block
            while body and not body[-1].strip():
                body.pop()
            while body and not body[0].strip():
                body.pop(0)
            if body:
                facts.append(
                    EnvFact(
                        key=key, value="\n".join(body), source=Location(path=source, line=number)
                    )
                )
            block = None

    lines = clean_lines(text)
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = Location(path=source, line=number)
        if not line or line == "Collecting environment information...":
            if block is not None:
                block[2].append("")
            continue
        if _SECTION_RULE_RE.match(line):
            close()
            continue
        following = lines[number].strip() if number < len(lines) else ""
        if _SECTION_RULE_RE.match(following) and ":" not in line and "=" not in line:
            # A section title between two rules: `System Info`, `Environment Variables`.
            continue
        tagged = _PIP_TAG_RE.match(line)
        if tagged:
            close()
            package = _tagged_package(tagged.group(1), tagged.group(2), where)
            if package is not None:
                packages.append(package)
            continue
        env = _ENV_LINE_RE.match(line)
        if env and not raw[:1].isspace():
            close()
            variables.append(EnvVar(name=env.group(1), value=env.group(2), source=where))
            continue
        gpu = _GPU_LINE_RE.match(line)
        if gpu and not raw[:1].isspace():
            # `GPU 0,1,2,3: NVIDIA H100 80GB HBM3` names several GPUs at once.
            for index in (int(i) for i in re.findall(r"\d+", gpu.group(1))):
                gpus.append(Gpu(index=index, name=gpu.group(2).rstrip(), source=where))
            continue
        pair = _key_value(line) if not raw[:1].isspace() or block is None else None
        if pair and not ("\t" in raw and block is not None):
            key, value = pair
            close()
            if not value:
                block = (key, number, [])
                continue
            package = _version_fact(key, value, where, generic=versions)
            if package is not None:
                packages.append(package)
            else:
                facts.append(EnvFact(key=key, value=value, source=where))
            continue
        if block is not None:
            block[2].append(raw.rstrip())
            continue
        odd.add(number, raw)
    close()
    odd.flush()
    # The first mention wins: `PyTorch version : 2.8.0+cu128` says more than `[pip3] torch==2.8.0`.
    unique: dict[str, Package] = {}
    for package in packages:
        unique.setdefault(package.name, package)
    environment = Environment(
        variables=tuple(variables),
        packages=tuple(unique.values()),
        facts=tuple(facts),
        gpus=tuple(gpus),
    )
    return ParseResult(environment=environment, warnings=tuple(odd.warnings))


def _tagged_package(tool: str, rest: str, where: Location) -> Package | None:
    """`[pip3] torch==2.7.0` or `[conda] torch 2.7.0 py3.12_cuda12.6 pytorch`."""
    if tool.startswith("pip"):
        pin = FREEZE_PIN_RE.fullmatch(rest.strip())
        if pin:
            return Package(name=normalise_package(pin.group(1)), version=pin.group(2), source=where)
        return None
    parts = rest.split()
    if len(parts) >= 2 and VERSION_RE.match(parts[1]):
        return Package(
            name=normalise_package(parts[0]), version=parts[1], origin="conda", source=where
        )
    return None


def _key_value(line: str) -> tuple[str, str] | None:
    """`Key: value` (or `Key:` opening a block): the key before the first colon, with no
    `=`, `[` or `]` in it; the value after whitespace, or nothing. Two `str` operations,
    where a lazy pattern retried its tail at every character of a long line."""
    key, colon, rest = line.partition(":")
    if not colon or not key.strip() or any(c in key for c in "=[]"):
        return None
    if rest and not rest[0].isspace():
        return None
    return key.strip(), rest.strip()


def _version_fact(key: str, value: str, where: Location, *, generic: bool) -> Package | None:
    """`sglang: 0.5.2` is a package (when `generic`); `CUDA available: True` is not."""
    lowered = key.lower()
    if lowered in _CHECK_ENV_FACTS:
        return None
    if lowered in ("vllm version", "pytorch version"):
        name = "vllm" if lowered.startswith("vllm") else "torch"
        return Package(name=name, version=value.split()[0], source=where)
    if not generic or " " in key or not VERSION_RE.match(value.split()[0] if value.split() else ""):
        return None
    name = _CHECK_ENV_PACKAGES.get(lowered, lowered)
    return Package(name=normalise_package(name), version=value.split()[0], source=where)
