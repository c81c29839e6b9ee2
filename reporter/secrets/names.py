"""Secret *names*: does a variable, option, key or header name say its value is a secret?

One rule for every place a name comes with a value: environment variables of any
project (`VLLM_PASS`, `NCCL_KEY`, `MYSQL_PWD`, `HF_TOKEN`), command-line options
(`--admin-pass`, `--sas`, `-p`, `-a`), py-spy `--locals` names (`api_key`, `auth`),
JSON / YAML keys (`"password"`), HTTP headers (`Authorization`, `X-Api-Key`) and
metric labels. A name is split into words (`_`, `-`, `.`, spaces and camelCase), and it
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
from functools import lru_cache

# Words that make the whole name secret wherever they stand.
SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pass",
        "pwd",
        "pw",
        "secret",
        "secrets",
        "token",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "apikey",
        "sas",
        "privatekey",
        "accesskey",
        "secretkey",
        "webhook",
        "dsn",
    }
)
# A word that *ends* in one of these is secret too: `adminpass`, `hftoken`, `dbpassword`.
_SECRET_SUFFIXES = ("password", "passwd", "pass", "token", "secret", "apikey", "pwd")
# ... unless it is one of these ordinary words.
_NOT_SECRET_WORDS = frozenset(
    {"bypass", "compass", "surpass", "overpass", "underpass", "multipass", "onepass", "encompass"}
)
# `<word>_token` where the word says "a vocabulary token", not a credential.
_VOCABULARY_TOKEN = frozenset(
    {
        "pad",
        "bos",
        "eos",
        "unk",
        "sep",
        "cls",
        "mask",
        "start",
        "end",
        "stop",
        "special",
        "next",
        "first",
        "last",
        "max",
        "min",
        "num",
        "input",
        "output",
        "new",
        "prompt",
        "total",
        "generated",
        "draft",
        "eot",
        "image",
        "video",
        "audio",
        "think",
        "decoder",
        "per",
    }
)
# `<word>_key` where the key is a data-structure key, not a credential.
_DATA_KEY = frozenset(
    {
        "cache",
        "sort",
        "dict",
        "primary",
        "foreign",
        "hash",
        "lookup",
        "map",
        "partition",
        "routing",
        "group",
        "node",
        "metric",
        "request",
        "rid",
        "dedup",
        "shard",
        "layer",
        "state",
        "prefix",
        "radix",
        "kv",
        "match",
        "index",
        "sub",
        "row",
        "column",
        "field",
        "table",
        "object",
        "attr",
        "label",
        "config",
        "lora",
        "module",
        "param",
        "tensor",
        "weight",
        "block",
        "page",
        "slot",
        "event",
        "tag",
    }
)
# A last word that says "a property of the secret", not the secret: `SSH_AUTH_SOCK`,
# `--password-file`, `TOKEN_PATH`, `--auth-mode`.
_META_LAST = frozenset(
    {
        "sock",
        "socket",
        "file",
        "path",
        "dir",
        "mode",
        "type",
        "method",
        "url",
        "uri",
        "endpoint",
        "host",
        "port",
        "enabled",
        "enable",
        "len",
        "length",
        "size",
        "ttl",
        "timeout",
        "name",
        "env",
        "var",
        "required",
        "plugin",
    }
)
# Short options whose value is a password in the usual tools (`mysql -p`, `redis-cli -a`).
SECRET_SHORT_FLAGS = frozenset({"-p", "-a"})

_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT_RE = re.compile(r"[^A-Za-z0-9]+")
# Names longer than this are not names (a bound on the work per call).
MAX_NAME = 128


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when `name` (a variable, option, key, label or header) says "secret value"."""
    if not name or len(name) > MAX_NAME:
        return False
    stripped = name.strip().strip("\"'")
    if stripped in SECRET_SHORT_FLAGS:
        return True
    words = [w.lower() for w in _SPLIT_RE.split(_CAMEL_RE.sub("_", stripped)) if w]
    if words in (["pwd"], ["oldpwd"]):
        return False  # the shell's working directory, not a password
    if len(words) > 1 and words[-1] in _META_LAST:
        return False
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        if word == "token" and before in _VOCABULARY_TOKEN:
            continue
        if word in SECRET_WORDS:
            return True
        if word == "key" and index and before not in _DATA_KEY:
            return True
        if word in _NOT_SECRET_WORDS:
            continue
        if len(word) > 5 and word.endswith(_SECRET_SUFFIXES):
            return True
        if len(word) > 3 and word.endswith("key") and word[:-3] in {"api", "access", "secret"}:
            return True
    return False
