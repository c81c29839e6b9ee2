"""Time every module-level regex of `reporter` on adversarial input: find backtracking.

Imports every module under `reporter/`, collects each compiled pattern it holds at module
level (and the secret shapes), and runs `match` (anchored, as line parsers use it) and
`search` over 4 KB strings built to make backtracking patterns go quadratic (long runs of
one character class, runs that almost match, separators without the closing part). A
linear pattern takes microseconds on 4 KB; one over `--limit` (0.1 s) is flagged, and at
40 KB it would take 100 times as long (a line of a log or a dump can be that long).

    python benchmarks/regex_audit.py [--size 4000] [--limit 0.1]
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def patterns() -> list[tuple[str, re.Pattern[str]]]:
    """(module.name, pattern) for every module-level compiled str pattern in reporter/."""
    sys.path.insert(0, str(ROOT))
    import reporter

    found: list[tuple[str, re.Pattern[str]]] = []
    seen: set[int] = set()
    for info in pkgutil.walk_packages(reporter.__path__, "reporter."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            candidates = [value]
            if isinstance(value, tuple):
                candidates = [getattr(v, "pattern", v) for v in value]
            for item in candidates:
                if (
                    isinstance(item, re.Pattern)
                    and isinstance(item.pattern, str)
                    and id(item) not in seen
                ):
                    seen.add(id(item))
                    found.append((f"{info.name}.{name}", item))
    return found


def adversarial(size: int) -> dict[str, str]:
    """Inputs that make backtracking patterns slow."""
    return {
        "letters": "a" * size,
        "hex": ("0123456789abcdef" * (size // 16 + 1))[:size],
        "mixed-token": ("aB3" * (size // 3 + 1))[:size],
        "spaces": " " * size,
        "snake": ("a_" * (size // 2 + 1))[:size],
        "dots": ("a." * (size // 2 + 1))[:size],
        "colons": ("a:" * (size // 2 + 1))[:size],
        "dashes": ("-a" * (size // 2 + 1))[:size],
        "slashes": ("a/" * (size // 2 + 1))[:size],
        "equals": ("a=" * (size // 2 + 1))[:size],
        "brackets": "[" * (size // 2) + "]" * (size // 2),
        "quotes": ('"a' * (size // 2 + 1))[:size],
        "url-ish": "http://" + "a" * size,
        "at-signs": ("a@" * (size // 2 + 1))[:size],
        "digits-dots": ("1." * (size // 2 + 1))[:size],
        "tabs-words": ("word\t" * (size // 5 + 1))[:size],
        "begin-key": "-----BEGIN PRIVATE KEY-----" + "A" * size,
        "escapes": "\x1b]" + "a" * size,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the slowest patterns; exit 1 when one is over the limit."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4_000)
    parser.add_argument("--limit", type=float, default=0.1)
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args(argv)
    inputs = adversarial(args.size)
    results: list[tuple[float, float, str, str]] = []
    found = patterns()
    for name, pattern in found:
        worst = (0.0, 0.0, "")
        for label, text in inputs.items():
            started = time.perf_counter()
            pattern.match(text)
            anchored = time.perf_counter() - started
            started = time.perf_counter()
            pattern.search(text)
            anywhere = time.perf_counter() - started
            worst = max(worst, (anchored, anywhere, label))
        results.append((worst[0], worst[1], name, worst[2]))
    results.sort(reverse=True)
    slow = [r for r in results if r[0] > args.limit]
    print(f"patterns: {len(found)}; inputs: {len(inputs)} x {args.size:,} characters")
    print("  anchored (match)   anywhere (search)   pattern")
    for anchored, anywhere, name, label in results[: args.show]:
        flag = "  SLOW" if anchored > args.limit else ""
        print(f"  {anchored * 1000:10.1f} ms  {anywhere * 1000:12.1f} ms   {name} ({label}){flag}")
    print(f"over {args.limit} s anchored: {len(slow)}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
