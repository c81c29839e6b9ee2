"""Installed packages: `pip freeze` (`name==1.0`, `name @ url`, `-e git+...#egg=name`),
`pip list` (columns) and `pip list --format=json`."""

from __future__ import annotations

import json
import re

from reporter.evidence._text import Unrecognised, clean_lines, excerpt, warning_at
from reporter.evidence.env.grammar import (
    DASHES_RE,
    FREEZE_PIN_RE,
    FREEZE_URL_RE,
    LIST_HEADER_RE,
    REQ_NAME,
    SNIFF_CHARS,
    VERSION_RE,
    looks_like_pip_json,
    normalise_package,
)
from reporter.model import Environment, Location, Package, ParseResult, ParseWarning

_EDITABLE_RE = re.compile(r"-e\s+(\S+)")
_EGG_RE = re.compile(r"[#&]egg=([A-Za-z0-9._-]+)")
_EDITABLE_NOTE_RE = re.compile(rf"#\s*Editable.*\(({REQ_NAME})==([^)\s]+)\)")
_WHEEL_VERSION_RE = re.compile(r"/([A-Za-z0-9_.]+)-(\d[^-/]*)-[^/]*\.whl\Z")


def parse_packages(text: str, *, source: str) -> ParseResult:
    """Installed packages from `pip freeze`, `pip list` or `pip list --format=json`."""
    if looks_like_pip_json(text[:SNIFF_CHARS]):
        return _pip_json(text, source)
    lines = clean_lines(text)
    content = [(n, line.strip()) for n, line in enumerate(lines, start=1) if line.strip()]
    if len(content) > 1 and LIST_HEADER_RE.match(content[0][1]) and DASHES_RE.match(content[1][1]):
        return _pip_columns(content[2:], source)
    return _pip_freeze(content, source)


def _pip_json(text: str, source: str) -> ParseResult:
    where = Location(path=source, line=1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        return ParseResult(
            warnings=(
                warning_at(source, err.lineno, f"not valid JSON ({err.msg}); no packages read"),
            )
        )
    packages: list[Package] = []
    warnings: list[ParseWarning] = []
    for position, item in enumerate(data if isinstance(data, list) else [], start=1):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            warnings.append(
                ParseWarning(source=where, message=f"item {position} has no package name")
            )
            continue
        version = item.get("version")
        packages.append(
            Package(
                name=normalise_package(item["name"]),
                version=str(version) if version is not None else "",
                origin=str(item.get("editable_project_location") or ""),
                source=where,
            )
        )
    if not isinstance(data, list):
        warnings.append(ParseWarning(source=where, message="not a JSON list of packages"))
    return ParseResult(environment=Environment(packages=tuple(packages)), warnings=tuple(warnings))


def _pip_columns(rows: list[tuple[int, str]], source: str) -> ParseResult:
    packages: list[Package] = []
    odd = Unrecognised(source, "a `pip list` row")
    for number, line in rows:
        parts = line.split()
        if len(parts) >= 2 and VERSION_RE.match(parts[1]):
            packages.append(
                Package(
                    name=normalise_package(parts[0]),
                    version=parts[1],
                    origin=" ".join(parts[2:]),
                    source=Location(path=source, line=number),
                )
            )
        else:
            odd.add(number, line)
    odd.flush()
    return ParseResult(
        environment=Environment(packages=tuple(packages)), warnings=tuple(odd.warnings)
    )


def _pip_freeze(content: list[tuple[int, str]], source: str) -> ParseResult:
    packages: list[Package] = []
    odd = Unrecognised(source, "a `pip freeze` line")
    pending_note: tuple[str, str] | None = None
    for number, line in content:
        where = Location(path=source, line=number)
        note = _EDITABLE_NOTE_RE.match(line)
        if note:
            pending_note = (note.group(1), note.group(2))
            continue
        if line.startswith("#"):
            continue
        editable = _EDITABLE_RE.fullmatch(line)
        if editable:
            url = editable.group(1)
            egg = _EGG_RE.search(url)
            if egg:
                name, version = egg.group(1), ""
            elif pending_note:
                name, version = pending_note
            else:
                odd.warn(number, f"editable install without a package name: {excerpt(line)}")
                pending_note = None
                continue
            packages.append(
                Package(name=normalise_package(name), version=version, origin=url, source=where)
            )
            pending_note = None
            continue
        pending_note = None
        pin = FREEZE_PIN_RE.fullmatch(line)
        if pin:
            packages.append(
                Package(name=normalise_package(pin.group(1)), version=pin.group(2), source=where)
            )
            continue
        url_match = FREEZE_URL_RE.fullmatch(line)
        if url_match:
            url = url_match.group(2)
            wheel = _WHEEL_VERSION_RE.search(url)
            packages.append(
                Package(
                    name=normalise_package(url_match.group(1)),
                    version=wheel.group(2) if wheel else "",
                    origin=url,
                    source=where,
                )
            )
            continue
        odd.add(number, line)
    odd.flush()
    return ParseResult(
        environment=Environment(packages=tuple(packages)), warnings=tuple(odd.warnings)
    )
