"""Time every regex of `reporter` on adversarial input, `match` and `search`: find backtracking.

Collects each compiled pattern held at module level in `reporter/` (and in tuples and
dicts there), the secret shapes of `reporter/data/secrets.toml`, and the patterns the
secret shapes and the issue-form parser build at run time. Each is run, anchored (`match`,
as line parsers use it) and unanchored (`search`, as `finditer`, `sub` and `findall` do),
over two families of inputs of `--size` characters:

* generic ones that make backtracking patterns slow (long runs of one character class,
  runs that almost match, separators without the closing part);
* inputs built *from the pattern itself* (`re._parser`): a string the pattern matches,
  then that string cut short and repeated (`<h2>Rank 1: x<pre>` a thousand times, never
  closed: a search restarts at every copy and scans to the end), and the same string with
  one repeated part stretched to the whole size and then broken.

A linear pattern takes milliseconds on these. A pattern is flagged when one run is over
`--limit`, or when doubling the input more than triples the time of its worst input (the
mark of quadratic work, whatever the machine's speed). `search` times count for the
patterns the source uses with `search`, `finditer`, `findall`, `sub` or `split`; others
are reported, not flagged.

    python benchmarks/regex_audit.py [--size 4000] [--limit 0.1] [--show 15]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_SEARCHING = ("search", "finditer", "findall", "sub", "subn", "split")


@dataclass
class Found:
    """One pattern and how the code uses it."""

    name: str
    pattern: re.Pattern[str]
    searched: bool


def _uses(source: str, name: str) -> bool:
    """True when `source` calls a searching method on the pattern named `name`."""
    short = name.rsplit(".", 1)[-1]
    return any(f"{short}.{method}(" in source for method in _SEARCHING) or any(
        f"{method}({short}" in source for method in ("re.sub", "re.split")
    )


def patterns() -> list[Found]:
    """Every compiled str pattern in reporter/, with whether the code searches with it."""
    sys.path.insert(0, str(ROOT))
    import reporter

    found: list[Found] = []
    seen: set[int] = set()

    def add(name: str, item: object, searched: bool) -> None:
        if isinstance(item, re.Pattern) and isinstance(item.pattern, str) and id(item) not in seen:
            seen.add(id(item))
            found.append(Found(name, item, searched))

    for info in pkgutil.walk_packages(reporter.__path__, "reporter."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        try:
            source = inspect.getsource(module)
        except (OSError, TypeError):
            source = ""
        for name, value in vars(module).items():
            full = f"{info.name}.{name}"
            items: list[object] = [value]
            if isinstance(value, tuple | list):
                items = [getattr(v, "pattern", v) for v in value]
            elif isinstance(value, dict):
                items = list(value.values())
            for item in items:
                add(full, item, _uses(source, name) or isinstance(value, tuple | list | dict))
    from reporter.secrets import shapes

    # The secret shapes are searched over every text that leaves the tool.
    for shape in shapes.secret_patterns():
        add(f"secrets.toml:{shape.kind}", shape.pattern, True)
    # ... and so are the value patterns of its [values] table.
    values = shapes.value_rules()
    for key in ("blank", "not_a_value", "named_inert"):
        add(f"secrets.toml:[values] {key}", getattr(values, key), True)
    return found


def generic(size: int) -> dict[str, str]:
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


# --- inputs built from a pattern -------------------------------------------------------------

_CANDIDATES = "a0 -_.:/=xZ\t\n\"'<>@#%"


def _parse(pattern: re.Pattern[str]) -> Any:
    parser: Any = getattr(re, "_parser", None) or importlib.import_module("sre_parse")
    return parser.parse(pattern.pattern, pattern.flags)


def _in_class(items: list[tuple[Any, Any]]) -> str:
    """A character the `IN` items accept (the first that fits)."""
    negate = any(str(op) == "NEGATE" for op, _ in items)
    for char in _CANDIDATES + "".join(chr(c) for c in range(33, 127)):
        if _class_has(items, char) != negate:
            return char
    return "a"


def _class_has(items: list[tuple[Any, Any]], char: str) -> bool:
    code = ord(char)
    for op, av in items:
        kind = str(op)
        if kind == "LITERAL" and av == code:
            return True
        if kind == "RANGE" and av[0] <= code <= av[1]:
            return True
        if kind == "CATEGORY":
            name = str(av)
            if ("DIGIT" in name and char.isdigit()) != ("NOT" in name) and "DIGIT" in name:
                return True
            if "SPACE" in name and (char.isspace() != ("NOT" in name)):
                return True
            if "WORD" in name and ((char.isalnum() or char == "_") != ("NOT" in name)):
                return True
    return False


def _example(tree: Any, stretch: int, size: int, counter: list[int]) -> str:
    """A string `tree` matches; the `stretch`-th repeat is repeated up to `size` times."""
    out: list[str] = []
    for op, av in tree:
        kind = str(op)
        if kind == "LITERAL":
            out.append(chr(av))
        elif kind == "NOT_LITERAL":
            out.append("a" if av != ord("a") else "b")
        elif kind == "ANY":
            out.append("a")
        elif kind == "IN":
            out.append(_in_class(av))
        elif kind in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            counter[0] += 1
            times = max(low, 1)
            if counter[0] == stretch:
                times = max(
                    times, min(size, high if high != getattr(re, "MAXREPEAT", 4294967295) else size)
                )
            piece = _example(sub, stretch, size, counter)
            out.append(piece * min(times, max(1, size // max(len(piece), 1))))
        elif kind in ("SUBPATTERN",):
            out.append(_example(av[-1], stretch, size, counter))
        elif kind == "ATOMIC_GROUP":
            out.append(_example(av, stretch, size, counter))
        elif kind == "BRANCH":
            out.append(_example(av[1][0], stretch, size, counter))
        # AT, ASSERT, ASSERT_NOT, GROUPREF, CATEGORY at top level: nothing to emit
    return "".join(out)


def built(pattern: re.Pattern[str], size: int) -> dict[str, str]:
    """Inputs made from `pattern`: near-matches repeated, and each repeat stretched."""
    try:
        tree = _parse(pattern)
    except Exception:
        return {}
    out: dict[str, str] = {}
    whole = _example(tree, 0, size, [0])
    if whole:
        for cut in sorted({max(1, len(whole) // 2), max(1, len(whole) - 1)}):
            head = whole[:cut]
            out[f"near-match x{size // len(head)} ({head[:12]!r})"] = (
                head * (size // len(head) + 1)
            )[:size]
    repeats = [0]
    _example(tree, -1, size, repeats)
    for index in range(1, min(repeats[0], 12) + 1):
        stretched = _example(tree, index, size, [0])
        if stretched and stretched != whole:
            out[f"repeat {index} stretched"] = stretched[:size] + "\x00"
    return out


def timed(pattern: re.Pattern[str], text: str, *, search: bool = True) -> tuple[float, float]:
    """(match seconds, search seconds) of one input; search 0 when not asked for."""
    started = time.perf_counter()
    pattern.match(text)
    anchored = time.perf_counter() - started
    if not search:
        return anchored, 0.0
    started = time.perf_counter()
    pattern.search(text)
    return anchored, time.perf_counter() - started


@dataclass
class Result:
    """The worst input of one pattern."""

    name: str
    searched: bool
    anchored: float
    anywhere: float
    label: str
    growth: float
    size: int = 0

    @property
    def worst(self) -> float:
        return max(self.anchored, self.anywhere if self.searched else 0.0)


def _worst(found: Found, size: int, *, search: bool) -> Result:
    inputs = {**generic(size), **built(found.pattern, size)}
    best = Result(found.name, found.searched, 0.0, 0.0, "", 1.0, size)
    for label, text in inputs.items():
        anchored, anywhere = timed(found.pattern, text, search=search)
        key = max(anchored, anywhere if found.searched else 0.0)
        if key >= best.worst:
            best = Result(found.name, found.searched, anchored, anywhere, label, 1.0, size)
    return best


def audit(found: Found, size: int, limit: float) -> Result:
    """Time one pattern on every input: first at a twentieth of `size` (a cubic pattern
    flagged there is not run on more), then at `size`, and its worst input at 2 x size."""
    # A pattern only matched (never searched) is searched on the probe alone, for the record.
    probe = _worst(found, max(size // 20, 50), search=True)
    if probe.worst > limit / 10:
        # Once more on its worst input, the faster of two: a busy machine is not a pattern.
        text = {**generic(probe.size), **built(found.pattern, probe.size)}[probe.label]
        first, second = timed(found.pattern, text), timed(found.pattern, text)
        probe.anchored, probe.anywhere = min(first[0], second[0]), min(first[1], second[1])
    if probe.worst > limit / 10:
        probe.growth = float("inf")
        return probe
    best = _worst(found, size, search=found.searched)
    if best.worst > 0.002 and best.worst < limit:
        doubled = {**generic(size * 2), **built(found.pattern, size * 2)}.get(best.label)
        if doubled is not None:
            anchored, anywhere = timed(found.pattern, doubled, search=found.searched)
            again = max(anchored, anywhere if found.searched else 0.0)
            best.growth = again / max(best.worst, 1e-9)
    return best


def flagged(result: Result, limit: float) -> bool:
    """Over the limit (a tenth of it on the probe), or superlinear (doubling the input
    more than triples the time)."""
    return (
        result.worst > limit
        or result.growth == float("inf")
        or (result.growth > 3.0 and result.worst > 0.005)
    )


def run(size: int, limit: float, *, verbose: bool = False) -> list[Result]:
    """Every pattern's result, slowest first."""
    results = []
    for found in patterns():
        if verbose:
            print(f"... {found.name}", file=sys.stderr, flush=True)
        results.append(audit(found, size, limit))
    results.sort(key=lambda r: r.worst, reverse=True)
    return results


def main(argv: list[str] | None = None) -> int:
    """Print the slowest patterns; exit 1 when one is flagged."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4_000)
    parser.add_argument("--limit", type=float, default=0.1)
    parser.add_argument("--show", type=int, default=15)
    parser.add_argument("--verbose", action="store_true", help="name each pattern as it starts")
    args = parser.parse_args(argv)
    results = run(args.size, args.limit, verbose=args.verbose)
    slow = [r for r in results if flagged(r, args.limit)]
    print(
        f"patterns: {len(results)}; inputs per pattern: generic and built, {args.size:,} characters"
    )
    print("  anchored (match)   anywhere (search)   x2 input   pattern (worst input)")
    for r in results[: args.show]:
        flag = "  SLOW" if flagged(r, args.limit) else ""
        used = "" if r.searched else " [match only]"
        print(
            f"  {r.anchored * 1000:10.1f} ms  {r.anywhere * 1000:12.1f} ms   {r.growth:6.1f}x   "
            f"{r.name}{used} ({r.label}){flag}"
        )
    print(f"flagged: {len(slow)}")
    for r in slow:
        print(
            f"  {r.name}: {r.worst:.3f} s on {r.label} ({r.size:,} characters), x{r.growth:.1f} when doubled"
        )
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
