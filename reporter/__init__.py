"""reporter: turn hang evidence from distributed Python services into a verdict and a report."""

from reporter import _moved

__version__ = "0.1.0"

# The modules that moved into layer folders keep their old import paths for one release.
_moved.install()
