"""Python traceback parser: frames innermost first, headline, prefixes, chains, junk."""

from __future__ import annotations

import pytest

from reporter.evidence import traceback
from reporter.model import EvidenceKind

SIMPLE = """\
Traceback (most recent call last):
  File "/srv/sglang/srt/managers/scheduler.py", line 123, in check_hicache_events
    self.tree_cache.writing_check()
  File "/srv/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
    work.wait()
RuntimeError: [gloo/transport/tcp/pair.cc:534] Connection closed by peer
"""

PREFIXED = """\
[2026-07-14 08:34:44 TP0] Traceback (most recent call last):
[2026-07-14 08:34:44 TP0]   File "a.py", line 10, in outer
[2026-07-14 08:34:44 TP0]     inner()
[2026-07-14 08:34:45 TP0]     ^^^^^^^
[2026-07-14 08:34:45 TP0]   File "b.py", line 20, in inner
[2026-07-14 08:34:45 TP0]     raise ValueError("x")
[2026-07-14 08:34:45 TP0] ValueError: x
"""

CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 1, in f
    g()
KeyError: 'k'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 3, in f
    raise RuntimeError("wrapped")
RuntimeError: wrapped
"""

NO_SOURCE_LINES = """\
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/app/main.py", line 5, in <module>
    main()
  [Previous line repeated 996 more times]
KeyboardInterrupt
"""

GROUP = """\
  + Exception Group Traceback (most recent call last):
  |   File "/app/t.py", line 4, in <module>
  |     raise ExceptionGroup("eg", [ValueError(1)])
  | ExceptionGroup: eg (1 sub-exception)
  +-+---------------- 1 ----------------
    | ValueError: 1
    +------------------------------------
"""


@pytest.mark.parametrize(
    ("text", "functions", "headlines"),
    [
        (
            SIMPLE,
            [("all_reduce", "check_hicache_events")],
            ["RuntimeError: [gloo/transport/tcp/pair.cc:534] Connection closed by peer"],
        ),
        (PREFIXED, [("inner", "outer")], ["ValueError: x"]),
        (CHAINED, [("f",), ("f",)], ["KeyError: 'k'", "RuntimeError: wrapped"]),
        (
            NO_SOURCE_LINES,
            [("<module>", "_run_code", "_run_module_as_main")],
            ["KeyboardInterrupt"],
        ),
        (GROUP, [("<module>",)], ["ExceptionGroup: eg (1 sub-exception)"]),
        ("no traceback here\njust text\n", [], []),
    ],
)
def test_tracebacks(text: str, functions: list[tuple[str, ...]], headlines: list[str]) -> None:
    result = traceback.parse(text, source="t.txt")
    assert [tuple(f.function for f in d.threads[0].frames) for d in result.dumps] == functions
    assert [d.headline for d in result.dumps] == headlines


def test_frames_keep_file_and_line_and_the_dump_says_where_it_started() -> None:
    result = traceback.parse("intro\n" + SIMPLE, source="issue.md")
    (dump,) = result.dumps
    top = dump.threads[0].frames[0]
    assert (top.file, top.line) == ("/srv/torch/distributed/distributed_c10d.py", 3252)
    assert dump.kind is EvidenceKind.UNKNOWN
    assert str(dump.source) == "issue.md:2"
    assert dump.threads[0].thread_id == traceback.THREAD_ID


def test_a_header_without_frames_is_a_warning_not_a_dump() -> None:
    result = traceback.parse("Traceback (most recent call last):\nsomething else\n", source="x")
    assert result.dumps == ()
    assert [w.source.line for w in result.warnings] == [1]


def test_prose_after_the_frames_is_not_a_headline() -> None:
    text = SIMPLE.replace(
        "RuntimeError: [gloo/transport/tcp/pair.cc:534] Connection closed by peer",
        "and then it just sat there",
    )
    (dump,) = traceback.parse(text, source="x").dumps
    assert dump.headline is None
    assert len(dump.threads[0].frames) == 2


def test_a_log_line_without_the_prefix_ends_the_traceback() -> None:
    text = PREFIXED.replace("[2026-07-14 08:34:45 TP0] ValueError: x", "unrelated line")
    (dump,) = traceback.parse(text, source="x").dumps
    assert dump.headline is None
    assert [f.function for f in dump.threads[0].frames] == ["inner", "outer"]
