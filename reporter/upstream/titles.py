"""Titles that mean the same: the semantic model's vectors over the index, for the search.

`embed_missing` stores a title vector for every issue without one; `semantic_neighbours`
gives the query title's cosine to every stored title of the searched repos and the
nearest few, which join the duplicate search's candidates (see `search.find_duplicates`).
"""

from __future__ import annotations

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


def embed_missing(
    index: Index,
    model: semantic_model.Embedder,
    *,
    batch: int = 1024,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Store a title vector for every issue that has none yet; returns how many.

    The index remembers that every issue has a vector of this model (until the next
    write), so a search on a complete index does not look for missing ones.
    """
    if index.meta("vectors_complete") == model.model_id:
        return 0
    done = 0
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
    index: Index, model: semantic_model.Embedder, query: Query
) -> TitleSimilarity:
    """The query title against every stored title in its repos: one embedding and one
    matrix-vector product over the repos' vector packs. Issues without a vector get one
    first (once per index, after a sync or import that ran without the model)."""
    import numpy as np

    embed_missing(index, model)
    ids, matrix = semantic_model.unpack(index.vectors(query.repos, model.model_id))
    if not len(ids):
        return TitleSimilarity(ids=ids, cosines=np.zeros(0, dtype=np.float32), nearest=())
    vector = model.embed([embedding_text(query.title)])[0] / semantic_model.SCALE
    cosines = matrix @ vector
    if len(ids) > 1 and bool((ids[1:] < ids[:-1]).any()):
        # Several repos' packs: each is in id order, the concatenation need not be.
        order = ids.argsort(kind="stable")
        ids, cosines = ids[order], cosines[order]
    k = min(SEMANTIC_POOL if not query.stacks else SEMANTIC_POOL_WITH_STACK, len(ids))
    top = np.argpartition(-cosines, k - 1)[:k]
    best = sorted(
        (i for i in top.tolist() if cosines[i] >= SEMANTIC_FLOOR),
        key=lambda i: (-float(cosines[i]), int(ids[i])),
    )
    return TitleSimilarity(ids=ids, cosines=cosines, nearest=tuple(int(ids[i]) for i in best))
