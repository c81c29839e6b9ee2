"""The first-character check in `encoded._decode` drops only runs that decode to no text."""

from __future__ import annotations

import base64
import string
from pathlib import Path

import pytest

from reporter.secrets import encoded

from .forms import B64_GHP, B64_USER_PW, HEX_GHP

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "redaction"
ALPHABET = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"
# Every way a first decoded byte can go on: nothing, ASCII, one to three continuation bytes.
TAILS = (b"", b"a", b"\x80", b"\x80\x80", b"\x90\x80\x80", b"\x8f\xbf\xbd", b"\xbf\xbf\xbf")


def test_a_first_byte_of_0xf4_opens_no_printable_character() -> None:
    # F4 leads U+100000 to U+10FFFF only (private use and two non-characters).
    assert not any(chr(code).isprintable() for code in range(0x100000, 0x110000))


def _first_bytes(first: str) -> range:
    index = ALPHABET.index(first.replace("-", "+").replace("_", "/"))
    return range(index << 2, (index << 2) + 4)


@pytest.mark.parametrize("first", sorted(encoded._NOT_TEXT_FIRST))
def test_a_listed_first_character_never_opens_text(first: str) -> None:
    for byte in _first_bytes(first):
        for tail in TAILS:
            assert encoded._text(bytes([byte]) + tail) is None, (first, hex(byte), tail)
    # And the decoder agrees: such a run is never text.
    for second in ALPHABET:
        run = (first + second + "yZ29vZF9wYXNzd29yZA").replace("+", "-").replace("/", "_")
        assert encoded._decode_base64(run) is None


@pytest.mark.parametrize("first", sorted(set(ALPHABET) - encoded._NOT_TEXT_FIRST))
def test_every_other_first_character_can_open_text(first: str) -> None:
    # The list is no wider than it must be: each other character starts some text.
    assert any(
        encoded._text(bytes([byte]) + tail) is not None
        for byte in _first_bytes(first)
        for tail in TAILS
    )


def _runs() -> list[str]:
    texts = [path.read_text(errors="replace") for path in CORPUS.rglob("*") if path.is_file()]
    texts += [B64_GHP, B64_USER_PW, HEX_GHP, base64.b64encode(b"svc:Hunter2!x").decode()]
    return sorted({m.group(0) for text in texts for m in encoded._run_re().finditer(text)})


def test_the_redaction_corpus_decodes_as_without_the_check() -> None:
    runs = _runs()
    skipped = [run for run in runs if run[0] in encoded._NOT_TEXT_FIRST]
    decoded = [run for run in runs if encoded._decode(run) is not None]
    assert len(skipped) > 20 and len(decoded) > 3  # the corpus exercises both sides
    for run in runs:
        if encoded._HEX_RE.fullmatch(run):
            continue
        assert encoded._decode(run) == encoded._decode_base64(run), run
