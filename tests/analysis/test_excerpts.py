"""Code excerpts: which frames, which upstream ref, permalinks, and local-vs-deployed status."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reporter.analysis import Analysis, analyze
from reporter.analysis.excerpts import (
    SourceFile,
    UpstreamRule,
    code_excerpts,
    default_upstream_rules,
    manifest_rule,
    module_path,
    parse_upstream_rules,
    permalink,
    resolve_ref,
)
from reporter.core.errors import ReporterError
from reporter.load import bundle as bundle_io
from reporter.model import Bundle, CodeExcerpt, Environment, FileHash, Location, Manifest, Package
from reporter.model.document import data


def excerpts_json(value: object) -> dict[str, object]:
    """The `excerpts` record's JSON data (the record is its own document)."""
    out: dict[str, object] = data(value)
    return out


ROOT = Path(__file__).resolve().parents[2]
WHERE = Location(path="pip-freeze.txt", line=3)


def _pkg(name: str, version: str, origin: str = "") -> Package:
    return Package(name=name, version=version, origin=origin, source=WHERE)


SGLANG = next(r for r in default_upstream_rules() if r.module == "sglang")


@pytest.mark.parametrize(
    ("frame_file", "expected"),
    [
        ("/usr/lib/python3.11/site-packages/sglang/srt/x.py", "sglang/srt/x.py"),
        ("/opt/venv/lib/python3.12/dist-packages/torch/a.py", "torch/a.py"),
        ("sglang/srt/x.py", "sglang/srt/x.py"),
        ("/srv/app/main.py", "/srv/app/main.py"),
    ],
)
def test_module_path(frame_file: str, expected: str) -> None:
    assert module_path(frame_file) == expected


@pytest.mark.parametrize(
    ("packages", "rule", "ref", "how"),
    [
        (
            [_pkg("sglang", "0.5.2")],
            SGLANG,
            "v0.5.2",
            "tag rule `v{version}` with the installed sglang 0.5.2",
        ),
        ([_pkg("sglang", "0.5.2+cu126")], SGLANG, "v0.5.2", "tag rule"),
        (
            [
                _pkg(
                    "sglang",
                    "",
                    "git+https://github.com/sgl-project/sglang.git@4f3a9c1e2b7d#egg=sglang",
                )
            ],
            SGLANG,
            "4f3a9c1e2b7d",
            "commit 4f3a9c1e2b7d of the installed sglang",
        ),
        (
            [_pkg("sglang", "0.5.3.dev41+g9d1c50a5a.d20250912")],
            SGLANG,
            "9d1c50a5a",
            "commit 9d1c50a5a",
        ),
        ([], SGLANG, "", "the installed version of sglang is unknown"),
        ([], UpstreamRule(module="m", dist="m", repo="o/r", version="1.2"), "v1.2", "version from"),
        (
            [_pkg("m", "1")],
            UpstreamRule(module="m", dist="m", repo="o/r", commit="abc"),
            "abc",
            "commit abc",
        ),
        (
            [_pkg("m", "1")],
            UpstreamRule(module="m", dist="m", repo="o/r", tag="v{nope}"),
            "",
            "not usable",
        ),
    ],
)
def test_resolve_ref(packages: list[Package], rule: UpstreamRule, ref: str, how: str) -> None:
    got_ref, got_how = resolve_ref(rule, packages)
    assert got_ref == ref
    assert how in got_how


def test_permalink_forms() -> None:
    assert (
        permalink("o/r", "v1", "python/a.py", 3, 9)
        == "https://github.com/o/r/blob/v1/python/a.py#L3-L9"
    )
    assert permalink("o/r", "v1", "a.py", 4, 4) == "https://github.com/o/r/blob/v1/a.py#L4"


def test_manifest_rule() -> None:
    manifest = Manifest(
        upstream=("sgl-project/sglang",),
        upstream_ref=(("tag", "release-{version}"), ("path_prefix", "python/")),
    )
    rule = manifest_rule(Bundle(root=None, manifest=manifest))
    assert rule is not None
    assert (rule.module, rule.dist, rule.repo, rule.tag) == (
        "sglang",
        "sglang",
        "sgl-project/sglang",
        "release-{version}",
    )
    assert manifest_rule(Bundle(root=None)) is None


class FakeReader:
    """Source files by path, as `SourceRoots.find` would return them."""

    def __init__(self, files: dict[str, list[str]]) -> None:
        self.files = files

    def find(self, frame_file: str) -> SourceFile | None:
        for path, lines in self.files.items():
            if frame_file == path or frame_file.endswith("/" + path):
                data = ("\n".join(lines) + "\n").encode()
                return SourceFile(
                    path=path,
                    root="/src",
                    lines=tuple(lines),
                    sha256=hashlib.sha256(data).hexdigest(),
                )
        return None


def _tp_desync() -> tuple[Bundle, Analysis]:
    bundle = bundle_io.load([ROOT / "fixtures" / "bundles" / "tp_desync"])
    return bundle, analyze(bundle)


def test_automatic_excerpts_around_the_branch_point() -> None:
    bundle, analysis = _tp_desync()
    source = (ROOT / "fixtures" / "scenarios" / "tp_desync.py").read_text().splitlines()
    reader = FakeReader({"tp_desync.py": source})
    with_env = Bundle(
        root=bundle.root,
        manifest=bundle.manifest,
        environment=Environment(packages=(_pkg("torch", "2.13.0+cpu"),)),
    )
    result = code_excerpts(with_env, analysis, reader=reader, context=2)
    titles = [v.title for v in result.excerpts]
    assert titles[0].startswith(
        "branch point: the classes share the stack down to `Scheduler.on_idle`"
    )
    merged = result.excerpts[0]
    # Four frames of one file, one excerpt: both sides leave on_idle (118, 119), then part.
    assert merged.highlight == (118, 119, 123, 127)
    assert (merged.start, merged.end) == (116, 129)
    torch = next(v for v in result.excerpts if v.path.startswith("torch/"))
    assert torch.permalink == (
        "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/distributed/distributed_c10d.py#L3252"
    )
    assert torch.lines == ()
    assert any("no upstream rule for `tp_desync.py`" in n for n in result.notes)
    data = excerpts_json(result)
    assert list(data) == ["excerpts", "notes"]


def test_without_reader_or_rules_nothing_is_shown() -> None:
    bundle, analysis = _tp_desync()
    result = code_excerpts(bundle, analysis)
    assert result.excerpts == ()  # no package list: no torch version, no permalink, no code


def _explicit(lines: tuple[str, ...], sha: str = "") -> CodeExcerpt:
    return CodeExcerpt(
        path="pkg/mod.py", start=2, lines=lines, file_sha256=sha, source=Location(path="e", line=1)
    )


@pytest.mark.parametrize(
    ("excerpt_lines", "recorded", "status"),
    [
        (("b", "c"), "same", "the local file matches the deployed file"),
        (("b", "c"), "other", "the local file differs from the deployed file"),
        (("b", "X"), "", "the local lines 2-3 differ from the excerpt"),
        (("b", "c"), "", ""),
    ],
)
def test_explicit_excerpt_status(
    excerpt_lines: tuple[str, ...], recorded: str, status: str
) -> None:
    local = ["a", "b", "c", "d"]
    digest = hashlib.sha256(("\n".join(local) + "\n").encode()).hexdigest()
    sha = {"same": digest, "other": "0" * 64, "": ""}[recorded]
    bundle = Bundle(root=None, excerpts=(_explicit(excerpt_lines, sha),))
    _, analysis = _tp_desync()
    result = code_excerpts(bundle, analysis, reader=FakeReader({"pkg/mod.py": local}))
    view = result.excerpts[0]
    assert (view.origin, view.start, view.end) == ("excerpt file", 2, 3)
    assert view.status.startswith(status) if status else view.status == ""


def test_deployed_hashes_and_dirty_versions() -> None:
    _, analysis = _tp_desync()
    source = (ROOT / "fixtures" / "scenarios" / "tp_desync.py").read_text().splitlines()
    with_hashes = Bundle(
        root=None,
        environment=Environment(
            file_hashes=(FileHash(path="srv/tp_desync.py", sha256="1" * 64, source=WHERE),)
        ),
    )
    result = code_excerpts(with_hashes, analysis, reader=FakeReader({"tp_desync.py": source}))
    assert result.excerpts[0].status.startswith("the local file differs from the deployed one")
    rule = UpstreamRule(module="tp_desync", dist="sim", repo="o/sim")
    dirty = Bundle(
        root=None, environment=Environment(packages=(_pkg("sim", "1.0+gabcdef1.d20261129"),))
    )
    result = code_excerpts(dirty, analysis, rules=[rule])
    view = result.excerpts[0]
    assert (view.permalink or "").startswith(
        "https://github.com/o/sim/blob/abcdef1/tp_desync.py#L118"
    )
    assert "uncommitted changes" in view.status


def test_bad_upstream_rules() -> None:
    with pytest.raises(ReporterError, match=r"\[\[package\]\] #1 needs `dist`"):
        parse_upstream_rules("[[package]]\nmodule = 'x'\n")
    with pytest.raises(ReporterError, match="not valid TOML"):
        parse_upstream_rules("[[package\n")
