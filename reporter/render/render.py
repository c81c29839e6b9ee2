"""Render a `ReportView` with the packaged Jinja templates; returns a string, writes nothing.

Templates ship inside the wheel, in the package's own templates folder; in a source
checkout they are read from the top-level `templates/` folder.
"""

from __future__ import annotations

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
    """The Markdown report for one incident, its region markers not yet sealed (`regions.seal`)."""
    return environment().get_template(REPORT_TEMPLATE).render(v=view)
