"""`report init` guesses the upstream repository, the world size and globs, as comments."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from reporter.app.report import init_manifest
from reporter.load import bundle, guess
from reporter.model import (
    Bundle,
    CommandFlag,
    CommandLine,
    Environment,
    EnvVar,
    EvidenceKind,
    Location,
)

ROOT = Path(__file__).resolve().parents[2]
RULES = [
    guess.Rule(module="sglang", dist="sglang", repo="sgl-project/sglang"),
    guess.Rule(module="vllm", dist="vllm", repo="vllm-project/vllm"),
    guess.Rule(module="torch", dist="torch", repo="pytorch/pytorch"),
]


@pytest.mark.parametrize(
    ("case", "repo", "why"),
    [
        ("tp_desync", "sgl-project/sglang", "process 'sglang::scheduler_TP0'"),
        ("dp_tp", "sgl-project/sglang", "process 'sglang::scheduler_DP0_TP0'"),
        ("vllm_like", "vllm-project/vllm", "process 'VLLM::Worker_TP0_EP0'"),
    ],
)
def test_init_guesses_from_real_bundles(tmp_path: Path, case: str, repo: str, why: str) -> None:
    folder = tmp_path / case
    source = ROOT / "fixtures" / "bundles" / case
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("bundle.toml", "*.md"))
    result = init_manifest(folder)
    by_key = {s.key: s for s in result.suggestions if s.key != "evidence"}
    assert by_key["upstream"].value == [repo] and by_key["upstream"].why.startswith(why)
    assert by_key["world_size"].value == 4
    globs = [s.value for s in result.suggestions if s.key == "evidence"]
    assert ["snapshots/*.txt", "pyspy-text"] in globs
    text = result.path.read_text()
    assert f'# upstream = ["{repo}"]  # guessed from {why}' in text
    assert "\nupstream = []" not in text  # the guess took the starter line's place
    # Uncommenting every guessed key line yields a valid manifest that the loader reads.
    confirmed = text.replace('# upstream = ["', 'upstream = ["').replace(
        "# world_size = 4  # guessed", "world_size = 4  # guessed"
    )
    data = tomllib.loads(confirmed)
    assert data["upstream"] == [repo] and data["world_size"] == 4
    result.path.write_text(confirmed)
    loaded = bundle.load([folder])
    assert loaded.manifest.upstream == (repo,)


def _bundle(**environment: object) -> Bundle:
    return Bundle(root=None, environment=Environment(**environment))  # type: ignore[arg-type]


def test_world_size_from_environment_then_flags() -> None:
    where = Location(path="env/pid1.environ", line=3)
    from_env = guess.world_size(
        _bundle(variables=(EnvVar(name="WORLD_SIZE", value="16", source=where),))
    )
    assert from_env is not None and from_env.value == 16 and "WORLD_SIZE=16" in from_env.why
    line = CommandLine(
        argv=("python", "-m", "sglang.launch_server", "--tp", "4", "--dp", "2"),
        program="sglang.launch_server",
        flags=(CommandFlag(name="--tp", value="4"), CommandFlag(name="--dp", value="2")),
        source=where,
    )
    from_flags = guess.world_size(_bundle(cmdlines=(line,)))
    assert (
        from_flags is not None
        and from_flags.value == 8
        and from_flags.why.startswith("dp 2 x tp 4")
    )
    assert guess.world_size(_bundle()) is None


def test_libraries_lose_to_a_serving_framework() -> None:
    from reporter.model import Package

    where = Location(path="env/pid1.packages.txt")
    packages = (
        Package(name="torch", version="2.8.0", source=where),
        Package(name="vllm", version="0.10.1", source=where),
    )
    found = guess.upstream(_bundle(packages=packages), RULES)
    assert found is not None and found.value == ["vllm-project/vllm"]
    assert guess.upstream(_bundle(), RULES) is None


def test_globs_need_three_files_of_a_kind() -> None:
    files = [(f"dumps/r{n}.txt", EvidenceKind.PYSPY_TEXT) for n in range(2)]
    assert guess.globs(files) == []
    files.append(("dumps/r2.txt", EvidenceKind.PYSPY_TEXT))
    (only,) = guess.globs(files)
    assert only.value == ["dumps/*.txt", "pyspy-text"]
