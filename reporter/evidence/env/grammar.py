"""Line shapes the environment parsers and the sniffer share.

`pip freeze` pins and URLs, the `pip list` header, `KEY=VALUE`, an interpreter's name,
a `sha256sum` line; `SNIFF_CHARS` is how much of a file the sniffer reads.
"""

from __future__ import annotations

import re

SNIFF_CHARS = 64 * 1024
ASSIGN_RE = re.compile(r"(?:export\s+|declare\s+-x\s+)?([A-Za-z_][A-Za-z0-9_.]*)=(.*)\Z")
PY_RE = re.compile(r"(?:.*/)?(?:python|pypy)[0-9.]*m?\Z")
# A distribution name as pip prints it.
REQ_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
FREEZE_PIN_RE = re.compile(rf"({REQ_NAME})(?:\[[^\]]*\])?\s*===?\s*([^\s;#]+)")
FREEZE_URL_RE = re.compile(rf"({REQ_NAME})(?:\[[^\]]*\])?\s+@\s+(\S+)")
LIST_HEADER_RE = re.compile(r"Package\s+Version(?:\s|\Z)")
DASHES_RE = re.compile(r"-{3,}(?:\s+-{3,})+\s*\Z")
VERSION_RE = re.compile(r"v?\d[\w.+!-]*\Z")
SHA_LINE_RE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)\Z")


def normalise_package(name: str) -> str:
    """A distribution name as PyPI compares them: `Flash_Infer.Python` -> `flash-infer-python`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def looks_like_pip_json(head: str) -> bool:
    """`pip list --format=json`: a JSON array of {"name", "version"} objects (not py-spy's)."""
    stripped = head.lstrip("\ufeff \t\r\n")
    if not stripped.startswith("["):
        return False
    window = stripped[:2000]
    return '"name"' in window and '"version"' in window and '"thread_id"' not in window
