"""Upstream issues: a local index and duplicate search; redacted drafts; filing without doubles.

Modules, from the wire inwards::

    github.py   httpx client: listing with Link/ETag, search, rate limits, retries
    index.py    SQLite + FTS5 store, sync state per repo, JSONL import/export
    extract.py  stacks and error lines pasted in issue text (reuses the evidence parsers)
    terms.py    the one tokenizer shared by the index, queries and ranking
    query.py    a `Query` from a bundle's analysis or a free text; GitHub search strings
    rank.py     candidate scoring with reasons (text, BM25, stack, error similarity)
    search.py   use cases: sync, import, export, search-upstream
    redact.py   secrets and identifiers -> consistent placeholders, with a report
    forms.py    GitHub issue forms: parse, pick the bug form, field roles
    draft.py    the upstream draft and the "+1 with evidence" comment (pure)
    filing.py   the PyGithub adapter: issues and comments, failures sorted for retrying
    publish.py  use cases: upstream draft, upstream file (duplicate gate, never twice)
"""
