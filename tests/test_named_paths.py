"""Comments in pyproject.toml and reporter/data/*.toml name files that exist.

A comment that says where something is read ("read by reporter/analysis/diff.py") is a
map; after a file moves, a stale one sends a reader to nothing (issue 25 found six).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# A path inside the repository, as comments write it: `reporter/secrets/shapes.py`, and
# one broken over two comment lines (`reporter/evidence/` + `metrics/prometheus.py`).
_PATH_RE = re.compile(r"\b(?:reporter|tests|benchmarks|fixtures|tools|docs)/[\w./-]*[\w/]")
FILES = [ROOT / "pyproject.toml", *sorted((ROOT / "reporter" / "data").glob("*.toml"))]


def _comment_text(path: Path) -> str:
    """The comments of a TOML file joined into one text (a path may wrap a line)."""
    parts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        at = line.find("#")
        if at >= 0 and line[:at].count('"') % 2 == 0 and line[:at].count("'") % 2 == 0:
            parts.append(line[at + 1 :].strip())
    return " ".join(parts).replace("/ ", "/")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_path_a_comment_names_exists(path: Path) -> None:
    named = sorted(set(_PATH_RE.findall(_comment_text(path))))
    missing = [name for name in named if not (ROOT / name.rstrip(".")).exists()]
    assert not missing, f"{path.name} names files that do not exist: {missing}"


def test_a_stale_path_is_caught(tmp_path: Path) -> None:
    stale = tmp_path / "x.toml"
    stale.write_text(
        '# read by reporter/secrets.py and reporter/evidence/\n# metrics.py\nk = "v"\n'
    )
    assert _PATH_RE.findall(_comment_text(stale)) == [
        "reporter/secrets.py",
        "reporter/evidence/metrics.py",
    ]
