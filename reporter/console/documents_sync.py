"""`report sync --json`: what each repository's sync fetched.

Its rows are the sync's own records (`reporter.upstream.sync`: `SyncReport`, with its
`FixReport`), written as they are. It lives apart from `documents_upstream` because
importing the sync loads httpx and sqlite3, which `report config show` must not load.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from reporter.model.document import document
from reporter.upstream.sync import SyncReport


@document
class SyncDocument:
    """What each repository's sync fetched."""

    index: str
    repos: tuple[SyncReport, ...]
    notes: tuple[str, ...]


def sync_document(reports: Sequence[SyncReport], notes: Sequence[str], index: Path) -> SyncDocument:
    """`report sync --json`."""
    return SyncDocument(index=str(index), repos=tuple(reports), notes=tuple(notes))
