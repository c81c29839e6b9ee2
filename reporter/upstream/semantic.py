"""The semantic similarity signal: static word embeddings shipped inside a PyPI wheel.

The model is WordLlama's `l2_supercat` 256-dimension embedding table (16 MB of float16
in the `wordllama` wheel, with its tokenizer file next to it), installed with the
`hangreport[semantic]` extra (the distribution `hangreport`, import package `reporter`). Nothing is downloaded at run time: the files are loaded
from the installed package by path (WordLlama's own loader looks for the tokenizer in
another folder than the wheel puts it, and falls back to downloading). A text's vector
is the mean of its tokens' vectors, scaled to unit length, so the cosine similarity of
two texts is a dot product.

Inputs: texts. Outputs: unit vectors (`numpy.float32`, shape `(n, DIM)`) and their
bytes as stored in the index (`to_blob`, `from_blobs`, `unpack`): one signed byte per
dimension, the component times `SCALE` rounded. A unit vector's components are small,
so the rounding moves a cosine by well under 0.01, and 256 bytes per issue keep a
50,000-issue scan to 12.8 MB read and converted per query. When the extra is not
installed, `load()` returns None and `MISSING_NOTE` says how to get it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy comes with the extra; this module imports without it
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

DIM = 256
MODEL_ID = "wordllama/l2_supercat_256/int8"
_WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
_TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
_TENSOR = "embedding.weight"
# Tokens beyond this say little more about a text's topic and cost time.
MAX_TOKENS = 512
# A body is embedded in chunks of this many tokens, at most `MAX_CHUNKS` of them, each
# chunk's mean scaled to unit length before they are averaged: a pasted log as long as
# the rest of the body counts as much as the description, not ten times more.
CHUNK_TOKENS = 128
MAX_CHUNKS = 8
# Stored components are round(x * SCALE) as int8; no component of a unit vector of 256
# dimensions from this table comes near 127 / SCALE = 0.5.
SCALE = 254.0
MISSING_NOTE = (
    "semantic similarity is off: the embedding model is not installed "
    "(pip install 'hangreport[semantic]', or '.[semantic]' in a checkout, which brings "
    "wordllama; nothing is downloaded at run time)"
)


@dataclass(frozen=True, slots=True)
class Embedder:
    """A static embedding model: a token table and its tokenizer."""

    table: npt.NDArray[np.float32]
    tokenizer: Any
    model_id: str = MODEL_ID

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors for `texts` (a text without known tokens gets the zero vector)."""
        import numpy as np

        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        top = self.table.shape[0] - 1
        for row, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids[:MAX_TOKENS], dtype=np.int64)
            if ids.size == 0:
                continue
            vector = self.table[np.clip(ids, 0, top)].mean(axis=0)
            norm = float(np.linalg.norm(vector))
            if norm > 0.0:
                out[row] = vector / norm
        return out

    def embed_chunked(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors for long `texts` (bodies): the mean of the unit vectors of their
        first `MAX_CHUNKS` chunks of `CHUNK_TOKENS` tokens (zero for a text without
        known tokens)."""
        import numpy as np

        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        top = self.table.shape[0] - 1
        limit = CHUNK_TOKENS * MAX_CHUNKS
        for row, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids[:limit], dtype=np.int64)
            if ids.size == 0:
                continue
            # A chunk's sum has its mean's direction: no division needed before scaling.
            sums = np.add.reduceat(
                self.table[np.clip(ids, 0, top)], np.arange(0, ids.size, CHUNK_TOKENS), axis=0
            )
            norms = np.linalg.norm(sums, axis=1)
            vector = (sums[norms > 0] / norms[norms > 0, None]).sum(axis=0)
            norm = float(np.linalg.norm(vector))
            if norm > 0.0:
                out[row] = vector / norm
        return out


def package_files() -> tuple[Path, Path] | None:
    """The weights and tokenizer files inside the installed `wordllama` package, if both
    are there."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    weights, tokenizer = root / _WEIGHTS, root / _TOKENIZER
    if weights.is_file() and tokenizer.is_file():
        return weights, tokenizer
    return None


@lru_cache(maxsize=1)
def load() -> Embedder | None:
    """The packaged model, loaded once per process; None when the extra is missing."""
    files = package_files()
    if files is None:
        return None
    try:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer
    except ImportError:
        return None
    weights, tokenizer_file = files
    table = np.ascontiguousarray(load_file(str(weights))[_TENSOR].astype(np.float32))
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Embedder(table=table, tokenizer=tokenizer)


def to_blob(vector: Vectors) -> bytes:
    """A unit vector as stored in the index: int8 bytes (256 for 256 dimensions)."""
    import numpy as np

    scaled = np.clip(np.rint(np.asarray(vector, dtype=np.float32) * SCALE), -127, 127)
    return bytes(scaled.astype(np.int8).tobytes())


def unpack(packs: Sequence[tuple[bytes, bytes]], dim: int = DIM) -> tuple[Any, Vectors]:
    """Vector packs (`Index.vectors`) as one int64 id array and one float32 matrix in
    stored units: divide its products by `SCALE` for cosines."""
    import numpy as np

    if not packs:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    ids = np.concatenate([np.frombuffer(i, dtype=np.int64) for i, _ in packs])
    stored = np.concatenate([np.frombuffer(v, dtype=np.int8).reshape(-1, dim) for _, v in packs])
    # Left in stored units (x SCALE): callers scale the few products, not every component.
    return ids, stored.astype(np.float32)


def from_blobs(blobs: Sequence[bytes], dim: int = DIM) -> Vectors:
    """Stored vectors back as one float32 matrix, one row per blob."""
    import numpy as np

    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(blobs), dim)
    return joined.astype(np.float32) / SCALE
