"""The local index of upstream issues: one SQLite file with FTS5, frames and sync state.

Inputs: `IssueRecord`s (from GitHub's API, from JSONL, from tests). Outputs: candidate
ids for a query (BM25 over title and body, shared informative frames), stored issues
for ranking, document frequencies, and JSONL export. Tables::

    issues        one row per issue or pull request (repo, number, title, body, state,
                  state_reason, labels JSON, created/updated/closed times, comments, url,
                  stacks JSON [[frame key, ...], ...] innermost first, errors JSON)
    issue_text    FTS5, contentless: `terms.normalized(title)`, `terms.normalized(body)`
    issue_terms   fts5vocab over issue_text (kept for inspection; it counts a term's
                  documents by reading its whole posting list)
    term_df       per term: how many issues hold it, kept at write time from the
                  issues' stored terms (a key look-up per term at search time)
    issue_frames  (frame key, issue id): which issues show which informative frame
    sync_state    per repo: `since` and the ETag of the listing for it, resume point
    line_df       per repo and line shape (`boilerplate.line_key`): how many issues
                  carry it; shapes in many issues are issue-form boilerplate
    issue_vectors per issue: the title's unit vector from the semantic model (int8
                  blob, see `semantic.to_blob`) and the model's id; filled by `search.embed_missing`
    vector_packs  per repo and model: every issue id (int64) and vector of the repo in
                  two blobs, so a query reads one row per repo instead of one per issue;
                  rebuilt from issue_vectors when a vector of the repo changes
    issue_fixes   per closed issue: the change that fixed it (pull request or commit)
                  and the first release tag containing it, found at sync
    body_vectors  per issue: the body's unit vector (chunked, boilerplate left out),
                  packed per repo in vector_packs under the model id + `#body`
    meta          schema and tokenizer versions

`issues.terms` holds the issue's distinct search terms and `issues.signals` its
exception types, versions and failure classes (`signals.Signals`), both found at write
time: ranking reads them instead of tokenising candidates per query.

Older indexes are brought to schema 3, and re-tokenised when an older tokenizer wrote
them, on open (`migrate`). Writes go through `index_write`, which derives the stored terms,
signals, frames and line counts from each issue's text.

Every write is one transaction: an interrupted sync or import leaves the index as it
was after the last page that completed. Pull requests are stored (so links to them
resolve for `report lint`) but kept out of search.

JSONL, one object per line (import needs the first five keys; unknown keys are ignored)::

    {"repo": "sgl-project/sglang", "number": 4123, "title": "...", "body": "...",
     "state": "closed", "labels": ["bug"], "created_at": "2025-03-01T10:00:00Z",
     "updated_at": "2025-03-02T08:00:00Z", "url": "https://github.com/..."}
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reporter.core.errors import InputError, UsageError
from reporter.upstream import boilerplate, index_write, migrate, signals
from reporter.upstream.records import (
    Fix,
    IssueRecord,
    StoredIssue,
    SyncState,
    fix_from_json,
    record_from_json,
)
from reporter.upstream.records import (
    ImportResult as ImportResult,
)  # console/documents_upstream.py names it here

# BM25 column weights: a word in the title counts four times a word in the body.
TITLE_WEIGHT = 4.0
BODY_WEIGHT = 1.0


class Index:
    """A SQLite issue index at `path` (created when absent unless `create=False`).

    Satisfies `reporter.render.lint.IssueIndex` through `has()`. Use as a context
    manager or call `close()`.
    """

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self._repo_counts: list[tuple[str, int]] | None = None
        self._count: int | None = None
        self.memo: dict[Any, Any] = {}
        """Data derived from the stored rows (unpacked vectors), kept by callers until
        the next write, which empties it."""
        self._packs: dict[tuple[str, str], tuple[bytes, bytes]] = {}
        if not create and not path.is_file():
            raise UsageError(
                f"{path}: no such issue index",
                tip="run `report sync OWNER/NAME` or `report index import`",
            )
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(path), isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            migrate.prepare(self._db, path)
        except sqlite3.DatabaseError as err:
            raise InputError(
                f"{path}: not a usable issue index ({err})",
                tip="pass another --db, or delete the file and sync again",
            ) from err

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: everything inside commits together or not at all."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # --- reading -----------------------------------------------------------------

    def has(self, repo: str, number: int) -> bool:
        """True when `repo` (owner/name, any case) has issue or pull request `number`."""
        row = self._db.execute(
            "SELECT 1 FROM issues WHERE repo = ? AND number = ?", (repo, number)
        ).fetchone()
        return row is not None

    def count(self, repos: Sequence[str] = ()) -> int:
        """Issues (not pull requests) in the index, or in `repos` (the total is kept
        until the next write: every search asks for it)."""
        if not repos and self._count is not None:
            return self._count
        where, args = _repo_filter(repos, "repo")
        sql = f"SELECT COUNT(*) FROM issues WHERE is_pull = 0{where}"
        total = int(self._db.execute(sql, args).fetchone()[0])
        if not repos:
            self._count = total
        return total

    def repos(self) -> list[tuple[str, int]]:
        """Each repo with its issue count, by name (kept until the next write)."""
        if self._repo_counts is None:
            rows = self._db.execute(
                "SELECT repo, COUNT(*) FROM issues WHERE is_pull = 0 GROUP BY repo ORDER BY repo"
            ).fetchall()
            self._repo_counts = [(str(r), int(n)) for r, n in rows]
        return list(self._repo_counts)

    def records(
        self, repo: str | None = None, *, include_pulls: bool = False
    ) -> Iterator[IssueRecord]:
        """Stored issues (and pull requests with `include_pulls`) by repo and number."""
        where, args = _repo_filter([repo] if repo else [], "repo")
        pulls = "1 = 1" if include_pulls else "is_pull = 0"
        rows = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM issues WHERE {pulls}{where} ORDER BY repo, number",
            args,
        )
        for row in rows:
            yield _record(row)

    def text_candidates(
        self, match: str, repos: Sequence[str], limit: int
    ) -> list[tuple[int, float]]:
        """(issue id, BM25 score, higher is better) for an FTS5 MATCH expression, best first."""
        where, args = _repo_filter(repos, "i.repo")
        sql = (
            "SELECT t.rowid, bm25(issue_text, ?, ?) AS score FROM issue_text t "
            "JOIN issues i ON i.id = t.rowid "
            f"WHERE issue_text MATCH ? AND i.is_pull = 0{where} "
            "ORDER BY score, t.rowid LIMIT ?"
        )
        try:
            rows = self._db.execute(
                sql, (TITLE_WEIGHT, BODY_WEIGHT, match, *args, limit)
            ).fetchall()
        except sqlite3.OperationalError as err:
            raise UsageError(f"search terms {match!r} are not a valid query ({err})") from err
        # SQLite's bm25() is negative, more negative is better.
        return [(int(rowid), -float(score)) for rowid, score in rows]

    def frame_postings(self, keys: Iterable[str], repos: Sequence[str]) -> list[tuple[int, str]]:
        """(issue id, frame key) for every indexed issue that shows one of `keys`."""
        keys = sorted(set(keys))
        if not keys:
            return []
        where, args = _repo_filter(repos, "i.repo")
        marks = ",".join("?" * len(keys))
        sql = (
            "SELECT f.issue, f.key FROM issue_frames f JOIN issues i ON i.id = f.issue "
            f"WHERE f.key IN ({marks}) AND i.is_pull = 0{where} ORDER BY f.issue, f.key"
        )
        return [(int(i), str(k)) for i, k in self._db.execute(sql, (*keys, *args))]

    def frame_df(self, keys: Iterable[str]) -> dict[str, int]:
        """How many issues show each frame key (0 for unseen keys)."""
        sql = "SELECT key, COUNT(*) FROM issue_frames WHERE key IN ({marks}) GROUP BY key"
        return self._counts(sql, keys, chunk=500)

    def term_df(self, words: Iterable[str]) -> dict[str, int]:
        """How many issues contain each normalised term (0 for unseen terms)."""
        sql = "SELECT term, n FROM term_df WHERE term IN ({marks})"
        return self._counts(sql, words, chunk=500)

    def _counts(self, sql: str, keys: Iterable[str], *, chunk: int) -> dict[str, int]:
        """(key, count) rows of `sql` for `keys`, asked `chunk` keys at a time (SQLite
        bounds the parameters of one statement); 0 for a key no row names."""
        wanted = sorted(set(keys))
        found = dict.fromkeys(wanted, 0)
        for start in range(0, len(wanted), chunk):
            part = wanted[start : start + chunk]
            for key, n in self._db.execute(sql.format(marks=",".join("?" * len(part))), part):
                found[str(key)] = int(n)
        return found

    def documents(self) -> int:
        """Rows in the full-text index (issues, not pull requests)."""
        return int(self._db.execute("SELECT COUNT(*) FROM issues WHERE is_pull = 0").fetchone()[0])

    def stored(self, ids: Iterable[int]) -> dict[int, StoredIssue]:
        """The stored issues with these ids."""
        wanted = sorted(set(ids))
        out: dict[int, StoredIssue] = {}
        # SQLite's default limit on bound parameters is well above this chunk.
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = (
                f"SELECT id, stacks, errors, terms, signals, {_RECORD_COLUMNS} FROM issues "
                f"WHERE id IN ({marks})"
            )
            for row in self._db.execute(sql, chunk):
                # Most issues have no stack and no error: skip the JSON parser for them.
                stacks = (
                    ()
                    if row[1] == "[]"
                    else tuple(tuple(str(k) for k in s) for s in json.loads(row[1]))
                )
                errors = () if row[2] == "[]" else tuple(str(e) for e in json.loads(row[2]))
                record = _record(row[5:])
                stored_terms = row[3]
                if stored_terms is None:  # written by an older reporter mid-upgrade
                    found, _, _ = index_write.derive(record.title, record.body)
                    stored_terms, stored_signals = found.terms, found.signals
                else:
                    stored_signals = row[4]
                title_part, _, all_part = str(stored_terms).partition("\t")
                out[int(row[0])] = StoredIssue(
                    id=int(row[0]),
                    record=record,
                    stacks=stacks,
                    errors=errors,
                    terms=frozenset(all_part.split()),
                    title_terms=tuple(title_part.split()),
                    signals=signals.from_json(stored_signals),
                )
        return out

    def boilerplate(self, keys: Iterable[int], repos: Sequence[str]) -> frozenset[int]:
        """The line shapes among `keys` that are boilerplate in one of `repos` (any repo
        when empty): carried by at least `boilerplate.threshold()` of its issues."""
        wanted = sorted(set(keys))
        if not wanted:
            return frozenset()
        sizes = {r.lower(): n for r, n in self.repos()}
        allowed = {r.lower() for r in repos}
        found: set[int] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT repo, key, n FROM line_df WHERE key IN ({marks})"
            for repo, key, n in self._db.execute(sql, chunk):
                name = str(repo).lower()
                if allowed and name not in allowed:
                    continue
                if int(n) >= boilerplate.threshold(sizes.get(name, 0)):
                    found.add(int(key))
        return frozenset(found)

    def strip_boilerplate(self, body: str, repos: Sequence[str]) -> str:
        """`body` without the lines that are boilerplate in `repos` (see `boilerplate`)."""
        common = self.boilerplate(boilerplate.line_keys(body), repos)
        return boilerplate.strip(body, common.__contains__)

    def vectors(
        self, repos: Sequence[str], model: str, *, kind: str = "title"
    ) -> list[tuple[bytes, bytes]]:
        """The vector packs of `model` for `repos` (all repos when empty): per repo, its
        issue ids (int64, native order) and their vectors (int8 rows), in id order.
        `kind` is `title` (issue_vectors) or `body` (body_vectors). A stale or missing
        pack is rebuilt from its table and stored."""
        table, pack_model = _VECTOR_TABLES[kind], _pack_model(model, kind)
        names = list(repos) or [
            str(r[0])
            for r in self._db.execute(
                f"SELECT DISTINCT repo FROM {table} WHERE model = ?", (model,)
            )
        ]
        out: list[tuple[bytes, bytes]] = []
        for repo in names:
            key = (repo.lower(), pack_model)
            cached = self._packs.get(key)
            if cached is None:
                row = self._db.execute(
                    "SELECT ids, vectors FROM vector_packs WHERE repo = ? AND model = ?",
                    (repo, pack_model),
                ).fetchone()
                cached = (bytes(row[0]), bytes(row[1])) if row else self._pack(repo, model, kind)
                self._packs[key] = cached
            out.append(cached)
        return out

    def _pack(self, repo: str, model: str, kind: str) -> tuple[bytes, bytes]:
        rows = self._db.execute(
            f"SELECT issue, vector FROM {_VECTOR_TABLES[kind]} WHERE repo = ? AND model = ? "
            "ORDER BY issue",
            (repo, model),
        ).fetchall()
        ids = array("q", (int(r[0]) for r in rows)).tobytes()
        vectors = b"".join(bytes(r[1]) for r in rows)
        with self.transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO vector_packs(repo, model, ids, vectors) VALUES (?, ?, ?, ?)",
                (repo, _pack_model(model, kind), ids, vectors),
            )
        return ids, vectors

    def missing_vectors(
        self, model: str, limit: int, *, kind: str = "title"
    ) -> list[tuple[int, str, str]]:
        """Up to `limit` issues (id, repo, text) without a `kind` vector of `model`; the
        text is the title, or for `body` the body."""
        column = "i.title" if kind == "title" else "i.body"
        rows = self._db.execute(
            f"SELECT i.id, i.repo, {column} FROM issues i LEFT JOIN {_VECTOR_TABLES[kind]} v "
            "ON v.issue = i.id AND v.model = ? WHERE i.is_pull = 0 AND v.issue IS NULL "
            "ORDER BY i.id LIMIT ?",
            (model, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def save_vectors(
        self, model: str, rows: Sequence[tuple[int, str, bytes]], *, kind: str = "title"
    ) -> None:
        """Store (issue id, repo, vector blob) rows of `model` in one transaction; their
        repos' packs are rebuilt on the next read."""
        with self.transaction():
            self._db.executemany(
                f"INSERT INTO {_VECTOR_TABLES[kind]}(issue, repo, model, vector) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(issue) DO UPDATE SET repo = excluded.repo, "
                "model = excluded.model, vector = excluded.vector",
                [(issue, repo, model, blob) for issue, repo, blob in rows],
            )
            repos = {repo for _, repo, _ in rows}
            self._db.executemany(
                "DELETE FROM vector_packs WHERE repo = ? AND model = ?",
                [(repo, _pack_model(model, kind)) for repo in repos],
            )
        self._packs.clear()
        self.memo.clear()

    def fix(self, repo: str, number: int) -> Fix | None:
        """What fixed `repo#number`, if a sync looked it up."""
        row = self._db.execute(
            f"SELECT {_FIX_COLUMNS} FROM issue_fixes WHERE repo = ? AND number = ?",
            (repo, number),
        ).fetchone()
        return None if row is None else _fix(row)

    def fixes(self, repos: Sequence[str] = ()) -> list[Fix]:
        """Every stored fix of `repos` (all when empty), by repo and number."""
        where, args = _repo_filter(repos, "repo")
        rows = self._db.execute(
            f"SELECT {_FIX_COLUMNS} FROM issue_fixes WHERE 1 = 1{where} ORDER BY repo, number",
            args,
        ).fetchall()
        return [_fix(row) for row in rows]

    def unchecked_fixes(self, repo: str) -> list[IssueRecord]:
        """Issues of `repo` closed as completed whose fix was not looked up since they
        were last updated."""
        rows = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM issues i WHERE i.repo = ? AND i.is_pull = 0 "
            "AND i.state = 'closed' AND COALESCE(i.state_reason, 'completed') = 'completed' "
            "AND NOT EXISTS (SELECT 1 FROM issue_fixes f WHERE f.repo = i.repo "
            "AND f.number = i.number AND f.checked_at >= COALESCE(i.updated_at, '')) "
            "ORDER BY i.number",
            (repo,),
        ).fetchall()
        return [_record(row) for row in rows]

    def issue_ids(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The row ids of the stored issues (not pull requests) among `(repo, number)`
        keys, by key as given."""
        out: dict[tuple[str, int], int] = {}
        for repo, number in dict.fromkeys(keys):
            row = self._db.execute(
                "SELECT id FROM issues WHERE repo = ? AND number = ? AND is_pull = 0",
                (repo, number),
            ).fetchone()
            if row is not None:
                out[(repo, number)] = int(row[0])
        return out

    def issue(self, repo: str, number: int) -> IssueRecord | None:
        """One stored issue or pull request."""
        row = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM issues WHERE repo = ? AND number = ?",
            (repo, number),
        ).fetchone()
        return None if row is None else _record(row)

    def opened_since(self, repo: str, since: str) -> list[IssueRecord]:
        """Issues of `repo` created at or after `since` (ISO 8601), oldest first."""
        rows = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM issues WHERE repo = ? AND is_pull = 0 "
            "AND created_at >= ? ORDER BY created_at, number",
            (repo, since),
        ).fetchall()
        return [_record(row) for row in rows]

    def sync_state(self, repo: str) -> SyncState | None:
        """The sync state of `repo`, or None if it was never synced."""
        row = self._db.execute(
            "SELECT repo, since, etag, resume_since, complete, synced_at FROM sync_state "
            "WHERE repo = ?",
            (repo,),
        ).fetchone()
        if row is None:
            return None
        return SyncState(
            repo=row[0],
            since=row[1],
            etag=row[2],
            resume_since=row[3],
            complete=bool(row[4]),
            synced_at=row[5],
        )

    def meta(self, key: str) -> str | None:
        """A value from the index's `meta` table (e.g. where an example index came from)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # --- writing -----------------------------------------------------------------

    def set_meta(self, key: str, value: str) -> None:
        """Store a value in the `meta` table."""
        with self.transaction():
            self._db.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def upsert(self, records: Iterable[IssueRecord]) -> int:
        """Store records (insert or replace by repo and number) in one transaction.

        Returns how many rows changed; a record equal to the stored one is skipped.
        """
        with self.transaction():
            return self._upsert(records).written

    def save_page(self, records: Iterable[IssueRecord], state: SyncState) -> int:
        """Store one listing page and the sync state it leads to, atomically."""
        with self.transaction():
            batch = self._upsert(records)
            index_write.put_state(self._db, state)
            return batch.written

    def save_state(self, state: SyncState) -> None:
        """Replace the sync state of `state.repo`."""
        with self.transaction():
            index_write.put_state(self._db, state)

    def _upsert(self, records: Iterable[IssueRecord]) -> index_write.Batch:
        batch = index_write.write(self._db, records)
        if batch.written:
            # What callers derived from the old rows is stale now.
            self._repo_counts = None
            self._count = None
            self._packs.clear()
            self.memo.clear()
        return batch

    def import_jsonl(self, lines: Iterable[str], *, source: str) -> ImportResult:
        """Import JSONL lines (one issue each) in one transaction; bad lines are skipped."""
        records: list[IssueRecord] = []
        fixes: list[Fix] = []
        skipped: list[str] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                record = record_from_json(obj)
                fix = fix_from_json(obj.get("fixed_in"), record)
                records.append(record)
                if fix is not None:
                    fixes.append(fix)
            except json.JSONDecodeError as err:
                skipped.append(f"{source}:{number}: not JSON ({err.msg} at column {err.colno})")
            except RecursionError:
                skipped.append(f"{source}:{number}: JSON nested too deeply; line skipped")
            except (ValueError, TypeError) as err:
                skipped.append(f"{source}:{number}: {err}")
        self.upsert(records)
        for fix in fixes:
            self.save_fix(fix)
        return ImportResult(imported=len(records), skipped=tuple(skipped))

    def save_fix(self, fix: Fix) -> None:
        """Store (replace) what fixed one issue."""
        with self.transaction():
            self._db.execute(
                f"INSERT OR REPLACE INTO issue_fixes({_FIX_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fix.repo,
                    fix.number,
                    fix.kind,
                    fix.ref,
                    fix.url,
                    fix.sha,
                    fix.tag,
                    fix.checked_at,
                ),
            )


_FIX_COLUMNS = "repo, number, kind, ref, url, sha, tag, checked_at"


def _fix(row: Sequence[Any]) -> Fix:
    return Fix(
        repo=str(row[0]),
        number=int(row[1]),
        kind=str(row[2]),
        ref=str(row[3]),
        url=row[4],
        sha=row[5],
        tag=row[6],
        checked_at=row[7],
    )


_RECORD_COLUMNS = (
    "repo, number, title, body, state, state_reason, labels, created_at, updated_at, "
    "closed_at, comments, url, is_pull"
)


def _record(row: Sequence[Any]) -> IssueRecord:
    return IssueRecord(
        repo=row[0],
        number=int(row[1]),
        title=row[2],
        body=row[3],
        state=row[4],
        state_reason=row[5],
        labels=tuple(json.loads(row[6])),
        created_at=row[7],
        updated_at=row[8],
        closed_at=row[9],
        comments=int(row[10]),
        url=row[11],
        is_pull=bool(row[12]),
    )


_VECTOR_TABLES = {"title": "issue_vectors", "body": "body_vectors"}


def _pack_model(model: str, kind: str) -> str:
    """The `vector_packs.model` key of a kind of vector: title packs keep the model id."""
    return model if kind == "title" else f"{model}#{kind}"


def _repo_filter(repos: Sequence[str], column: str) -> tuple[str, tuple[str, ...]]:
    """` AND column IN (...)` and its arguments, or nothing when `repos` is empty."""
    if not repos:
        return "", ()
    marks = ",".join("?" * len(repos))
    return f" AND {column} IN ({marks})", tuple(repos)
