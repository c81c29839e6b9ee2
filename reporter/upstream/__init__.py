"""Upstream issues: a local index and duplicate search; redacted drafts; filing without doubles.

Modules, from the wire inwards::

    auth.py     which GitHub host, and which token belongs to it (the gh CLI's rules)
    github.py   httpx client: listing with Link/ETag, search, rate limits, retries
    records.py  issue records, sync state, fixes; GitHub API and JSONL conversion
    schema.py   the index's SQL tables and format versions
    index.py    SQLite + FTS5 store, sync state per repo, JSONL import
    index_write.py  one issue's rows in and out, with the terms derived at write time
    migrate.py  a new index file's schema; older indexes brought up to date on open
    sync.py     listings into the index (resumable, ETag), fixes of closed issues
    fixes.py    "fixed in vX": the change that closed an issue and its first release
    boilerplate.py  issue-form lines many issues of a repo share, learned from the index
    extract.py  stacks and error lines pasted in issue text (reuses the evidence parsers)
    terms.py    the one tokenizer shared by the index, queries and ranking
    signals.py  what carries over between trackers: exception types, versions, failure classes
    refs.py     issue references in a text: `#N`, `owner/repo#N`, issue and pull URLs
    query.py    a `Query` from a bundle's analysis or a free text; GitHub search strings
    rank.py     candidate scoring with reasons (text, BM25, stack, error similarity)
    semantic.py the semantic model: static word embeddings from a wheel
    titles.py   title vectors of the semantic model: stored, and the nearest titles
    search.py   the duplicate search over the index, and its JSON document
    triage.py   likely duplicates of tracker issues, as a table or a comment
    redact.py   secrets and identifiers -> consistent placeholders, with a report
    forms.py    GitHub issue forms: parse, pick the bug form, field roles
    draft.py    the upstream draft and the "+1 with evidence" comment (pure)
    focus.py    a draft's evidence narrowed to the hung instance: stacks, dumps, timeline
    reproduction.py  a draft's reproduction field: the launch line, or what would capture it
    filing.py   filing's calls over github.py's client: issues, comments, the marker lookup
    policy.py   one retry/backoff and rate-limit policy for every GitHub call
    story.py    a draft's title, first sentence and reproduction in the engine's words
    publish.py  the filing plan: duplicate gate, canonical issue, send never twice

The use cases (default paths, settings, the forms cache, `upstream.toml`) are in
`reporter.app.issues` and `reporter.app.filing`.
"""
