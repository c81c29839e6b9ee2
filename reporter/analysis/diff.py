"""`report diff GOOD BAD`: what changed between the last good run and the bad one, likeliest culprit first.

Input: two `Bundle`s (a bundle folder, or loose env / cmdline / freeze files) and,
optionally, the sha256 of every file of a source tree on each side. Output: an
`EnvDiff` whose `changes` are ranked by the data-driven rules of
`reporter/data/diff.toml`: each change starts from the score of its kind and status,
every matching rule adds its weight, and `why` lists each term. Sorting is by
score, then by the rules' `tie` (equal scores: a knob the product knows outranks a
server option, which outranks a port or a path), then kind, key and values, so the
order is byte-stable.

Compared, per side: env vars (every environ / KEY=VALUE / collect_env file),
server options (every command line; the program under `program`), package versions,
GPUs (`gpus` = count and models) and facts (check_env, collect_env, nvidia-smi),
code excerpts (hash of their text) and source files (sha256sum files in the bundle,
plus the `--source-root` trees). A kind is compared only when both sides have
evidence of it; otherwise a note says so. Secret-looking values never leave this
module: they become `[redacted]` (a change is still reported).

Shape of one change, by example::

    Change(kind=ChangeKind.ENV, key="SGLANG_SM120_MMA_TARGET_CTAS", status=ChangeStatus.CHANGED,
           before="256", after="512", score=100,
           why=("env var changed: 50 + 10", "a tuning knob of the serving engine (engine-knob): +40"))
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

from reporter.analysis.env_rules import REDACTED, Secrets, default_rules
from reporter.core import rules as data_files
from reporter.core.errors import ReporterError
from reporter.evidence.env import flag_map
from reporter.model import Bundle, Environment
from reporter.secrets import mask_text


class ChangeKind(StrEnum):
    """What a change is about; the order here breaks score ties."""

    FLAG = "flag"
    ENV = "env"
    PACKAGE = "package"
    SOURCE = "source"
    EXCERPT = "excerpt"
    GPU = "gpu"
    FACT = "fact"


class ChangeStatus(StrEnum):
    """Changed value, or present on one side only."""

    CHANGED = "changed"
    ADDED = "added"
    REMOVED = "removed"


_KIND_ORDER = {kind: index for index, kind in enumerate(ChangeKind)}
_KIND_WORD = {
    ChangeKind.FLAG: "server option",
    ChangeKind.ENV: "env var",
    ChangeKind.PACKAGE: "package",
    ChangeKind.SOURCE: "source file",
    ChangeKind.EXCERPT: "code excerpt",
    ChangeKind.GPU: "GPU",
    ChangeKind.FACT: "fact",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One difference; `before` is None when added, `after` None when removed."""

    kind: ChangeKind
    key: str
    status: ChangeStatus
    before: str | None
    after: str | None
    score: int
    why: tuple[str, ...]
    tie: int = 0
    """The sum of the matching rules' `tie`: breaks equal scores (higher first)."""
    noise: bool = False
    """A rule of diff.toml with a negative weight matched: per-run noise (ports picked at
    random, process ids, invocation ids, temporary paths, timestamps). The local report
    keeps it; an upstream draft leaves it out."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvDiff:
    """Ranked changes, how many keys of each kind were equal, and what was not compared."""

    good: str
    bad: str
    changes: tuple[Change, ...]
    unchanged: tuple[tuple[ChangeKind, int], ...]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One `[[rule]]` or `[[value_rule]]` of diff.toml."""

    id: str
    kinds: frozenset[ChangeKind]
    keys: re.Pattern[str] | None
    keys_nocase: re.Pattern[str] | None
    pattern: re.Pattern[str] | None
    weight: int
    why: str
    tie: int = 0

    def matches(self, change_kind: ChangeKind, key: str, values: tuple[str, ...]) -> bool:
        """True when this rule applies to the key (and, for value rules, every value)."""
        if self.kinds and change_kind not in self.kinds:
            return False
        if self.keys is not None:
            pattern = self.keys if change_kind is ChangeKind.ENV else self.keys_nocase
            assert pattern is not None
            if not pattern.match(key):
                return False
        if self.pattern is not None:
            return bool(values) and all(self.pattern.match(v) for v in values)
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRules:
    """The compiled diff.toml."""

    kind_scores: Mapping[ChangeKind, int]
    status_scores: Mapping[ChangeStatus, int]
    rules: tuple[Rule, ...]


def parse_rules(text: str, *, source: str = "diff.toml") -> DiffRules:
    """Compile a diff.toml; a malformed entry raises `ReporterError` naming it.

    Types, required keys and unknown keys are checked by the declared shape
    (`reporter.core.rules.SHAPES`); what a shape cannot say is checked here.
    """
    data = data_files.parse(text, data_files.SHAPES["diff.toml"], source=source)
    kind_scores = {kind: _int(data.get("kind", {}), kind.value, source) for kind in ChangeKind}
    status_scores = {
        status: _int(data.get("status", {}), status.value, source) for status in ChangeStatus
    }
    rules: list[Rule] = []
    seen: set[str] = set()
    for section in ("rule", "value_rule"):
        for index, entry in enumerate(data.get(section, [])):
            where = f"{source}: [[{section}]] #{index + 1}"
            rule_id = entry["id"]
            if rule_id in seen:
                raise ReporterError(f"{where}: duplicate id {rule_id!r}")
            seen.add(rule_id)
            try:
                kinds = frozenset(ChangeKind(k) for k in entry.get("kinds", []))
            except ValueError as err:
                raise ReporterError(f"{where} ({rule_id}): {err}") from err
            keys = entry.get("keys")
            if section == "rule" and not keys:
                raise ReporterError(f"{where} ({rule_id}): needs `keys`")
            pattern_text = entry.get("pattern")
            try:
                pattern = re.compile(pattern_text) if pattern_text is not None else None
            except re.error as err:
                raise ReporterError(f"{where} ({rule_id}): bad pattern: {err}") from err
            glob = "|".join(fnmatch.translate(k) for k in keys) if keys else None
            rules.append(
                Rule(
                    id=rule_id,
                    kinds=kinds,
                    keys=re.compile(glob) if glob else None,
                    keys_nocase=re.compile(glob, re.IGNORECASE) if glob else None,
                    pattern=pattern,
                    weight=entry["weight"],
                    why=entry["why"],
                    tie=entry.get("tie", 0),
                )
            )
    return DiffRules(kind_scores=kind_scores, status_scores=status_scores, rules=tuple(rules))


def _int(table: Mapping[str, object], key: str, source: str) -> int:
    value = table.get(key)
    if not isinstance(value, int):
        raise ReporterError(f"{source}: score for {key!r} must be an integer")
    return value


@cache
def default_rules_diff() -> DiffRules:
    """The rules shipped in `reporter/data/diff.toml`."""
    return parse_rules(data_files.read_text("diff.toml"), source="reporter/data/diff.toml")


# --------------------------------------------------------------------------- sides


Side = dict[ChangeKind, dict[str, str]]


def comparable(bundle: Bundle, tree: Mapping[str, str] | None = None) -> Side:
    """The values of one side, by kind and key; kinds without evidence are absent."""
    env = bundle.environment
    side: Side = {}
    if env.variables:
        side[ChangeKind.ENV] = _joined((v.name, v.value) for v in env.variables)
    if env.cmdlines:
        side[ChangeKind.FLAG] = flag_map(env.cmdlines)
    if env.packages:
        side[ChangeKind.PACKAGE] = _joined(
            (p.name, _package_value(p.version, p.origin)) for p in env.packages
        )
    gpus = _gpu_summary(env)
    if gpus:
        side[ChangeKind.GPU] = {"gpus": gpus}
    if env.facts:
        side[ChangeKind.FACT] = _joined((f.key, f.value) for f in env.facts if "\n" not in f.value)
    if bundle.excerpts:
        side[ChangeKind.EXCERPT] = _joined(
            (f"{e.path}:{e.start}-{e.end}", _short_hash("\n".join(e.lines)))
            for e in bundle.excerpts
        )
    sources = {h.path: h.sha256 for h in env.file_hashes}
    sources.update(tree or {})
    if sources:
        side[ChangeKind.SOURCE] = {path: digest[:12] for path, digest in sources.items()}
    return side


def _joined(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Key -> value; a key seen with several values (several processes) keeps them all."""
    out: dict[str, list[str]] = {}
    for key, value in pairs:
        values = out.setdefault(key, [])
        if value not in values:
            values.append(value)
    return {key: " | ".join(values) for key, values in out.items()}


def _package_value(version: str, origin: str) -> str:
    if origin and version:
        return f"{version} ({origin})"
    return version or origin


def _gpu_summary(env: Environment) -> str:
    models: dict[int, str] = {}
    for gpu in env.gpus:
        models.setdefault(gpu.index, gpu.name)
    if not models:
        return ""
    counts: dict[str, int] = {}
    for name in models.values():
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n} x {name}" for name, n in sorted(counts.items()))


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------- diff


def diff_bundles(
    good: Bundle,
    bad: Bundle,
    *,
    good_tree: Mapping[str, str] | None = None,
    bad_tree: Mapping[str, str] | None = None,
    rules: DiffRules | None = None,
    secrets: Secrets | None = None,
    good_name: str = "",
    bad_name: str = "",
) -> EnvDiff:
    """Every difference between `good` and `bad`, likeliest culprit first."""
    return diff_sides(
        comparable(good, good_tree),
        comparable(bad, bad_tree),
        rules=rules,
        secrets=secrets,
        good_name=good_name or good.root or ", ".join(f.path for f in good.files),
        bad_name=bad_name or bad.root or ", ".join(f.path for f in bad.files),
    )


def diff_sides(
    good: Side,
    bad: Side,
    *,
    rules: DiffRules | None = None,
    secrets: Secrets | None = None,
    good_name: str = "good",
    bad_name: str = "bad",
) -> EnvDiff:
    """Compare two `comparable` sides and rank the changes."""
    rules = rules or default_rules_diff()
    secrets = secrets or default_rules().secrets
    changes: list[Change] = []
    unchanged: list[tuple[ChangeKind, int]] = []
    notes: list[str] = []
    for kind in ChangeKind:
        before_map, after_map = good.get(kind), bad.get(kind)
        if before_map is None and after_map is None:
            continue
        if before_map is None or after_map is None:
            only = bad_name if before_map is None else good_name
            notes.append(f"{_KIND_WORD[kind]}s not compared: only {only} has any")
            continue
        equal = 0
        for key in sorted(before_map.keys() | after_map.keys()):
            before, after = before_map.get(key), after_map.get(key)
            if before == after:
                equal += 1
                continue
            changes.append(_change(kind, key, before, after, rules, secrets))
        unchanged.append((kind, equal))
    changes.sort(
        key=lambda c: (
            -c.score,
            -c.tie,
            _KIND_ORDER[c.kind],
            c.key,
            c.before or "",
            c.after or "",
        )
    )
    return EnvDiff(
        good=good_name,
        bad=bad_name,
        changes=tuple(changes),
        unchanged=tuple(unchanged),
        notes=tuple(notes),
    )


def _change(
    kind: ChangeKind,
    key: str,
    before: str | None,
    after: str | None,
    rules: DiffRules,
    secrets: Secrets,
) -> Change:
    status = (
        ChangeStatus.ADDED
        if before is None
        else ChangeStatus.REMOVED
        if after is None
        else ChangeStatus.CHANGED
    )
    base = rules.kind_scores[kind]
    bonus = rules.status_scores[status]
    score = base + bonus
    why = [f"{_KIND_WORD[kind]} {status.value}: {base} + {bonus}"]
    values = tuple(v for v in (before, after) if v is not None)
    tie = 0
    noise = False
    for rule in rules.rules:
        if rule.matches(kind, key, values):
            score += rule.weight
            tie += rule.tie
            noise = noise or rule.weight < 0
            if rule.weight == 0:
                order = "wins" if rule.tie > 0 else "loses"
                why.append(f"{rule.why} ({rule.id}): {order} ties")
                continue
            sign = "+" if rule.weight >= 0 else "-"
            why.append(f"{rule.why} ({rule.id}): {sign}{abs(rule.weight)}")
    named = kind in (ChangeKind.ENV, ChangeKind.FLAG, ChangeKind.FACT)
    # Masked inside, not whole (issue 20): the credential in a URL or a flag's value goes,
    # the rest of the value stays, so the change and the step built from it read.
    shown_before = secrets.shown(key, before) if named else _masked(before)
    shown_after = secrets.shown(key, after) if named else _masked(after)
    if (shown_before, shown_after) != (before, after):
        whole = REDACTED in (shown_before, shown_after)
        why.append(
            "values hidden: they look secret" if whole else "secrets masked inside the values"
        )
    return Change(
        kind=kind,
        key=mask_text(key),
        status=status,
        before=shown_before,
        after=shown_after,
        score=score,
        why=tuple(why),
        tie=tie,
        noise=noise,
    )


def _masked(value: str | None) -> str | None:
    """A shown value with any secret inside it masked (a package pin with a token URL)."""
    return None if value is None else mask_text(value)
