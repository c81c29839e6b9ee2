"""Redaction recall on the seeded corpus, per surface, and false positives on every clean fixture.

Corpus: `fixtures/redaction/` (written by `fixtures/redaction/make_corpus.py`): 169 seeds, 158
secret shapes and 11 identifiers, in two bundles. `bundle/` seeds secrets where a name or a
shape gives them away (environ, two command lines, logs, `--locals`, metric labels,
`collect_env.py` output, the manifest's free text); `hostile/` (round 2, issue 21) seeds them
under harmless and allow-listed names, in credential file formats (netrc, pgpass, docker
`auths`, PEM, kubeconfig, ...), in newer provider shapes, in disguise (zero-width, bidi and
soft-hyphen characters, Cyrillic and Greek look-alikes, fullwidth forms, percent and JSON
escapes) and in the title and manifest fields.

* *file recall*: each evidence file redacted on its own; a seed counts as removed when
  neither the value, its plain form (disguise undone) nor any 12-character window of them is
  left (a partial token is a leak);
* *draft recall*: `report upstream draft` of each bundle with the generic, SGLang-style and
  vLLM-style forms; `exposed` counts the seeds that reach the draft's input strings at all;
* *surfaces* (`--surfaces`, run through the CLI in subprocesses, so the same script measures
  any checkout: `PYTHONPATH=<old checkout> python benchmarks/eval_redaction.py --surfaces`
  gives the "before" figures): the secrets (not identifiers, which local output may show)
  that reach the terminal (`report analyze`), `analyze --json`, the local report (`report
  draft`), `report status`, `report preview`, `report diff` against a clean bundle (terminal
  and `--json`) and the upstream draft; recall per surface is 1 - shown / seeded, and the
  masking marks each shows (`[redacted]`, `<label-N>`, `<redacted>`); and whether
  `report lint` flags secrets typed into a report, also Markdown-escaped (`ghp\\_...`);
* *collect* (`--collect`, Linux with py-spy): `report collect` of a live process whose
  command line and environment hold round 2's secrets, with a torch debug server on
  127.0.0.1 answering them and a Flight Recorder dump holding them: the secrets left in
  the bundle files it writes and in what it prints;
* *false positives*: clean evidence (`fixtures/redaction/clean/` plus the real captures of
  `fixtures/bundles/*` that hold no identifiers) redacted line by line for upstream (changed
  lines / lines), and every text file of every `fixtures/bundles/*` masked as the local
  outputs mask it (`reporter.secrets.mask_text`: lines with a mask / lines).

    python benchmarks/eval_redaction.py [--show 10] [--surfaces] [--collect]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "redaction"
BUNDLES = ("bundle", "hostile")
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
    fixture_lines: int = 0
    fixture_masked: list[str] = field(default_factory=list)
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


# Cyrillic and Greek letters that look like Latin ones (the corpus's disguises).
_LOOKALIKES = str.maketrans("\u0430\u0435\u043e\u0440\u0441\u03bf", "aeopco")


def plain(value: str) -> str:
    """A seed with its disguise undone: NFKC, invisible characters dropped, look-alike
    letters folded, percent and JSON escapes decoded (what a reader copies out)."""
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), value)
    text = re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return text.translate(_LOOKALIKES)


def leaked(value: str, text: str) -> bool:
    """True when `value`, its plain form, its one-line `\\n` form, or any 12-character
    window of them is in `text`."""
    forms: set[str] = set()
    for form in {secret_core(value), secret_core(plain(value))}:
        forms |= {form, form.replace("\n", "\\n")}
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


def fixture_texts() -> list[tuple[str, str]]:
    """(name, text) of every text file of every `fixtures/bundles/*` bundle (real captures:
    no secret in them) and of `fixtures/redaction/clean/`."""
    out = [
        (f"clean/{p.name}", p.read_text(encoding="utf-8"))
        for p in sorted((CORPUS / "clean").iterdir())
    ]
    for path in sorted((ROOT / "fixtures" / "bundles").rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if data[:1] == b"\x80" or path.suffix in (".pkl", ".pickle", ".svg", ".png"):
            continue  # a pickled Flight Recorder dump, or a picture
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out.append((str(path.relative_to(ROOT)), text.replace("\x00", "\n")))
    return out


def evaluate(*, drafts: bool = True, library: bool = True) -> Figures:
    """Run the whole evaluation (offline; a few seconds). `library=False` switches
    detect-secrets off, to show what it adds to our own patterns."""
    import importlib

    from reporter.app import filing
    from reporter.app.filing import DraftSource
    from reporter.app.issues import GitHubAccess
    from reporter.app.report import Options, load_and_analyze
    from reporter.upstream.redact import Piece, redact

    try:
        secrets: Any = importlib.import_module("reporter.secrets.shapes")
    except ImportError:  # an older checkout, measured for the "before" figures
        secrets = importlib.import_module("reporter.upstream.secrets")

    if not library:
        saved = secrets.library_hits
        secrets.library_hits = lambda text: iter(())
        # `scan` keeps its answers per text: what it found with the library must not count.
        cached = getattr(secrets, "_SCANNED", {})
        cached.clear()
        try:
            return evaluate(drafts=drafts)
        finally:
            secrets.library_hits = saved
            cached.clear()

    started = time.perf_counter()
    figures = Figures()
    corpus = seeds()
    figures.seeds = len(corpus)
    figures.kinds_placed = sum(1 for s in corpus if s["files"])
    for folder in BUNDLES:
        bundle_dir = CORPUS / folder
        for path in sorted(p for p in bundle_dir.rglob("*") if p.is_file()):
            text = path.read_text(encoding="utf-8")
            redacted = redact([Piece(where=path.name, text=text)]).texts[0]
            for seed in corpus:
                value = str(seed["value"])
                if value in text or value.replace("\n", "\\n") in text:
                    figures.file_occurrences += 1
                    if leaked(value, redacted):
                        figures.file_leaks.append(
                            f"{seed['kind']} in {folder}/{path.relative_to(bundle_dir)}"
                        )
                    else:
                        figures.file_removed += 1
        if not drafts:
            continue
        bundle, analysis = load_and_analyze([bundle_dir], Options())
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
            label = f"{folder}/{name}"
            figures.drafts[label] = made.redaction.total()
            figures.draft_sizes[label] = len(made.body)
            sent = f"{made.title}\n{made.body}"
            for seed in corpus:
                value = str(seed["value"])
                if seed.get("bundle", "bundle") != folder:
                    continue
                if any(leaked(value, p) for p in _draft_inputs(made)):
                    figures.exposed.add(str(seed["kind"]))
                if leaked(value, sent):
                    figures.draft_leaks.append(f"{seed['kind']} in the {label} draft")
    for name, text in clean_texts():
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            figures.clean_lines += 1
            figures.curated_lines += name.startswith("clean/")
            if redact([Piece(where=name, text=line)]).texts[0] != line:
                figures.clean_changed.append(f"{name}:{number}: {line.strip()[:110]}")
    mask_text = importlib.import_module("reporter.secrets").mask_text
    for name, text in fixture_texts():
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            figures.fixture_lines += 1
            if mask_text(line) != line:
                figures.fixture_masked.append(f"{name}:{number}: {line.strip()[:110]}")
    figures.seconds = time.perf_counter() - started
    return figures


@dataclass
class Surfaces:
    """Secrets (not identifiers) that reached each local or upstream output."""

    secrets: int = 0
    leaks: dict[str, list[str]] = field(default_factory=dict)
    lint_flags_planted: bool = False
    lint_planted: int = 0
    lint_flagged: int = 0
    exit_codes: dict[str, int] = field(default_factory=dict)
    marks: dict[str, set[str]] = field(default_factory=dict)
    """The masking marks each output shows (issue 35: one per surface)."""


# The marks a masked output may show: the local one, the upstream placeholders, and the
# launch line's old `<redacted>`.
MARKS = {
    "[redacted]": re.compile(r"\[redacted\]"),
    "<label-N>": re.compile(r"(?:<|&lt;)[a-z][a-z0-9-]*-\d+(?:>|&gt;)"),  # HTML in preview
    "<redacted>": re.compile(r"<redacted>|&lt;redacted&gt;"),
}


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


def _surface_runs(bundle_dir: Path, work: Path) -> dict[str, str]:
    """What each local and upstream output shows for one bundle (stdout + stderr + files)."""
    clean = ROOT / "fixtures" / "bundles" / "full_incident"
    reports = work / "reports"
    reports.mkdir()
    report = reports / "local.md"
    upstream = work / "upstream.md"
    preview = work / "local.html"
    runs = {
        "terminal (analyze)": _cli("analyze", str(bundle_dir), cwd=work),
        "--json (analyze)": _cli("analyze", "--json", str(bundle_dir), cwd=work),
        "local report (draft)": _cli("draft", str(bundle_dir), "--out", str(report), cwd=work),
        "diff (terminal)": _cli("diff", str(clean), str(bundle_dir), "--limit", "500", cwd=work),
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
    # After the draft: what `status` and `preview` show of the report it wrote.
    runs["status"] = _cli("status", str(reports), cwd=work)
    runs["preview"] = _cli("preview", str(report), "--out", str(preview), cwd=work)
    texts = {name: run.stdout + run.stderr for name, run in runs.items()}
    texts["local report (draft)"] += report.read_text("utf-8") if report.exists() else ""
    texts["upstream draft"] += upstream.read_text("utf-8") if upstream.exists() else ""
    texts["preview"] += preview.read_text("utf-8") if preview.exists() else ""
    for name, run in runs.items():
        texts[f"exit:{name}"] = str(run.returncode)
    return texts


def _lint_planted(work: Path, out: Surfaces) -> None:
    """Secrets typed into reports by hand: `report lint` (and so the filing gate, which runs
    the same check) must flag each, also when Markdown escaping hides them (`ghp\\_...`)."""
    typed = [
        "VLLM_PASS=" + "Zq7-ownpw81x",
        "-p " + "s3cr3t-Pw9",
        "?key=" + "AbCd1234EfGh5678",
        "ghp\\_" + "Zq7ownPw81xAbCd1234EfGh5678IjKl9012Mn",
        "hvs." + "CAESIJ4eZq7ownPw81xAbCd1234EfGh5678IjKl9012MnOpQr",
        "machine api.acme.example login bot password " + "Nr-Zq7ownPw81xAb",
        "db.acme.internal:5432:runs:svc:" + "Pg-Zq7ownPw81xAb",
        "ghp" + "\u200b" + "_Zq7ownPw81xAbCd1234EfGh5678IjKl9012Mn",
    ]
    out.lint_planted = len(typed)
    for number, line in enumerate(typed):
        planted = work / f"planted{number}.md"
        planted.write_text(
            "---\nkind: incident-report\nstatus: draft\n---\n# Planted\n\nran with " + line + "\n",
            encoding="utf-8",
        )
        lint = _cli("lint", str(planted), cwd=work)
        out.lint_flagged += "possible " in lint.stdout + lint.stderr
    out.lint_flags_planted = out.lint_flagged == out.lint_planted


def surfaces() -> Surfaces:
    """Run the CLI on the seeded bundles and look for every secret seed in what it shows."""
    out = Surfaces()
    secret_seeds = [s for s in seeds() if s["kind"] not in IDENTIFIER_KINDS]
    out.secrets = len(secret_seeds)
    with tempfile.TemporaryDirectory() as tmp:
        for folder in BUNDLES:
            work = Path(tmp) / folder
            work.mkdir()
            texts = _surface_runs(CORPUS / folder, work)
            for name, text in texts.items():
                if name.startswith("exit:"):
                    code = int(text)
                    surface = name.removeprefix("exit:")
                    out.exit_codes[surface] = max(out.exit_codes.get(surface, 0), code)
                    continue
                out.marks.setdefault(name, set()).update(
                    mark for mark, pattern in MARKS.items() if pattern.search(text)
                )
                out.leaks.setdefault(name, []).extend(
                    str(s["kind"])
                    for s in secret_seeds
                    if s.get("bundle", "bundle") == folder and leaked(str(s["value"]), text)
                )
        _lint_planted(Path(tmp), out)
    return out


def _draft_inputs(made: object) -> list[str]:
    """The strings a draft was built from, before redaction (the values it learnt)."""
    from reporter.upstream.draft import UpstreamDraft

    assert isinstance(made, UpstreamDraft)
    return [value for value, _ in made.redaction.mapping]


# --- report collect of a live process holding round 2's secrets ------------------------


@dataclass
class CollectFigures:
    """Round 2 secrets planted in a live target, its debug server and its FR dump, and
    those left in what `report collect` wrote or printed."""

    planted: int = 0
    leaks: dict[str, list[str]] = field(default_factory=dict)
    exit_code: int = 0
    skipped: str = ""


_TARGET = """
import sys, time
title = sys.argv[1] if len(sys.argv) > 1 else ""
while True:
    time.sleep(0.2)
"""


def collect_surface() -> CollectFigures:
    """`report collect` of a target whose argv and environment hold round 2's secrets (also
    disguised), beside a torch debug server and a Flight Recorder dump that hold them too."""
    import http.server
    import threading

    out = CollectFigures()
    if shutil.which("py-spy") is None and not (Path(sys.executable).parent / "py-spy").exists():
        out.skipped = "py-spy not found"
        return out
    # Round 2's secrets in their own context lines: the environment as the bundle has it,
    # the command line's arguments and the log lines (a bare password out of its line is
    # not a secret anyone could tell).
    hostile = CORPUS / "hostile"
    environ = dict(
        line.split("=", 1)
        for line in (hostile / "env" / "environ").read_text("utf-8").splitlines()
        if "=" in line
    )
    log = (hostile / "logs" / "server.log").read_text("utf-8").splitlines()
    # The log as one multi-line argument (`--notes "$(cat server.log)"`).
    argv = [*(hostile / "env" / "cmdline").read_text("utf-8").split()[3:], "\n".join(log)]
    text = "\n".join([*log, *(f"{k}={v}" for k, v in environ.items())])
    planted = "\n".join([*argv, text])
    round2 = [s for s in seeds() if s.get("bundle") == "hostile"]
    values = [str(s["value"]) for s in round2 if str(s["value"]) in planted]
    out.planted = len(values)
    page = "".join(
        f"<h2>Rank {r}: http://127.0.0.1:1/handler/stacks?</h2>\n<pre>{text}</pre>\n"
        for r in range(2)
    )

    class Debug(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Debug)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prefix = work / "fr" / "trace_rank_"
        prefix.parent.mkdir()
        (prefix.parent / "trace_rank_0").write_text(
            json.dumps({"version": "2.10", "pg_config": {}, "entries": [], "note": "\n".join(log)}),
            encoding="utf-8",
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))},
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": str(prefix),
            **environ,
        }
        target = subprocess.Popen(
            [sys.executable, "-c", _TARGET, *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.5)
            bundle = work / "b"
            run = _cli(
                "collect",
                "--out",
                str(bundle),
                "--pid",
                str(target.pid),
                "--snapshots",
                "1",
                "--torch-debug",
                f"http://127.0.0.1:{server.server_address[1]}",
                cwd=work,
            )
        finally:
            target.kill()
            target.wait()
            server.shutdown()
        out.exit_code = run.returncode
        shown = {"terminal": run.stdout + run.stderr}
        for path in sorted(bundle.rglob("*")):
            if path.is_file():
                shown[str(path.relative_to(bundle))] = path.read_bytes().decode(
                    "utf-8", errors="replace"
                )
        for name, text in shown.items():
            found = [v[:8] + "…" for v in values if leaked(v, text)]
            if found:
                out.leaks[name] = found
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the figures; exit 1 when a seed leaks."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", type=int, default=10, help="false positives to list")
    parser.add_argument(
        "--surfaces", action="store_true", help="also run the CLI and check every output"
    )
    parser.add_argument(
        "--collect", action="store_true", help="also run report collect on a planted target"
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
    for leak in f.file_leaks[: args.show * 3]:
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
    for leak in f.draft_leaks[: args.show * 3]:
        print(f"  LEAK {leak}")
    print(
        f"false positives (upstream redaction): {f.false_positive_rate:.2%} of clean lines changed "
        f"({len(f.clean_changed)} of {f.clean_lines})"
    )
    curated = [line for line in f.clean_changed if line.startswith("clean/")]
    print(
        f"  of which the hand-written look-alikes (fixtures/redaction/clean): "
        f"{len(curated)} of {f.curated_lines} lines ({len(curated) / max(f.curated_lines, 1):.1%})"
    )
    for line in f.clean_changed[: args.show]:
        print(f"  {line}")
    print(
        f"false positives (local masking, every fixtures/bundles file): "
        f"{len(f.fixture_masked)} of {f.fixture_lines} lines masked "
        f"({len(f.fixture_masked) / max(f.fixture_lines, 1):.3%})"
    )
    for line in f.fixture_masked[: args.show]:
        print(f"  {line}")
    failed = bool(f.file_leaks or f.draft_leaks)
    if args.surfaces:
        surf = surfaces()
        total = 0
        print(f"surfaces: {surf.secrets} secret seeds (identifiers excluded) looked for in:")
        for name, kinds in surf.leaks.items():
            total += len(kinds)
            recall = 1 - len(kinds) / surf.secrets
            print(
                f"  {name:<22} exit {surf.exit_codes.get(name, '-')}: recall {recall:.1%}, "
                f"{len(kinds)} secrets shown"
                + (f" ({', '.join(kinds[:8])}{', ...' if len(kinds) > 8 else ''})" if kinds else "")
                + f"; marks: {' '.join(sorted(surf.marks.get(name, ()))) or '-'}"
            )
        print(
            f"  lint flags hand-typed secrets in a report: {surf.lint_flagged} of {surf.lint_planted}"
        )
        print(f"surface leaks: {total}")
        failed = failed or bool(total) or not surf.lint_flags_planted
    if args.collect:
        got = collect_surface()
        if got.skipped:
            print(f"collect: skipped ({got.skipped})")
        else:
            left = sum(len(v) for v in got.leaks.values())
            print(
                f"collect: {got.planted} secrets planted in the target's argv and environment, "
                f"its debug server and its Flight Recorder dump; exit {got.exit_code}; "
                f"{left} left in what collect wrote or printed"
            )
            for name, found in got.leaks.items():
                print(
                    f"  {name}: {len(found)} ({', '.join(found[:4])}{', ...' if len(found) > 4 else ''})"
                )
            failed = failed or bool(left)
    bare = evaluate(drafts=False, library=False)
    print(
        f"without detect-secrets (our patterns only): file recall {bare.file_recall:.1%}"
        + (f"; missed {', '.join(sorted(set(bare.file_leaks))[:12])}" if bare.file_leaks else "")
    )
    print(f"time: {f.seconds:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
