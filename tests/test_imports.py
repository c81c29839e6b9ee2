"""The import graph of `reporter/`: no circle, no arrow from a lower layer to a higher one.

Every import counts: module level, inside functions and under `TYPE_CHECKING`, since
each is a dependency of the design even where Python would tolerate it at run time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reporter"

# Lowest first. A module may import its own layer and the layers below it, never above.
# The first prefix that matches a module names its layer (`reporter.` left out). Each
# layer is a folder (or a few), so the tree shows what this table enforces (issue 25).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # errors, text, times, inert, rules, fileio, writer, gcpause, config: imports nothing
    # else of ours.
    ("core", ("core",)),
    ("model/secrets", ("model", "secrets")),
    ("evidence", ("evidence",)),
    ("analysis", ("analysis",)),
    # The loader reads files into the Bundle (and names ranks from file names with
    # analysis.ranks); guess.py reads a loaded Bundle for `report init`.
    ("load", ("load",)),
    # The upstream draft is built from the report's pieces, so render sits below upstream:
    # render/lint.py reading secret shapes from upstream/ was the one arrow back up.
    ("render", ("render",)),
    ("upstream/collect", ("upstream", "collect")),
    ("app", ("app",)),
    # The terminal and --json side of the CLI: documents are built from app results.
    ("cli", ("cli", "__main__", "console")),
)

# The most modules that may lie loose at the package root (`__init__.py` counted).
LOOSE_AT_ROOT = 6


def _modules() -> dict[str, Path]:
    """Dotted name -> file, for every module under reporter/ (packages by their name)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported reporter module, line) for every import in `path`, relative ones resolved."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    return _imports_in(path.read_text(encoding="utf-8"), package, modules)


def _imports_in(text: str, package: str, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The imports of module text that lives in `package` (for relative imports)."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "reporter":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            if base.split(".")[0] != "reporter":
                continue
            for alias in node.names:
                # `from reporter.evidence import pyspy` imports the submodule itself.
                sub = f"{base}.{alias.name}"
                yield (sub if sub in modules else base), node.lineno


def _layer(module: str) -> int:
    name = module.removeprefix("reporter").removeprefix(".")
    if not name:
        return 0  # reporter/__init__.py: the version string only
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(
        f"{module}: no layer declared for it; add it to LAYERS in tests/test_imports.py"
    )


def _graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        targets = graph.setdefault(name, {})
        for target, line in _imports(path, modules):
            if target != name:
                targets.setdefault(target, line)
    return graph


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, no recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(graph[start])))
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_arrow_from_a_lower_layer_to_a_higher_one() -> None:
    graph = _graph()
    modules = _modules()
    wrong = [
        f"{modules[source].relative_to(PACKAGE.parent)}:{line}: {source} "
        f"({LAYERS[_layer(source)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for source, targets in graph.items()
        for target, line in targets.items()
        if _layer(target) > _layer(source)
    ]
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_no_private_module_of_another_package_is_imported() -> None:
    graph = _graph()
    wrong = [
        f"{source} imports {target}"
        for source, targets in graph.items()
        for target in targets
        if any(p.startswith("_") and not p.startswith("__") for p in target.split("."))
        and source != target.rsplit(".", 1)[0]
        and not source.startswith(target.rsplit(".", 1)[0] + ".")
    ]
    assert not wrong, "private modules imported from outside their package: " + ", ".join(wrong)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from reporter.evidence import pyspy\n", "reporter.evidence.pyspy"),
        ("from reporter.model import Bundle\n", "reporter.model"),
        ("from . import pyspy\n", "reporter.evidence.pyspy"),
        ("from .._times import iso\n", "reporter._times"),
        ("def f():\n    import reporter.core.times\n", "reporter.core.times"),
    ],
)
def test_imports_are_read_wherever_they_are(source: str, expected: str) -> None:
    modules = {"reporter.evidence.pyspy": PACKAGE, "reporter.core.times": PACKAGE}
    got = [name for name, _ in _imports_in(source, "reporter.evidence", modules)]
    assert got == [expected]


def test_a_backward_arrow_and_a_cycle_are_caught() -> None:
    graph = {
        "reporter.model": {"reporter.analysis.result": 3},
        "reporter.analysis.result": {"reporter.model": 1},
    }
    assert _cycles(graph) == [["reporter.analysis.result", "reporter.model"]]
    assert _layer("reporter.model") < _layer("reporter.analysis.result")
    with pytest.raises(AssertionError, match="no layer declared"):
        _layer("reporter.newthing")


def test_the_root_holds_few_loose_modules() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= LOOSE_AT_ROOT, f"loose modules at reporter/: {loose}"
