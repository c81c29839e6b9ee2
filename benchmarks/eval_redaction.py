"""Redaction recall on the seeded corpus, and the false-positive rate on clean evidence.

Corpus: `fixtures/redaction/` (written by `fixtures/redaction/make_corpus.py`): 100 kinds of
secrets (89) and identifiers (11) seeded into an evidence bundle's environ, two command
lines, logs (text and JSON lines), `--locals` values, metric labels, `collect_env.py`
output and the manifest's free text.

* *file recall*: each evidence file redacted on its own; a seed counts as removed when
  neither the value nor any 12-character window of it is left (a partial token is a leak);
* *draft recall*: `report upstream draft` of the bundle with the generic, SGLang-style and
  vLLM-style forms; `exposed` counts the seeds that reach the draft's input strings at all
  (the environment allowlist stops the others before redaction);
* *local surfaces* (`--surfaces`, run through the CLI in subprocesses, so the same
  script measures any checkout: `PYTHONPATH=<old checkout> python benchmarks/eval_redaction.py
  --surfaces` gives the "before" figures): the secrets (not identifiers, which local
  output may show) that reach the terminal (`report analyze`), `analyze --json`, the
  local report (`report draft`), `report diff` against a clean bundle, and the upstream
  draft; and whether `report lint` flags a secret left in a local report;
* *false positives*: clean evidence (`fixtures/redaction/clean/` plus the real py-spy
  captures of `fixtures/bundles/*` that hold no identifiers) redacted line by line; the
  rate is changed lines / lines, with the changed lines listed.

    python benchmarks/eval_redaction.py [--show 10] [--surfaces]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "redaction"
FORMS = ROOT / "fixtures" / "forms"
# Real captures with no secrets or identifiers in them (full_incident has a real environ).
CLEAN_BUNDLES = (
    "tp_desync",
    "dp_tp",
    "healthy_loop",
    "dead_rank",
    "rank_never_enters",
    "vllm_like",
)
WINDOW = 12
# Seed kinds that are identifiers (hosts, addresses, users): redacted upstream, shown locally.
IDENTIFIER_KINDS = frozenset(
    {
        "ipv4-private",
        "ipv4-public",
        "ipv6",
        "mac-address",
        "fqdn-internal",
        "fqdn-company",
        "k8s-service",
        "pod-hostname",
        "login-user",
        "email",
        "mac-home-user",
    }
)


@dataclass
class Figures:
    """What the evaluation measured."""

    seeds: int = 0
    kinds_placed: int = 0
    file_occurrences: int = 0
    file_removed: int = 0
    file_leaks: list[str] = field(default_factory=list)
    drafts: dict[str, int] = field(default_factory=dict)
    draft_sizes: dict[str, int] = field(default_factory=dict)
    exposed: set[str] = field(default_factory=set)
    draft_leaks: list[str] = field(default_factory=list)
    clean_lines: int = 0
    curated_lines: int = 0
    clean_changed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def file_recall(self) -> float:
        """Removed occurrences / seeded occurrences, over the evidence files."""
        return self.file_removed / self.file_occurrences if self.file_occurrences else 1.0

    @property
    def false_positive_rate(self) -> float:
        """Changed clean lines / clean lines."""
        return len(self.clean_changed) / self.clean_lines if self.clean_lines else 0.0


def seeds() -> list[dict[str, object]]:
    """The corpus's seeds.json."""
    data = json.loads((CORPUS / "seeds.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def secret_core(value: str) -> str:
    """The part of a seed that is the secret: a webhook or DSN URL without its scheme and
    host (`https://acme` is not a leak: the host is an identifier, shown locally)."""
    userinfo = re.match(r"https?://([^/@]+)@", value)
    if userinfo:
        return userinfo.group(1)
    match = re.match(r"https?://[^/]+/", value)
    return value[match.end() :] if match else value


def leaked(value: str, text: str) -> bool:
    """True when `value`, its one-line `\\n` form, or any 12-character window of it is in `text`."""
    value = secret_core(value)
    forms = {value, value.replace("\n", "\\n")}
    for form in forms:
        if form in text:
            return True
        if len(form) > WINDOW:
            for start in range(len(form) - WINDOW + 1):
                chunk = form[start : start + WINDOW]
                if "\n" not in chunk and "\\n" not in chunk and chunk in text:
                    return True
    return False


def clean_texts() -> list[tuple[str, str]]:
    """(name, text) of the clean evidence."""
    out = [
        (f"clean/{p.name}", p.read_text(encoding="utf-8"))
        for p in sorted((CORPUS / "clean").iterdir())
    ]
    for name in CLEAN_BUNDLES:
        for path in sorted((ROOT / "fixtures" / "bundles" / name).rglob("*")):
            if path.is_file() and path.suffix in (".txt", ".json"):
                out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    return out


def evaluate(*, drafts: bool = True, library: bool = True) -> Figures:
    """Run the whole evaluation (offline; a few seconds). `library=False` switches
    detect-secrets off, to show what it adds to our own patterns."""
    import importlib

    from reporter import app
    from reporter.app import filing
    from reporter.app.filing import DraftSource
    from reporter.app.issues import GitHubAccess
    from reporter.upstream.redact import Piece, redact

    try:
        secrets: Any = importlib.import_module("reporter.secrets.shapes")
    except ImportError:  # an older checkout, measured for the "before" figures
        secrets = importlib.import_module("reporter.upstream.secrets")

    if not library:
        saved = secrets.library_hits
        secrets.library_hits = lambda text: iter(())
        try:
            return evaluate(drafts=drafts)
        finally:
            secrets.library_hits = saved

    started = time.perf_counter()
    figures = Figures()
    corpus = seeds()
    figures.seeds = len(corpus)
    figures.kinds_placed = sum(1 for s in corpus if s["files"])
    bundle_dir = CORPUS / "bundle"
    for path in sorted(p for p in bundle_dir.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        redacted = redact([Piece(where=path.name, text=text)]).texts[0]
        for seed in corpus:
            value = str(seed["value"])
            if value in text or value.replace("\n", "\\n") in text:
                figures.file_occurrences += 1
                if leaked(value, redacted):
                    figures.file_leaks.append(f"{seed['kind']} in {path.relative_to(bundle_dir)}")
                else:
                    figures.file_removed += 1
    if drafts:
        bundle, analysis = app.load_and_analyze([bundle_dir], app.Options())
        for name, forms in (
            ("generic", None),
            ("sglang", FORMS / "sglang"),
            ("vllm", FORMS / "vllm"),
        ):
            run = filing.make_draft(
                DraftSource(
                    bundle=bundle,
                    analysis=analysis,
                    repo="sgl-project/sglang",
                    forms_dir=forms,
                    db=None,
                ),
                offline=True,
                access=GitHubAccess(env={}),
            )
            made = run.draft
            figures.drafts[name] = made.redaction.total()
            figures.draft_sizes[name] = len(made.body)
            sent = f"{made.title}\n{made.body}"
            for seed in corpus:
                value = str(seed["value"])
                if any(leaked(value, p) for p in _draft_inputs(made)):
                    figures.exposed.add(str(seed["kind"]))
                if leaked(value, sent):
                    figures.draft_leaks.append(f"{seed['kind']} in the {name} draft")
    for name, text in clean_texts():
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            figures.clean_lines += 1
            figures.curated_lines += name.startswith("clean/")
            if redact([Piece(where=name, text=line)]).texts[0] != line:
                figures.clean_changed.append(f"{name}:{number}: {line.strip()[:110]}")
    figures.seconds = time.perf_counter() - started
    return figures


@dataclass
class Surfaces:
    """Secrets (not identifiers) that reached each local or upstream output."""

    secrets: int = 0
    leaks: dict[str, list[str]] = field(default_factory=dict)
    lint_flags_planted: bool = False
    exit_codes: dict[str, int] = field(default_factory=dict)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reporter", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        timeout=600,
        check=False,
    )


def surfaces() -> Surfaces:
    """Run the CLI on the seeded bundle and look for every secret seed in what it shows."""
    out = Surfaces()
    secret_seeds = [s for s in seeds() if s["kind"] not in IDENTIFIER_KINDS]
    out.secrets = len(secret_seeds)
    bundle_dir = CORPUS / "bundle"
    clean = ROOT / "fixtures" / "bundles" / "full_incident"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        report = work / "local.md"
        upstream = work / "upstream.md"
        runs = {
            "terminal (analyze)": _cli("analyze", str(bundle_dir), cwd=work),
            "--json (analyze)": _cli("analyze", "--json", str(bundle_dir), cwd=work),
            "local report (draft)": _cli("draft", str(bundle_dir), "--out", str(report), cwd=work),
            "diff (terminal)": _cli(
                "diff", str(clean), str(bundle_dir), "--limit", "500", cwd=work
            ),
            "diff --json": _cli("diff", "--json", str(clean), str(bundle_dir), cwd=work),
            "upstream draft": _cli(
                "upstream",
                "draft",
                str(bundle_dir),
                "--repo",
                "sgl-project/sglang",
                "--offline",
                "--out",
                str(upstream),
                cwd=work,
            ),
        }
        texts: dict[str, str] = {}
        for name, run in runs.items():
            out.exit_codes[name] = run.returncode
            texts[name] = run.stdout + run.stderr
        texts["local report (draft)"] += report.read_text("utf-8") if report.exists() else ""
        texts["upstream draft"] += upstream.read_text("utf-8") if upstream.exists() else ""
        for name, text in texts.items():
            out.leaks[name] = [
                str(s["kind"]) for s in secret_seeds if leaked(str(s["value"]), text)
            ]
        # Secrets typed into the upstream draft by hand: `report lint` (and so the filing
        # gate, which runs the same check) must flag each of them.
        if upstream.exists():
            planted = work / "planted.upstream.md"
            typed = [
                "VLLM_PASS=" + "Zq7-ownpw81x",
                "-p " + "s3cr3t-Pw9",
                "?key=" + "AbCd1234EfGh5678",
            ]
            planted.write_text(
                upstream.read_text("utf-8")
                + "\n"
                + "\n".join(f"ran with {t}" for t in typed)
                + "\n",
                encoding="utf-8",
            )
            lint = _cli("lint", str(planted), cwd=work)
            said = lint.stdout + lint.stderr
            out.lint_flags_planted = said.count("possible ") >= len(typed)
    return out


def _draft_inputs(made: object) -> list[str]:
    """The strings a draft was built from, before redaction (the values it learnt)."""
    from reporter.upstream.draft import UpstreamDraft

    assert isinstance(made, UpstreamDraft)
    return [value for value, _ in made.redaction.mapping]


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when a seed leaks."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", type=int, default=10, help="false positives to list")
    parser.add_argument(
        "--surfaces", action="store_true", help="also run the CLI and check every output"
    )
    args = parser.parse_args(argv)
    # A private cache: the example issue index another checkout built must not be reused.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="eval-redaction-cache-")
    f = evaluate()
    secret_kinds = sum(1 for s in seeds() if s["kind"] not in IDENTIFIER_KINDS)
    print(
        f"corpus: {f.seeds} seeded kinds ({secret_kinds} secret shapes, "
        f"{f.seeds - secret_kinds} identifiers), {f.kinds_placed} placed in evidence files"
    )
    print(
        f"file recall: {f.file_recall:.1%} ({f.file_removed} of {f.file_occurrences} seeded occurrences removed)"
    )
    for leak in f.file_leaks:
        print(f"  LEAK {leak}")
    for name, total in f.drafts.items():
        print(
            f"draft ({name} form): {total} values replaced, body {f.draft_sizes[name]:,} characters"
        )
    print(
        f"draft recall: {'100.0%' if not f.draft_leaks else 'LEAKS'} "
        f"({len(f.exposed)} seeded kinds reached what the drafts show and were replaced; "
        f"{len(f.draft_leaks)} leaked)"
    )
    for leak in f.draft_leaks:
        print(f"  LEAK {leak}")
    print(
        f"false positives: {f.false_positive_rate:.2%} of clean lines changed "
        f"({len(f.clean_changed)} of {f.clean_lines})"
    )
    curated = [line for line in f.clean_changed if line.startswith("clean/")]
    print(
        f"  of which the hand-written look-alikes (fixtures/redaction/clean): "
        f"{len(curated)} of {f.curated_lines} lines ({len(curated) / max(f.curated_lines, 1):.1%})"
    )
    for line in f.clean_changed[: args.show]:
        print(f"  {line}")
    if args.surfaces:
        surf = surfaces()
        total = 0
        print(f"surfaces: {surf.secrets} secret seeds (identifiers excluded) looked for in:")
        for name, kinds in surf.leaks.items():
            total += len(kinds)
            print(
                f"  {name:<22} exit {surf.exit_codes.get(name, '-')}: {len(kinds)} secrets shown"
                + (f" ({', '.join(kinds[:8])}{', ...' if len(kinds) > 8 else ''})" if kinds else "")
            )
        print(f"  lint flags 3 hand-typed secrets in an upstream draft: {surf.lint_flags_planted}")
        print(f"surface leaks: {total}")
    bare = evaluate(drafts=False, library=False)
    print(
        f"without detect-secrets (our patterns only): file recall {bare.file_recall:.1%}"
        + (f"; missed {', '.join(sorted(set(bare.file_leaks)))}" if bare.file_leaks else "")
    )
    print(f"time: {f.seconds:.1f} s")
    return 1 if f.file_leaks or f.draft_leaks else 0


if __name__ == "__main__":
    sys.exit(main())
