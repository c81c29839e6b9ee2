"""The entry of PyTorch's Flight Recorder dumps (kind `flight-recorder`); the parser is
`reporter.evidence.flight_recorder`.

Sniffed on the whole text: a JSON object with `entries`, `pg_config` or `pg_status` near
its start (after the environment's `/proc` copies, before py-spy's JSON). Its binary form
is the pickled dump, the only binary evidence: any pickle is taken for one, and one that
holds code is refused by the parser, loudly. The manifest's rank wins over the one in the
file's name. Its traces merge with the NCCL watchdog's from logs (`fold.CORE_MERGES`).
"""

from __future__ import annotations

from reporter.evidence import flight_recorder
from reporter.evidence.kinds.interface import BinaryForm, KindEntry, SniffStep, sniffed
from reporter.evidence.kinds.sniffing import QUICK_CHARS
from reporter.model import EvidenceKind


def looks_like(text: str) -> bool:
    """The JSON form of a dump, told from the text's first 4 KiB."""
    return flight_recorder.sniff_text(text[:QUICK_CHARS])


ENTRY = KindEntry(
    kind=EvidenceKind.FLIGHT_RECORDER,
    parse=lambda text, read: flight_recorder.parse_json(text, source=read.source, rank=read.rank),
    sniffs=(sniffed(EvidenceKind.FLIGHT_RECORDER, SniffStep.WHOLE, looks_like),),
    binary=BinaryForm(
        magic=2,
        looks_like=flight_recorder.sniff_bytes,
        parse=lambda data, read: flight_recorder.parse_pickle(
            data, source=read.source, rank=read.rank
        ),
    ),
)
