"""The write side of the issue index: one issue's rows in and out, over an open connection.

`write` stores issue records (insert or replace by repo and number) with everything
derived from their text at write time: the full-text row, the informative frames, the
line-shape counts (`boilerplate.line_key`), the stored terms and signals (`derive`) and
the document frequencies (`term_df`); `remove` takes one issue's rows out again. Both run
inside the caller's transaction (`index.Index.transaction`); `migrate` uses the same
derivations when it brings an older index up to date.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from reporter.upstream import boilerplate, signals, terms
from reporter.upstream.extract import extract
from reporter.upstream.records import IssueRecord, SyncState

# Text beyond this is stored but not indexed: pasted logs add length, not meaning.
MAX_INDEXED_BODY = 64 * 1024


@dataclass(slots=True)
class Batch:
    """Counts of one write transaction, for callers that report progress."""

    written: int = 0
    unchanged: int = 0
    ids: list[int] = field(default_factory=list)


def fts_values(title: str, body: str) -> tuple[str, str]:
    return terms.normalized(title), terms.normalized(body[:MAX_INDEXED_BODY])


@dataclass(frozen=True, slots=True)
class Derived:
    """What an issue's text gives at write time: its title's tokens in order, a tab, its
    distinct terms (title and body, space-joined, sorted); and its signals JSON."""

    terms: str
    signals: str


def derive(title: str, body: str) -> tuple[Derived, str, str]:
    """The stored terms and signals of an issue, and its FTS5 title and body values (the
    same tokens: one tokenising serves both)."""
    title_tokens = terms.tokens(title)
    body_tokens = terms.tokens(body[:MAX_INDEXED_BODY])
    distinct = sorted(set(title_tokens) | set(body_tokens))
    found = signals.extract_signals(title, body)
    return (
        Derived(terms=" ".join(title_tokens) + "\t" + " ".join(distinct), signals=found.to_json()),
        " ".join(title_tokens),
        " ".join(body_tokens),
    )


def distinct(stored: str) -> list[str]:
    """The distinct terms of a stored `terms` value (after the title part)."""
    return stored.partition("\t")[2].split()


def count_lines(db: sqlite3.Connection, repo: str, body: str, delta: int) -> None:
    """Move the line-shape counts (`line_df`) of `repo` by one issue body's lines."""
    keys = boilerplate.line_keys(body)
    if not keys:
        return
    if delta > 0:
        db.executemany(
            "INSERT INTO line_df(repo, key, n) VALUES (?, ?, 1) "
            "ON CONFLICT(repo, key) DO UPDATE SET n = n + 1",
            [(repo, key) for key in keys],
        )
    else:
        db.executemany(
            "UPDATE line_df SET n = n - 1 WHERE repo = ? AND key = ?",
            [(repo, key) for key in keys],
        )
        db.execute("DELETE FROM line_df WHERE repo = ? AND n <= 0", (repo,))


def put_state(db: sqlite3.Connection, state: SyncState) -> None:
    """Insert or replace the sync state of `state.repo`."""
    db.execute(
        "INSERT INTO sync_state(repo, since, etag, resume_since, complete, synced_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(repo) DO UPDATE SET since = excluded.since, "
        "etag = excluded.etag, resume_since = excluded.resume_since, "
        "complete = excluded.complete, synced_at = excluded.synced_at",
        (
            state.repo,
            state.since,
            state.etag,
            state.resume_since,
            int(state.complete),
            state.synced_at,
        ),
    )


def write(db: sqlite3.Connection, records: Iterable[IssueRecord]) -> Batch:
    """Insert or replace `records` by repo and number in the caller's transaction, with
    their full-text, frame, line and term counts; a record equal to the stored one is
    skipped. The caller empties what it derived from the stored rows when
    `Batch.written`."""
    batch = Batch()
    # Document frequencies move by batch: one write per distinct term, not per issue.
    df: Counter[str] = Counter()
    for record in records:
        old = db.execute(
            "SELECT id, title, body, is_pull, updated_at, state, state_reason, labels, terms "
            "FROM issues WHERE repo = ? AND number = ?",
            (record.repo, record.number),
        ).fetchone()
        labels = json.dumps(list(record.labels))
        if old is not None:
            if (
                old[1] == record.title
                and old[2] == record.body
                and bool(old[3]) == record.is_pull
                and old[4] == record.updated_at
                and old[5] == record.state
                and old[6] == record.state_reason
                and old[7] == labels
            ):
                batch.unchanged += 1
                continue
            remove(db, int(old[0]), record.repo, old[1], old[2], bool(old[3]))
            if not old[3]:
                stored = old[8] if old[8] is not None else derive(old[1], old[2])[0].terms
                df.subtract(distinct(stored))
        found = extract(record.body) if not record.is_pull else None
        stacks = found.stacks if found else ()
        errors = found.errors if found else ()
        body = "" if record.is_pull else record.body
        derived, title_text, body_text = derive(record.title, body)
        cursor = db.execute(
            "INSERT INTO issues(id, repo, number, is_pull, title, body, state, state_reason, "
            "labels, created_at, updated_at, closed_at, comments, url, stacks, errors, "
            "terms, signals) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                None if old is None else int(old[0]),
                record.repo,
                record.number,
                int(record.is_pull),
                record.title,
                body,
                record.state,
                record.state_reason,
                labels,
                record.created_at,
                record.updated_at,
                record.closed_at,
                record.comments,
                record.url,
                json.dumps([list(s) for s in stacks]),
                json.dumps(list(errors)),
                None if record.is_pull else derived.terms,
                None if record.is_pull else derived.signals,
            ),
        )
        rowid = int(cursor.lastrowid or 0)
        if not record.is_pull:
            df.update(distinct(derived.terms))
            db.execute(
                "INSERT INTO issue_text(rowid, title, body) VALUES (?, ?, ?)",
                (rowid, title_text, body_text),
            )
            count_lines(db, record.repo, body, +1)
            keys = sorted({key for stack in stacks for key in stack})
            db.executemany(
                "INSERT INTO issue_frames(key, issue) VALUES (?, ?)",
                [(key, rowid) for key in keys],
            )
        batch.written += 1
        batch.ids.append(rowid)
    changed = [(term, n) for term, n in df.items() if n]
    if changed:
        db.executemany(
            "INSERT INTO term_df(term, n) VALUES (?, ?) "
            "ON CONFLICT(term) DO UPDATE SET n = n + excluded.n",
            changed,
        )
        if any(n < 0 for _, n in changed):
            db.execute("DELETE FROM term_df WHERE n <= 0")
    if batch.written:
        # New or changed issues need vectors: `search.embed_missing` looks again.
        db.execute("DELETE FROM meta WHERE key IN ('vectors_complete', 'body_vectors_complete')")
    return batch


def remove(
    db: sqlite3.Connection, rowid: int, repo: str, title: str, body: str, is_pull: bool
) -> None:
    """Delete one issue row with its full-text, frame, line and vector entries."""
    if not is_pull:
        count_lines(db, repo, body, -1)
        db.execute("DELETE FROM issue_vectors WHERE issue = ?", (rowid,))
        db.execute("DELETE FROM body_vectors WHERE issue = ?", (rowid,))
        db.execute("DELETE FROM vector_packs WHERE repo = ?", (repo,))
        title_text, body_text = fts_values(title, body)
        # A contentless table forgets a row only when given the values it indexed.
        db.execute(
            "INSERT INTO issue_text(issue_text, rowid, title, body) VALUES ('delete', ?, ?, ?)",
            (rowid, title_text, body_text),
        )
        db.execute("DELETE FROM issue_frames WHERE issue = ?", (rowid,))
    db.execute("DELETE FROM issues WHERE id = ?", (rowid,))
