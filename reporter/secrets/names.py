"""Secret *names*: does a variable, option, key or header name say its value is a secret?

One rule for every place a name comes with a value: environment variables of any
project (`VLLM_PASS`, `NCCL_KEY`, `MYSQL_PWD`, `HF_TOKEN`), command-line options
(`--admin-pass`, `--sas`, `-p`, `-a`), py-spy `--locals` names (`api_key`, `auth`),
JSON / YAML keys (`"password"`), HTTP headers (`Authorization`, `X-Api-Key`) and
metric labels. The word lists are data (`reporter/data/secrets.toml` `[names]`). A name
is split into words (`_`, `-`, `.`, spaces and camelCase), and it
is secret when one word is a secret word, or a word ends in one (`adminpass`,
`hftoken`), or `key` follows another word (`api_key`, `NCCL_KEY`) that is not a
data-structure word (`cache_key`, `sort_key`).

Deliberately not secret: `TOKENIZERS_PARALLELISM`, `max_new_tokens`, `pad_token`
(model vocabulary), `--tokenizer-path`, `bypass`. Example::

    >>> [is_secret_name(n) for n in ("VLLM_PASS", "--admin-pass", "-p", "MAX_NEW_TOKENS")]
    [True, True, True, False]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from reporter.core import rules


@dataclass(frozen=True, slots=True)
class NameRules:
    """The `[names]` word lists of `reporter/data/secrets.toml`."""

    words: frozenset[str]
    """Words that make the whole name secret wherever they stand."""
    suffixes: tuple[str, ...]
    """A word that *ends* in one of these is secret too (`adminpass`, `hftoken`) ..."""
    not_secret: frozenset[str]
    """... unless it is one of these ordinary words (`bypass`)."""
    vocabulary_token: frozenset[str]
    """`<word>_token` where the word says "a vocabulary token", not a credential."""
    data_key: frozenset[str]
    """`<word>_key` where the key is a data-structure key, not a credential."""
    meta_last: frozenset[str]
    """A last word that says "a property of the secret" (`SSH_AUTH_SOCK`, `--password-file`)."""
    short_flags: frozenset[str]
    """Short options whose value is a password in the usual tools (`mysql -p`)."""
    user_password: frozenset[str]
    """Options whose value is `user:password` when it holds a colon (`curl -u`)."""
    last_words: frozenset[str] = frozenset()
    """A last word that makes the name secret (`ANALYTICS_DB`, `METRICS_DSN`)."""
    inner: tuple[str, ...] = ()
    """A word that contains one of these anywhere is secret (`REDIS_PASSWD2`) ..."""
    inner_not_secret: tuple[str, ...] = ()
    """... unless it starts with one of these ordinary words (`passthrough`)."""


@cache
def name_rules() -> NameRules:
    """The name rules shipped in `reporter/data/secrets.toml` (read once)."""
    table = rules.load("secrets.toml").get("names", {})

    def words(key: str) -> frozenset[str]:
        return frozenset(w.lower() for w in table.get(key, []))

    return NameRules(
        words=words("words"),
        suffixes=tuple(w.lower() for w in table.get("suffixes", [])),
        not_secret=words("not_secret"),
        vocabulary_token=words("vocabulary_token"),
        data_key=words("data_key"),
        meta_last=words("meta_last"),
        short_flags=frozenset(table.get("short_flags", [])),
        user_password=frozenset(w.lower() for w in table.get("user_password", [])),
        last_words=words("last_words"),
        inner=tuple(w.lower() for w in table.get("inner", [])),
        inner_not_secret=tuple(w.lower() for w in table.get("inner_not_secret", [])),
    )


@cache
def name_needs() -> frozenset[str]:
    """Lower-case words one of which is in every name `is_secret_name` accepts (in its lower
    case): a text holding none of them holds no secret name (`reporter.secrets.gate`)."""
    table = name_rules()
    short = {flag.lower() for flag in table.short_flags}
    return table.words | table.last_words | {"key", *table.suffixes, *table.inner, *short}


_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT_RE = re.compile(r"[^A-Za-z0-9]+")
# Names longer than this are not names (a bound on the work per call).
MAX_NAME = 128


def _words(name: str) -> list[str]:
    """`name` split into lower-case words (`_`, `-`, `.`, spaces and camelCase)."""
    stripped = name.strip().strip("\"'")
    return [w.lower() for w in _SPLIT_RE.split(_CAMEL_RE.sub("_", stripped)) if w]


@lru_cache(maxsize=4096)
def is_secret_by_last_word(name: str) -> bool:
    """True when only its last word makes `name` secret (`REDIS_DB`, `METRICS_DSN`): a value
    that is a number, a path or a boolean is then shown (`REDIS_DB=0`, an index)."""
    if not name or len(name) > MAX_NAME:
        return False
    words = _words(name)
    return len(words) > 1 and words[-1] in name_rules().last_words and not _secret_words(words[:-1])


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when `name` (a variable, option, key, label or header) says "secret value"."""
    if not name or len(name) > MAX_NAME:
        return False
    table = name_rules()
    if name.strip().strip("\"'") in table.short_flags:
        return True
    words = _words(name)
    if len(words) > 1 and words[-1] in table.last_words:
        return True
    return _secret_words(words)


def _secret_words(words: list[str]) -> bool:
    """The word rules of `is_secret_name` over the words of a name."""
    table = name_rules()
    if words in (["pwd"], ["oldpwd"]):
        return False  # the shell's working directory, not a password
    if len(words) > 1 and words[-1] in table.meta_last:
        return False
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        if word == "token" and before in table.vocabulary_token:
            continue
        if word in table.words:
            return True
        if word == "key" and index and before not in table.data_key:
            return True
        if word in table.not_secret:
            continue
        if len(word) > 5 and word.endswith(table.suffixes):
            return True
        if len(word) > 3 and word.endswith("key") and word[:-3] in {"api", "access", "secret"}:
            return True
        if any(part in word for part in table.inner) and not any(
            word.startswith(ordinary) or word.endswith(ordinary)
            for ordinary in table.inner_not_secret + tuple(table.not_secret)
        ):
            return True
    return False
