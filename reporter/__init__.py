"""reporter: turn hang evidence from distributed Python services into a verdict and a report."""

__version__ = "0.1.0"
