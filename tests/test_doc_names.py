"""Names in backticks in the package's docstrings and comments, docs/*.md and the README exist.

A docstring that says "`compose.py` lays the topics out" or "see `reporter.render.lint`"
is a map; after a module moves or splits, a stale name sends a reader to nothing (issue 35
found seven). What counts as a name, in backticks:

- a dotted module path under the package: `reporter.render.lint`, or a name in one
  (`reporter.render.lint.IssueIndex`);
- a file: `waits_proc.py` (any file of that name in the repository), or a path whose first
  part is a folder of ours: `analysis/waitgraph.py` (any path that ends so),
  `reporter/data/*.toml`, `templates/`, `tests/render/test_answer*.py`.

Anything else is left alone: code (`x = 1`), placeholders (`<pid>`), paths outside the
repository (`/proc/<pid>/status`, `http/client.py`), and the few outside files a comment
names on purpose (`OUTSIDE`).
"""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Folders never walked: caches, the user's own reports and artifacts (out of the tests'
# bounds), and generated output.
SKIP_DIRS = frozenset(
    {".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "reports",
     "artifacts", "_out", "build", "dist", ".venv", "node_modules"}
)  # fmt: skip
# Files outside the repository that docstrings name on purpose: vLLM's environment
# script, and Python's own socket module.
OUTSIDE = frozenset({"collect_env.py", "socket.py"})
_SPAN_RE = re.compile(r"`([^`\n]+)`")
_DOTTED_RE = re.compile(r"reporter(?:\.\w+)+")
_PATHISH_RE = re.compile(r"[\w.*?/-]+")
_LINE_SUFFIX_RE = re.compile(r"(?::\d+(?:-\d+)?|::\w+)$")


@dataclass(frozen=True, slots=True)
class Tree:
    """What names can point at: every file and folder of the repository (relative, with
    `/`), file names, our folder names, and the modules of the package."""

    paths: frozenset[str]
    basenames: frozenset[str]
    top: frozenset[str]
    folders: frozenset[str]
    modules: dict[str, Path]

    @classmethod
    def of(cls, root: Path) -> Tree:
        paths: set[str] = set()
        modules: dict[str, Path] = {}
        top = {
            p.name
            for p in root.iterdir()
            if p.is_dir() and p.name not in SKIP_DIRS and not _is_venv(p)
        }
        folders = set(top)
        for path in _walk(root):
            rel = path.relative_to(root).as_posix()
            paths.add(rel)
            if rel.startswith("reporter/") and path.suffix == ".py":
                dotted = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
                modules[dotted] = path
                folders.update(path.parent.relative_to(root).parts)
        return cls(
            paths=frozenset(paths),
            basenames=frozenset(p.rpartition("/")[2] for p in paths),
            top=frozenset(top),
            folders=frozenset(folders),
            modules=modules,
        )


def _walk(root: Path) -> Iterator[Path]:
    for path in sorted(root.iterdir()):
        if path.name in SKIP_DIRS or _is_venv(path):
            continue
        yield path
        if path.is_dir() and not path.is_symlink():
            yield from _walk(path)


def _is_venv(path: Path) -> bool:
    """A virtual environment, whatever its name: a newcomer's `python3 -m venv venv` in the
    checkout holds thousands of other projects' files, which no name of ours points at."""
    return path.is_dir() and (path / "pyvenv.cfg").is_file()


_NAMES: dict[Path, frozenset[str]] = {}


def _top_names(path: Path, tree: Tree) -> frozenset[str]:
    """The names a module defines or imports at its top level (a star import brings the
    names of the module it reads)."""
    if path not in _NAMES:
        _NAMES[path] = frozenset()  # a star-import circle ends here
        names: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                star = tree.modules.get(node.module or "")
                names |= _top_names(star, tree) if star is not None else set()
                continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        _NAMES[path] = frozenset(names)
    return _NAMES[path]


def exists(name: str, tree: Tree) -> bool | None:
    """True when `name` names something in the tree, False when it names nothing there,
    None when it is not a name of ours at all (code, a placeholder, an outside path)."""
    name = _LINE_SUFFIX_RE.sub("", name.strip())
    if _DOTTED_RE.fullmatch(name):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            module = tree.modules.get(".".join(parts[:cut]))
            if module is not None:
                rest = parts[cut:]
                return not rest or rest[0] in _top_names(module, tree)
        return False
    if not _PATHISH_RE.fullmatch(name) or name.startswith(("/", ".")):
        return None
    if "/" not in name:
        if not name.endswith(".py") or name in OUTSIDE:
            return None
        if any(c in name for c in "*?"):
            return any(fnmatch.fnmatch(b, name) for b in tree.basenames)
        return name in tree.basenames
    first = name.split("/")[0]
    if first not in tree.folders:
        return None
    if first not in tree.top and not name.endswith((".py", "/")):
        return None  # `env/pid4711.environ`: a file in an evidence bundle, not ours
    want = name.rstrip("/")
    if any(c in want for c in "*?"):
        return any(fnmatch.fnmatch(p, want) or fnmatch.fnmatch(p, f"*/{want}") for p in tree.paths)
    return want in tree.paths or any(p.endswith(f"/{want}") for p in tree.paths)


def python_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of each docstring (module, class, function, attribute) and each
    comment of a Python file."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            # Whole lines (not `ast.get_source_segment`, which splits the file each call).
            yield node.lineno, "".join(lines[node.lineno - 1 : node.end_lineno])
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def stale_names(files: list[Path], tree: Tree, root: Path = ROOT) -> list[str]:
    """`file:line: name` for every name in backticks that names nothing in the tree."""
    out: list[str] = []
    for path in files:
        texts = (
            python_texts(path) if path.suffix == ".py" else [(1, path.read_text(encoding="utf-8"))]
        )
        for first, text in texts:
            for match in _SPAN_RE.finditer(text):
                if exists(match.group(1), tree) is False:
                    line = first + text.count("\n", 0, match.start())
                    out.append(f"{path.relative_to(root)}:{line}: `{match.group(1)}`")
    return sorted(set(out))


TREE = Tree.of(ROOT)
FILES = [
    *sorted((ROOT / "reporter").rglob("*.py")),
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "README.md",
]


def test_every_name_in_backticks_exists() -> None:
    stale = stale_names(FILES, TREE)
    assert not stale, "names in backticks that name nothing in the tree:\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("reporter.render.lint", True),
        ("reporter.render.lint.IssueIndex", True),
        ("reporter.render.lint.NoSuchThing", False),
        ("reporter.render.answer.WaitEdge", True),
        ("reporter.no_such_module", False),
        ("waits_proc.py", True),
        ("waits_proc.py:12", True),
        ("no_such_module.py", False),
        ("analysis/waitgraph.py", True),
        ("reporter/analysis/waitgraph.py", True),
        ("analysis/no_such.py", False),
        ("render/answer/", True),
        ("reporter/data/*.toml", True),
        ("reporter/data/*.nothing", False),
        ("tests/render/test_answer*.py", True),
        ("templates/no_such.md.j2", False),
        ("http/client.py", None),
        ("env/pid4711.environ", None),
        ("tests/golden/no_such.md", False),
        ("/proc/<pid>/status", None),
        ("socket.py", None),
        ("subprocess.py", False),
        ("x = 1", None),
        ("<pid>", None),
        ("report sync OWNER/NAME", None),
    ],
)
def test_what_a_name_resolves_to(name: str, found: bool | None) -> None:
    assert exists(name, TREE) is found


def test_a_stale_name_is_caught_with_its_line(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(
        '"""Reads `analysis/waitgraph.py`.\n\nThen `analysis/gone.py`."""\n\n'
        "# see `reporter.render.gone`\nx = 1  # and `waits_proc.py`\n",
        encoding="utf-8",
    )
    doc = tmp_path / "doc.md"
    doc.write_text("# Map\n\n`render/answer/lines.py` writes the lines.\n", encoding="utf-8")
    assert stale_names([module, doc], TREE, root=tmp_path) == [
        "doc.md:3: `render/answer/lines.py`",
        "mod.py:3: `analysis/gone.py`",
        "mod.py:5: `reporter.render.gone`",
    ]


def test_a_virtual_environment_in_the_checkout_is_not_part_of_the_tree(tmp_path: Path) -> None:
    # A newcomer's `python3 -m venv venv` inside the checkout: its files are not ours.
    (tmp_path / "reporter").mkdir()
    (tmp_path / "reporter" / "ours.py").write_text("x = 1\n", encoding="utf-8")
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (site / "subprocess.py").write_text("x = 1\n", encoding="utf-8")
    tree = Tree.of(tmp_path)
    assert exists("ours.py", tree)
    assert not exists("subprocess.py", tree)
    assert "venv" not in tree.top
