"""Time the preview's raw-HTML sanitiser and the whole page on hostile inputs of growing size.

Each input repeats one piece N times: unclosed tags (`<b `), unclosed comments, quoted
attribute values that never close, processing instructions; first bare (what
`preview.sanitize` gets), then inside a `<details>` HTML block of a report (what
`report preview` meets). Prints seconds per size and the ratio to the previous size:
a linear sanitiser doubles (ratio ~2) when N doubles, a quadratic one quadruples.
The hand-written sanitiser this replaced took ~20 s on 8,000 `<b ` pieces.

    python benchmarks/bench_preview.py [--sizes 1000,2000,4000,8000,16000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial

from reporter.render import preview

PIECES = {
    "unclosed <b ": "<b ",
    "unclosed comment": "<!-- ",
    "open quote": '<a x="',
    "processing": "<?x ",
    "allowed tag": "<b>x</b> ",
}


def _best(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000,8000,16000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'input':<18} {'N':>7} {'sanitize s':>11} {'ratio':>6} {'page s':>8} {'ratio':>6}")
    for label, piece in PIECES.items():
        last: tuple[float, float] | None = None
        for n in sizes:
            fragment = piece * n
            page = f"# t\n\n<details>\n{fragment}\n\n</details>\n"
            bare = _best(partial(preview.sanitize, fragment), args.repeat)
            whole = _best(partial(preview.to_html, page), args.repeat)
            ratios = (
                (f"{bare / last[0]:6.2f}", f"{whole / last[1]:6.2f}")
                if last and last[0] > 0 and last[1] > 0
                else ("     -", "     -")
            )
            print(f"{label:<18} {n:>7} {bare:>11.4f} {ratios[0]} {whole:>8.4f} {ratios[1]}")
            last = (bare, whole)


if __name__ == "__main__":
    main()
