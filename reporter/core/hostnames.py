"""One grammar for host names, shared by `report collect` (what it accepts) and the bundle
loader (what it reads back), so a bundle collect wrote is never refused for its host names.

A host is `[USER@]NAME[:PORT]`:

* NAME: an RFC 1123 host name (labels of letters, digits and `-`, joined by dots; `_` is
  allowed too, as Docker container and some cluster node names use it), an IPv4 address, an
  IPv6 address (bare, or in brackets before a port; a `%zone` suffix allowed), or a
  Kubernetes-style `KIND/NAME` (`deploy/sglang`, `pod/decode-3`);
* USER: a POSIX login name; `USER:PASSWORD@` is refused (a password would be kept in
  `bundle.toml` and the shell's history);
* PORT: 1-65535.

Errors never repeat the value: a rejected name may be a secret pasted by mistake
(`GH_TOKEN=ghp_...`, a URL with a password), and errors reach terminals and logs.
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_DNS = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")
_KIND = re.compile(r"[a-z][a-z0-9.-]{0,62}")
MAX_LENGTH = 255


def _name_problem(name: str) -> str:
    """ "" when `name` (no user, no port) is a host name; else what is wrong, without it."""
    if not name:
        return "the name is empty"
    if len(name) > 253:
        return f"the name is {len(name)} characters long (at most 253)"
    if ":" in name:
        address = name.split("%", 1)[0]
        zone = name[len(address) + 1 :]
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return "it has a ':' but is not an IPv6 address"
        if zone and not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", zone):
            return "its IPv6 zone is not an interface name"
        return ""
    kind, slash, rest = name.rpartition("/")
    if slash:
        if not _KIND.fullmatch(kind) or not rest:
            return "only one '/' is allowed, after a lower-case kind (deploy/NAME, pod/NAME)"
        name = rest
    if not _DNS.fullmatch(name):
        return (
            "a host name is letters, digits, '-' and '_' in dot-separated labels of at most "
            "63 characters, not starting or ending with '-'"
        )
    return ""


def split_host(spec: str) -> tuple[str | None, str, int | None, str]:
    """`[USER@]NAME[:PORT]` -> (user, name, port, problem); `problem` is "" when the spec is
    a host, else why not in a few words that never repeat the spec."""
    if not spec or len(spec) > MAX_LENGTH:
        return None, "", None, f"it is {len(spec)} characters long (1 to {MAX_LENGTH})"
    if any(c.isspace() or not c.isprintable() for c in spec):
        return None, "", None, "it holds spaces or control characters"
    if spec.startswith("-"):
        return None, "", None, "it starts with '-' (it would be read as an option)"
    user: str | None = None
    rest = spec
    if "@" in spec:
        user, _, rest = spec.rpartition("@")
        if ":" in user:
            return None, "", None, "it holds a password (USER:PASSWORD@); use an ssh key or agent"
        if not _USER.fullmatch(user):
            return None, "", None, "the part before '@' is not a user name"
    port: int | None = None
    if rest.startswith("["):
        name, close, tail = rest[1:].partition("]")
        if not close or (tail and not (tail.startswith(":") and tail[1:].isdigit())):
            return None, "", None, "write an IPv6 address with a port as [ADDRESS]:PORT"
        if ":" not in name:
            return None, "", None, "only an IPv6 address goes in brackets"
        port = int(tail[1:]) if tail else None
    elif rest.count(":") == 1:
        name, _, text = rest.partition(":")
        if not text.isdigit():
            return None, "", None, "what follows ':' is not a port number"
        port = int(text)
    else:
        name = rest
    if port is not None and not 0 < port < 65536:
        return None, "", None, f"port {port} is out of range (1-65535)"
    problem = _name_problem(name)
    if problem:
        return None, "", None, problem
    return user, name, port, ""


def host_problem(spec: str) -> str:
    """ "" when `spec` is a host as collect takes it and the loader reads it back."""
    return split_host(spec)[3]


def is_host(spec: str) -> bool:
    """True when `spec` follows the grammar (see the module docstring)."""
    return not host_problem(spec)
