"""The semantic signal: the packaged model loads from the wheel's files (no download),
vectors round-trip through the index, and a paraphrased title with no shared word is
found; the ranking still works (and says so) without the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporter.upstream import rank, search, semantic, titles
from reporter.upstream.index import Index
from reporter.upstream.query import query_from_text
from reporter.upstream.records import IssueRecord

model = semantic.load()
needs_model = pytest.mark.skipif(model is None, reason=semantic.MISSING_NOTE)
REPO = "vllm-project/vllm"


@needs_model
def test_the_model_loads_from_the_installed_package_files() -> None:
    files = semantic.package_files()
    assert files is not None
    weights, tokenizer = files
    assert weights.name.endswith(".safetensors") and tokenizer.name.endswith(".json")
    assert model is not None and model.table.shape[1] == semantic.DIM
    vectors = model.embed(["engine hangs", "", "engine hangs"])
    norms = (vectors**2).sum(axis=1)
    assert abs(norms[0] - 1.0) < 1e-4 and norms[1] == 0.0
    assert float(vectors[0] @ vectors[2]) == pytest.approx(1.0, abs=1e-5)


@needs_model
def test_alike_titles_are_closer_than_unrelated_ones() -> None:
    assert model is not None
    a, b, c = model.embed(
        [
            "Crash when loading quantized weights",
            "Segfault while reading quantised checkpoint",
            "Docs: typo in quickstart",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.15


def test_blobs_round_trip_as_int8_within_a_hundredth() -> None:
    np = pytest.importorskip("numpy")
    vector = np.linspace(-1, 1, semantic.DIM, dtype=np.float32)
    vector /= np.linalg.norm(vector)
    blob = semantic.to_blob(vector)
    assert len(blob) == semantic.DIM
    ids, matrix = semantic.unpack([(b"\0" * 8, blob)])
    assert len(ids) == 1 and abs(float(matrix[0] @ vector) / semantic.SCALE - 1.0) < 0.01
    back = semantic.from_blobs([blob, blob])
    assert back.shape == (2, semantic.DIM)
    assert np.allclose(back[1], vector, atol=0.5 / semantic.SCALE + 1e-6)
    assert abs(float(back[0] @ vector) - 1.0) < 0.01


def _records() -> list[IssueRecord]:
    filler = [
        "Add Prometheus metric for queue time",
        "Tokenizer warning for chat template",
        "Docs: typo in quickstart",
        "Support Gemma 3 vision inputs",
        "Build fails with CUDA 12.8 on aarch64",
    ]
    out = [
        IssueRecord(repo=REPO, number=n, title=t, body=f"about {t.lower()}")
        for n, t in enumerate(filler, start=10)
    ]
    out.append(
        IssueRecord(
            repo=REPO, number=99, title="Crash when loading quantized weights", body="see title"
        )
    )
    return out


@needs_model
def test_vectors_are_stored_once_and_a_paraphrase_is_found(tmp_path: Path) -> None:
    assert model is not None
    with Index(tmp_path / "s.sqlite3") as index:
        index.upsert(_records())
        assert titles.embed_missing(index, model) == 6
        assert titles.embed_missing(index, model) == 0  # remembered: nothing to look for
        ((ids, vectors),) = index.vectors([REPO], model.model_id)
        assert len(ids) == 6 * 8 and len(vectors) == 6 * semantic.DIM
        # The pack was stored: a fresh connection reads the same bytes.
        with Index(tmp_path / "s.sqlite3") as again:
            assert again.vectors([REPO], model.model_id) == [(ids, vectors)]
        # An edit drops the issue's vector; the next search embeds it again.
        index.upsert(
            [IssueRecord(repo=REPO, number=99, title="Crash while loading quantized weights")]
        )
        assert titles.embed_missing(index, model) == 1
        ((ids, vectors),) = index.vectors([REPO], model.model_id)
        assert len(ids) == 6 * 8  # the pack was rebuilt with the new vector
        # Not one word in common with #99's title or body.
        query = query_from_text("Segfault reading a quantised checkpoint", repos=(REPO,))
        found = search.find_duplicates(index, query, limit=3, include_weak=True)
        assert found[0].issue.record.number == 99
        assert found[0].reasons.scores.semantic is not None
        assert any("meaning of the titles" in n for n in found[0].reasons.notes)
        plain = search.find_duplicates(index, query, limit=3, include_weak=True, embedder=False)
        assert all(c.reasons.scores.semantic is None for c in plain)
        assert 99 not in [c.issue.record.number for c in plain]


def test_without_the_model_search_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "load", lambda: None)
    with Index(tmp_path / "s.sqlite3") as index:
        index.upsert(_records())
        notes: list[str] = []
        query = query_from_text("Crash when loading quantized weights again", repos=(REPO,))
        found = search.search_and_explain(index, query, limit=3, notes=notes)
        assert notes == [semantic.MISSING_NOTE]
        assert found and found[0].issue.record.number == 99
        assert found[0].reasons.scores.semantic is None


def test_semantic_alone_never_makes_a_likely_duplicate() -> None:
    subs = rank.SubScores(
        text=0.05, title=0.0, bm25=0.0, stack=None, error=None, semantic=0.99, body=0.99
    )
    assert rank._level(rank.total(subs), subs) is not rank.Level.LIKELY_DUPLICATE
