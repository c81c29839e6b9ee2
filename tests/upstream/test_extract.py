"""Frame and error extraction from issue text, and the shared tokenizer."""

from __future__ import annotations

import json

import pytest

from reporter.model import Frame
from reporter.upstream import terms
from reporter.upstream.extract import MAX_STACKS, extract, frame_key, normalize_error

PYSPY = """\
Thread 871 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2806)
    wrapper (torch/distributed/c10d_logger.py:81)
    writing_check (sglang/srt/mem_cache/hiradix_cache.py:190)
    check_hicache_events (sglang/srt/managers/scheduler.py:1611)
    run (multiprocessing/process.py:108)
    _bootstrap (multiprocessing/process.py:314)
Thread 880 (idle): "QueueFeederThread"
    wait (threading.py:320)
    _feed (multiprocessing/queues.py:231)
    run (threading.py:953)
"""
KEYS = ("all_reduce", "writing_check", "check_hicache_events")

TRACEBACK = """\
Traceback (most recent call last):
  File "/x/sglang/srt/managers/scheduler.py", line 1602, in check_hicache_events
    self.tree_cache.writing_check()
  File "/x/sglang/srt/mem_cache/hiradix_cache.py", line 187, in writing_check
    torch.distributed.all_reduce(queue_size)
  File "/x/torch/distributed/distributed_c10d.py", line 2806, in all_reduce
    work.wait()
torch.distributed.DistBackendError: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88213, OpType=ALLREDUCE) ran for 600047 milliseconds before timing out.
"""

FAULTHANDLER = """\
Timeout (0:10:00)!
Thread 0x00007f1c2a7fe700 (most recent call first):
  File "/x/torch/distributed/distributed_c10d.py", line 2806 in all_reduce
  File "/x/sglang/srt/mem_cache/hiradix_cache.py", line 187 in writing_check
  File "/x/sglang/srt/managers/scheduler.py", line 1602 in check_hicache_events
"""

PYSPY_JSON = json.dumps(
    [
        {
            "pid": 1,
            "thread_id": 1,
            "thread_name": "MainThread",
            "os_thread_id": 1,
            "active": False,
            "owns_gil": False,
            "frames": [
                {
                    "name": "all_reduce",
                    "filename": "/x/torch/distributed/distributed_c10d.py",
                    "module": None,
                    "short_filename": "torch/distributed/distributed_c10d.py",
                    "line": 2806,
                    "locals": None,
                    "is_entry": True,
                },
                {
                    "name": "writing_check",
                    "filename": "/x/sglang/srt/mem_cache/hiradix_cache.py",
                    "module": None,
                    "short_filename": "sglang/srt/mem_cache/hiradix_cache.py",
                    "line": 187,
                    "locals": None,
                    "is_entry": True,
                },
                {
                    "name": "check_hicache_events",
                    "filename": "/x/sglang/srt/managers/scheduler.py",
                    "module": None,
                    "short_filename": "sglang/srt/managers/scheduler.py",
                    "line": 1602,
                    "locals": None,
                    "is_entry": True,
                },
            ],
        }
    ],
    indent=1,
)


@pytest.mark.parametrize(
    "body",
    [
        f"It hangs:\n\n```\n{PYSPY}```\n\nthanks",
        f"It hangs, stack without a fence:\n\n{PYSPY}\nthanks",
        f"> quoted in a reply\n```text\n{PYSPY}```",
        f"```python\n{TRACEBACK}```",
        f"Watchdog output, no fence:\n{TRACEBACK}",
        f"```\n{FAULTHANDLER}```",
        f"```json\n{PYSPY_JSON}\n```",
    ],
    ids=[
        "pyspy-fenced",
        "pyspy-bare",
        "pyspy-quote-fence",
        "traceback-fenced",
        "traceback-bare",
        "faulthandler",
        "pyspy-json",
    ],
)
def test_every_pasted_form_gives_the_same_informative_keys(body: str) -> None:
    found = extract(body)
    assert KEYS in found.stacks


def test_generic_frames_and_idle_threads_are_dropped() -> None:
    found = extract(PYSPY)
    # c10d wrapper and multiprocessing bootstrap are generic; the queue feeder is idle.
    assert found.stacks == (KEYS,)


def test_error_lines_are_found_and_normalised() -> None:
    found = extract(TRACEBACK)
    assert found.errors[0].startswith(
        "torch.distributed.distbackenderror: [rank n] watchdog caught collective operation timeout"
    )
    assert "88213" not in found.errors[0]


def test_plain_text_has_no_stacks_or_errors() -> None:
    found = extract("The server is slow after the upgrade. Any idea?\n\nThread safety question.")
    assert found.stacks == ()
    assert found.errors == ()


def test_duplicate_stacks_count_once_and_the_number_is_capped() -> None:
    many = "\n".join(
        f'Thread {n} (idle): "w{n}"\n    step_{n} (app/worker.py:{n})\n    loop (app/worker.py:1)'
        for n in range(1, 40)
    )
    found = extract(PYSPY + PYSPY + many)
    assert found.stacks[0] == KEYS
    assert len(found.stacks) == MAX_STACKS


@pytest.mark.parametrize(
    ("frame", "key"),
    [
        (
            Frame(function="Scheduler.check_hicache_events", file="scheduler.py"),
            "check_hicache_events",
        ),
        (Frame(function="<module>", file="main.py"), None),
        (Frame(function="_exception_logger.<locals>.wrapper", file="c10d_logger.py"), "wrapper"),
        (
            Frame(
                function="c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >)",
                file="libtorch_cpu.so",
                native=True,
            ),
            "~AsyncWork::wait",
        ),
        (Frame(function="0x7f1c2a7fe700", file="libc.so.6", native=True), None),
    ],
)
def test_frame_keys(frame: Frame, key: str | None) -> None:
    assert frame_key(frame) == key


@pytest.mark.parametrize(
    ("message", "normal"),
    [
        (
            "RuntimeError: [/opt/gloo/pair.cc:534] Connection closed by peer [10.0.0.7]:4021",
            "runtimeerror: [pair.cc:n] connection closed by peer [n.n.n.n]:n",
        ),
        ("`Fatal Python error: Segmentation fault`.", "fatal python error: segmentation fault"),
        ("ValueError:   at 0x7f00ab   twice", "valueerror: at hex twice"),
    ],
)
def test_normalize_error(message: str, normal: str) -> None:
    assert normalize_error(message) == normal


@pytest.mark.parametrize(
    ("text", "words", "compounds"),
    [
        (
            "Scheduler hangs in check_hicache_events",
            ["scheduler", "hang", "in", "check", "hicache", "event"],
            ["checkhicacheevents"],
        ),
        ("hanging HANGS hang", ["hang", "hang", "hang"], []),
        ("running stalled processes queries", ["run", "stalled", "process", "query"], []),
        ("status bus is", ["status", "bus", "is"], []),
        ("Ünïcode_x v0.4.6", ["unicode", "x", "v0", "4", "6"], ["unicodex"]),
        (
            "all_reduce and __init__ and _get_batch",
            ["all", "reduce", "and", "init", "and", "get", "batch"],
            ["allreduce", "getbatch"],
        ),
    ],
)
def test_tokens(text: str, words: list[str], compounds: list[str]) -> None:
    assert terms.words(text) == [terms.stem(w) for w in words]
    assert terms.tokens(text) == terms.words(text) + compounds


def test_content_terms_drop_stopwords_and_numbers() -> None:
    assert terms.content_terms("It still happens in v0.5 with 8 GPUs: the bug is back") == [
        "v0",
        "gpus",
        "back",
    ]


def test_phrase_quotes_identifiers_the_way_the_index_splits_them() -> None:
    assert terms.phrase("check_hicache_events") == '"check hicach event"'
