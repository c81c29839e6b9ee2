"""The plain-file fast path gives exactly what the state machine gives, or declines."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from reporter.evidence._text import clean_lines, clean_text
from reporter.evidence.pyspy import plain
from reporter.evidence.pyspy.text import _TextParser, parse_text
from reporter.evidence.sniff import sniff
from reporter.model import EvidenceKind, ParseResult

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from generate_bundle import _dump  # noqa: E402


def _state_machine(text: str, source: str) -> ParseResult:
    parser = _TextParser(source)
    parser.run(clean_lines(text))
    return parser.result()


def _fast(text: str, source: str) -> ParseResult | None:
    dumps = plain.read(clean_text(text), source)
    return None if dumps is None else ParseResult(dumps=tuple(dumps))


def _pyspy_texts() -> list[Path]:
    found = []
    for path in sorted((ROOT / "fixtures").rglob("*")):
        if not path.is_file() or path.suffix in {".py", ".md", ".toml", ".html", ".json"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if text.strip() and sniff(text) is EvidenceKind.PYSPY_TEXT:
            found.append(path)
    return found


_FILES = _pyspy_texts()


def _generated(seed: int, snapshots: int = 3, threads: int = 4) -> str:
    return "\n".join(
        _dump(rank, 1000 + rank, s, threads=threads, healthy=bool(seed % 2), half=1, seed=seed)
        for rank in range(2)
        for s in range(snapshots)
    )


def test_the_fixtures_hold_py_spy_text_both_paths_read() -> None:
    assert len(_FILES) > 30
    plain_ones = [p for p in _FILES if _fast(p.read_text(encoding="utf-8"), p.name) is not None]
    # Real captures of both kinds: plain ones take the fast path, the rest the state machine.
    assert len(plain_ones) >= 5
    assert len(plain_ones) < len(_FILES)


@pytest.mark.parametrize("path", _FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fast_path_equals_state_machine_on_fixtures(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast = _fast(text, path.name)
    if fast is not None:
        assert fast == _state_machine(text, path.name)
    assert parse_text(text, source=path.name) == _state_machine(text, path.name)


def _mutations(text: str, rng: random.Random) -> list[str]:
    lines = text.split("\n")
    out = []
    for _ in range(40):
        changed = list(lines)
        at = rng.randrange(len(changed))
        line = changed[at]
        choice = rng.randrange(12)
        if choice == 0:
            del changed[at]
        elif choice == 1:
            changed.insert(at, "")
        elif choice == 2:
            changed[at] = line + " "
        elif choice == 3:
            changed[at] = line.replace("(idle)", "(sleeping)").replace("(active)", "(busy)")
        elif choice == 4:
            changed.insert(at, "    ...")
        elif choice == 5:
            changed.insert(at, "        Arguments:")
        elif choice == 6:
            changed[at] = "[2026-07-14 08:34:44 TP0] " + line
        elif choice == 7:
            changed[at] = line.lstrip(" ")
        elif choice == 8:
            changed.insert(at, changed[at])
        elif choice == 9:
            changed[at] = line[: len(line) // 2]
        elif choice == 10:
            changed.insert(at, "-" * 30)
        else:
            changed[at] = "\t" + line.lstrip(" ")
        out.append("\n".join(changed))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_fast_path_equals_state_machine_on_mutated_dumps(seed: int) -> None:
    rng = random.Random(seed)
    text = _generated(seed, snapshots=1 + seed % 3, threads=1 + seed % 4)
    assert _fast(text, "g.txt") == _state_machine(text, "g.txt")
    taken = declined = 0
    for variant in _mutations(text, rng):
        fast = _fast(variant, "g.txt")
        if fast is None:
            declined += 1
            continue
        taken += 1
        assert fast == _state_machine(variant, "g.txt"), variant
    assert taken and declined  # some mutations keep the plain shape (blank lines), most not


def test_declines_what_only_the_state_machine_reads() -> None:
    base = _generated(3, snapshots=1, threads=2)
    assert _fast(base, "g.txt") is not None
    lines = base.split("\n")
    thread_at = next(i for i, line in enumerate(lines) if line.startswith("Thread "))
    frameless = "\n".join(
        [*lines[: thread_at + 1], 'Thread 77 (idle): "other"', *lines[thread_at + 1 :]]
    )
    for text in (
        base.replace("Python v", "Python "),  # header without its version line
        "\n".join(lines[:2] + lines[3:]),  # the blank line after the header is fine ...
        frameless,  # a thread without frames (hand-collapsed dumps share the next stack)
        base + "\nError: Failed to suspend process",
        "Process 7: sglang::scheduler_TP0   (Python 3.12.3)\n" + "\n".join(lines[2:]),
    ):
        fast = _fast(text, "g.txt")
        if fast is not None:
            assert fast == _state_machine(text, "g.txt")
    assert _fast(base.replace("Python v", "Python "), "g.txt") is None
    assert _fast(frameless, "g.txt") is None
    assert _fast(base + "\nError: Failed to suspend process", "g.txt") is None


_HEADER = "Process 29604: python app.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
_THREAD = 'Thread 29604 (idle): "MainThread"\n'
_FRAME = "    wait (threading.py:320)\n"


WHITESPACE_ROWS = [
    # Issue 29, shrunk by the fuzz test: exactly four spaces inside a thread.
    ("four-spaces-in-thread", _HEADER + _THREAD + "    \n" + _FRAME),
    ("four-spaces-after-frame", _HEADER + _THREAD + _FRAME + "    \n"),
    ("four-spaces-after-header", _HEADER + "    \n" + _THREAD + _FRAME),
    ("five-spaces-in-thread", _HEADER + _THREAD + "     \n" + _FRAME),
    ("one-space-in-thread", _HEADER + _THREAD + " \n" + _FRAME),
    ("tab-in-thread", _HEADER + _THREAD + "\t\n" + _FRAME),
    ("four-spaces-and-tab", _HEADER + _THREAD + "    \t\n" + _FRAME),
    ("eight-spaces-last-line", _HEADER + _THREAD + _FRAME + "        "),
    ("four-spaces-alone", "    "),
]


@pytest.mark.parametrize(("name", "text"), WHITESPACE_ROWS, ids=[n for n, _ in WHITESPACE_ROWS])
def test_whitespace_only_lines(name: str, text: str) -> None:
    """A line of spaces is never a frame: the fast path declines it (or reads the same),
    and the state machine keeps the thread's one real frame."""
    fast = _fast(text, f"{name}.txt")
    slow = _state_machine(text, f"{name}.txt")
    if fast is not None:
        assert fast == slow
    assert parse_text(text, source=f"{name}.txt") == slow
    if _FRAME in text:
        (dump,) = slow.dumps
        assert [f.function for t in dump.threads for f in t.frames] == ["wait"]


def test_identical_thread_blocks_share_one_frames_tuple() -> None:
    # A stuck rank's two snapshots, read as two files: each distinct thread block is parsed
    # once and its frames tuple serves every copy; the threads keep their own places.
    plain.BLOCKS.clear()
    texts = [_dump(0, 100, snap, threads=2, healthy=False, half=4, seed=7) for snap in (0, 1)]
    assert texts[0] == texts[1]
    first, second = (plain.read(clean_text(t), f"rank{n}.txt") for n, t in enumerate(texts))
    assert first is not None and second is not None
    a, b = first[0].threads[0], second[0].threads[0]
    assert a.frames == b.frames and a.frames is b.frames
    assert (a.source.path, b.source.path) == ("rank0.txt", "rank1.txt")
    assert len(plain.BLOCKS) >= 1
    for text in texts:  # and the shared frames are those the state machine reads
        assert _fast(text, "x.txt") == _state_machine(text, "x.txt")


def _stuck(snapshots: int = 3) -> list[str]:
    """A stuck rank's snapshots: the same block, again and again."""
    block = _dump(0, 100, 0, threads=3, healthy=False, half=4, seed=11)
    return [block] * snapshots


REPEATS = [
    ("identical", "\n".join(_stuck())),
    ("no-blank-between", "".join(_stuck())),
    ("blank-lines-between", "\n\n\n".join(_stuck())),
    ("no-final-newline", "\n".join(_stuck()).rstrip("\n")),
    ("blank-lines-first", "\n\n" + "\n".join(_stuck())),
    ("one-snapshot", _stuck(1)[0]),
    ("spaces-after-second", "\n".join(_stuck()).replace("\n\nProcess", "\n    \nProcess", 1)),
    (
        "frame-changed-in-second",
        "\n".join(_stuck()).replace("(threading.py:", "(threading.py:1", 4),
    ),
    (
        "extra-thread-in-last",
        "\n".join(_stuck()) + 'Thread 999 (idle): "late"\n    wait (threading.py:320)\n',
    ),
    ("cut-last", "\n".join(_stuck())[:-40]),
    ("error-after", "\n".join(_stuck()) + "Error: Failed to suspend process\n"),
]


@pytest.mark.parametrize(("name", "text"), REPEATS, ids=[n for n, _ in REPEATS])
def test_repeated_blocks_read_once_give_what_the_state_machine_gives(name: str, text: str) -> None:
    fast = _fast(text, "r.txt")
    slow = _state_machine(text, "r.txt")
    if fast is not None:
        assert fast == slow
    assert parse_text(text, source="r.txt") == slow
    if name in ("identical", "no-blank-between", "blank-lines-between", "no-final-newline"):
        assert fast is not None and len(fast.dumps) == 3
        first, second, third = fast.dumps
        # Moved, not re-read: the same frames, each thread at its own line of its own block.
        assert [t.frames for t in second.threads] == [t.frames for t in first.threads]
        assert all(a.frames is b.frames for a, b in zip(first.threads, third.threads, strict=True))
        lines = text.split("\n")
        for dump in fast.dumps:
            assert lines[dump.source.line - 1].startswith("Process ")
            for thread in dump.threads:
                assert lines[thread.source.line - 1].startswith(f"Thread {thread.thread_id} ")
    if name in ("error-after",):
        assert fast is None
