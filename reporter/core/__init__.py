"""The bottom layer: small pieces every other layer may use; it imports nothing else of ours.

Modules::

    errors.py   the exception tree (drawn in its docstring); the CLI maps it to exit codes
    text.py     counted nouns, compact numbers, word wrapping, version order
    times.py    read, check and print UTC times
    inert.py    evidence made inert for a terminal (control sequences, bidi marks removed)
    rules.py    the one loader of reporter/data/*.toml, each checked against its shape
    fileio.py   reading input files: regular files only, always with a bound
    writer.py   atomic writes: the only place that writes a file
    gcpause.py  the garbage collector paused around bulk parsing and analysis
    config.py   the user's settings file (read by the app layer)
    hostnames.py  one grammar for host names: what collect accepts and the loader reads back
"""
