"""Redaction for upstream drafts and comments: secrets and identifiers become placeholders.

Input: the evidence strings a draft will show, as `Piece(where, text)`s (a stack, an env
value, a log excerpt, ...). Output: a `Redaction` with the same strings redacted, a
report of what was replaced (kind, where, count: never the values) and the mapping to
redact further text the same way. The local incident report is not redacted: it keeps
the full evidence; only what leaves for GitHub passes through here.

Two passes, so that a value learnt in one place is hidden everywhere:

1. *find*: every piece is scanned for secrets (`reporter.secrets`: our
   patterns plus detect-secrets' plugins; plus values whose key says secret, with the
   name rules and the opaque-token rule of `reporter/data/env.toml`, including the
   continuation lines of a multi-line env value) and identifiers (IPv4/IPv6, MAC,
   e-mail, `user@host`, URL hosts, host names with a known TLD, home directories, and
   host and user names given by context: `HOSTNAME=`, `--host`, `instance="..."`, a
   syslog line's host field; rules in `reporter/data/redact.toml`);
2. *replace*: each finding, and every other occurrence of a learnt value that is
   specific enough to hunt for (not a generic name such as `ubuntu`, not a word of the
   code's own vocabulary such as `sglang`), becomes a placeholder numbered per label in
   order of first appearance: the same value is the same placeholder in every piece::

       "ssh alice@gpu-node-17 (10.42.3.17)"  ->  "ssh <user-1>@<host-1> (<ip-1>)"

A value the layers below already withheld (`[redacted]`, the local mark: a named secret
in the environment record, a secret option of the launch line) becomes a placeholder of
its own, `<secret-N>`, a new number each time (nobody here knows whether two withheld
values were the same), so a draft shows one mark: `<label-N>`.

Loopback and unspecified addresses, `localhost`, and public hosts such as github.com are
left alone. Nothing here does I/O besides reading the packaged rule files.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache

from reporter.analysis.environment import Secrets, default_rules
from reporter.core import rules as data_files
from reporter.secrets import REDACTED
from reporter.secrets import shapes as secret_shapes

# Top-level domains that make `a.b` a host name. Left out on purpose: TLDs that are
# also file extensions or Python attribute names (py, sh, so, md, pl, pt, cc, in, int,
# name, info, app, dev, cloud), which would turn `model.pt` or `logger.info` into hosts.
_STRONG_TLDS = "com|net|org|edu|gov|mil|biz|xyz|online|site|tech"
_WEAK_TLDS = (
    "io|ai|co|us|uk|de|fr|nl|be|ch|at|se|no|fi|dk|cz|it|es|ie|eu|ru|ua|jp|kr|cn|tw|hk|sg|au|nz"
    "|ca|br|mx|ar|za|internal|local|localdomain|lan|corp|home|intranet|private|svc|cluster"
)
_FQDN_RE = re.compile(
    r"(?<![\w.@/-])((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    rf"(?:{_STRONG_TLDS}|{_WEAK_TLDS}))(?![\w-]|\.\w)",
    re.IGNORECASE,
)
_STRONG_TLD_RE = re.compile(rf"\.(?:{_STRONG_TLDS})\Z", re.IGNORECASE)
_IPV4_RE = re.compile(r"(?<![\w.])((?:\d{1,3}\.){3}\d{1,3})(?!\.\d|\w)")
_IPV6_RE = re.compile(
    r"(?<![\w:.])((?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4})(?:%[\w.]+)?(?![\w:])"
)
_MAC_RE = re.compile(
    r"(?<![\w:-])([0-9A-Fa-f]{2}(?:([:-])[0-9A-Fa-f]{2})(?:\2[0-9A-Fa-f]{2}){4})(?![\w:-])"
)
_VERSION_BEFORE_RE = re.compile(r"(?i)(?:(?:version|release)\b[\s:=]*|==|>=|<=|~=|\bv)\Z")
_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])([A-Za-z0-9._%+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,})(?![\w-])"
)
_USER_AT_HOST_RE = re.compile(
    r"(?<![\w/.@:+-])([A-Za-z_][A-Za-z0-9_.-]{0,31})@"
    r"([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*)(?![\w@-])"
)
_URL_HOST_RE = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://(?:[^/\s@]*@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)"
)
_URL_USER_RE = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://([^/\s:@]+)(?::[^/\s@]*)?@")
_HOME_RE = re.compile(
    r"(?:(?<=/home/)|(?<=/Users/)|(?<=\\Users\\)|(?<=/var/home/))([^/\\\s'\":,;)\]]+)"
)
_PAIR_RE = re.compile(
    r"(?<![\w.-])([A-Za-z_][\w.-]*)[\"']?[ \t]*(?::|=)[ \t]*(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"',;)}\]]+))"
)
_FLAG_RE = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)(?:=|[ \t]+)[\"']?([^\s\"']+)")
_ENV_LINE_RE = re.compile(r"(?:export[ \t]+|declare[ \t]+-x[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)")
_SYSLOG_RE = re.compile(
    r"^(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)"
    r" ([A-Za-z0-9][A-Za-z0-9.-]*) [\w./-]+(?:\[\d+\])?:",
    re.MULTILINE,
)
_SLURM_RANGE_RE = re.compile(r"\[[\d,-]+\]")


class Label:
    """Placeholder labels: `<ip-1>`, `<host-2>`, `<user-1>`, `<email-1>`, `<secret-3>`."""

    IP = "ip"
    MAC = "mac"
    HOST = "host"
    USER = "user"
    EMAIL = "email"
    SECRET = "secret"


# Secret kinds whose placeholder names the credential; the others are plain `<secret-N>`.
_NAMED_SECRET_LABELS = {
    "private-key": "private-key",
    "github-token": "github-token",
    "huggingface-token": "hf-token",
    "openai-key": "openai-key",
    "anthropic-key": "anthropic-key",
    "aws-access-key-id": "aws-key-id",
    "aws-secret-access-key": "aws-secret",
    "slack-token": "slack-token",
    "slack-webhook": "slack-webhook",
    "url-password": "password",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """One string bound for an upstream draft, and a name for where it comes from."""

    where: str
    text: str
    key: str = ""
    """The name the whole text is the value of (an env var, an option), when known: then
    `HOSTNAME`'s value is a host and `--api-key`'s a secret whatever they look like."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactionEntry:
    """One line of the redaction report: how many values of `kind` were replaced in `where`."""

    kind: str
    where: str
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """The compiled `redact.toml` plus env.toml's secret rules."""

    secrets: Secrets
    public_hosts: re.Pattern[str]
    public_emails: re.Pattern[str]
    generic_users: frozenset[str]
    generic_hosts: frozenset[str]
    host_vars: re.Pattern[str]
    user_vars: re.Pattern[str]
    host_keys: re.Pattern[str]
    user_keys: re.Pattern[str]
    host_flags: frozenset[str]


def _globs(patterns: Iterable[str]) -> re.Pattern[str]:
    return data_files.globs(patterns, ignore_case=True)


def parse_rules(text: str, *, secrets: Secrets, source: str = "redact.toml") -> Rules:
    """Compile a redact.toml; a malformed one raises `ReporterError` naming the key."""
    data = data_files.parse(text, data_files.SHAPES["redact.toml"], source=source)

    def strings(table: str, key: str) -> list[str]:
        # The shape (reporter/core/rules.py) has checked that this is a list of strings.
        return list(data.get(table, {}).get(key, []))

    return Rules(
        secrets=secrets,
        public_hosts=_globs(strings("public", "hosts")),
        public_emails=_globs(strings("public", "emails")),
        generic_users=frozenset(u.lower() for u in strings("generic", "users")),
        generic_hosts=frozenset(h.lower() for h in strings("generic", "hosts")),
        host_vars=_globs(strings("context", "host_vars")),
        user_vars=_globs(strings("context", "user_vars")),
        host_keys=_globs(strings("context", "host_keys")),
        user_keys=_globs(strings("context", "user_keys")),
        host_flags=frozenset(f.lower() for f in strings("context", "host_flags")),
    )


@cache
def default_redact_rules() -> Rules:
    """The rules shipped in `reporter/data/redact.toml` (secret names from env.toml)."""
    return parse_rules(
        data_files.read_text("redact.toml"),
        secrets=default_rules().secrets,
        source="reporter/data/redact.toml",
    )


# The kind of a value withheld before the draft saw it (`[redacted]` in a piece).
WITHHELD = "secret-withheld"


@dataclass(frozen=True, slots=True)
class _Found:
    start: int
    end: int
    value: str
    kind: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Redaction:
    """Redacted pieces (in input order), the report, and the mapping for more text.

    `mapping` pairs each replaced value with its placeholder, longest value first; it
    holds the secrets themselves, so it is never printed (`repr=False`).
    """

    texts: tuple[str, ...]
    report: tuple[RedactionEntry, ...]
    placeholders: tuple[tuple[str, str], ...]
    """(placeholder, kind) in order of first use: what the reviewer will see in the text."""
    mapping: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    hunted: frozenset[str] = field(default=frozenset(), repr=False)

    def total(self) -> int:
        """How many values were replaced in all."""
        return sum(e.count for e in self.report)

    def apply(self, text: str) -> str:
        """Replace the values this redaction learnt wherever they occur in `text`."""
        if not self.mapping:
            return text
        table = dict(self.mapping)
        pattern = _hunt_pattern(tuple(value for value, _ in self.mapping))
        return pattern.sub(lambda m: table[m.group(0)], text)


def _bounded(value: str) -> str:
    head = r"(?<![A-Za-z0-9_-])" if re.match(r"[\w-]", value) else ""
    tail = r"(?![A-Za-z0-9_-])" if re.search(r"[\w-]\Z", value) else ""
    return f"{head}{re.escape(value)}{tail}"


@cache
def _hunt_pattern(values: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of `values`, longest first (so a longer value wins at a position)."""
    ordered = sorted(set(values), key=lambda v: (-len(v), v))
    return re.compile("|".join(_bounded(v) for v in ordered) or r"(?!)")


# --- finding -----------------------------------------------------------------------


def _ip(candidate: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(candidate.strip("[]"))
    except ValueError:
        return None


def _uninteresting_ip(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Loopback, unspecified, broadcast and netmask-like addresses identify nothing."""
    text = str(address)
    return (
        address.is_loopback
        or address.is_unspecified
        or text.startswith("255.")
        or (address.version == 4 and text.endswith(".255.255"))
    )


def _host_kind(rules: Rules, host: str) -> str | None:
    """`ip`, `host`, or None for a host name that identifies nobody."""
    host = host.strip("[]").rstrip(".")
    if not host:
        return None
    address = _ip(host)
    if address is not None:
        return None if _uninteresting_ip(address) else Label.IP
    if rules.public_hosts.fullmatch(host) or host.lower() in ("localhost",):
        return None
    if re.fullmatch(r"[\d.]+", host):
        return None
    return Label.HOST


def _split_hosts(value: str) -> Iterable[tuple[int, str]]:
    """(offset, host) for each host in a `host:port`, `[v6]:port` or `a,b,c` value."""
    offset = 0
    for part in value.split(","):
        text = part.strip()
        start = offset + part.find(text) if text else offset
        offset += len(part) + 1
        if not text:
            continue
        if text.startswith("["):
            end = text.find("]")
            yield start + 1, text[1:end] if end > 0 else text[1:]
            continue
        if text.count(":") == 1:
            text = text.split(":", 1)[0]
        elif text.count(":") > 1 and _ip(text) is None:
            continue
        text = _SLURM_RANGE_RE.split(text, maxsplit=1)[0].rstrip("-") or text
        yield start, text


class _Finder:
    """Collects the findings of one piece (pure; the rules are passed in)."""

    def __init__(self, text: str, rules: Rules, key: str = "") -> None:
        self.text = text
        self.rules = rules
        self.key = key
        self.found: list[_Found] = []

    def add(self, start: int, end: int, kind: str, label: str) -> None:
        value = self.text[start:end]
        if value and not secret_shapes.PLACEHOLDER_RE.fullmatch(value):
            self.found.append(_Found(start, end, value, kind, label))

    def add_host(self, start: int, host: str, *, kind: str = "host") -> None:
        label = _host_kind(self.rules, host)
        if label is None:
            return
        at = self.text.find(host, start)
        if at < 0:
            return
        if label == Label.IP:
            address = _ip(host)
            kind = "ipv6" if address is not None and address.version == 6 else "ipv4"
        self.add(at, at + len(host), kind, label)

    def run(self) -> list[_Found]:
        if self.key:
            self._keyed()
        self._secrets()
        self._pairs()
        self._flags()
        self._identifiers()
        return self.found

    def _secrets(self) -> None:
        for hit in secret_shapes.scan(self.text):
            label = _NAMED_SECRET_LABELS.get(hit.kind, Label.SECRET)
            self.add(hit.start, hit.end, hit.kind, label)

    def _keyed(self) -> None:
        """The whole text is the value of `self.key`: judge it by the key's name."""
        rules, key, value = self.rules, self.key, self.text
        if rules.secrets.is_secret(key, value) and _secret_value(value):
            self.add(0, len(value), "secret-named-value", Label.SECRET)
        elif (
            rules.host_vars.fullmatch(key)
            or rules.host_keys.fullmatch(key)
            or key.lower() in rules.host_flags
        ):
            for offset, host in _split_hosts(value):
                self.add_host(offset, host)
        elif (rules.user_vars.fullmatch(key) or rules.user_keys.fullmatch(key)) and re.fullmatch(
            r"[A-Za-z_][\w.-]{1,31}", value
        ):
            self.add(0, len(value), "user", Label.USER)

    def _pairs(self) -> None:
        """`key=value`, `key: value`, `key="value"`: secret, host or user by the key."""
        rules = self.rules
        for match in _PAIR_RE.finditer(self.text):
            key = match.group(1)
            group = next(g for g in (2, 3, 4) if match.group(g) is not None)
            value, start = match.group(group), match.start(group)
            if not value or value.startswith(("<", "0x")) or value[:1] in "[{(|":
                continue
            if rules.secrets.is_secret(key, value) and _secret_value(value):
                self.add(start, start + len(value), "secret-named-value", Label.SECRET)
            elif rules.host_vars.fullmatch(key) or rules.host_keys.fullmatch(key):
                for offset, host in _split_hosts(value):
                    self.add_host(start + offset, host)
            elif (
                rules.user_vars.fullmatch(key) or rules.user_keys.fullmatch(key)
            ) and re.fullmatch(r"[A-Za-z_][\w.-]{1,31}", value):
                self.add(start, start + len(value), "user", Label.USER)
        self._env_continuations()

    def _env_continuations(self) -> None:
        """Lines after a secret env var that are not assignments belong to its value."""
        lines = self.text.split("\n")
        if sum(1 for line in lines if _ENV_LINE_RE.match(line)) < 2:
            return
        offset = 0
        inside = False
        for line in lines:
            match = _ENV_LINE_RE.match(line)
            if match:
                inside = self.rules.secrets.is_secret(match.group(1), match.group(2) or "")
            elif inside and line.strip():
                self.add(offset, offset + len(line), "secret-named-value", Label.SECRET)
            offset += len(line) + 1

    def _flags(self) -> None:
        rules = self.rules
        for match in _FLAG_RE.finditer(self.text):
            name, value = match.group(1).lower(), match.group(2)
            start = match.start(2)
            if rules.secrets.is_secret(name, value) and _secret_value(value):
                self.add(start, start + len(value), "secret-flag", Label.SECRET)
            elif name in rules.host_flags:
                for offset, host in _split_hosts(value):
                    self.add_host(start + offset, host)

    def _identifiers(self) -> None:
        text, rules = self.text, self.rules
        for match in _EMAIL_RE.finditer(text):
            if not rules.public_emails.fullmatch(match.group(1)):
                self.add(match.start(1), match.end(1), "email", Label.EMAIL)
        for match in _USER_AT_HOST_RE.finditer(text):
            host = match.group(2)
            if re.fullmatch(r"[0-9a-f]{7,40}", host) or (
                re.fullmatch(r"[\d.]+", host) and not _ip(host)
            ):
                continue  # `name@<commit sha>` or `pkg@1.2`: a reference, not a login
            if _EMAIL_RE.fullmatch(match.group(0)):
                continue
            if _host_kind(rules, host) is None:
                continue
            self.add(match.start(1), match.end(1), "user", Label.USER)
            self.add_host(match.start(2), host)
        for match in _URL_USER_RE.finditer(text):
            self.add(match.start(1), match.end(1), "user", Label.USER)
        for match in _URL_HOST_RE.finditer(text):
            self.add_host(match.start(1), match.group(1).strip("[]"))
        for match in _SYSLOG_RE.finditer(text):
            self.add_host(match.start(1), match.group(1))
        for match in _IPV4_RE.finditer(text):
            address = _ip(match.group(1))
            before = text[max(0, match.start() - 48) : match.start()]
            if match.start() == 0 and self.key:
                before = f"{self.key}="
            if address is None or _uninteresting_ip(address) or _VERSION_BEFORE_RE.search(before):
                continue
            self.add(match.start(1), match.end(1), "ipv4", Label.IP)
        for match in _IPV6_RE.finditer(text):
            address = _ip(match.group(1))
            if address is not None and address.version == 6 and not _uninteresting_ip(address):
                self.add(match.start(1), match.end(1), "ipv6", Label.IP)
        for match in _MAC_RE.finditer(text):
            self.add(match.start(1), match.end(1), "mac", Label.MAC)
        for match in _FQDN_RE.finditer(text):
            host = match.group(1)
            labels = host.split(".")
            # `threading.local` is an attribute; `gpu-7.local` and `a.b.corp` are hosts.
            weak = not _STRONG_TLD_RE.search(host)
            if weak and len(labels) < 3 and not re.search(r"[\d-]", labels[0]):
                continue
            if rules.public_hosts.fullmatch(host):
                continue
            self.add(match.start(1), match.end(1), "host", Label.HOST)
        for match in _HOME_RE.finditer(text):
            self.add(match.start(1), match.end(1), "user", Label.USER)


def _withheld(text: str) -> list[_Found]:
    """Every `[redacted]` in `text`: a value the layers below withheld, to number upstream."""
    found: list[_Found] = []
    at = text.find(REDACTED)
    while at >= 0:
        found.append(_Found(at, at + len(REDACTED), REDACTED, WITHHELD, Label.SECRET))
        at = text.find(REDACTED, at + len(REDACTED))
    return found


def _secret_value(value: str) -> bool:
    """A value worth hiding under a secret name: not a placeholder, number, path or flag."""
    stripped = value.strip("\"'")
    if len(stripped) < 3 or stripped.startswith("-") or "[" in stripped or "<" in stripped:
        return False
    return secret_shapes.PLACEHOLDER_RE.fullmatch(stripped) is None and not re.fullmatch(
        r"[\d.:_-]+|true|false|none|null|yes|no|on|off|/[\w./-]*", stripped, re.IGNORECASE
    )


# Words of the project itself that a learnt name must never replace elsewhere.
_BASE_VOCABULARY = frozenset(
    {"sglang", "vllm", "torch", "python", "python3", "nccl", "gloo", "cuda", "triton", "scheduler"}
)


def _huntable(found: _Found, rules: Rules, vocabulary: frozenset[str]) -> bool:
    """May this value be replaced wherever else it occurs, not only where it was found?"""
    value = found.value
    lowered = value.lower()
    if lowered in vocabulary or lowered in _BASE_VOCABULARY:
        return False
    if found.label == Label.USER:
        return len(value) >= 3 and lowered not in rules.generic_users
    if found.label == Label.HOST:
        if lowered in rules.generic_hosts:
            return False
        return "." in value or bool(re.search(r"[\d-]", value)) or len(value) >= 8
    if found.label in (Label.IP, Label.MAC, Label.EMAIL):
        return True
    # Secrets: short ones may be ordinary words.
    return len(value) >= 6


def _priority(found: _Found) -> tuple[int, int]:
    """Secret shapes by their list order, then the library's, then names and identifiers."""
    order = _pattern_order().get(found.kind)
    if order is not None:
        return 0, order
    if found.kind.startswith("detect-secrets"):
        return 1, 0
    return (2, 0) if found.label == Label.SECRET else (3, 0)


@cache
def _pattern_order() -> dict[str, int]:
    return {p.kind: n for n, p in enumerate(secret_shapes.secret_patterns())}


def _resolve(spans: Iterable[_Found]) -> list[_Found]:
    """Non-overlapping spans: earliest first; at one start a secret beats an identifier
    (the password of `postgres://u:pw@host` is not the start of an e-mail), then longest."""
    ordered = sorted(
        spans,
        key=lambda f: (
            f.start,
            _priority(f)[0] >= 3,
            -(f.end - f.start),
            _priority(f),
            f.kind,
            f.value,
        ),
    )
    kept: list[_Found] = []
    end = -1
    for span in ordered:
        if span.start >= end:
            kept.append(span)
            end = span.end
    return kept


def redact(
    pieces: Sequence[Piece],
    *,
    rules: Rules | None = None,
    vocabulary: Iterable[str] = (),
) -> Redaction:
    """Redact every piece with one consistent set of placeholders; see the module docstring.

    `vocabulary` lists words of the evidence's own code (function and file names, package
    names) that a learnt user or host name must not replace outside the place it was seen.
    """
    rules = rules or default_redact_rules()
    words = frozenset(w.lower() for w in vocabulary)
    findings = [
        _Finder(piece.text, rules, piece.key).run() + _withheld(piece.text) for piece in pieces
    ]
    hunted: dict[str, _Found] = {}
    for piece_findings in findings:
        for found in piece_findings:
            if found.kind == WITHHELD:
                continue
            if found.value not in hunted and _huntable(found, rules, words):
                hunted[found.value] = found
    pattern = _hunt_pattern(tuple(hunted))
    assigned: dict[str, str] = {}
    kinds: dict[str, str] = {}
    counters: dict[str, int] = {}
    texts: list[str] = []
    counts: dict[tuple[str, str], int] = {}
    order: dict[str, int] = {}
    for index, (piece, own) in enumerate(zip(pieces, findings, strict=True)):
        spans = list(own)
        if hunted:
            for match in pattern.finditer(piece.text):
                known = hunted[match.group(0)]
                spans.append(
                    _Found(match.start(), match.end(), known.value, known.kind, known.label)
                )
        out: list[str] = []
        cursor = 0
        for span in _resolve(spans):
            withheld = span.kind == WITHHELD
            placeholder = None if withheld else assigned.get(span.value)
            if placeholder is None:
                counters[span.label] = counters.get(span.label, 0) + 1
                placeholder = f"<{span.label}-{counters[span.label]}>"
                if not withheld:  # `[redacted]` is no value to hunt for or map back
                    assigned[span.value] = placeholder
                kinds[placeholder] = span.kind
            out.append(piece.text[cursor : span.start])
            out.append(placeholder)
            cursor = span.end
            key = (piece.where, kinds[placeholder])
            counts[key] = counts.get(key, 0) + 1
            order.setdefault(piece.where, index)
        out.append(piece.text[cursor:])
        texts.append("".join(out))
    report = tuple(
        RedactionEntry(kind=kind, where=where, count=count)
        for (where, kind), count in sorted(counts.items(), key=lambda i: (order[i[0][0]], i[0][1]))
    )
    mapping = tuple(sorted(assigned.items(), key=lambda item: (-len(item[0]), item[0])))
    return Redaction(
        texts=tuple(texts),
        report=report,
        placeholders=tuple(kinds.items()),
        mapping=mapping,
        hunted=frozenset(hunted),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Leak:
    """Something the final scan still flags: kind, 1-based line, and a masked sample."""

    kind: str
    line: int
    sample: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.kind} ({self.sample})"


def leaks(
    text: str, *, redaction: Redaction | None = None, rules: Rules | None = None
) -> tuple[Leak, ...]:
    """What a scan of a finished draft or comment still flags (the filing gate).

    Runs the same finders as `redact` over the whole text, plus every value `redaction`
    learnt; a placeholder is never a finding. An empty tuple means safe to send.
    """
    rules = rules or default_redact_rules()
    spans = _Finder(text, rules).run()
    if redaction is not None and redaction.mapping:
        pattern = _hunt_pattern(tuple(value for value, _ in redaction.mapping))
        for match in pattern.finditer(text):
            spans.append(_Found(match.start(), match.end(), match.group(0), "known-value", "known"))
    out = []
    for span in _resolve(spans):
        line = text.count("\n", 0, span.start) + 1
        sample = span.value[:3] + "…" if len(span.value) > 3 else "…"
        out.append(Leak(kind=span.kind, line=line, sample=f"{sample} {len(span.value)} chars"))
    return tuple(out)


# A Markdown backslash escape (CommonMark: any ASCII punctuation).
_MD_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _readable(line: str) -> str:
    """One line as a reader sees it: Markdown escapes and HTML entities undone (an
    entity that decodes to a line break stays on this line)."""
    import html

    if "\\" in line:
        line = _MD_ESCAPE_RE.sub(r"\1", line)
    if "&" in line:
        line = html.unescape(line).replace("\r", " ").replace("\n", " ")
    return line


def scan_document(
    document: str, *, redaction: Redaction | None = None, rules: Rules | None = None
) -> tuple[Leak, ...]:
    """The one pre-send check of an upstream draft, shared by `report lint` and the filing
    gate: `leaks` over the document as a reader sees it (Markdown escapes and HTML
    entities undone, so `/home/&lt;user-1&gt;` is the tool's own placeholder, and an
    escaped `ghp\\_...` is still a token), line numbers those of the document (front
    matter included: the file line). The gate adds `redaction`, the values the draft's
    own redaction learnt."""
    lines = re.split(r"\r\n?|\n", document)
    return leaks("\n".join(_readable(line) for line in lines), redaction=redaction, rules=rules)


def report_lines(entries: Sequence[RedactionEntry]) -> list[str]:
    """The redaction report for people: `kind in where: count`, in report order."""
    return [f"{e.kind} in {e.where}: {e.count}" for e in entries]
