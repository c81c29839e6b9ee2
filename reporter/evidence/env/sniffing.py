"""Tell the environment evidence kinds apart from the first 64 KiB of a file.

`sniff_distinctive` looks for markers no other evidence has; `sniff_generic` for the
shape of the lines. `reporter.evidence.sniff` runs the two halves before and after the
metric and log sniffers.
"""

from __future__ import annotations

import re

from reporter.evidence.env.grammar import (
    ASSIGN_RE,
    DASHES_RE,
    FREEZE_PIN_RE,
    FREEZE_URL_RE,
    LIST_HEADER_RE,
    PY_RE,
    SHA_LINE_RE,
    SNIFF_CHARS,
    looks_like_pip_json,
)
from reporter.model import EvidenceKind

_LOGFMT_PAIR_RE = re.compile(r"\s[a-z_][a-z0-9_.]*=")


def sniff(text: str) -> EvidenceKind:
    """The environment evidence kind of `text`, or UNKNOWN; looks at the first 64 KiB."""
    kind = sniff_distinctive(text)
    return kind if kind is not EvidenceKind.UNKNOWN else sniff_generic(text)


def sniff_distinctive(text: str) -> EvidenceKind:
    """Kinds with unmistakable markers: /proc NUL copies, check_env, collect_env, nvidia-smi,
    `pip list --format=json`. Safe to try before the metric and log sniffers."""
    head = text[:SNIFF_CHARS].lstrip("\ufeff")
    if "\x00" in head:
        return _sniff_nul(head)
    if "Collecting environment information" in head[:2000] or (
        "vLLM Version" in head and "PyTorch version" in head
    ):
        return EvidenceKind.VLLM_COLLECT_ENV
    if re.search(r"^CUDA available: ", head, re.M) and re.search(
        r"^(?:sglang|sgl_kernel|PyTorch): ", head, re.M
    ):
        return EvidenceKind.SGLANG_CHECK_ENV
    if "NVIDIA-SMI " in head and "Driver Version" in head:
        return EvidenceKind.NVIDIA_SMI
    first = next((line.strip() for line in head.split("\n") if line.strip()), "")
    fields = [f.strip() for f in first.split(",")]
    if (
        len(fields) > 1
        and any(f.startswith("name") for f in fields)
        and any(f.startswith(("memory.", "utilization.", "driver_version", "pci.")) for f in fields)
    ):
        return EvidenceKind.NVIDIA_SMI
    if looks_like_pip_json(head):
        return EvidenceKind.PACKAGES
    return EvidenceKind.UNKNOWN


def sniff_generic(text: str) -> EvidenceKind:
    """Kinds told by the shape of their lines: sha256sum, pip freeze / list, KEY=VALUE, a command."""
    head = text[:SNIFF_CHARS].lstrip("\ufeff")
    content = [line.rstrip("\r") for line in head.split("\n") if line.strip()]
    return _sniff_lines(content) if content else EvidenceKind.UNKNOWN


def _sniff_nul(head: str) -> EvidenceKind:
    entries = [e for e in head.split("\x00") if e]
    if not entries:
        return EvidenceKind.UNKNOWN
    # A control character other than tab / newline means binary data, not a /proc copy.
    if any(ord(c) < 32 and c not in "\t\n\r" for e in entries[:200] for c in e):
        return EvidenceKind.UNKNOWN
    assigned = sum(1 for e in entries if ASSIGN_RE.match(e.split("\n", 1)[0]))
    if assigned >= max(1, int(len(entries) * 0.8)) and ASSIGN_RE.match(entries[0]):
        return EvidenceKind.ENVIRON
    return EvidenceKind.CMDLINE


def _sniff_lines(content: list[str]) -> EvidenceKind:
    sample = content[:400]
    stripped = [line.strip() for line in sample]
    meaningful = [line for line in stripped if not line.startswith("#")]
    if not meaningful:
        return EvidenceKind.UNKNOWN
    if sum(1 for line in meaningful if SHA_LINE_RE.match(line)) >= max(1, len(meaningful) * 0.8):
        return EvidenceKind.SOURCE_HASHES
    if (
        len(meaningful) > 1
        and LIST_HEADER_RE.match(meaningful[0])
        and DASHES_RE.match(meaningful[1])
    ):
        return EvidenceKind.PACKAGES
    pins = sum(
        1
        for line in meaningful
        if FREEZE_PIN_RE.fullmatch(line) or FREEZE_URL_RE.fullmatch(line) or line.startswith("-e ")
    )
    if pins >= 2 and pins >= len(meaningful) * 0.6:
        return EvidenceKind.PACKAGES
    assigned = [line for line in meaningful if ASSIGN_RE.match(line)]
    # logfmt log lines (`time=... level=info msg=...`) carry more pairs per line.
    logfmt = sum(1 for line in assigned if len(_LOGFMT_PAIR_RE.findall(line)) >= 2)
    if len(assigned) >= 3 and len(assigned) >= len(meaningful) * 0.6 and logfmt * 2 < len(assigned):
        return EvidenceKind.ENVIRON
    if len(meaningful) <= 4 and all(_looks_like_command(line) for line in meaningful):
        return EvidenceKind.CMDLINE
    return EvidenceKind.UNKNOWN


def _looks_like_command(line: str) -> bool:
    """One shell command that runs a server with long options: `python3 -m x --tp 4`."""
    first = line.split(None, 1)[0] if line.split() else ""
    return (
        " --" in line
        and "=" not in first
        and not first.endswith(":")
        and (first.startswith(("/", "./")) or PY_RE.match(first) is not None or "." in first)
    )
