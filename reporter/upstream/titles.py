"""Titles and bodies that mean the same: the semantic model's vectors over the index.

`embed_missing` stores a title vector and a body vector (chunked, the repo's issue-form
boilerplate left out: `body_embedding_text`) for every issue without them;
`semantic_neighbours` gives the query's cosine to every stored title (or body) of the
searched repos and the nearest few, which join the duplicate search's candidates (see
`search.find_duplicates`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reporter.upstream import boilerplate
from reporter.upstream import semantic as semantic_model
from reporter.upstream.index import Index
from reporter.upstream.query import (
    Query,
)

# Issues whose titles mean the most alike join the candidates (they may share no word),
# at most this many and only above this cosine (unrelated titles of the real set sit at
# 0.13, 90 % of them below 0.29; each extra candidate costs a full scoring).
SEMANTIC_POOL = 30


SEMANTIC_FLOOR = 0.25


# With a stack in the query the semantic weight is small (rank.SEMANTIC_WITH_STACK): an
# issue that only shares the title's meaning rarely makes the top, so fewer are scored.
SEMANTIC_POOL_WITH_STACK = 10
# Issues whose bodies mean the most alike join the candidates too.
BODY_POOL = 10


def embedder_of(choice: semantic_model.Embedder | bool | None) -> semantic_model.Embedder | None:
    """The model to use: the packaged one for True, none for False or None, else `choice`."""
    if choice is True:
        return semantic_model.load()
    if choice is False or choice is None:
        return None
    return choice


def embedding_text(title: str) -> str:
    """What the semantic model embeds for an issue: its title without the form's tags."""
    return boilerplate.strip_title(title)


def body_embedding_text(body: str, common: Callable[[int], bool]) -> str:
    """What the semantic model embeds for a body: its prose, the lines that are neither
    in a fenced block (logs, environment dumps, code) nor the repo's issue-form
    boilerplate (`common` says which line shapes are)."""
    return boilerplate.strip(_FENCED_RE.sub("\n", body), common)


_FENCED_RE = re.compile(r"^[ \t>]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t>]*\1[ \t]*$", re.M | re.S)


BODY_VECTORS_DONE = "body_vectors_complete"


def embed_missing(
    index: Index,
    model: semantic_model.Embedder,
    *,
    batch: int = 1024,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Store a title vector for every issue that has none yet (returns how many), and a
    body vector likewise.

    The index remembers that every issue has vectors of this model (until the next
    write), so a search on a complete index does not look for missing ones.
    """
    _embed_bodies(index, model, batch=batch)
    done = 0
    if index.meta("vectors_complete") == model.model_id:
        return done
    while True:
        rows = index.missing_vectors(model.model_id, batch)
        if not rows:
            index.set_meta("vectors_complete", model.model_id)
            return done
        vectors = model.embed([embedding_text(title) for _, _, title in rows])
        index.save_vectors(
            model.model_id,
            [
                (issue, repo, semantic_model.to_blob(vector))
                for (issue, repo, _), vector in zip(rows, vectors, strict=True)
            ],
        )
        done += len(rows)
        if progress is not None:
            progress(done)


def _embed_bodies(index: Index, model: semantic_model.Embedder, *, batch: int) -> int:
    """Store a body vector for every issue without one; returns how many."""
    if index.meta(BODY_VECTORS_DONE) == model.model_id:
        return 0
    done = 0
    while True:
        rows = index.missing_vectors(model.model_id, batch, kind="body")
        if not rows:
            index.set_meta(BODY_VECTORS_DONE, model.model_id)
            return done
        by_repo: dict[str, list[int]] = {}
        for n, (_, repo, _) in enumerate(rows):
            by_repo.setdefault(repo.lower(), []).append(n)
        texts = [""] * len(rows)
        for members in by_repo.values():
            # One boilerplate look-up per repo and batch, not one per body.
            repo = rows[members[0]][1]
            keys = {k for n in members for k in boilerplate.line_keys(rows[n][2])}
            common = index.boilerplate(keys, [repo])
            for n in members:
                texts[n] = body_embedding_text(rows[n][2], common.__contains__)
        vectors = model.embed_chunked(texts)
        index.save_vectors(
            model.model_id,
            [
                (issue, repo, semantic_model.to_blob(vector))
                for (issue, repo, _), vector in zip(rows, vectors, strict=True)
            ],
            kind="body",
        )
        done += len(rows)


@dataclass(frozen=True, slots=True)
class TitleSimilarity:
    """The query title's cosine similarity to every stored title of the searched repos:
    ids sorted, their cosines, and the `SEMANTIC_POOL` nearest ids at `SEMANTIC_FLOOR` or
    above, best first."""

    ids: Any
    cosines: Any
    nearest: tuple[int, ...]

    def lookup(self, wanted: Iterable[int]) -> dict[int, float]:
        """Cosines of the `wanted` ids (0.0 for an issue without a vector)."""
        import numpy as np

        keys = np.fromiter(wanted, dtype=np.int64)
        if not len(keys) or not len(self.ids):
            return dict.fromkeys((int(k) for k in keys), 0.0)
        at = np.minimum(np.searchsorted(self.ids, keys), len(self.ids) - 1)
        found = self.ids[at] == keys
        values = np.where(found, self.cosines[at], 0.0)
        return {int(k): float(v) for k, v in zip(keys, values, strict=True)}


def semantic_neighbours(
    index: Index, model: semantic_model.Embedder, query: Query, *, kind: str = "title"
) -> TitleSimilarity:
    """The query title (or, for `kind="body"`, its text, which `find_duplicates` has
    stripped of the repos' boilerplate) against every stored title (body) in its repos: one embedding and one matrix-vector
    product over the repos' vector packs. Issues without vectors get them first (once
    per index, after a sync or import that ran without the model)."""
    import numpy as np

    embed_missing(index, model)
    # Unpacked once per index connection and repos (until the next write): converting
    # 50,000 stored vectors costs more than the product itself.
    key = ("vectors", tuple(sorted(r.lower() for r in query.repos)), model.model_id, kind)
    if key not in index.memo:
        ids, matrix = semantic_model.unpack(index.vectors(query.repos, model.model_id, kind=kind))
        if len(ids) > 1 and bool((ids[1:] < ids[:-1]).any()):
            # Several repos' packs: each is in id order, the concatenation need not be.
            order = ids.argsort(kind="stable")
            ids, matrix = ids[order], matrix[order]
        index.memo[key] = (ids, matrix)
    ids, matrix = index.memo[key]
    if not len(ids):
        return TitleSimilarity(ids=ids, cosines=np.zeros(0, dtype=np.float32), nearest=())
    if kind == "body":
        # The search already left the repos' boilerplate out of the query's text.
        text = body_embedding_text(query.text, lambda _key: False)
        vector = model.embed_chunked([text])[0] / semantic_model.SCALE
    else:
        vector = model.embed([embedding_text(query.title)])[0] / semantic_model.SCALE
    cosines = matrix @ vector
    pool = SEMANTIC_POOL if not query.stacks else SEMANTIC_POOL_WITH_STACK
    if kind == "body":
        pool = BODY_POOL
    k = min(pool, len(ids))
    top = np.argpartition(-cosines, k - 1)[:k]
    best = sorted(
        (i for i in top.tolist() if cosines[i] >= SEMANTIC_FLOOR),
        key=lambda i: (-float(cosines[i]), int(ids[i])),
    )
    return TitleSimilarity(ids=ids, cosines=cosines, nearest=tuple(int(ids[i]) for i in best))
