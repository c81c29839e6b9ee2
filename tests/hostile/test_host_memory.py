"""Memory while a host answers (issue 36 step 4): whatever one host sends, the record sink
holds at most twice `--max-size`, traced with tracemalloc (no timing); a py-spy-shaped
answer gives the same records as decoding each line on its own.

The shapes are the ways a line can take more memory than its bytes: one character past
U+FFFF makes Python keep a whole string at 4 bytes a character, raw or escaped as the probe
sends it; `[]`, `{}`, a number or a new key each cost tens of bytes for a few; a tiny record
costs a dict. `benchmarks/bench_fanout.py --sink-memory` prints the same at 8 MiB.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest

from reporter.collect import hostrecords

CAP = 1 << 20
CHUNK = 1 << 16  # what the runner reads from a pipe at a time


def _dump(text: str, *, ascii_only: bool = False) -> bytes:
    record = {"t": "dump", "pid": 4711, "snapshot": 0, "stdout": text}
    return (json.dumps(record, ensure_ascii=ascii_only) + "\n").encode()


def _many(item: bytes, count: int) -> bytes:
    return b'{"t": "end", "x": [' + b",".join([item] * count) + b"]}\n"


WIDE = "\U0001f642"
SHAPES = {
    "a line of the cap, one wide character": _dump("a" * (CAP * 7 // 8) + WIDE),
    "the same, escaped as the probe sends it": _dump("a" * (CAP * 7 // 8) + WIDE, ascii_only=True),
    "lines of an eighth of the cap, one wide character each": _dump("a" * (CAP // 8) + WIDE) * 8,
    "the same, escaped": _dump("a" * (CAP // 8) + WIDE, ascii_only=True) * 8,
    "one line of empty lists": _many(b"[]", CAP // 3),
    "lines of empty lists": _many(b"[]", 30) * (CAP // 90),
    "lines of empty objects": _many(b"{}", 1000) * (CAP // 3000),
    "lines of floats": _many(b"1.5", 30) * (CAP // 120),
    "lines of one-character wide strings": _many(f'"{WIDE}"'.encode(), 30) * (CAP // 210),
    "lines of new keys": (
        b'{"t": "end", ' + b", ".join(b'"k%d": 0' % i for i in range(30)) + b"}\n"
    )
    * (CAP // 250),
    "tiny records": b'{"t": "end"}\n' * (CAP // 13),
    "a line that is not UTF-8": b"\x80" * (CAP - 1) + b"\n",
}


def _feed(data: bytes) -> tuple[hostrecords.RecordSink, int]:
    """The sink after `data` arrived in pipe-sized chunks, and the traced peak meanwhile."""
    tracemalloc.start()
    try:
        sink = hostrecords.RecordSink(CAP)
        for at in range(0, len(data), CHUNK):
            if not sink(data[at : at + CHUNK]):
                break
        sink.close()
        _kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return sink, peak


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_hostile_answer_takes_at_most_twice_the_cap(shape: str) -> None:
    data = SHAPES[shape][:CAP]
    sink, peak = _feed(data)
    # Twice the cap, plus the chunk being read and its copy into the line buffer.
    assert peak <= hostrecords.MEMORY_TIMES * CAP + 2 * CHUNK, f"{peak / CAP:.2f}x --max-size"
    assert sink.held <= hostrecords.MEMORY_TIMES * CAP


def test_a_line_too_wide_to_decode_caps_the_host_and_says_why() -> None:
    sink, _peak = _feed(SHAPES["a line of the cap, one wide character"])
    assert sink.records == []
    assert "more than 2.0 MiB of memory (2 times --max-size, per host" in sink.capped


def test_a_py_spy_answer_gives_the_records_each_line_decodes_to() -> None:
    stack = 'Thread 0x7F (idle): "MainThread"\n    wait (threading.py:320)\n'
    lines = [b'{"t": "hello", "hostname": "n\\u00e9ud-\\u2713"}\n', b"a greeting\n"]
    lines += [_dump(stack * (k % 40 + 60) + "é", ascii_only=k % 2 == 0) for k in range(200)]
    lines.append(b'{"t": "end"}')  # the last line needs no newline
    data = b"".join(lines)
    for size in (7, 4096, CHUNK):  # lines cut anywhere between chunks
        sink = hostrecords.RecordSink(CAP)
        for at in range(0, len(data), size):
            assert sink(data[at : at + size])
        sink.close()
        assert not sink.capped
        assert sink.records == [json.loads(line) for line in lines if line.startswith(b"{")]
        assert sink.noise == ["a greeting"]
    assert sink.held < 1.1 * len(data)  # py-spy-sized records: about their bytes


def test_a_line_nested_too_deep_for_json_is_noise_and_reading_goes_on() -> None:
    sink = hostrecords.RecordSink(CAP)
    assert sink(b"[" * 5000 + b"]" * 5000 + b'\n{"t": "end"}\n')
    assert [r["t"] for r in sink.records] == ["end"]
    assert sink.noise == ["[" * 199 + "…"]


def test_a_py_spy_dump_of_most_of_the_cap_in_one_line_is_kept() -> None:
    # A frame line has a `:` and locals have `,` and `[`: counted inside the text, they
    # would refuse this line; outside strings there are a dozen.
    frames = 'Thread 0x7F (idle): "MainThread"\n    get (queue.py:171)\n        batch: [1, 2]\n'
    line = _dump(frames * (CAP * 3 // 4 // len(frames)), ascii_only=True)
    assert hostrecords.decoding_cost(line) > 2 * CAP  # the quick count alone would refuse it
    sink, peak = _feed(line)
    assert not sink.capped
    assert sink.records == [json.loads(line)]
    assert peak <= hostrecords.MEMORY_TIMES * CAP + 2 * CHUNK


@pytest.mark.parametrize(
    ("line", "tokens"),
    [
        (b'{"a": "x,:[{", "b": [1, 2]}', 1 + 3 + 6),  # the text's ,:[{ are not counted
        (rb'{"a": "q\"[,"}', 1 + 2 + 2),  # an escaped quote does not end the string
        (rb'{"a": "q\\", "b": ",,"}', 1 + 4 + 4),  # an escaped backslash does not escape
        (rb'{"a": "q\\\"[", "b": 1}', 1 + 3 + 4),
        (b'"never ended , : [', 1 + 1),
        (b"[1, 2, {}]", 1 + 4),
    ],
)
def test_tokens_outside_strings_are_counted_exactly(line: bytes, tokens: int) -> None:
    assert hostrecords._tokens(line) == tokens
