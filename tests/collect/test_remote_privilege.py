"""Live: nothing the target's user can change runs as root when `report collect` reaches a host.

A venv owned by `nobody` holds a `.pth` file (site runs it at every start of that venv's
Python) and a fake `py-spy`; each writes a marker file named after the uid it ran as. A
target runs from that venv as `nobody` on a simulated host (tests/collect/sshlab.py: a real
sshd in its own PID namespace, reached as root). `report collect` then captures it over ssh
and through an `--exec` template. Neither the `.pth` nor the fake py-spy may leave a
`-0` marker (uid 0); the package listing still happens, as `nobody` (its `.pth` marker says
so); the fake py-spy is named in the host's reason with the way out (`--remote-py-spy`), and
a trusted py-spy named that way dumps the target.

Skips, with the reason, where the lab cannot run (not root, no sshd) or where Debian's
`/usr/bin/python3` (a Python `nobody` may run) is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .sshlab import Lab, report, require_lab, ssh_lab

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
BASE_PYTHON = Path("/usr/bin/python3")
NOBODY = 65534
MARK = "privilege-target-7c1f"


@dataclass(frozen=True, slots=True, kw_only=True)
class Planted:
    lab: Lab
    venv: Path
    markers: Path
    pid: int
    """The target's PID on node-a."""


def _probe_python() -> str:
    """An interpreter for the probe whose own folder holds no py-spy. The probe also looks
    beside the interpreter it runs on; where this suite's interpreter has a trusted py-spy
    beside it (a system-wide install), that copy would be found and the fake would not be
    the only one, which is what the first half of the test needs."""
    for candidate in (Path(sys.executable), Path("/usr/bin/python3")):
        beside = (candidate.resolve().parent / "py-spy", candidate.parent / "py-spy")
        if candidate.exists() and not any(p.exists() for p in beside):
            return str(candidate)
    pytest.skip("no interpreter here without a py-spy beside it, for the probe")


def _trusted_pyspy() -> str:
    for candidate in (
        Path(sysconfig.get_path("scripts")) / "py-spy",
        Path(sys.executable).parent / "py-spy",
    ):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("py-spy")
    if found is None:
        pytest.skip("py-spy is not installed")
    return found


def _plant(folder: Path) -> tuple[Path, Path]:
    """A venv owned by nobody with a `.pth` and a `py-spy` that leave uid markers."""
    folder.chmod(0o755)
    markers = folder / "markers"
    markers.mkdir()
    markers.chmod(0o1777)
    venv = folder / "venv"
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "zz_marker.pth").write_text(
        f"import os; open(os.path.join({str(markers)!r}, 'pth-%d' % os.getuid()), 'a').close()\n",
        encoding="utf-8",
    )
    # One installed distribution, for the package listing to find.
    dist = site / "planted_marker-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: planted-marker\nVersion: 1.0\n", encoding="utf-8"
    )
    # The product's environment script, which collect runs when the product is installed.
    product = site / "sglang-0.0.1.dist-info"
    product.mkdir()
    (product / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: sglang\nVersion: 0.0.1\n", encoding="utf-8"
    )
    (site / "sglang").mkdir()
    (site / "sglang" / "__init__.py").write_text("", encoding="utf-8")
    (site / "sglang" / "check_env.py").write_text(
        f"import os\nopen(os.path.join({str(markers)!r}, 'checkenv-%d' % os.getuid()), 'a')"
        ".close()\nprint('Python: planted')\n",
        encoding="utf-8",
    )
    fake = venv / "bin" / "py-spy"
    fake.write_text(f"#!/bin/sh\ntouch {markers}/pyspy-$(id -u)\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    for path in [venv, *venv.rglob("*")]:
        os.lchown(path, NOBODY, NOBODY)
    return venv, markers


@pytest.fixture(scope="module")
def planted() -> Iterator[Planted]:
    problem = require_lab()
    if problem is not None:
        pytest.skip(problem)
    if not BASE_PYTHON.is_file() or shutil.which("setpriv") is None:
        pytest.skip("needs /usr/bin/python3 (a Python nobody may run) and setpriv")
    with ssh_lab(["node-a"]) as lab, tempfile.TemporaryDirectory(prefix="privilege-") as tmp:
        venv, markers = _plant(Path(tmp))
        log = Path(tmp) / "target.log"
        lab.hosts["node-a"].spawn(
            [
                "setpriv",
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
                "--",
                str(venv / "bin" / "python"),
                "-c",
                f"import time  # {MARK}\nwhile True: time.sleep(0.2)",
            ],
            cwd=Path(tmp),
            env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "VIRTUAL_ENV": str(venv)},
            log=log,
        )
        deadline = time.monotonic() + 30
        while not (markers / f"pth-{NOBODY}").exists():
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.1)
        pid = _pid_on_host(lab)
        yield Planted(lab=lab, venv=venv, markers=markers, pid=pid)


def _pid_on_host(lab: Lab) -> int:
    """The target's PID inside node-a's namespace (what the bundle names it by)."""
    init = lab.hosts["node-a"].init_pid
    done = subprocess.run(
        ["nsenter", "--target", str(init), "--pid", "--mount", "pgrep", "-f", MARK],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.split()[0])


def _collect(out: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    return report(
        "collect", "-o", str(out), "--match", MARK, "--snapshots", "1", *args, path=path,
        timeout=240,
    )  # fmt: skip


def _markers(planted: Planted) -> set[str]:
    return {p.name for p in planted.markers.iterdir()}


def _clear(planted: Planted) -> None:
    for path in planted.markers.iterdir():
        path.unlink()


def _host(out: Path) -> dict[str, object]:
    manifest = tomllib.loads((out / "bundle.toml").read_text(encoding="utf-8"))
    (note,) = manifest["collect"]["remote"]
    return dict(note)


@pytest.mark.parametrize("engine", ["ssh", "exec"])
def test_the_targets_venv_never_runs_as_root(planted: Planted, tmp_path: Path, engine: str) -> None:
    lab = planted.lab
    if engine == "ssh":
        reach = ["--ssh", "node-a", *lab.ssh_args()]
    else:
        template = "nsenter --target {host} --pid --mount --uts --"
        reach = ["--exec", template, "--host", str(lab.hosts["node-a"].init_pid)]
        reach += ["--remote-python", _probe_python()]
    _clear(planted)
    out = tmp_path / "found"
    # Through nsenter the probe sees this PATH alone, without py-spy: the fake is the only
    # copy. Over ssh the login shell's PATH applies (root's may hold a real py-spy).
    done = _collect(out, *reach, path="/usr/bin:/bin" if engine == "exec" else None)
    print(f"{engine}, no --remote-py-spy: markers {sorted(_markers(planted))}")
    assert done.returncode in (0, 1), done.stderr  # 1: incomplete, no host gave stacks
    # The package listing ran (its .pth marker), as nobody; the fake py-spy never ran.
    assert _markers(planted) == {f"pth-{NOBODY}", f"checkenv-{NOBODY}"}
    note = _host(out)
    fake = planted.venv / "bin" / "py-spy"
    refusal = f"{fake} ({fake} belongs to uid {NOBODY})"
    manifest = (out / "bundle.toml").read_text(encoding="utf-8")
    assert refusal in manifest
    if engine == "exec":
        assert note["status"] == "incomplete"
        assert refusal in str(note["reason"])
        assert f"--remote-py-spy {fake}" in str(note["reason"])
    assert f"run as uid {NOBODY}" in manifest, manifest
    listing = next(out.glob("hosts/*/env/pid*.packages.txt"))
    assert listing.read_text(encoding="utf-8") == "planted-marker==1.0\nsglang==0.0.1\n"
    assert next(out.glob("hosts/*/env/pid*.check_env.txt")).read_text() == "Python: planted\n"

    _clear(planted)
    out = tmp_path / "named"
    done = _collect(out, *reach, "--remote-py-spy", _trusted_pyspy())
    print(f"{engine}, --remote-py-spy: markers {sorted(_markers(planted))}")
    assert done.returncode == 0, done.stderr
    assert _markers(planted) == {f"pth-{NOBODY}", f"checkenv-{NOBODY}"}
    note = _host(out)
    assert note["status"] == "complete" and note["dumps"] == 1, note
    assert not any(name.endswith("-0") for name in _markers(planted))
