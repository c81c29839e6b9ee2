"""The SQL tables of the upstream issue index (see `index` for what each holds), and versions.

`SCHEMA` builds a new index; `SCHEMA_2` holds the tables schema 2 added and `SCHEMA_3`
those schema 3 added, created on open in older indexes too (`index.Index` upgrades in
place; schema 3's new `issues` columns are added there and filled from stored text).
"""

from __future__ import annotations

SCHEMA_VERSION = "3"
# Older schemas this version upgrades in place on open.
UPGRADABLE = frozenset({"1", "2"})
# Schema 3's columns of `issues` (name, SQL type), added by ALTER TABLE to older indexes:
# the issue's distinct search terms (`terms.tokens`, space-joined) and its signals JSON
# (`signals.Signals.to_json`), found once at write time so a query never re-tokenises.
ISSUE_COLUMNS_3 = (("terms", "TEXT"), ("signals", "TEXT"))
# Bump when terms.tokens() changes: contentless FTS rows are deleted by re-tokenizing.
# 1: the light suffix stemmer; 2: English Snowball (PyStemmer).
TOKENIZER_VERSION = "2"
# Older tokenizers whose indexes are re-tokenised on open (every stored term, the
# full-text rows and the document frequencies are derived from the stored text).
RETOKENIZABLE = frozenset({"1"})


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS issues(
    id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL COLLATE NOCASE,
    number INTEGER NOT NULL,
    is_pull INTEGER NOT NULL DEFAULT 0,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    state_reason TEXT,
    labels TEXT NOT NULL DEFAULT '[]',
    created_at TEXT,
    updated_at TEXT,
    closed_at TEXT,
    comments INTEGER NOT NULL DEFAULT 0,
    url TEXT,
    stacks TEXT NOT NULL DEFAULT '[]',
    errors TEXT NOT NULL DEFAULT '[]',
    terms TEXT,
    signals TEXT,
    UNIQUE(repo, number)
);
CREATE INDEX IF NOT EXISTS issues_by_repo ON issues(repo, is_pull);
CREATE VIRTUAL TABLE IF NOT EXISTS issue_text USING fts5(
    title, body, content='', tokenize='unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS issue_terms USING fts5vocab(issue_text, 'row');
CREATE TABLE IF NOT EXISTS issue_frames(
    key TEXT NOT NULL,
    issue INTEGER NOT NULL,
    PRIMARY KEY(key, issue)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS issue_frames_by_issue ON issue_frames(issue);
CREATE TABLE IF NOT EXISTS sync_state(
    repo TEXT PRIMARY KEY COLLATE NOCASE,
    since TEXT,
    etag TEXT,
    resume_since TEXT,
    complete INTEGER NOT NULL DEFAULT 0,
    synced_at TEXT
);
"""

# Added by schema 2 (created on open in schema 1 indexes too).
SCHEMA_2 = """
CREATE TABLE IF NOT EXISTS line_df(
    repo TEXT NOT NULL COLLATE NOCASE,
    key INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY(repo, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS issue_vectors(
    issue INTEGER PRIMARY KEY,
    repo TEXT NOT NULL COLLATE NOCASE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS issue_vectors_by_repo ON issue_vectors(repo, model);
CREATE TABLE IF NOT EXISTS vector_packs(
    repo TEXT NOT NULL COLLATE NOCASE,
    model TEXT NOT NULL,
    ids BLOB NOT NULL,
    vectors BLOB NOT NULL,
    PRIMARY KEY(repo, model)
);
CREATE TABLE IF NOT EXISTS issue_fixes(
    repo TEXT NOT NULL COLLATE NOCASE,
    number INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    url TEXT,
    sha TEXT,
    tag TEXT,
    checked_at TEXT,
    PRIMARY KEY(repo, number)
) WITHOUT ROWID;
"""

# Added by schema 3: the body's vector from the semantic model (chunked, see
# `titles.body_embedding_text`), as issue_vectors holds the title's; and each term's
# document frequency, kept at write time.
SCHEMA_3 = """
CREATE TABLE IF NOT EXISTS body_vectors(
    issue INTEGER PRIMARY KEY,
    repo TEXT NOT NULL COLLATE NOCASE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS body_vectors_by_repo ON body_vectors(repo, model);
CREATE TABLE IF NOT EXISTS term_df(
    term TEXT PRIMARY KEY,
    n INTEGER NOT NULL
) WITHOUT ROWID;
"""
