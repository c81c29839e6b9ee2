"""Opening an issue index file: a new file gets the schema, an older index is brought up to date.

Schema 1 and 2 are brought to schema 3 on open (`upgrade`): schema 1 gains schema 2's
tables (line counts rebuilt from the stored bodies), and both gain the `terms` and
`signals` columns, filled from the stored titles and bodies in the same transaction. An
index written by an older tokenizer (`schema.RETOKENIZABLE`) is re-tokenised
(`retokenize`): full-text rows, stored terms and document frequencies, from the stored
text, in one transaction. Tables are described in `index`.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

from reporter.core.errors import InputError
from reporter.upstream.extract import extract
from reporter.upstream.index_write import count_lines, derive, distinct
from reporter.upstream.schema import (
    ISSUE_COLUMNS_3,
    RETOKENIZABLE,
    SCHEMA,
    SCHEMA_2,
    SCHEMA_3,
    SCHEMA_VERSION,
    TOKENIZER_VERSION,
    UPGRADABLE,
)


def prepare(db: sqlite3.Connection, path: Path) -> None:
    """Create the schema in an empty file, or bring an older index up to date; raises
    `InputError` for another SQLite file or an index format this release cannot read."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    if "meta" in tables:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        schema, tokenizer = meta.get("schema"), meta.get("tokenizer")
        if tokenizer in RETOKENIZABLE and schema in (UPGRADABLE | {SCHEMA_VERSION}):
            if schema in UPGRADABLE:
                upgrade(db)
            retokenize(db)
            return
        if schema in UPGRADABLE and tokenizer == TOKENIZER_VERSION:
            upgrade(db)
            return
        if schema != SCHEMA_VERSION or tokenizer != TOKENIZER_VERSION:
            raise InputError(
                f"{path}: issue index format {schema}/{tokenizer}, "
                f"this reporter writes {SCHEMA_VERSION}/{TOKENIZER_VERSION}",
                tip="export it with the older reporter, or delete it and sync again",
            )
        if "vector_packs" not in tables or "body_vectors" not in tables:
            # Added after the schema's first builds (derived data, empty is right).
            db.executescript(f"BEGIN IMMEDIATE;{SCHEMA_2}{SCHEMA_3}COMMIT;")
        return
    if tables - {"sqlite_sequence"}:
        raise InputError(
            f"{path}: an SQLite file, but not a reporter issue index",
            tip="pass --db with a new or existing index file",
        )
    # executescript commits any open transaction first, so the script brings its own.
    db.executescript(
        f"BEGIN IMMEDIATE;{SCHEMA}{SCHEMA_2}{SCHEMA_3}"
        f"INSERT INTO meta(key, value) VALUES ('schema', '{SCHEMA_VERSION}'), "
        f"('tokenizer', '{TOKENIZER_VERSION}');COMMIT;"
    )


def upgrade(db: sqlite3.Connection) -> None:
    """Schema 1 or 2 -> 3 in one transaction: schema 1 gains schema 2's tables and
    its line-shape counts; both gain schema 3's table and `issues` columns, filled
    from the stored titles and bodies."""
    columns = {str(row[1]) for row in db.execute("PRAGMA table_info(issues)")}
    from_schema_1 = "line_df" not in {
        str(row[0]) for row in db.execute("SELECT name FROM sqlite_master")
    }
    db.executescript(f"BEGIN IMMEDIATE;{SCHEMA_2}{SCHEMA_3}")
    try:
        for name, kind in ISSUE_COLUMNS_3:
            if name not in columns:
                db.execute(f"ALTER TABLE issues ADD COLUMN {name} {kind}")
        rows = db.execute("SELECT id, repo, title, body, stacks FROM issues WHERE is_pull = 0")
        df: Counter[str] = Counter()
        for rowid, repo, title, body, stacks in rows.fetchall():
            if from_schema_1:
                count_lines(db, str(repo), str(body), +1)
            found, _, _ = derive(str(title), str(body))
            # Schema 3 marks native frames (extract.NATIVE_MARK): extract again.
            fresh = json.dumps([list(k) for k in extract(str(body)).stacks])
            if fresh != stacks:
                db.execute("DELETE FROM issue_frames WHERE issue = ?", (int(rowid),))
                keys = sorted({k for stack in json.loads(fresh) for k in stack})
                db.executemany(
                    "INSERT INTO issue_frames(key, issue) VALUES (?, ?)",
                    [(key, int(rowid)) for key in keys],
                )
            db.execute(
                "UPDATE issues SET terms = ?, signals = ?, stacks = ? WHERE id = ?",
                (found.terms, found.signals, fresh, int(rowid)),
            )
            df.update(distinct(found.terms))
        db.execute("DELETE FROM term_df")
        db.executemany("INSERT INTO term_df(term, n) VALUES (?, ?)", df.items())
        db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def retokenize(db: sqlite3.Connection) -> None:
    """Every derived term again with this release's tokenizer, in one transaction:
    the full-text rows (a contentless table is emptied whole, since its old rows can
    only be deleted with the old tokens), the stored terms and signals, and the
    document frequencies; then the tokenizer version is recorded."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT INTO issue_text(issue_text) VALUES ('delete-all')")
        rows = db.execute("SELECT id, title, body FROM issues WHERE is_pull = 0")
        df: Counter[str] = Counter()
        for rowid, title, body in rows.fetchall():
            found, title_text, body_text = derive(str(title), str(body))
            db.execute(
                "INSERT INTO issue_text(rowid, title, body) VALUES (?, ?, ?)",
                (int(rowid), title_text, body_text),
            )
            db.execute(
                "UPDATE issues SET terms = ?, signals = ? WHERE id = ?",
                (found.terms, found.signals, int(rowid)),
            )
            df.update(distinct(found.terms))
        db.execute("DELETE FROM term_df")
        db.executemany("INSERT INTO term_df(term, n) VALUES (?, ?)", df.items())
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('tokenizer', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (TOKENIZER_VERSION,),
        )
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
