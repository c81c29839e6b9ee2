"""The loader layer: evidence files on disk into one `Bundle`, and what else is read from disk.

Sits above evidence/ and analysis/ (it calls the parsers, and names ranks from file names
with `reporter.analysis.ranks`) and below render/, upstream/ and app/. Modules::

    bundle.py    a bundle folder or loose files -> `Bundle` (layouts, several hosts' folders)
    assemble.py  manifest entries -> `Bundle`: read, sniff, parse, fold (`evidence.kinds`)
    files.py     one evidence file's bytes, text and digest; which files are evidence
    manifest.py  read, check and write `bundle.toml`
    parts.py     the `bundle.d/` parts of a many-host collection, joined after the head
    sources.py   local source trees (`--source-root`) for the source excerpts
    guess.py     `report init`'s guesses (repository, world size, globs) from a loaded bundle
"""
