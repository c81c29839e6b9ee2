"""Issue references in a text: `#N`, `owner/repo#N` and GitHub issue or pull URLs.

A query that names an issue of the repository it searches ("The #3836 problem still
exists", a pasted comment linking the issue it follows up) says more about which issue
it duplicates than any word it shares. `cited(text, repos)` finds those references: a
qualified one (`owner/repo#N`, a URL) counts when its repository is one of `repos`; a
bare `#N` when exactly one repository is searched (with several it names none for
sure). Numbers that only look like references are left out: gdb and native frame
numbers (`#0  0x00007f...`), and `#N` after a word that counts things (`thread #3`,
`rank #1`, `GPU #0`).

    cited("The #3836 problem still exists", ("sgl-project/sglang",))
    == (("sgl-project/sglang", 3836),)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# At most this many references are taken from one text: a changelog pasted into an
# issue can list hundreds, and then none of them is what the issue is about.
MAX_REFERENCES = 20

_URL_RE = re.compile(
    r"https?://(?:www\.)?github\.com/([A-Za-z0-9][\w.-]*/[\w.-]+?)/(?:issues|pull)/(\d{1,9})\b",
    re.IGNORECASE,
)
_QUALIFIED_RE = re.compile(r"(?<![\w/.-])([A-Za-z0-9][\w.-]*/[\w.-]+)#(\d{1,9})\b")
# A bare #N: not inside a word, a path or a URL fragment; not a frame number (`#0  0x7f`).
_BARE_RE = re.compile(r"(?<![\w/&#])#(\d{1,9})\b(?!\s+0x[0-9a-fA-F])")
_COUNTING = frozenset(
    {"thread", "rank", "gpu", "device", "worker", "node", "step", "process", "proc", "no", "num"}
)
_WORD_BEFORE_RE = re.compile(r"([A-Za-z]+)\s*$")


def cited(text: str, repos: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """The issues of `repos` that `text` references, as `(repo, number)` in the spelling
    of `repos`, in order of first mention, at most `MAX_REFERENCES`."""
    if not repos or not text:
        return ()
    spelled = {repo.lower(): repo for repo in repos}
    found: dict[tuple[str, int], None] = {}
    taken: list[tuple[int, int]] = []
    for pattern in (_URL_RE, _QUALIFIED_RE):
        for match in pattern.finditer(text):
            taken.append(match.span())
            repo = spelled.get(match.group(1).lower().removesuffix(".git"))
            if repo is not None:
                found.setdefault((repo, int(match.group(2))), None)
    if len(spelled) == 1:
        (only,) = spelled.values()
        for match in _BARE_RE.finditer(text):
            start = match.start()
            if any(a <= start < b for a, b in taken):
                continue
            before = _WORD_BEFORE_RE.search(text, max(0, start - 24), start)
            if before is not None and before.group(1).lower() in _COUNTING:
                continue
            found.setdefault((only, int(match.group(1))), None)
    return tuple(found)[:MAX_REFERENCES]
