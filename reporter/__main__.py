"""`python -m reporter` runs the `report` command line."""

from reporter.cli import main

main()
