"""The preview opened in a real headless Chromium: the page renders and its charts are visible.

Runs `report preview` on a report with a flowchart, a line chart and hostile evidence,
then Chromium twice: `--dump-dom` (the SVG elements are in the DOM, no script element is)
and `--screenshot` (the PNG is not blank, and the chart's line colour and the flowchart's
box colour are on screen). The screenshot and the page stay in the test's tmp folder (pytest
keeps the last runs' folders); `REPORTER_ARTIFACTS=DIR` copies them to DIR as well (tests
write nothing into the checkout: tests/hermetic.py).
The PNG is decoded here with zlib alone.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reporter.cli import cli
from reporter.render import regions, svg

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = os.environ.get("REPORTER_ARTIFACTS", "")
CHROMIUM = shutil.which("chromium")
WIDTH, HEIGHT = 1280, 2000
LINE_RGB = (0xD6, 0x33, 0x6C)  # svg.PALETTE[0], the first line series
BOX_RGB = (0x4A, 0x6F, 0xA5)  # flowchart box border

CHART = """
<!-- reporter:begin id=metrics -->
## Queue depth

```mermaid
xychart-beta
  title "Requests waiting (DP1)"
  x-axis "time (UTC)" ["08:30", "08:35", "08:40", "08:45", "08:50", "08:55"]
  y-axis "requests" 0 --> 120
  line [12, 35, 70, 96, 110, 118]
  bar [3, 9, 14, 22, 30, 41]
```
<!-- reporter:end id=metrics -->
"""

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (Debian package `chromium`; .ci/run installs it)",
)


def _report(tmp_path: Path) -> Path:
    base = (ROOT / "fixtures" / "lint" / "clean--incident-report.md").read_text(encoding="utf-8")
    text = base.replace(
        "<!-- reporter:end id=title -->\n", "<!-- reporter:end id=title -->\n" + CHART, 1
    )
    text = text.replace(
        "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n",
        "    all_reduce (torch/distributed/distributed_c10d.py:2501)\n"
        "    <script>document.title='owned'</script> (evil.py:1)\n",
    )
    path = tmp_path / "report.md"
    path.write_text(regions.seal(regions.merge(text, text).text), encoding="utf-8")
    return path


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        f"--window-size={WIDTH},{HEIGHT}",
        *args,
    ]
    return subprocess.run(
        command,
        capture_output=True,
        timeout=120,
        check=False,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )


@cache
def _masks(size: int) -> tuple[int, int]:
    return int.from_bytes(b"\x7f" * size, "big"), int.from_bytes(b"\x80" * size, "big")


def _add(a: bytes, b: bytes) -> bytes:
    """Bytewise (a + b) mod 256, all lanes at once in one big integer."""
    low, high = _masks(len(a))
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    return (((x & low) + (y & low)) ^ ((x ^ y) & high)).to_bytes(len(a), "big")


def read_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, pixel rows) of an 8-bit, non-interlaced RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks = 8, []
    header = b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1 : start + 1 + stride]
        if kind == 0:
            row = line
        elif kind == 2:
            row = _add(line, previous)
        else:
            out = bytearray(line)
            for i in range(stride):
                left = out[i - bpp] if i >= bpp else 0
                up = previous[i]
                if kind == 1:
                    out[i] = (out[i] + left) & 0xFF
                elif kind == 3:
                    out[i] = (out[i] + ((left + up) >> 1)) & 0xFF
                else:  # Paeth
                    corner = previous[i - bpp] if i >= bpp else 0
                    guess = left + up - corner
                    pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                    out[i] = (out[i] + pred) & 0xFF
            row = bytes(out)
        rows.append(row)
        previous = row
    return width, height, bpp, rows


def _near(rows: list[bytes], bpp: int, rgb: tuple[int, int, int], tolerance: int = 30) -> int:
    count = 0
    for row in rows:
        for x in range(0, len(row), bpp):
            if all(abs(row[x + c] - rgb[c]) <= tolerance for c in range(3)):
                count += 1
    return count


def test_png_decoder_round_trip() -> None:
    # A 2x2 RGB image with one row filtered "Sub" and one "Up".
    pixels = [bytes([10, 20, 30, 40, 50, 60]), bytes([11, 22, 33, 44, 55, 66])]
    sub = bytes([1, 10, 20, 30, 30, 30, 30])
    up = bytes([2, *(b - a for a, b in zip(pixels[0], pixels[1], strict=True))])
    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(sub + up))
        + chunk(b"IEND", b"")
    )
    assert read_png(png) == (2, 2, 3, pixels)


@pytest.mark.slow
@needs_chromium
def test_preview_renders_in_chromium_with_visible_charts(tmp_path: Path) -> None:
    report = _report(tmp_path)
    page = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["preview", str(report), "--out", str(page)])
    assert result.exit_code == 0, result.output

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    html = dom.stdout.decode("utf-8")
    assert "<h1>Hang: collective-desync in all_reduce</h1>" in html
    assert html.count('class="mermaid-xychart"') == 1
    assert html.count('class="mermaid-flowchart"') == 1
    assert html.count('<g class="node"') == 3
    assert "<polyline" in html and html.count('class="bar"') == 6
    assert "<script" not in html.lower()
    assert "<title>Hang: collective-desync in all_reduce</title>" in html  # not 'owned'

    png = tmp_path / "screenshot.png"
    shot = _chromium(tmp_path, f"--screenshot={png}", page.as_uri())
    assert shot.returncode == 0 and png.is_file(), shot.stderr.decode(errors="replace")[-2000:]
    if ARTIFACTS:
        Path(ARTIFACTS).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(ARTIFACTS) / "preview-screenshot.png")
        shutil.copy(page, Path(ARTIFACTS) / "preview.html")

    width, height, bpp, rows = read_png(png.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    sample = [row[x] for row in rows[::8] for x in range(0, len(row), bpp * 8)]
    mean = sum(sample) / len(sample)
    variance = sum((v - mean) ** 2 for v in sample) / len(sample)
    assert variance > 100, f"screenshot looks blank (variance {variance:.1f})"
    assert svg.PALETTE[0] == "#d6336c"
    assert _near(rows, bpp, LINE_RGB) > 200, "the chart's line is not on screen"
    assert _near(rows, bpp, BOX_RGB) > 60, "the flowchart's boxes are not on screen"
