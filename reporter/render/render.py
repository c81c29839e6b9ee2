"""Render a `ReportView` with the packaged Jinja templates; returns a string, writes nothing.

Templates ship inside the wheel as `reporter/templates/`; in a source checkout
they are read from the top-level `templates/` folder.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path

import jinja2

from reporter.render.view import ReportView

REPORT_TEMPLATE = "report.md.j2"


def template_dir() -> Path:
    """The folder holding the templates, installed or in a source checkout."""
    packaged = Path(__file__).resolve().parent.parent / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"


@cache
def environment() -> jinja2.Environment:
    """One Jinja environment: StrictUndefined so a missing view field is an error, not blank."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_report(view: ReportView) -> str:
    """The Markdown report for one incident."""
    return environment().get_template(REPORT_TEMPLATE).render(v=view)


_STAMP = re.compile(r"\n<!-- reporter:generated sha256=([0-9a-f]{64}) -->\n\Z")


def stamp(text: str) -> str:
    """Append a hash of the generated text, so a later run can tell whether anyone edited it."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{text}\n<!-- reporter:generated sha256={digest} -->\n"


def is_unedited(text: str) -> bool:
    """True when `text` is a stamped report whose content still matches its stamp."""
    match = _STAMP.search(text)
    if match is None:
        return False
    body = text[: match.start()]
    return hashlib.sha256(body.encode("utf-8")).hexdigest() == match.group(1)
