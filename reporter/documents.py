"""Moved to `reporter.console.documents` (typed document records); this name stays for
one release."""

from __future__ import annotations

from reporter.console.documents import MERGE_OUTCOMES, analysis_document, analysis_json, emit

__all__ = ["MERGE_OUTCOMES", "analysis_document", "analysis_json", "emit"]
