"""Fuzz the dump parsers and the analysis with random mutations of the real-world corpus.

Each run takes one or two dumps from `fixtures/realworld/`, mutates them (bit flips,
character swaps, truncation, line duplication / deletion / swap, splicing a piece of
another dump in, junk lines, indentation changes) and sends the result through what
`report analyze --json` runs in-process: sniffing, the parser for the sniffed kind, a
`Bundle` and `analyze` + `to_json`. It counts

- tracebacks: exceptions other than the project's own `ReporterError` tree;
- slow inputs: runs over `--bound` seconds (a SIGALRM at 10x the bound turns a real
  hang into a counted failure instead of a stuck benchmark);

and prints runs, tracebacks, hangs, the slowest run and throughput, then the same for
a deep-stack case (a 10,000-frame py-spy dump and a 10,000-frame faulthandler dump).
The first traceback of each distinct (exception, place) goes to `--report`.

    python benchmarks/fuzz_parsers.py [--runs 100000] [--seed N] [--bound 2.0]

Each run draws a fresh random seed and prints it, so it keeps looking for new cases where
the test suite's property tests stay deterministic (tests/conftest.py); `--seed N` replays
a run. A case found here goes into the suite as a fixed example (`FOUND` in
tests/evidence/test_pyspy.py, a row in the parser's table test) once it is fixed.

Exit status 1 when any traceback or hang was seen.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reporter.analysis import analyze, to_json  # noqa: E402
from reporter.core.errors import ReporterError  # noqa: E402
from reporter.evidence import sniff  # noqa: E402
from reporter.model import Bundle, EvidenceKind  # noqa: E402

CORPUS = ROOT / "fixtures" / "realworld"
DEEP = 10_000
_JUNK = (
    "",
    "    ",
    "Thread",
    "Thread (",
    'Thread 0x7f (idle): "',
    "Process : ",
    "Process 1: x   (Python 3.12.3)",
    "Python v",
    "Pyspy dump for PID 9:",
    "Pyspy failed (py-spy dump --pid 4). Error: No such process",
    "All pyspy dump attempts failed for PID 4.",
    "Stack dump for u 12 0.0 0.0 1 1 ? S 0:00 0:00 x",
    "Fatal Python error: Aborted",
    "Current thread 0x0 (most recent call first):",
    '  File "',
    '  File "a.py", line 1 in f  File "b.py", line 2 in g',
    "    f (a.py:1)    g (b.py:2)",
    "\t f (a.py:1)",
    "    " + "(" * 200,
    "    x (" + "y" * 5000 + ":1)",
    "-" * 40,
    "Caused by:",
    "Error: No such file or directory (os error 2)",
    "\x00\x1b[31m\ufeff\u202e",
)


class _HangError(Exception):
    """Raised by the alarm: one input ran far past the bound."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _HangError


def load_corpus() -> list[str]:
    """The text of every real file (text and JSON dumps, and the refused non-dumps)."""
    files = sorted(p for p in CORPUS.iterdir() if p.is_file() and p.name != "SOURCES.toml")
    texts = [p.read_text(encoding="utf-8") for p in files]
    if not texts:
        raise SystemExit(f"no dumps in {CORPUS}")
    return texts


def mutate(rng: random.Random, corpus: list[str]) -> str:
    """One to four random mutations of a random dump."""
    text = rng.choice(corpus)
    for _ in range(rng.randint(1, 4)):
        text = _MUTATIONS[rng.randrange(len(_MUTATIONS))](rng, text, corpus)
    return text


def _flip(rng: random.Random, text: str, corpus: list[str]) -> str:
    if not text:
        return text
    data = bytearray(text.encode("utf-8"))
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    return data.decode("utf-8", errors="replace")


def _char(rng: random.Random, text: str, corpus: list[str]) -> str:
    if not text:
        return text
    at = rng.randrange(len(text))
    return text[:at] + rng.choice(" ():\"'\n\t0123456789x.-|[]") + text[at + 1 :]


def _truncate(rng: random.Random, text: str, corpus: list[str]) -> str:
    return text[: rng.randrange(len(text) + 1)]


def _lines(rng: random.Random, text: str, corpus: list[str]) -> str:
    lines = text.split("\n")
    if not lines:
        return text
    at = rng.randrange(len(lines))
    choice = rng.randrange(4)
    if choice == 0:
        lines.insert(at, lines[at])
    elif choice == 1:
        del lines[at]
    elif choice == 2:
        other = rng.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    else:
        lines[at] = lines[at].lstrip() if rng.random() < 0.5 else "  " + lines[at]
    return "\n".join(lines)


def _splice(rng: random.Random, text: str, corpus: list[str]) -> str:
    other = rng.choice(corpus)
    start = rng.randrange(len(other) + 1)
    piece = other[start : start + rng.randint(1, 2000)]
    at = rng.randrange(len(text) + 1)
    return text[:at] + piece + text[at:]


def _junk(rng: random.Random, text: str, corpus: list[str]) -> str:
    lines = text.split("\n")
    lines.insert(rng.randrange(len(lines) + 1), rng.choice(_JUNK))
    return "\n".join(lines)


def _repeat(rng: random.Random, text: str, corpus: list[str]) -> str:
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    return "\n".join(lines[:at] + [lines[at]] * rng.randint(2, 300) + lines[at:])


_MUTATIONS = (_flip, _char, _truncate, _lines, _splice, _junk, _repeat)


def run_one(text: str, name: str) -> None:
    """Sniff, parse, bundle, analyze and export one input, as `report analyze --json` does."""
    kind = sniff.sniff(text)
    if kind is EvidenceKind.UNKNOWN:
        return
    result = sniff.parse(kind, text, source=name)
    bundle = Bundle(
        root=None,
        dumps=result.dumps,
        failures=result.failures,
        warnings=result.warnings,
    )
    if bundle.dumps or bundle.failures:
        to_json(analyze(bundle))


def deep_inputs() -> list[tuple[str, str]]:
    """A runaway recursion as py-spy and as faulthandler print it."""
    pyspy = ["Process 4242: python deep.py", "Python v3.12.3 (/usr/bin/python3.12)", ""]
    pyspy.append('Thread 4242 (active+gil): "MainThread"')
    pyspy.extend(f"    recurse (deep.py:{i % 50 + 1})" for i in range(DEEP))
    fault = [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x1 (most recent call first):",
    ]
    fault.extend(f'  File "/srv/deep.py", line {i % 50 + 1} in recurse' for i in range(DEEP))
    return [
        ("deep-pyspy.txt", "\n".join(pyspy) + "\n"),
        ("deep-faulthandler.txt", "\n".join(fault) + "\n"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument(
        "--seed", type=int, default=None, help="replay a run (default: a fresh random seed)"
    )
    parser.add_argument("--bound", type=float, default=2.0, help="seconds one input may take")
    parser.add_argument("--report", type=Path, default=Path("fuzz-tracebacks.txt"))
    args = parser.parse_args()

    corpus = load_corpus()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**32)
    print(f"seed {args.seed} (replay with --seed {args.seed})", flush=True)
    rng = random.Random(args.seed)
    signal.signal(signal.SIGALRM, _alarm)
    limit = max(1, int(args.bound * 10))
    kinds: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    seen: dict[str, str] = {}
    hangs = slow = 0
    slowest = 0.0
    started = time.perf_counter()

    def attempt(text: str, name: str) -> None:
        nonlocal hangs, slow, slowest
        kinds[sniff.sniff(text).value] += 1
        begin = time.perf_counter()
        signal.alarm(limit)
        try:
            run_one(text, name)
        except _HangError:
            hangs += 1
            failures["hang"] += 1
            seen.setdefault("hang", f"{name}: over {limit}s\n{text[:2000]}\n")
        except ReporterError:
            pass
        except Exception as exc:  # the benchmark's point: count what escapes
            where = traceback.extract_tb(exc.__traceback__)[-1]
            key = f"{type(exc).__name__} at {where.filename}:{where.lineno}"
            failures[key] += 1
            if key not in seen:
                seen[key] = f"{key}\n{traceback.format_exc()}\ninput:\n{text[:4000]}\n"
        finally:
            signal.alarm(0)
        spent = time.perf_counter() - begin
        slowest = max(slowest, spent)
        slow += spent > args.bound

    for index in range(args.runs):
        attempt(mutate(rng, corpus), f"fuzz-{index}.txt")
        if (index + 1) % 10_000 == 0:
            print(f"  {index + 1} runs, {sum(failures.values())} failures", flush=True)
    fuzz_time = time.perf_counter() - started
    fuzz_slowest = slowest
    fuzz_tracebacks = sum(n for key, n in failures.items() if key != "hang")

    deep_started = time.perf_counter()
    slowest = 0.0
    for name, text in deep_inputs():
        attempt(text, name)
    deep_time = time.perf_counter() - deep_started

    tracebacks = sum(n for key, n in failures.items() if key != "hang")
    print(f"corpus: {len(corpus)} real dumps from {CORPUS.relative_to(ROOT)}")
    print(
        f"fuzz: runs {args.runs}, seed {args.seed}, tracebacks {fuzz_tracebacks}, "
        f"hangs {hangs}, slow (> {args.bound}s) {slow}"
    )
    print(
        f"fuzz: {fuzz_time:.1f}s, {args.runs / fuzz_time:.0f} runs/s, slowest input {fuzz_slowest:.3f}s"
    )
    print("fuzz: sniffed kinds " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    print(f"deep: 2 inputs of {DEEP} frames, {deep_time:.2f}s, slowest {slowest:.3f}s")
    print(f"total: tracebacks {tracebacks}, hangs {hangs}")
    for key, count in failures.most_common():
        print(f"  {count:6d}  {key}")
    if seen:
        args.report.write_text("\n\n".join(seen.values()), encoding="utf-8")
        print(f"first traceback of each kind: {args.report}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
