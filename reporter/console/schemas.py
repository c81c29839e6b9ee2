"""The JSON Schema (draft 2020-12) of every command's `--json` document, generated.

`DOCUMENTS` names each command's document class; `SCHEMAS` is their schemas, made by
`reporter.model.document.schema` from the classes themselves. They are the contract: the
tests validate every command's output against them, and `tools/gen_cli_docs.py` writes
them into `docs/cli.md` and the README's "JSON output" section. Objects allow keys beyond
the ones listed (new keys may be added; listed keys keep their meaning and type).
"""

from __future__ import annotations

from typing import Any

from reporter.analysis.export_context import Diff
from reporter.console import documents as report
from reporter.console import documents_auth, documents_sync
from reporter.console import documents_upstream as upstream
from reporter.console import documents_watch as watch

Schema = dict[str, Any]

DOCUMENTS: dict[str, type] = {
    "analyze": report.AnalyzeDocument,
    "draft": report.DraftDocument,
    "diff": Diff,
    "init": report.InitDocument,
    "lint": report.LintDocument,
    "status": report.StatusDocument,
    "preview": report.PreviewDocument,
    "search-upstream": upstream.SearchDocument,
    "sync": documents_sync.SyncDocument,
    "triage": upstream.TriageDocument,
    "index import": upstream.ImportDocument,
    "index export": upstream.ExportDocument,
    "collect": upstream.CollectDocument,
    "watch": watch.WatchEvent,
    "upstream draft": upstream.UpstreamDraftDocument,
    "upstream file": upstream.UpstreamFileDocument,
    "auth status": documents_auth.AuthDocument,
    "config show": upstream.ConfigDocument,
}

SCHEMAS: dict[str, Schema] = {name: report.document_schema(cls) for name, cls in DOCUMENTS.items()}
