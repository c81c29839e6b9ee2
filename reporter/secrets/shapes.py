"""Secret *shapes*: where a secret sits inside any text (the detectors behind `reporter.secrets`).

Input: any text. Output: `SecretHit`s (offsets, a stable `kind`, a human `name` and the
secret `value`: the part to hide, not its context). Two sources, merged:

* `SECRET_PATTERNS`: our regexes for provider token formats (GitHub, Hugging Face,
  OpenAI, Anthropic, AWS, Slack, Stripe, Google, GitLab, npm, PyPI, SendGrid, ...),
  bearer / basic / JWT credentials (also percent-encoded: `Bearer%20...`), private-key
  blocks (also inside one-line env values with literal `\\n`), passwords in URLs
  (`redis://:PW@host`), secret query parameters (`?key=`, `&sig=`, `access_token=`),
  webhook URLs (Slack, Discord, Teams, Feishu, Zapier, ...), connection strings
  (`AccountKey=`, `Password=`), authorization headers (`{"Authorization": "Token ..."}`),
  `("user", "password")` tuples under a secret name, options whose name says secret
  (`--admin-pass X`, `--sas=X`, `-p X`, `-a X`) and `name=value` / `name: value`
  assignments whose name says secret (`reporter.secrets.names`: `VLLM_PASS`, `NCCL_KEY`);
* detect-secrets' provider plugins (Yelp's maintained detector set), called through
  `analyze_string` only: that path is pure regex work and never makes the network
  verification calls that `analyze_line` may make. Its high-entropy plugins get their
  entropy limit applied here. It catches formats we do not list ourselves (Twilio,
  Mailchimp, Square, Artifactory, IBM, Azure storage keys, Discord, Telegram, ...) and
  quoted high-entropy strings such as secret-looking `--locals` values.

A hit whose value is already a redaction placeholder (`<secret-1>`, `[redacted]`) is
not reported, so a redacted text scans clean. Example::

    >>> [(h.kind, h.value) for h in scan("curl -H 'Authorization: Bearer abcdefghij0123456789'")]
    [('bearer-token', 'abcdefghij0123456789')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from reporter.secrets.names import is_secret_name
from reporter.secrets.needles import Haystack, may_match, needle_groups

# Values made only of placeholders and punctuation are redaction output, not secrets.
PLACEHOLDER_RE = re.compile(r"<[a-z][a-z0-9-]*-\d+>|\[redacted\]")
_NOT_A_VALUE_RE = re.compile(r"[\s\"'`.,;:()\[\]{}<>-]*")
# Quoted high-entropy strings shorter than this are ids and short hashes (a 12-digit hang
# signature), not credentials: provider keys and tokens are 20 characters and more.
MIN_ENTROPY_LENGTH = 20
# Values of a secret-named key that say "no secret here".
_INERT_VALUES = frozenset({"true", "false", "none", "null", "nil", "yes", "no", "on", "off"})


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretPattern:
    """One secret shape: `group` is the part of the match that is the secret."""

    kind: str
    name: str
    pattern: re.Pattern[str]
    group: int = 0
    # Group whose text must be a secret name (`is_secret_name`) for the match to count.
    name_group: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SecretHit:
    """A secret found in a text: `start`/`end` delimit `value` in that text."""

    kind: str
    name: str
    value: str
    start: int
    end: int


SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        kind="private-key",
        name="private key",
        # A whole block, also when it is one env value with literal `\n`s; a block cut
        # off before its END line still hides the key lines that follow.
        pattern=re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,65536}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\\n|\n|[A-Za-z0-9+/=: -]){0,65536})"
        ),
    ),
    SecretPattern(
        kind="github-token",
        name="GitHub token",
        pattern=re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ),
    SecretPattern(
        kind="huggingface-token",
        name="Hugging Face token",
        pattern=re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    ),
    SecretPattern(
        kind="anthropic-key",
        name="Anthropic key",
        pattern=re.compile(r"\bsk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_-]{20,}"),
    ),
    SecretPattern(
        kind="openai-key",
        name="OpenAI key",
        pattern=re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ),
    SecretPattern(
        kind="aws-access-key-id",
        name="AWS access key id",
        pattern=re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ),
    SecretPattern(
        kind="aws-secret-access-key",
        name="AWS secret access key",
        pattern=re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        group=1,
    ),
    SecretPattern(
        kind="slack-webhook",
        name="Slack webhook",
        pattern=re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ),
    SecretPattern(
        kind="slack-token",
        name="Slack token",
        pattern=re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ),
    SecretPattern(
        kind="stripe-key",
        name="Stripe key",
        pattern=re.compile(r"\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ),
    SecretPattern(
        kind="google-api-key",
        name="Google API key",
        pattern=re.compile(r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    ),
    SecretPattern(
        kind="google-oauth-secret",
        name="Google OAuth client secret",
        pattern=re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{20,}"),
    ),
    SecretPattern(
        kind="gitlab-token", name="GitLab token", pattern=re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")
    ),
    SecretPattern(
        kind="npm-token", name="npm token", pattern=re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")
    ),
    SecretPattern(
        kind="pypi-token",
        name="PyPI token",
        pattern=re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}"),
    ),
    SecretPattern(
        kind="sendgrid-key",
        name="SendGrid key",
        pattern=re.compile(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    ),
    SecretPattern(
        kind="databricks-token",
        name="Databricks token",
        pattern=re.compile(r"\bdapi[0-9a-f]{32}\b"),
    ),
    SecretPattern(
        kind="jwt",
        name="JSON Web Token",
        pattern=re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    SecretPattern(
        kind="bearer-token",
        name="bearer token",
        pattern=re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)"),
        group=1,
    ),
    SecretPattern(
        kind="basic-auth",
        name="basic auth credentials",
        pattern=re.compile(
            r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+([A-Za-z0-9+/]{8,}={0,2})"
        ),
        group=1,
    ),
    SecretPattern(
        kind="url-password",
        name="password in a URL",
        pattern=re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^/\s:@]{0,256}:([^/\s@]{1,1024})@"),
        group=1,
    ),
    SecretPattern(
        kind="azure-key",
        name="Azure account key or SAS signature",
        pattern=re.compile(
            r"(?:AccountKey=|SharedAccessSignature=|[?&]sig=)([A-Za-z0-9%+/=]{20,})"
        ),
        group=1,
    ),
    SecretPattern(
        kind="cookie",
        name="cookie",
        pattern=re.compile(
            r"(?im)\b(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?([^\s\"';]+=[^\s\"';]{8,})"
        ),
        group=1,
    ),
    SecretPattern(
        kind="webhook-url",
        name="webhook URL",
        # The whole URL is the credential: its path holds the token.
        pattern=re.compile(
            r"https?://(?:"
            r"(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[\w-]{20,100}"
            r"|[\w-]{1,63}\.webhook\.office\.com/webhookb2/[\w@/-]{20,300}"
            r"|outlook\.office(?:365)?\.com/webhook/[\w@/-]{20,300}"
            r"|hooks\.zapier\.com/hooks/catch/\d{1,20}/\w{4,40}/?"
            r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/[\w-]{16,64}"
            r"|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=[\w-]{16,64}"
            r"|[\w.-]{1,100}/hooks/[A-Za-z0-9]{20,64}"
            r"|[\w.-]{1,100}/(?:[\w.-]{1,64}/){0,6}webhooks?/[\w/-]{0,200}?[A-Za-z0-9_-]{20,100}"
            r")"
        ),
    ),
    SecretPattern(
        kind="percent-encoded-bearer",
        name="percent-encoded bearer token",
        pattern=re.compile(r"(?i)\b(?:bearer|token|basic)(?:%20|\+)([A-Za-z0-9._~/%-]{12,4096}=*)"),
        group=1,
    ),
    SecretPattern(
        kind="query-secret",
        name="secret in a URL query",
        pattern=re.compile(
            r"(?i)[?&;](?:key|api[_-]?key|apikey|token|access[_-]?token|auth[_-]?token|sig|"
            r"signature|secret|client[_-]?secret|password|passwd|pwd|auth|code|sas|"
            r"x-amz-signature|x-amz-credential|x-goog-signature|x-goog-credential)"
            r"=([^&\s#\"'<>]{4,4096})"
        ),
        group=1,
    ),
    SecretPattern(
        kind="authorization-header",
        name="authorization header",
        # `Authorization: Token X`, `{"Authorization": "Bearer X"}`, `authorization=X`.
        pattern=re.compile(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s{0,4}[:=]\s{0,4}[\"']?"
            r"(?:(?:token|bearer|basic|digest|apikey|key|sso-key|dsn)(?:\s{1,4}|%20|\+))?"
            r"([^\s\"',;}&]{6,4096})"
        ),
        group=1,
    ),
    SecretPattern(
        kind="credential-tuple",
        name="(user, password) pair",
        # `auth: ("admin", "pw")`, `credentials=('svc', 'pw')`: the second item is the secret.
        pattern=re.compile(
            r"(?i)([\w.-]{1,64})[\"']?\s{0,4}(?::|=|=>)\s{0,4}[(\[]\s{0,4}[\"'][^\"'\n]{1,128}[\"']"
            r"\s{0,4},\s{0,4}[\"']([^\"'\n]{1,256})[\"']\s{0,4}[)\]]"
        ),
        group=2,
        name_group=1,
    ),
    SecretPattern(
        kind="secret-flag",
        name="secret command-line option",
        # `--api-key X`, `--admin-pass=X`, `--sas X`, `-p X`, `-a X`: the option's name says.
        pattern=re.compile(
            r"(?<![\w-])(-[A-Za-z]|--[A-Za-z0-9][A-Za-z0-9_.-]{0,63})(?:=|[ \t]{1,8})[\"']?"
            r"([^\s\"'-][^\s\"']{0,4095})"
        ),
        group=2,
        name_group=1,
    ),
    SecretPattern(
        kind="user-password-option",
        name="user:password option",
        # curl / wget style `-u user:pw`, `--user user:pw`, `--proxy-user user:pw`.
        pattern=re.compile(
            r"(?<![\w-])(?:-u|-U|--user|--proxy-user|--http-user)(?:=|[ \t]{1,8})[\"']?"
            r"[^\s:\"'/]{1,64}:([^\s\"']{3,256})"
        ),
        group=1,
    ),
    SecretPattern(
        kind="secret-short-flag",
        name="password option (-pPASSWORD)",
        # mysql's attached form; all-lowercase words (`-pthread`) are compiler flags.
        pattern=re.compile(r"(?<![\w-])-p(?=[^\s\"']*[A-Z0-9!@#$%^&*])([^\s\"'-][^\s\"']{3,255})"),
        group=1,
    ),
    SecretPattern(
        kind="secret-assignment",
        name="secret-named value",
        # `api_key=...`, `"password": "..."`, `token: ...`, `SECRET_KEY='...'`, `VLLM_PASS=...`,
        # `X-Api-Key: ...`: the name must say secret (`reporter.secrets.names`).
        pattern=re.compile(
            r"(?<![\w.-])([A-Za-z_][\w.-]{0,127})[\"']?\s{0,4}(?::|=|=>)\s{0,4}[\"']?"
            r"([^\s\"'<>,;&()\[\]{}][^\s\"'<>,;&()\[\]{}]{3,4095})"
        ),
        group=2,
        name_group=1,
    ),
    SecretPattern(
        kind="connection-string",
        name="secret in a connection string",
        pattern=re.compile(
            r"(?i)(?:^|[;\s\"'])(?:password|pwd|accountkey|sharedaccesskey|sharedsecretvalue)"
            r"\s{0,4}=\s{0,4}([^;\s\"']{3,4096})"
        ),
        group=1,
    ),
)


def _is_value(value: str) -> bool:
    """False for values that are placeholders, empty, numbers, paths or booleans."""
    if not value or _NOT_A_VALUE_RE.fullmatch(PLACEHOLDER_RE.sub("", value)):
        return False
    stripped = value.strip("\"'")
    if stripped.lower() in _INERT_VALUES:
        return False
    return not re.fullmatch(r"[\d.:_-]+|[/~.][\w./-]*|\$\{?\w+\}?|%\(?\w+\)?s?|\*+", stripped)


_AUTH_SCHEMES = frozenset({"basic", "bearer", "token", "digest", "negotiate", "apikey"})
_NAMED_KINDS = frozenset({"secret-assignment", "secret-flag", "secret-short-flag"})


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


def pattern_hits(
    text: str, patterns: Sequence[SecretPattern] = SECRET_PATTERNS
) -> Iterator[SecretHit]:
    """Hits of `SECRET_PATTERNS` (ours only), in pattern order then position.

    `patterns` may leave out patterns known to match nothing in `text` (`possible`).
    """
    for entry in patterns:
        if entry.pattern.search(text) is None:
            continue  # most texts match no pattern: one search each, no generator
        for match in _matches(entry, text):
            value = match.group(entry.group)
            if not _is_value(value) or PLACEHOLDER_RE.search(value):
                continue  # nothing, or what a previous masking left
            if entry.kind in _NAMED_KINDS and (
                value.isdigit() or value.startswith("<") or value.lower() in _AUTH_SCHEMES
            ):
                continue  # a number, a placeholder, or the scheme word before the credential
            yield SecretHit(
                kind=entry.kind,
                name=entry.name,
                value=value,
                start=match.start(entry.group),
                end=match.end(entry.group),
            )


# detect-secrets plugins that we run, by module and class name; IP addresses are the
# identifier redaction's job, not a secret (`IPPublicDetector` is left out).
_LIBRARY_PLUGINS = (
    ("aws", "AWSKeyDetector"),
    ("artifactory", "ArtifactoryDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("ibm_cloud_iam", "IbmCloudIamDetector"),
    ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("jwt", "JwtTokenDetector"),
    ("keyword", "KeywordDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("private_key", "PrivateKeyDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("softlayer", "SoftlayerDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
    ("high_entropy_strings", "Base64HighEntropyString"),
    ("high_entropy_strings", "HexHighEntropyString"),
)


@cache
def _library_plugins() -> tuple[Any, ...]:
    """detect-secrets plugin instances (imported on first use: it costs start-up time)."""
    import importlib

    plugins: list[Any] = []
    for module, name in _LIBRARY_PLUGINS:
        plugins.append(getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)())
    return tuple(plugins)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def library_hits(text: str) -> Iterator[SecretHit]:
    """Hits of detect-secrets' plugins, line by line (no network: `analyze_string` only)."""
    offset = 0
    for line in text.splitlines(keepends=True):
        if len(line) > 4 and not line.isspace():
            for plugin in _library_plugins():
                limit = getattr(plugin, "entropy_limit", None)
                for found in plugin.analyze_string(line):
                    value = str(found)
                    if limit is not None and (
                        len(value) < MIN_ENTROPY_LENGTH
                        or plugin.calculate_shannon_entropy(value) < limit
                    ):
                        continue
                    if not _is_value(value) or PLACEHOLDER_RE.search(value):
                        continue
                    at = line.find(value)
                    if at < 0:
                        continue
                    yield SecretHit(
                        kind=f"detect-secrets-{_slug(plugin.secret_type)}",
                        name=f"{plugin.secret_type} (detect-secrets)",
                        value=value,
                        start=offset + at,
                        end=offset + at + len(value),
                    )
        offset += len(line)


# Where overlapping hits tie, the first-listed pattern wins (`scan`).
_PATTERN_ORDER = {p.kind: n for n, p in enumerate(SECRET_PATTERNS)}


def possible(texts: Iterable[str]) -> tuple[SecretPattern, ...]:
    """The patterns of `SECRET_PATTERNS` that may match in some of `texts`: each of the
    others lacks literal text it needs in all of them (`needles`), so it matches none."""
    haystack = Haystack(texts)
    return tuple(p for p in SECRET_PATTERNS if may_match(needle_groups(p.pattern), haystack))


def scan(
    text: str, *, library: bool = True, patterns: Sequence[SecretPattern] = SECRET_PATTERNS
) -> list[SecretHit]:
    """Every secret in `text`, sorted by start, longest first; overlaps resolved.

    Where hits overlap, the earlier (then longer, then first-listed) one wins, so a
    private-key block is one hit and `sk-ant-...` is an Anthropic key, not an OpenAI one.
    `patterns`: `SECRET_PATTERNS` less those known to match nothing here (`possible`).
    """
    hits = list(pattern_hits(text, patterns))
    if library:
        hits.extend(library_hits(text))
    if not hits:
        return hits
    order = _PATTERN_ORDER
    hits.sort(key=lambda h: (h.start, -(h.end - h.start), order.get(h.kind, len(order)), h.kind))
    kept: list[SecretHit] = []
    end = -1
    for hit in hits:
        if hit.start >= end:
            kept.append(hit)
            end = hit.end
    return kept


def find_secrets(text: str) -> Iterator[tuple[int, str, str]]:
    """(1-based line, name, masked sample) for every likely secret in `text` (for lint)."""
    for hit in scan(text):
        line = text.count("\n", 0, hit.start) + 1
        yield line, hit.name, f"{hit.value[:4]}… ({len(hit.value)} characters)"
