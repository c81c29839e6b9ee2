"""Old import paths of the modules that moved into the layer folders; goes in the next release.

Until 0.1.0 fifteen modules lay loose at the package root. They now live in the folder of
their layer (issue 25): `reporter.errors` is `reporter.core.errors`, `reporter.bundle` is
`reporter.load.bundle`, `reporter.schemas` (now generated from the document types) is
`reporter.console.schemas`, and so on (`MOVED`). For one release the old paths still import:

    import reporter.bundle                 # the module reporter.load.bundle itself
    from reporter.errors import UsageError # works, with a DeprecationWarning

An old path gives the very module object of the new path (not a copy), so patching one
patches the other, and warns with the new path to write instead. Nothing in the project
imports an old path (tests/test_imports.py checks it); this file and its hook in
`reporter/__init__.py` are deleted in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

# Old name under `reporter.` -> its new dotted path under `reporter.`.
MOVED: dict[str, str] = {
    "config": "core.config",
    "errors": "core.errors",
    "fileio": "core.fileio",
    "gcpause": "core.gcpause",
    "inert": "core.inert",
    "rules": "core.rules",
    "text": "core.text",
    "times": "core.times",
    "writer": "core.writer",
    "bundle": "load.bundle",
    "guess": "load.guess",
    "manifest": "load.manifest",
    "sources": "load.sources",
    "documents": "console.documents",
    "schemas": "console.schemas",
}


class OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers imports of `reporter.<old name>` with the module at its new path."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.partition(".")
        if package != "reporter" or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = f"reporter.{MOVED[spec.name.removeprefix('reporter.')]}"
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there (the old path goes in the "
            "next release)",
            DeprecationWarning,
            # 2: the line that imports; warnings skips the import system's own frames.
            stacklevel=2,
        )
        module = importlib.import_module(new)
        # The import system stamps the alias's spec on the module it gets back; the
        # module's own spec travels along and is put back in `exec_module`.
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        alias = module.__spec__
        if alias is not None and isinstance(alias.loader_state, importlib.machinery.ModuleSpec):
            module.__spec__ = alias.loader_state


def install() -> None:
    """Put the finder last on `sys.meta_path` (once): real modules are always found first."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(OldPathFinder())
