"""Secret *shapes*: where a secret sits inside any text (the detectors behind `reporter.secrets`).

Input: any text. Output: `SecretHit`s (offsets, a stable `kind`, a human `name` and the
secret `value`: the part to hide, not its context). Two sources, merged:

* `secret_patterns()`: our regexes, the `[[shape]]` tables of `reporter/data/secrets.toml`,
  for provider token formats (GitHub, Hugging Face, OpenAI, Anthropic, AWS, Slack, Stripe,
  Google, GitLab, npm, PyPI, SendGrid, Vault, Atlassian, Azure AD, New Relic, Discord,
  age, Grafana, DigitalOcean, Doppler, Linear, Postman, Shopify, ...),
  bearer / basic / JWT credentials (also percent-encoded: `Bearer%20...`), private-key
  blocks (also inside one-line env values with literal `\\n`), passwords in URLs
  (`redis://:PW@host`), secret query parameters (`?key=`, `&sig=`, `access_token=`),
  webhook URLs (Slack, Discord, Teams, Feishu, Zapier, ...), connection strings
  (`AccountKey=`, `Password=`), authorization headers (`{"Authorization": "Token ..."}`),
  `("user", "password")` tuples under a secret name, options whose name says secret
  (`--admin-pass X`, `--sas=X`, `-p X`, `-a X`) and `name=value` / `name: value`
  assignments whose name says secret (`reporter.secrets.names`: `VLLM_PASS`, `NCCL_KEY`),
  and credential file formats (netrc `machine H login U password P`, pgpass
  `host:port:db:user:pw`, a Sentry DSN's or `.git-credentials`' token user);
* detect-secrets' provider plugins (Yelp's maintained detector set), called through
  `analyze_string` only: that path is pure regex work and never makes the network
  verification calls that `analyze_line` may make. Its high-entropy plugins get their
  entropy limit applied here. It catches formats we do not list ourselves (Twilio,
  Mailchimp, Square, Artifactory, IBM, Azure storage keys, Discord, Telegram, ...) and
  quoted high-entropy strings such as secret-looking `--locals` values.

Both run over the text as written and over its normalised form (`normalize`: disguises
such as a zero-width space, a Cyrillic letter, fullwidth forms, percent, JSON or Markdown
escapes undone); a hit in the normalised text is mapped back to the span as written.

A hit whose value is already a redaction placeholder (`<secret-1>`, `[redacted]`) is
not reported, so a redacted text scans clean. Example::

    >>> [(h.kind, h.value) for h in scan("curl -H 'Authorization: Bearer abcdefghij0123456789'")]
    [('bearer-token', 'abcdefghij0123456789')]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from reporter.core import rules
from reporter.secrets.encoded import decoded_runs, looks_like_credential
from reporter.secrets.gate import any_of, library_may_match
from reporter.secrets.names import is_secret_name
from reporter.secrets.normalize import normalize

# Values made only of placeholders and punctuation are redaction output, not secrets.
PLACEHOLDER_RE = re.compile(r"<[a-z][a-z0-9-]*-\d+>|\[redacted\]")
# Quoted high-entropy strings shorter than this are ids and short hashes (a 12-digit hang
# signature), not credentials: provider keys and tokens are 20 characters and more.
MIN_ENTROPY_LENGTH = 20
# Normalised texts up to this size are searched whole; larger ones around their changes.
_WHOLE_NORMALISED = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretPattern:
    """One secret shape: `group` is the part of the match that is the secret."""

    kind: str
    name: str
    pattern: re.Pattern[str]
    group: int = 0
    # Group whose text must be a secret name (`is_secret_name`) for the match to count.
    name_group: int = 0
    inside: bool = False
    """Found inside a value by its context (a URL, a header, an assignment): the rest of
    the value is kept and only this span masked."""
    check: str = ""
    """A further test a match must pass (`_CHECKS`)."""
    needs: tuple[str, ...] = ()
    """One of these is in every match (lower case when the pattern ignores case): a text
    holding none of them is not searched."""
    folded: bool = field(init=False, default=False)
    """The pattern ignores case (read once: `may_match` runs for every text and shape)."""
    needs_re: re.Pattern[str] | None = field(init=False, default=None)
    """Any of `needs` as one search (None without `needs`): one call instead of a loop."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "folded", bool(self.pattern.flags & re.IGNORECASE))
        if self.needs:
            joined = "|".join(re.escape(need) for need in self.needs)
            object.__setattr__(self, "needs_re", re.compile(joined))

    def may_match(self, text: str, lowered: Callable[[], str]) -> bool:
        """False when `text` holds none of `needs` (cheap `in` tests before a regex)."""
        if self.needs_re is None:
            return True
        hay = lowered() if self.folded else text
        return self.needs_re.search(hay) is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretHit:
    """A secret found in a text: `start`/`end` delimit `value` in that text."""

    kind: str
    name: str
    value: str
    start: int
    end: int


def _compiled(source: str, where: str) -> re.Pattern[str]:
    """A pattern of `reporter/data/secrets.toml`; `RulesError` naming `where` if it is bad."""
    try:
        return re.compile(source)
    except re.error as err:
        raise rules.RulesError(
            f"reporter/data/secrets.toml: {where}: bad pattern ({err})",
            tip="fix the regex (Python syntax)",
        ) from err


def _load_patterns() -> tuple[SecretPattern, ...]:
    """The `[[shape]]` tables of `reporter/data/secrets.toml`, compiled (in file order)."""
    patterns: list[SecretPattern] = []
    for table in rules.load("secrets.toml")["shape"]:
        if any(p.kind == table["id"] for p in patterns):
            raise rules.RulesError(
                f"reporter/data/secrets.toml: shape id {table['id']!r} is used twice",
                tip="give each [[shape]] its own id (it names the kind in masks and findings)",
            )
        compiled = _compiled("".join(table["pattern"]), f"shape {table['id']!r}")
        check = table.get("check", "")
        if check and check not in _CHECKS:
            raise rules.RulesError(
                f"reporter/data/secrets.toml: shape {table['id']!r}: unknown check {check!r}",
                tip="known checks: " + ", ".join(sorted(_CHECKS)),
            )
        patterns.append(
            SecretPattern(
                kind=table["id"],
                name=table["name"],
                pattern=compiled,
                group=table.get("group", 0),
                name_group=table.get("name_group", 0),
                inside=table.get("inside", False),
                check=check,
                needs=tuple(
                    n.lower() if compiled.flags & re.IGNORECASE else n
                    for n in table.get("needs", [])
                ),
            )
        )
    return tuple(patterns)


# A pgpass line's host and port that are really the first groups of an IPv6 address.
_IPV6_HEAD_RE = re.compile(r"[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:")


def _pgpass(match: re.Match[str], value: str) -> bool:
    """A plausible pgpass line: not an IPv6 address, not a row of numbers (`1:2:3:4:5`)."""
    fields = match.group(0).lstrip().split(":")
    return _IPV6_HEAD_RE.match(match.group(0).lstrip()) is None and not all(
        f.isdigit() for f in fields[2:4]
    )


def _mixed_token(match: re.Match[str], value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


@dataclass(frozen=True, slots=True)
class ValueRules:
    """The `[values]` table of `reporter/data/secrets.toml`: values that are not secrets."""

    inert: frozenset[str]
    blank: re.Pattern[str]
    not_a_value: re.Pattern[str]
    auth_schemes: frozenset[str]
    named_inert: re.Pattern[str]


@cache
def value_rules() -> ValueRules:
    """`[values]`, compiled (read once); a pattern that does not compile is a `RulesError`."""
    table = rules.load("secrets.toml")["values"]

    def pattern(key: str) -> re.Pattern[str]:
        return _compiled("".join(table[key]), f"[values] {key}")

    return ValueRules(
        inert=frozenset(w.lower() for w in table["inert"]),
        blank=pattern("blank"),
        not_a_value=pattern("not_a_value"),
        auth_schemes=frozenset(w.lower() for w in table["auth_schemes"]),
        named_inert=pattern("named_inert"),
    )


def is_value(value: str) -> bool:
    """False for values that are placeholders, empty, numbers, paths or booleans."""
    known = value_rules()
    if not value or known.blank.fullmatch(PLACEHOLDER_RE.sub("", value)):
        return False
    stripped = value.strip("\"'")
    if stripped.lower() in known.inert:
        return False
    return not known.not_a_value.fullmatch(stripped)


def _named_value(match: re.Match[str], value: str) -> bool:
    """Under a name that says secret, a value that may be the secret: not a number, a
    `<placeholder>`, the scheme word before the credential, a version pin or a bare URL."""
    known = value_rules()
    return not (
        value.isdigit()
        or value.startswith("<")
        or value.lower() in known.auth_schemes
        or known.named_inert.fullmatch(value)
    )


def _token_piece(match: re.Match[str], value: str) -> bool:
    """A token's prefix alone, or with a piece of the token that holds a digit."""
    piece = match.groupdict().get("piece") or ""
    return not piece or any(c.isdigit() for c in piece)


# Checks a `[[shape]]` may name (`check = "..."`): a match counts only when its check holds.
_CHECKS: dict[str, Callable[[re.Match[str], str], bool]] = {
    "pgpass": _pgpass,
    "mixed-token": _mixed_token,
    "named-value": _named_value,
    "token-piece": _token_piece,
}


def _matches(entry: SecretPattern, text: str) -> Iterator[re.Match[str]]:
    """`entry`'s matches; for named patterns, only those whose name says secret.

    A rejected name (`headers` in `headers: X-Api-Key: v`) must not swallow the
    candidate that starts inside its match, so the search resumes one character on.
    """
    if not entry.name_group:
        yield from entry.pattern.finditer(text)
        return
    at = 0
    while at <= len(text):
        match = entry.pattern.search(text, at)
        if match is None:
            return
        if is_secret_name(match.group(entry.name_group)):
            yield match
            at = max(match.end(), at + 1)
        else:
            at = match.start(entry.name_group) + 1


@cache
def secret_patterns() -> tuple[SecretPattern, ...]:
    """Our secret shapes, in the order of `reporter/data/secrets.toml` (loaded once)."""
    return _load_patterns()


@cache
def inside_kinds() -> frozenset[str]:
    """Kinds found inside a value by its context (`inside = true`): masked in place."""
    return frozenset(p.kind for p in secret_patterns() if p.inside)


@dataclass(frozen=True, slots=True)
class _Prefilter:
    """The distinctive `needs` (every shape's, but a single character's) as searches of the
    text as written and of its lower case (all in `folded` when every need is ASCII): a
    text holding none of them is tried by `always` only, the shapes with no `needs` or a
    one-character one (`:`, `=`, `-`), each still behind its own."""

    plain: re.Pattern[str] | None
    folded: re.Pattern[str] | None
    always: tuple[SecretPattern, ...]
    marks: re.Pattern[str] | None
    """Every one-character need of `always` with no case (`:`, `=`, `-`, quotes, ...)."""
    marked: dict[str, frozenset[str]]
    """Per kind of `always`, its needs when each is such a character (else not listed)."""


def _common(entry: SecretPattern) -> bool:
    """No `needs`, or one a character long: found in too many texts to gate the rest."""
    return not entry.needs or any(len(need) == 1 for need in entry.needs)


@cache
def _prefilter() -> _Prefilter:
    entries = secret_patterns()

    def joined(needs: set[str]) -> re.Pattern[str] | None:
        return re.compile(any_of(needs)) if needs else None

    plain = {n for e in entries if not _common(e) and not e.folded for n in e.needs}
    folded = {n for e in entries if not _common(e) and e.folded for n in e.needs}
    if all(n.isascii() for n in plain):
        # An ASCII need in the text is in its lower case too: one search of the lower case
        # gates both (a few more texts pass it, e.g. `akia`; each shape still checks its own).
        folded |= {n.lower() for n in plain}
        plain = set()
    always = tuple(e for e in entries if _common(e))
    # Punctuation is the same in the text and in its lower case, so one set of the text's
    # marks answers folded shapes too; needs with a letter stay with `needs_re`.
    marked = {
        e.kind: frozenset(e.needs)
        for e in always
        if e.needs and all(len(n) == 1 and n.lower() == n.upper() for n in e.needs)
    }
    chars = sorted(set().union(*marked.values()))
    return _Prefilter(
        plain=joined(plain),
        folded=joined(folded),
        always=always,
        marks=re.compile("[" + "".join(re.escape(c) for c in chars) + "]") if chars else None,
        marked=marked,
    )


def pattern_hits(text: str) -> Iterator[SecretHit]:
    """Hits of `secret_patterns()` (ours only), in pattern order then position."""
    lower: list[str] = []

    def lowered() -> str:
        if not lower:
            lower.append(text.lower())
        return lower[0]

    gate = _prefilter()
    # A text holding no distinctive `needs` (most strings) skips straight to the common
    # shapes: same hits, one search instead of one per shape. Their one-character needs
    # are read off the text's marks, found in one pass.
    marks: set[str] | None = None
    entries = secret_patterns()
    if not (
        (gate.plain is not None and gate.plain.search(text) is not None)
        or (gate.folded is not None and gate.folded.search(lowered()) is not None)
    ):
        entries = gate.always
        marks = set(gate.marks.findall(text)) if gate.marks is not None else set()
    for entry in entries:
        marked = gate.marked.get(entry.kind) if marks is not None else None
        if marked is not None:
            if marked.isdisjoint(marks or ()):
                continue
        elif (needs := entry.needs_re) is not None and needs.search(
            lowered() if entry.folded else text
        ) is None:
            continue  # `entry.may_match`, inlined: it runs for every text and shape
        check = _CHECKS.get(entry.check) if entry.check else None
        for match in _matches(entry, text):
            value = match.group(entry.group)
            if not is_value(value) or PLACEHOLDER_RE.search(value):
                continue  # nothing, or what a previous masking left
            if check is not None and not check(match, value):
                continue
            yield SecretHit(
                kind=entry.kind,
                name=entry.name,
                value=value,
                start=match.start(entry.group),
                end=match.end(entry.group),
            )


@cache
def _library_plugins() -> tuple[Any, ...]:
    """detect-secrets plugin instances, imported on first use: only a line that
    `library_may_match` lets through needs them, and importing them (with requests)
    costs a small command a third of its start-up."""
    import importlib

    plugins: list[Any] = []
    # `[library] plugins` of reporter/data/secrets.toml, as `module.Class`.
    for dotted in rules.load("secrets.toml")["library"]["plugins"]:
        module, _, name = dotted.rpartition(".")
        plugins.append(getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)())
    return tuple(plugins)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _occurrences(line: str, value: str) -> list[int]:
    """Where a plugin's value stands in its line (the plugins say what, not where).

    Every occurrence standing on its own (no letter or digit right before or after);
    when there is none, the first one, for values long enough not to be a piece of a
    word (a one-letter password `p` must not mask the `p` of `https`).
    """
    found = []
    at = line.find(value)
    first = at
    while at >= 0:
        before = line[at - 1] if at else " "
        after = line[at + len(value)] if at + len(value) < len(line) else " "
        if not (before.isalnum() or after.isalnum()):
            found.append(at)
        at = line.find(value, at + 1)
    if not found and first >= 0 and len(value) >= 8:
        found.append(first)
    return found


# detect-secrets' findings per distinct line: (kind, name, value, column). A report or a
# bundle repeats the same lines thousands of times (one per rank), and the plugins are the
# slowest part of masking; the cache is cleared when full to bound memory.
_LINE_HITS: dict[str, tuple[tuple[str, str, str, int], ...]] = {}
_LINE_HITS_MAX = 1 << 15
_LINE_HITS_LONGEST = 256  # longer lines seldom repeat: not kept (bounds the keys' memory)


def library_hits(text: str) -> Iterator[SecretHit]:
    """Hits of detect-secrets' plugins, line by line (no network: `analyze_string` only)."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if len(line) > 4 and not line.isspace():
            found = _LINE_HITS.get(line)
            if found is None:
                # A line no plugin can report on is not given to them (nor is detect-secrets
                # imported for it).
                found = _line_library_hits(line) if library_may_match(line) else ()
                if len(line) <= _LINE_HITS_LONGEST:
                    if len(_LINE_HITS) >= _LINE_HITS_MAX:
                        _LINE_HITS.clear()
                    _LINE_HITS[line] = found
            for kind, name, value, at in found:
                yield SecretHit(
                    kind=kind,
                    name=name,
                    value=value,
                    start=offset + at,
                    end=offset + at + len(value),
                )
        offset += len(line)


def _line_library_hits(line: str) -> tuple[tuple[str, str, str, int], ...]:
    """What the plugins find in one line: (kind, name, value, column), in plugin order."""
    out: list[tuple[str, str, str, int]] = []
    for plugin in _library_plugins():
        limit = getattr(plugin, "entropy_limit", None)
        for found in plugin.analyze_string(line):
            value = str(found)
            if limit is not None and (
                len(value) < MIN_ENTROPY_LENGTH or plugin.calculate_shannon_entropy(value) < limit
            ):
                continue
            if not is_value(value) or PLACEHOLDER_RE.search(value):
                continue
            kind = f"detect-secrets-{_slug(plugin.secret_type)}"
            name = f"{plugin.secret_type} (detect-secrets)"
            out.extend((kind, name, value, at) for at in _occurrences(line, value))
    return tuple(out)


def _hits(text: str, library: bool) -> list[SecretHit]:
    hits = list(pattern_hits(text))
    if library:
        hits.extend(library_hits(text))
    hits.extend(encoded_hits(text))
    return hits


def encoded_hits(text: str) -> Iterator[SecretHit]:
    """Runs of base64 or hex whose decoded text holds a secret (one of our shapes, or a
    bare `user:password`): the whole run is the hit (`reporter.secrets.encoded`)."""
    for run in decoded_runs(text):
        if looks_like_credential(run.text):
            name = "user:password"
        else:
            found = next(pattern_hits(run.text), None)
            if found is None:
                continue
            name = found.name
        yield SecretHit(
            kind=f"{run.encoding}-secret",
            name=f"{name}, {run.encoding}-encoded",
            value=text[run.start : run.end],
            start=run.start,
            end=run.end,
        )


def scan(text: str, *, library: bool = True) -> list[SecretHit]:
    """Every secret in `text`, sorted by start; overlapping hits joined into one.

    The text is searched as written and, when it has disguises to undo, normalised
    (`reporter.secrets.normalize`); a hit in the normalised text covers the span as
    written. Where hits overlap, the earlier (then longer, then first-listed) one names
    the kind, and its span grows to the end of the last hit it overlaps, so a
    private-key block is one hit, `sk-ant-...` is an Anthropic key, not an OpenAI one,
    and no tail of a secret found two ways is left out.
    """
    if len(text) > _SCANNED_LONGEST:
        return _scan(text, library)
    key = (text, library)
    kept = _SCANNED.get(key)
    if kept is None:
        kept = tuple(_scan(text, library))
        if len(_SCANNED) >= _SCANNED_MAX or _SCANNED_CHARS[0] > _SCANNED_MAX_CHARS:
            _SCANNED.clear()
            _SCANNED_CHARS[0] = 0
        _SCANNED[key] = kept
        _SCANNED_CHARS[0] += len(text)
    return list(kept)


# `scan`'s answer per distinct short text: the same strings (a frame's file, a thread name,
# an environment line) come back for every rank. Cleared when full to bound memory.
_SCANNED: dict[tuple[str, bool], tuple[SecretHit, ...]] = {}
_SCANNED_MAX = 1 << 15
_SCANNED_LONGEST = 4096
_SCANNED_MAX_CHARS = 1 << 23  # the texts kept as keys, in all (a few MB at most)
_SCANNED_CHARS = [0]


def _scan(text: str, library: bool) -> list[SecretHit]:
    hits = _hits(text, library)
    plain = normalize(text)
    if plain is not None:
        # A large text is searched again only around what normalising changed.
        windows = plain.windows() if len(text) > _WHOLE_NORMALISED else [(0, len(plain.text))]
        found = [
            replace(hit, start=hit.start + begin, end=hit.end + begin)
            for begin, end in windows
            for hit in _hits(plain.text[begin:end], library)
        ]
        for hit in found:
            start, end = plain.original(hit.start, hit.end)
            if end > start:
                hits.append(
                    SecretHit(
                        kind=hit.kind, name=hit.name, value=text[start:end], start=start, end=end
                    )
                )
    order = _order()
    hits.sort(key=lambda h: (h.start, -(h.end - h.start), order.get(h.kind, len(order)), h.kind))
    kept: list[SecretHit] = []
    for hit in hits:
        if kept and hit.start < kept[-1].end:
            last = kept[-1]
            if hit.end > last.end:
                kept[-1] = SecretHit(
                    kind=last.kind,
                    name=last.name,
                    value=text[last.start : hit.end],
                    start=last.start,
                    end=hit.end,
                )
            continue
        kept.append(hit)
    return kept


@cache
def _order() -> dict[str, int]:
    return {p.kind: n for n, p in enumerate(secret_patterns())}


def find_secrets(text: str, *, library: bool = True) -> Iterator[tuple[int, str, str]]:
    """(1-based line, name, masked sample) for every likely secret in `text` (for lint).

    A large text is scanned a megabyte at a time, cut at line ends (a secret never spans
    two pieces unless it spans a megabyte), so memory stays near the piece, not the text.
    """
    line, at = 1, 0
    while at < len(text):
        end = (
            len(text)
            if len(text) - at <= _FIND_PIECE
            else text.rfind("\n", at, at + _FIND_PIECE) + 1
        )
        if end <= at:
            end = min(len(text), at + _FIND_PIECE)
        piece = text[at:end]
        counted = 0
        for hit in scan(piece, library=library):
            line += piece.count("\n", counted, hit.start)
            counted = hit.start
            yield line, hit.name, f"{hit.value[:4]}… ({len(hit.value)} characters)"
        line += piece.count("\n", counted)
        at = end


# Texts larger than this are scanned for lint in pieces of this size (cut at line ends).
_FIND_PIECE = 1 << 20


def __getattr__(name: str) -> object:
    # `SECRET_PATTERNS` under its former module-level name: the shapes now come from
    # reporter/data/secrets.toml and are compiled on first use (`secret_patterns()`).
    if name == "SECRET_PATTERNS":
        return secret_patterns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
