"""Signals of issue text: exception types, versions, failure classes, and their comparison."""

from __future__ import annotations

import pytest

from reporter.upstream import signals
from reporter.upstream.signals import (
    Signals,
    class_similarity,
    classes,
    classes_of_verdict,
    exception_types,
    extract_signals,
    from_json,
    version_similarity,
    versions,
)


def test_exception_types_lose_their_module_and_generic_names() -> None:
    text = (
        "Traceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "During handling of the above exception, another exception occurred:\n"
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue\n"
        "raise Exception('x')\n"
        "RuntimeError: NCCL error\n"
        "torch.OutOfMemoryError again\n"
    )
    assert exception_types(text) == ("outofmemoryerror", "enginedeaderror", "runtimeerror")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("vLLM Version: 0.8.5.post1\nPyTorch version: 2.6.0+cu124", {"vllm", "torch"}),
        ("pip install sglang==0.4.6.post4", {"sglang"}),
        ("torch 2.5.1, NCCL 2.21.5, CUDA 12.4", {"torch", "nccl", "cuda"}),
        ("transformers==4.51.3 flashinfer-python==0.2.5", {"transformers", "flashinfer"}),
        ("no version here, just vllm and torch", set()),
    ],
)
def test_versions_name_the_product_and_release(text: str, expected: set[str]) -> None:
    found = dict(versions(text))
    assert set(found) == expected
    if "vllm" in found:
        assert found["vllm"] == "0.8.5"
    if "sglang" in found:
        assert found["sglang"] == "0.4.6"
    if "cuda" in found:
        assert found["cuda"] == "12.4"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Server hangs forever after the first request", ("hang",)),
        ("[Rank 3] Watchdog caught collective operation timeout", ("desync", "hang")),
        ("ranks stuck in batch_isend_irecv", ("p2p", "hang")),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", ("crash",)),
        ("torch.OutOfMemoryError: CUDA out of memory", ("oom",)),
        ("worker thread deadlock on the GIL", ("deadlock", "hang")),
        ("Add an option for the chat template", ()),
    ],
)
def test_failure_classes(text: str, expected: tuple[str, ...]) -> None:
    assert classes(text) == expected


def test_the_verdict_says_the_class_never_the_text() -> None:
    assert classes_of_verdict("collective-desync") == ("desync", "hang")
    assert classes_of_verdict("all-stuck") == ("hang",)
    assert classes_of_verdict("crashed") == ("crash",)
    assert classes_of_verdict("thread-deadlock") == ("deadlock", "hang")
    assert classes_of_verdict("p2p-deadlock") == ("p2p", "hang")
    # No hang found, or nothing could be told: no class, whatever the text says.
    assert classes_of_verdict("progressing") == ()
    assert classes_of_verdict("inconclusive") == ()
    assert classes_of_verdict("a-verdict-added-later") == ()
    # An out-of-memory error line in the bundle adds the class.
    assert classes_of_verdict("crashed", ["torch.OutOfMemoryError: CUDA out of memory"]) == (
        "oom",
        "crash",
    )


def test_similarities() -> None:
    assert version_similarity([("vllm", "0.8.5")], [("vllm", "0.8.5")]) == 1.0
    assert version_similarity([("vllm", "0.8.5")], [("vllm", "0.8.4")]) == 0.5
    assert version_similarity([("vllm", "0.8.5")], [("vllm", "0.9.0")]) == 0.0
    assert version_similarity([("vllm", "0.8.5")], [("torch", "2.6.0")]) is None
    assert class_similarity(("desync", "hang"), ("desync", "hang")) == 1.0
    assert class_similarity(("desync", "hang"), ("hang",)) == 0.5
    assert class_similarity(("crash",), ("hang",)) == 0.0
    assert class_similarity((), ("hang",)) is None


def test_signals_round_trip_through_the_index_form() -> None:
    found = extract_signals(
        "EngineCore dies with vllm 0.8.5",
        "vllm.v1.engine.exceptions.EngineDeadError after an illegal memory access",
    )
    assert found == Signals(
        exceptions=("enginedeaderror",), versions=(("vllm", "0.8.5"),), classes=("crash",)
    )
    assert from_json(found.to_json()) == found
    assert from_json(None) == signals.EMPTY
    assert from_json("{not json") == signals.EMPTY
