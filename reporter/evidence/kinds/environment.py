"""The entries of the environment files (`ENVIRONMENT_KINDS`: `/proc` environ and cmdline
copies, package lists, check_env / collect_env, nvidia-smi, source hashes); the parsers
and sniffers are `reporter.evidence.env`.

One family, sniffed by three detectors its entries share (asked once, each naming one of
the family): on the whole text, a NUL-separated `/proc` copy or pip's JSON (final, even
when no kind is found: such a text is nothing else); among the distinctive headers,
check_env, collect_env and nvidia-smi; among the generic shapes, sha256sum, pip freeze /
list, KEY=VALUE lines and a command line. Their environment merges across the files
(`fold.CORE_MERGES`).
"""

from __future__ import annotations

from reporter.evidence import env
from reporter.evidence.kinds.interface import KindEntry, Read, Sniff, SniffStep
from reporter.evidence.kinds.sniffing import QUICK_CHARS
from reporter.model import ENVIRONMENT_KINDS, EvidenceKind, ParseResult


def whole(text: str) -> EvidenceKind | None:
    """A `/proc` copy (more NULs than lines: one stray NUL in a dump is not one) or pip's
    JSON: its kind, or UNKNOWN; None for any other text."""
    quick = text[:QUICK_CHARS]
    # `in` first: a dump has no NUL, and finding none is a fast scan where counting is not.
    nuls = quick.count("\x00") if "\x00" in quick else 0
    if (nuls > 0 and nuls >= quick.count("\n")) or (
        quick.lstrip("\ufeff \t\r\n").startswith("[") and env.looks_like_pip_json(quick)
    ):
        return env.sniff_distinctive(text)
    return None


def _known(kind: EvidenceKind) -> EvidenceKind | None:
    return None if kind is EvidenceKind.UNKNOWN else kind


SNIFFS: tuple[Sniff, ...] = (
    Sniff(SniffStep.WHOLE, whole),
    Sniff(SniffStep.DISTINCTIVE, lambda head: _known(env.sniff_distinctive(head))),
    Sniff(SniffStep.GENERIC, lambda head: _known(env.sniff_generic(head))),
)


# The environment scripts' outputs: the upstream draft quotes them whole.
_SCRIPTS = frozenset({EvidenceKind.SGLANG_CHECK_ENV, EvidenceKind.VLLM_COLLECT_ENV})


def _entry(kind: EvidenceKind) -> KindEntry:
    def parse(text: str, read: Read) -> ParseResult:
        return env.parse(kind, text, source=read.source)

    return KindEntry(kind=kind, parse=parse, sniffs=SNIFFS, kept_whole=kind in _SCRIPTS)


ENTRIES: tuple[KindEntry, ...] = tuple(_entry(kind) for kind in sorted(ENVIRONMENT_KINDS))
