"""`bundle.toml`: the one TOML writer, and the checks on types, ranges, duplicates and keys."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reporter.core.errors import ManifestError
from reporter.load import bundle
from reporter.load.manifest import MAX_WORLD_SIZE, TomlDocument, parse_manifest, toml_value

DUMP = """\
Process 4242: sglang::scheduler_TP0
Python v3.11.7 (/usr/local/bin/python3.11)

Thread 4242 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2501)
"""


def _folder(tmp_path: Path, manifest: str, *files: str) -> Path:
    for name in files or ("rank0.txt",):
        (tmp_path / name).write_text(DUMP)
    (tmp_path / "bundle.toml").write_text(manifest)
    return tmp_path


def test_init_writes_valid_toml_for_a_file_name_with_del(tmp_path: Path) -> None:
    (tmp_path / "rank0\x7f.txt").write_text(DUMP)
    (tmp_path / "odd\x7f.txt").write_text("not evidence\n")
    text = bundle.draft_manifest(tmp_path)
    data = tomllib.loads(text)
    assert data["evidence"][0]["path"] == "rank0\x7f.txt"
    # The skipped file's name is in a comment: escaped there too, since TOML refuses DEL.
    assert "# skipped odd\\u007F.txt" in text
    (tmp_path / "bundle.toml").write_text(text)
    assert [f.path for f in bundle.load([tmp_path]).files] == ["rank0\x7f.txt"]


@given(st.text(max_size=40))
def test_every_string_round_trips(value: str) -> None:
    text = TomlDocument().comment(value).key("k", value, comment=value).text()
    assert tomllib.loads(text) == {"k": value}


def test_document_layout() -> None:
    text = (
        TomlDocument()
        .comment("head")
        .key("title", 'say "hi"')
        .table("fields")
        .key("a b", 1)
        .array_table("collect.target")
        .key("at", datetime(2026, 11, 29, 14, 43, 41, 973500, tzinfo=UTC))
        .text()
    )
    assert text == (
        '# head\ntitle = "say \\"hi\\""\n\n[fields]\n"a b" = 1\n\n'
        "[[collect.target]]\nat = 2026-11-29T14:43:41.973Z\n"
    )
    assert toml_value(("x", "y")) == '["x", "y"]'


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ('[[evidence]]\npath = "rank0.txt"\nrank = true\n', r"bundle.toml:2: `rank`.*got true"),
        ('[[evidence]]\npath = "rank0.txt"\nrank = -1\n', r"`rank` must be an integer from 0"),
        ('[[evidence]]\npath = "rank0.txt"\nrank = 1.5\n', r"`rank` must be an integer"),
        ('[[evidence]]\npath = "rank0.txt"\nrole = 3\n', r"`role` must be a string, got 3"),
        ("world_size = 9223372036854775807\n", r"bundle.toml:1: `world_size`.*1 to 1048576"),
        ("world_size = true\n", r"`world_size` must be an integer.*got true"),
        ("world_size = 0\n", r"`world_size` must be an integer from 1"),
        ('[[evidence]]\npath = "rank0.txt"\nkind = 3\n', r"unknown evidence kind 3"),
    ],
)
def test_bad_types_and_ranges_are_refused(tmp_path: Path, manifest: str, message: str) -> None:
    _folder(tmp_path, manifest)
    with pytest.raises(ManifestError, match=message) as err:
        bundle.load([tmp_path])
    assert err.value.tip


def test_largest_world_size_is_accepted(tmp_path: Path) -> None:
    read = parse_manifest(f"world_size = {MAX_WORLD_SIZE}\n", root=tmp_path)
    assert read.manifest.world_size == MAX_WORLD_SIZE


def test_a_file_listed_twice_is_loaded_once_with_a_warning(tmp_path: Path) -> None:
    _folder(
        tmp_path,
        '[[evidence]]\npath = "rank0.txt"\nrank = 0\n\n[[evidence]]\npath = "rank*.txt"\n',
    )
    loaded = bundle.load([tmp_path])
    assert len(loaded.dumps) == 1
    assert [str(w) for w in loaded.warnings] == [
        "bundle.toml:6: rank0.txt is listed more than once; loaded once, "
        "with its first entry's settings"
    ]
    assert dict(loaded.rank_hints)["rank0.txt"].rank == 0


def test_unknown_keys_are_warned_with_a_suggestion(tmp_path: Path) -> None:
    _folder(
        tmp_path,
        'titel = "x"\nzzz = 1\n[wedge]\nwindw = "60s"\n'
        '[[evidence]]\npath = "rank0.txt"\nrnak = 1\n',
    )
    messages = [str(w) for w in bundle.load([tmp_path]).warnings]
    assert messages == [
        "bundle.toml:1: unknown key `titel` ignored; did you mean `title`?",
        "bundle.toml:2: unknown key `zzz` ignored; known keys: "
        + ", ".join(
            [
                "title",
                "upstream",
                "service",
                "version",
                "world_size",
                "fields",
                "evidence",
                "event",
                "wedge",
                "baseline",
                "source_root",
                "upstream_ref",
                "collect",
                "host",
            ]
        ),
        "bundle.toml:4: unknown key `wedge.windw` ignored; did you mean `window`?",
        "bundle.toml:7: unknown key `evidence.rnak` ignored; did you mean `rank`?",
    ]


def test_a_glob_that_also_matches_folders_loads_the_files(tmp_path: Path) -> None:
    (tmp_path / "snaps").mkdir()
    (tmp_path / "snaps" / "rank0.txt").write_text("x", encoding="utf-8")
    (tmp_path / "snaps" / "rank1_dir").mkdir()
    read = parse_manifest(
        'title = "t"\n[[evidence]]\npath = "snaps/rank*"\nkind = "pyspy-text"\n', root=tmp_path
    )
    assert [e.display for e in read.entries] == ["snaps/rank0.txt"]
    with pytest.raises(ManifestError, match="matches only folders"):
        parse_manifest('title = "t"\n[[evidence]]\npath = "snaps/rank1*"\n', root=tmp_path)
