"""Moved to `reporter.console.schemas` (generated from the document types); this name
stays for one release."""

from __future__ import annotations

from reporter.console.schemas import DOCUMENTS, SCHEMAS, Schema

__all__ = ["DOCUMENTS", "SCHEMAS", "Schema"]
