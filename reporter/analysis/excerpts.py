"""Code at the branch point: excerpts of the source the ranks run, with upstream permalinks.

Input: the `Bundle` (its explicit excerpt files, packages, deployed-file hashes and
`[upstream_ref]`), the `Analysis` (branch point and classes), and optionally a
`SourceReader` over `--source-root` folders (a checkout or a site-packages); the
reader is the only way this module sees files, so it stays pure.

Output: `ExcerptAnalysis.excerpts`, explicit ones first, then one per interesting
frame (the branch point's shared frame, where each branch parts and what it waits
in, each class's innermost frame), each with ± `context` lines when the source is
found, and a permalink `https://github.com/OWNER/REPO/blob/REF/PATH#Lx-Ly` when the
frame's package has an upstream rule (`reporter/data/upstream.toml`, or the
manifest's `[upstream_ref]`). REF is a commit found in the environment evidence
(`git+...@<sha>` installs, `+g<sha>` versions) or the tag rule applied to the
installed version. `status` says when the local file is known to differ from the
deployed one (a recorded sha256 that does not match, a version built from a dirty
checkout), or that it matches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Protocol

from reporter.analysis.result import Analysis, CodeView, ExcerptAnalysis
from reporter.analysis.setupcalls import setup_calls
from reporter.core import rules as data_files
from reporter.evidence.env import normalise_package
from reporter.model import Bundle, CodeExcerpt, FileHash, Frame, Package, innermost_python

DEFAULT_CONTEXT = 6
MAX_AUTOMATIC = 8
_COMMIT_IN_URL_RE = re.compile(r"@([0-9a-f]{7,40})(?:[#&]|\Z)")
_COMMIT_IN_VERSION_RE = re.compile(r"\+g([0-9a-f]{7,40})")
# A dated local version (`2.8.0+git.abc.d20260101`): the date part after the `+`.
_DIRTY_VERSION_RE = re.compile(r"\bd\d{8}\b")
_SITE_RE = re.compile(r".*/(?:site|dist)-packages/")


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceFile:
    """A local source file found for a frame: `path` relative to the root it was found under."""

    path: str
    root: str
    lines: tuple[str, ...]
    sha256: str


class SourceReader(Protocol):
    """Finds the local source of a frame's file (`reporter.load.sources.SourceRoots` reads folders)."""

    def find(self, frame_file: str) -> SourceFile | None:
        """The file for `frame_file` as a dump prints it, or None."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamRule:
    """Where one top-level module's source lives upstream (see `reporter/data/upstream.toml`)."""

    module: str
    dist: str
    repo: str
    tag: str = "v{version}"
    path_prefix: str = ""
    commit: str = ""
    version: str = ""
    origin: str = "reporter/data/upstream.toml"


def parse_upstream_rules(text: str, *, source: str = "upstream.toml") -> tuple[UpstreamRule, ...]:
    """Compile an upstream.toml; a malformed entry raises `ReporterError`."""
    data = data_files.parse(text, data_files.SHAPES["upstream.toml"], source=source)
    rules: list[UpstreamRule] = []
    # The shape (reporter/core/rules.py) has checked module, dist and repo are strings.
    for entry in data.get("package", []):
        rules.append(
            UpstreamRule(
                module=entry["module"],
                dist=entry["dist"],
                repo=entry["repo"],
                tag=str(entry.get("tag", "v{version}")),
                path_prefix=str(entry.get("path_prefix", "")),
                origin=source,
            )
        )
    return tuple(rules)


@cache
def default_upstream_rules() -> tuple[UpstreamRule, ...]:
    """The rules shipped in `reporter/data/upstream.toml`."""
    return parse_upstream_rules(
        data_files.read_text("upstream.toml"), source="reporter/data/upstream.toml"
    )


def manifest_rule(bundle: Bundle) -> UpstreamRule | None:
    """The bundle's `[upstream_ref]` as a rule, or None.

    Keys: `repo` (default: the first `upstream`), `package` (whose version fills
    {version}; default: the repo name), `module` (default: the package with `-` as
    `_`), `tag` (default `v{version}`), `commit`, `version`, `path_prefix`.
    """
    table = dict(bundle.manifest.upstream_ref)
    if not table:
        return None
    repo = table.get("repo") or (bundle.manifest.upstream[0] if bundle.manifest.upstream else "")
    if not repo:
        return None
    dist = table.get("package") or repo.rsplit("/", 1)[-1]
    return UpstreamRule(
        module=table.get("module") or dist.replace("-", "_"),
        dist=dist,
        repo=repo,
        tag=table.get("tag") or "v{version}",
        path_prefix=table.get("path_prefix", ""),
        commit=table.get("commit", ""),
        version=table.get("version", ""),
        origin="bundle.toml [upstream_ref]",
    )


def module_path(frame_file: str) -> str:
    """The import-relative path of a frame's file.

    `/usr/lib/python3.11/site-packages/sglang/srt/x.py` -> `sglang/srt/x.py`;
    relative paths (py-spy's short filenames) are kept.
    """
    path = frame_file.replace("\\", "/")
    site = _SITE_RE.match(path)
    return path[site.end() :] if site else path


def _rule_for(path: str, rules: Sequence[UpstreamRule]) -> tuple[UpstreamRule, str] | None:
    """The rule for a module-relative or repository-relative path, and the repository path."""
    parts = PurePosixPath(path).parts
    for rule in rules:
        prefix = rule.path_prefix
        if prefix and path.startswith(prefix + rule.module + "/"):
            return rule, path
        if parts and parts[0] in (rule.module, f"{rule.module}.py"):
            return rule, prefix + path
        if path.startswith("/") and rule.module in parts:
            # An absolute path outside site-packages: a checkout or a vendored copy.
            at = parts.index(rule.module)
            return rule, prefix + "/".join(parts[at:])
    return None


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _commit_of(package: Package) -> str:
    for pattern, text in (
        (_COMMIT_IN_URL_RE, package.origin),
        (_COMMIT_IN_VERSION_RE, package.version),
    ):
        match = pattern.search(text)
        if match:
            return match.group(1)
    return ""


def resolve_ref(rule: UpstreamRule, packages: Sequence[Package]) -> tuple[str, str]:
    """(REF, how it was chosen); REF is "" when it cannot be known, and `how` says why."""
    if rule.commit:
        return rule.commit, f"commit {rule.commit[:12]} from {rule.origin}"
    wanted = normalise_package(rule.dist)
    package = next((p for p in packages if p.name == wanted), None)
    if package is not None:
        commit = _commit_of(package)
        if commit:
            return commit, (
                f"commit {commit[:12]} of the installed {package.name} "
                f"({package.version or package.origin}; {package.source})"
            )
        if package.version:
            try:
                ref = rule.tag.format(version=_public(package.version))
            except (KeyError, IndexError, ValueError):
                return "", f"tag rule {rule.tag!r} ({rule.origin}) is not usable"
            return ref, (
                f"tag rule `{rule.tag}` with the installed {package.name} "
                f"{package.version} ({package.source})"
            )
    if rule.version:
        return rule.tag.format(version=_public(rule.version)), f"version from {rule.origin}"
    return "", f"the installed version of {rule.dist} is unknown (no package list names it)"


def permalink(repo: str, ref: str, path: str, start: int, end: int) -> str:
    """`https://github.com/OWNER/REPO/blob/REF/PATH#Lx-Ly` (`#Lx` for one line)."""
    anchor = f"#L{start}" if start >= end else f"#L{start}-L{end}"
    return f"https://github.com/{repo}/blob/{ref}/{path}{anchor}"


def _dirty_note(rule: UpstreamRule, packages: Sequence[Package]) -> str:
    wanted = normalise_package(rule.dist)
    for package in packages:
        if package.name == wanted and _DIRTY_VERSION_RE.search(package.version.partition("+")[2]):
            return (
                f"the installed {package.name} {package.version} was built from a checkout "
                "with uncommitted changes: upstream's file may differ"
            )
    return ""


def _deployed_hash(path: str, hashes: Sequence[FileHash]) -> FileHash | None:
    """A deployed-file hash whose path names the same file (one is a suffix of the other)."""
    for entry in hashes:
        a, b = entry.path.lstrip("/"), path.lstrip("/")
        if a == b or a.endswith("/" + b) or b.endswith("/" + a):
            return entry
    return None


def _hash_status(local: SourceFile, recorded: str, what: str) -> str:
    if local.sha256 == recorded:
        return f"the local file matches {what} (sha256 {recorded[:12]})"
    return (
        f"the local file differs from {what} (sha256 {local.sha256[:12]} here, "
        f"{recorded[:12]} deployed): the lines shown may not be what ran"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Target:
    frame: Frame
    title: str
    cite: str


def _targets(analysis: Analysis) -> list[_Target]:
    """Frames worth showing, most telling first, each (file, line) once."""
    found: list[_Target] = []
    seen: set[tuple[str, int]] = set()

    def add(frame: Frame | None, title: str) -> None:
        if frame is None or frame.line is None or frame.native:
            return
        key = (frame.file, frame.line)
        if key in seen:
            return
        seen.add(key)
        found.append(_Target(frame=frame, title=title, cite=f"{frame.file}:{frame.line}"))

    point = analysis.branch_point
    if point is not None:
        add(
            point.shared,
            f"branch point: the classes share the stack down to `{_name(point.shared)}`",
        )
        # Both sides of the split: each class leaves the shared frame at its own line.
        by_label = {c.label: c for c in analysis.classes}
        shared = point.shared
        for branch in point.branches:
            own = by_label.get(branch.label)
            if own is not None and shared is not None:
                at = next(
                    (
                        f
                        for f in own.frames
                        if (f.function, f.file) == (shared.function, shared.file)
                    ),
                    None,
                )
                add(at, f"{branch.label} leaves `{shared.function}` here")
        for branch in point.branches:
            if branch.frames:
                add(branch.frames[0], f"{branch.label} parts here: `{branch.frames[0].function}`")
                last = branch.frames[-1]
                add(last, f"{branch.label} waits here: `{last.function}`")
    for stack_class in analysis.classes:
        top = innermost_python(stack_class.frames)
        if top is not None:
            add(top, f"{stack_class.label} innermost frame: `{top.function}`")
    return found


def _name(frame: Frame | None) -> str:
    return frame.function if frame is not None else "?"


def code_excerpts(
    bundle: Bundle,
    analysis: Analysis,
    *,
    reader: SourceReader | None = None,
    context: int = DEFAULT_CONTEXT,
    max_automatic: int = MAX_AUTOMATIC,
    rules: Sequence[UpstreamRule] | None = None,
) -> ExcerptAnalysis:
    """Explicit excerpts, then automatic ones around the branch point and class frames."""
    all_rules = list(rules if rules is not None else default_upstream_rules())
    extra = manifest_rule(bundle)
    if extra is not None:
        all_rules = [extra, *(r for r in all_rules if r.module != extra.module)]
    packages = bundle.environment.packages
    hashes = bundle.environment.file_hashes
    views = [_explicit(e, reader, all_rules, packages, hashes) for e in bundle.excerpts]
    notes: list[str] = []
    targets = _targets(analysis)
    if len(targets) > max_automatic:
        notes.append(
            f"{len(targets) - max_automatic} more frames not excerpted "
            f"(the first {max_automatic} are shown)"
        )
        targets = targets[:max_automatic]
    unmatched: dict[str, None] = {}
    missing_source: dict[str, None] = {}
    for target in targets:
        view = _automatic(target, reader, context, all_rules, packages, hashes)
        if not view.permalink and not view.ref_note:
            unmatched.setdefault(module_path(target.frame.file).split("/", 1)[0], None)
        if reader is not None and not view.lines:
            missing_source.setdefault(target.frame.file, None)
        if view.lines or view.permalink:
            # A frame with neither code nor link adds nothing to the branch point section.
            views.append(view)
    views = views[: len(bundle.excerpts)] + _merge_overlaps(views[len(bundle.excerpts) :])
    views.extend(_setup_views(targets, reader, views, all_rules, packages))
    if unmatched:
        notes.append(
            "no upstream rule for "
            + ", ".join(f"`{m}`" for m in unmatched)
            + ": add an [upstream_ref] table to bundle.toml for permalinks"
        )
    if reader is None and targets:
        notes.append("no --source-root given: frames are linked, not excerpted")
    elif missing_source:
        notes.append(
            "source not found under the source roots for "
            + ", ".join(f"`{f}`" for f in missing_source)
        )
    if views and not hashes and not any(e.file_sha256 for e in bundle.excerpts) and reader:
        notes.append(
            "no deployed-file hashes in the bundle (sha256sum output): whether the local "
            "sources match what ran cannot be told"
        )
    return ExcerptAnalysis(excerpts=tuple(views), notes=tuple(notes))


def _merge_overlaps(views: list[CodeView]) -> list[CodeView]:
    """Automatic excerpts of one file whose lines overlap or touch become one excerpt.

    The merged excerpt keeps the first one's place, joins the titles and highlights
    every frame line; its permalink covers the union of the lines.
    """
    merged: list[CodeView] = []
    for view in views:
        into = next(
            (
                i
                for i, kept in enumerate(merged)
                if kept.lines
                and view.lines
                and kept.path == view.path
                and view.start <= kept.end + 1
                and kept.start <= view.end + 1
            ),
            None,
        )
        if into is None:
            merged.append(view)
            continue
        kept = merged[into]
        start, end = min(kept.start, view.start), max(kept.end, view.end)
        lines = _union_lines(kept, view, start, end)
        link = kept.permalink
        if link:
            link = link.split("#", 1)[0] + (f"#L{start}" if start >= end else f"#L{start}-L{end}")
        merged[into] = CodeView(
            title=f"{kept.title}; {view.title}",
            path=kept.path,
            start=start,
            end=end,
            lines=lines,
            highlight=tuple(sorted(set(kept.highlight) | set(view.highlight))),
            permalink=link or None,
            ref_note=kept.ref_note,
            status=kept.status,
            origin=kept.origin,
            cite=f"{kept.cite}, {view.cite}",
        )
    return merged


def _union_lines(a: CodeView, b: CodeView, start: int, end: int) -> tuple[str, ...]:
    """Lines `start`..`end` taken from two excerpts of the same file that overlap or touch."""
    by_number = {a.start + i: line for i, line in enumerate(a.lines)}
    by_number.update({b.start + i: line for i, line in enumerate(b.lines)})
    return tuple(by_number.get(n, "") for n in range(start, end + 1))


def _link(
    path: str,
    start: int,
    end: int,
    rules: Sequence[UpstreamRule],
    packages: Sequence[Package],
) -> tuple[str, str, str, str]:
    """(repository path, permalink, how the ref was chosen, dirty-checkout note)."""
    matched = _rule_for(path, rules)
    if matched is None:
        return path, "", "", ""
    rule, repo_path = matched
    ref, how = resolve_ref(rule, packages)
    link = permalink(rule.repo, ref, repo_path, start, end) if ref else ""
    return (
        repo_path,
        link,
        f"{rule.repo} @ {ref}: {how}" if ref else how,
        _dirty_note(rule, packages),
    )


def _automatic(
    target: _Target,
    reader: SourceReader | None,
    context: int,
    rules: Sequence[UpstreamRule],
    packages: Sequence[Package],
    hashes: Sequence[FileHash],
) -> CodeView:
    line = target.frame.line or 1
    local = reader.find(target.frame.file) if reader is not None else None
    if local is not None and local.lines:
        start = max(1, line - context)
        end = min(len(local.lines), line + context)
        lines = local.lines[start - 1 : end]
    else:
        start, end, lines = line, line, ()
    rel = local.path if local is not None else module_path(target.frame.file)
    repo_path, link, how, dirty = _link(rel, start, end, rules, packages)
    status = dirty
    if local is not None:
        recorded = _deployed_hash(local.path, hashes)
        if recorded is not None:
            status = _join(_hash_status(local, recorded.sha256, "the deployed one"), dirty)
    return CodeView(
        title=target.title,
        path=repo_path,
        start=start,
        end=end,
        lines=lines,
        highlight=(line,) if lines else (),
        permalink=link or None,
        ref_note=how,
        status=status,
        origin="source root" if lines else "frame",
        cite=target.cite,
    )


def _setup_views(
    targets: Sequence[_Target],
    reader: SourceReader | None,
    shown: Sequence[CodeView],
    rules: Sequence[UpstreamRule],
    packages: Sequence[Package],
) -> list[CodeView]:
    """The process-group set-up calls that pass `timeout=` in the source files of the
    frames, each as its own excerpt unless one shown already holds it: the timeout they set
    is what ends the wait, and is often far from the frame that waits."""
    if reader is None:
        return []
    out: list[CodeView] = []
    seen: set[str] = set()
    for target in targets:
        local = reader.find(target.frame.file)
        if local is None or local.path in seen:
            continue
        seen.add(local.path)
        for call, _value, first, last in setup_calls(local.lines, 1)[:_MAX_SETUP]:
            repo_path, link, how, dirty = _link(local.path, first, last, rules, packages)
            if any(v.path == repo_path and v.start <= first and last <= v.end for v in shown):
                continue
            out.append(
                CodeView(
                    title=f"`{call}` with its timeout",
                    path=repo_path,
                    start=first,
                    end=last,
                    lines=local.lines[first - 1 : last],
                    highlight=(first,),
                    permalink=link or None,
                    ref_note=how,
                    status=dirty,
                    origin="source root",
                    cite=f"{local.path}:{first}",
                )
            )
    return out


_MAX_SETUP = 2
"""Set-up calls excerpted per file: a file that makes more groups shows the first two."""


def _explicit(
    excerpt: CodeExcerpt,
    reader: SourceReader | None,
    rules: Sequence[UpstreamRule],
    packages: Sequence[Package],
    hashes: Sequence[FileHash],
) -> CodeView:
    if excerpt.repo and excerpt.ref:
        repo_path = excerpt.path
        link = permalink(excerpt.repo, excerpt.ref, excerpt.path, excerpt.start, excerpt.end)
        how, dirty = f"{excerpt.repo} @ {excerpt.ref}: given in the excerpt file", ""
    else:
        repo_path, link, how, dirty = _link(
            excerpt.path, excerpt.start, excerpt.end, rules, packages
        )
    status = dirty
    local = reader.find(excerpt.path) if reader is not None else None
    recorded = excerpt.file_sha256 or (
        entry.sha256 if (entry := _deployed_hash(excerpt.path, hashes)) else ""
    )
    if local is not None:
        parts = [dirty]
        if recorded:
            parts.insert(0, _hash_status(local, recorded, "the deployed file"))
        shown = local.lines[excerpt.start - 1 : excerpt.end]
        if tuple(shown) != excerpt.lines:
            parts.insert(
                0, f"the local lines {excerpt.start}-{excerpt.end} differ from the excerpt"
            )
        status = _join(*parts)
    title = excerpt.note or f"excerpt of `{excerpt.path}`"
    return CodeView(
        title=title,
        path=repo_path,
        start=excerpt.start,
        end=excerpt.end,
        lines=excerpt.lines,
        highlight=excerpt.highlight,
        permalink=link or None,
        ref_note=how,
        status=status,
        origin="excerpt file",
        cite=str(excerpt.source),
    )


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
