"""Frame lines of `py-spy dump` text: `    function (file:line)` into a `Frame`.

Also the `--native` reading (shared objects, C/C++ sources, bare addresses) and a
shape test for frames found out of place. Frames are immutable, so one object per
distinct frame line serves every dump in a run: a bundle of thousands of ranks repeats
the same few hundred lines millions of times. The cache is cleared when full to bound
memory.
"""

from __future__ import annotations

import re

from reporter.model import Frame

_HEX_RE = re.compile(r"0x[0-9A-Fa-f]+\Z")
_NATIVE_SUFFIXES = (
    ".so",
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".h",
    ".hh",
    ".hpp",
    ".cu",
    ".pyx",
    ".rs",
    ".dylib",
    ".dll",
    ".pyd",
)

FRAME_CACHE: dict[str, Frame] = {}
_FRAME_CACHE_MAX = 1 << 18


def looks_like_frame(line: str) -> bool:
    """An indented `name (file:line)`, `name (lib.so)` or `name (?)`: a py-spy frame line.

    Used for frames out of place (fragments, other indents) and by the sniffer.
    """
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    if not 1 <= indent <= 16 or not body.endswith(")") or body[:1] in ("(", ""):
        return False
    cut = body.rfind(" (")
    if cut <= 0:
        return False
    where = body[cut + 2 : -1]
    if not where or "(" in where or ")" in where:
        return False
    if where == "?" or ".so" in where:
        return True
    colon = where.rfind(":")
    return colon > 0 and where[colon + 1 :].isdigit()


def parse_frame(line: str) -> Frame | None:
    """`    function (file:line)` → Frame, cached; None when the line is not frame-shaped.

    The last ` (` splits function from file: C++ names from `--native` contain ` (`
    themselves (`std::function<void (int)>::operator()`). The caller checks
    that the line ends with `)`.
    """
    cached = FRAME_CACHE.get(line)
    if cached is not None:
        return cached
    body = line[4:]
    cut = body.rfind(" (")
    if cut <= 0:
        return None
    function = body[:cut]
    where = body[cut + 2 : -1]
    number: int | None = None
    colon = where.rfind(":")
    if colon >= 0:
        tail = where[colon + 1 :]
        if tail.isdigit() and tail.isascii() and len(tail) < 10:
            number = int(tail) or None
            where = where[:colon]
    # `--native` prints interpreter frames with the binary's name and no line:
    # `PyThread_acquire_lock_timed (python3.12)`; Python frames always carry `:line`.
    native = is_native(function, where) or (
        number is None and colon < 0 and not where.endswith((".py", ".pyw", ">"))
    )
    parsed = Frame(function=function, file=where, line=number, native=native)
    if len(FRAME_CACHE) >= _FRAME_CACHE_MAX:
        FRAME_CACHE.clear()
    FRAME_CACHE[line] = parsed
    return parsed


def cut_frame(line: str) -> Frame:
    """Whatever a frame line cut mid-way still says; the line number is not trusted."""
    body = line[4:]
    cut = body.rfind(" (")
    if cut <= 0:
        return Frame(function=body, file="", native=is_native(body, ""))
    function = body[:cut]
    where = body[cut + 2 :]
    if where.endswith(")"):
        where = where[:-1]
    colon = where.rfind(":")
    if colon >= 0:
        where = where[:colon]
    return Frame(function=function, file=where, native=is_native(function, where))


def is_native(function: str, file: str) -> bool:
    """Frames from `--native`: shared objects, C/C++ sources, `?`, or a bare address."""
    if file.endswith(".py"):
        return False
    if file == "?" or file.endswith(_NATIVE_SUFFIXES) or ".so." in file:
        return True
    if "::" in function:
        return True  # a C++ name (`c10d::ProcessGroupGloo::RecvWork::wait`); Python names use dots
    return function.startswith("0x") and _HEX_RE.match(function) is not None
