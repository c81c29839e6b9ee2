"""The `report` command line: typer options -> one call into `reporter.app` -> print.

`group` holds the `report` group (global flags, errors and exit codes); the commands
are registered by one module per family, imported below in the order `report --help`
lists them. Only this package imports typer; terminal text is `reporter.console`'s.
"""

from importlib import import_module

from reporter.cli import interrupt

# Ctrl-C while the imports below load exits quietly too (issue 16).
interrupt.install()

from reporter.cli.group import cli, hoist_globals, main, plain_metavars, version_text  # noqa: E402
from reporter.cli.options import SimilarityName  # noqa: E402

# Each module registers its commands on `cli` when imported; this order is the order
# of `report --help` and docs/cli.md (an import sorter must not decide it).
FAMILIES = ("report", "upstream", "collect", "watch", "settings")
for _family in FAMILIES:
    import_module(f"reporter.cli.{_family}")

__all__ = ["SimilarityName", "cli", "hoist_globals", "main", "plain_metavars", "version_text"]
