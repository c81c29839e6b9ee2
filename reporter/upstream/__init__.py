"""Upstream issues: a local SQLite index of GitHub issues and explainable duplicate search.

Modules, from the wire inwards::

    github.py   httpx client: listing with Link/ETag, search, rate limits, retries
    index.py    SQLite + FTS5 store, sync state per repo, JSONL import/export
    extract.py  stacks and error lines pasted in issue text (reuses the evidence parsers)
    terms.py    the one tokenizer shared by the index, queries and ranking
    query.py    a `Query` from a bundle's analysis or a free text; GitHub search strings
    rank.py     candidate scoring with reasons (text, BM25, stack, error similarity)
    search.py   use cases: sync, import, export, search-upstream
"""
