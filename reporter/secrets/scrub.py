"""Redact secrets at capture: environ values, command-line option values, py-spy `--locals` values.

Pure functions: bytes or text in, redacted bytes or text and a count out. The
detector is the project's own, not a second list:

* a value whose *name* says secret (`HF_TOKEN`, `--api-key`, `password`) or that is a
  credential itself (an opaque token) is replaced entirely: `SecretPolicy.is_whole`, the
  rules the report and `report diff` use;
* inside any other value, the spans that `reporter.secrets.scan` finds
  (the shared list of secret shapes behind upstream redaction and `report lint`:
  provider tokens, bearer credentials, passwords in URLs, ...) are replaced, and the
  rest of the value is kept (`postgres://app:[redacted]@db/x`).

Redacted text reads `[redacted]`, the mark the report uses. Examples::

    scrub_environ(b"HF_TOKEN=hf_abc...\\x00NCCL_DEBUG=INFO\\x00", detector)
    -> (b"HF_TOKEN=[redacted]\\x00NCCL_DEBUG=INFO\\x00", 1)
    scrub_argv(("python", "-m", "sglang.launch_server", "--api-key", "sk-..."), detector)
    -> (("python", "-m", "sglang.launch_server", "--api-key", "[redacted]"), 1)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reporter import secrets

# Texts larger than this are scanned with our own shapes only (see `default_detector`).
_THOROUGH_BYTES = 1 << 20

# A `--locals` entry: 12 spaces of indent, `name: repr` (docs/formats.md 1.3).
_LOCAL_RE = re.compile(r"^(\s{8,})([A-Za-z_][A-Za-z0-9_]*): (.*)$")
_LOCALS_HEADERS = ("Arguments:", "Locals:")


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretDetector:
    """`is_secret(name, value)`: the value holds a secret; `whole(name, value)`: it goes
    whole (the name says secret, or it is the credential); `spans(text)`: the secrets
    inside a text, masked in place."""

    is_secret: Callable[[str, str | None], bool]
    spans: Callable[[str], list[tuple[int, int]]]
    whole: Callable[[str, str], bool] = lambda _name, _value: False

    def mask(self, text: str) -> tuple[str, int]:
        """`text` with every secret span replaced; the number replaced."""
        merged: list[list[int]] = []
        for start, end in sorted(self.spans(text)):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)  # overlapping hits hide their union
            else:
                merged.append([start, end])
        if not merged:
            return text, 0
        out: list[str] = []
        at = 0
        for start, end in merged:
            out += [text[at:start], secrets.REDACTED]
            at = end
        out.append(text[at:])
        return "".join(out), len(merged)

    def value(self, name: str, value: str) -> tuple[str, int]:
        """One named value, redacted whole or in part; the number of secrets hidden."""
        if value and self.whole(name, value):
            return secrets.REDACTED, 1
        return self.mask(value)


def default_detector() -> SecretDetector:
    """The project's detector: the shared secret policy and shapes (`reporter.secrets`)."""
    policy = secrets.default_policy()

    def spans(text: str) -> list[tuple[int, int]]:
        # detect-secrets' plugins go line by line in Python: over a megabyte (a huge
        # scrape, a big dump) our own shapes only, which are linear.
        return secrets.spans(text, library=len(text) <= _THOROUGH_BYTES)

    return SecretDetector(is_secret=policy.is_secret, spans=spans, whole=policy.is_whole)


def mask_bytes(data: bytes, detector: SecretDetector) -> tuple[bytes, int]:
    """A copied file (a pickled or JSON Flight Recorder dump) with secrets overwritten by
    `*`, byte for byte: the length of every string stays, so a pickle still loads."""
    text = data.decode("latin-1")  # one character per byte: spans are byte offsets
    spans = sorted(detector.spans(text))
    if not spans:
        return data, 0
    out = bytearray(data)
    count = 0
    end = -1
    for start, stop in spans:
        if stop <= end:
            continue
        start = max(start, end)
        out[start:stop] = b"*" * (stop - start)
        count += 1
        end = stop
    return bytes(out), count


def scrub_environ(data: bytes, detector: SecretDetector) -> tuple[bytes, int]:
    """A `/proc/PID/environ` copy with secret values replaced; entries keep their order."""
    entries = data.split(b"\x00")
    count = 0
    for index, entry in enumerate(entries):
        name, sep, value = entry.partition(b"=")
        if not sep or not value:
            continue
        text_name = name.decode("utf-8", errors="replace")
        shown, hidden = detector.value(text_name, value.decode("utf-8", errors="replace"))
        if hidden:
            entries[index] = name + b"=" + shown.encode("utf-8")
            count += hidden
    return b"\x00".join(entries), count


def scrub_argv(argv: Sequence[str], detector: SecretDetector) -> tuple[tuple[str, ...], int]:
    """Command-line arguments with secrets replaced (`--api-key X`, `--api-key=X`, tokens inside)."""
    out = list(argv)
    count = 0
    index = 0
    while index < len(out):
        arg = out[index]
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg.partition("=")
            shown, hidden = detector.value(name, value)
            if hidden:
                out[index] = f"{name}={shown}"
        elif (
            arg.startswith("-")
            and index + 1 < len(out)
            and not out[index + 1].startswith("-")
            and detector.whole(arg, out[index + 1])
        ):
            out[index + 1] = secrets.REDACTED
            hidden = 1
            index += 1
        else:
            out[index], hidden = detector.value("", arg)
        count += hidden
        index += 1
    return tuple(out), count


def scrub_cmdline(data: bytes, detector: SecretDetector) -> tuple[bytes, int]:
    """A `/proc/PID/cmdline` copy with secrets replaced; the NUL padding of a title is dropped."""
    parts = data.split(b"\x00")
    while parts and not parts[-1]:
        parts.pop()
    argv = [p.decode("utf-8", errors="replace") for p in parts]
    scrubbed, count = scrub_argv(argv, detector)
    if not count:
        return b"\x00".join(parts) + (b"\x00" if parts else b""), 0
    return "\x00".join(scrubbed).encode("utf-8") + b"\x00", count


def scrub_locals(text: str, detector: SecretDetector) -> tuple[str, int]:
    """py-spy `--locals` text with secret argument and local values replaced."""
    lines = text.split("\n")
    count = 0
    inside = False
    for index, line in enumerate(lines):
        if line.strip() in _LOCALS_HEADERS:
            inside = True
            continue
        match = _LOCAL_RE.match(line) if inside else None
        if match is None:
            inside = inside and line.startswith("            ")
            continue
        value = match.group(3)
        quoted = len(value) >= 2 and value[0] == value[-1] == '"'
        bare = value[1:-1] if quoted else value
        if bare and detector.whole(match.group(2), bare):
            shown, hidden = secrets.REDACTED, 1
        else:
            shown, hidden = detector.mask(value)
        if hidden:
            lines[index] = f"{match.group(1)}{match.group(2)}: {shown}"
            count += hidden
    return "\n".join(lines), count
