""" "Fixed in vX": which change closed an issue, the first release that has it, and what
that means for the deployment in the bundle.

Inputs: an issue's timeline events as GitHub's REST API serves them
(`GET /repos/{o}/{r}/issues/{n}/timeline`), a repo's tag names, a `contains(tag)` check
(GitHub's compare API), the deployed version. Outputs: `Change` (what closed it),
the first release tag (`first_release`), one sentence (`fixed_note`). The network
calls live in `search.find_fixes`; everything here is pure.

What closed an issue, in order of trust:

1. the last `closed` event's `commit_id` (a commit or merged pull request that said
   "fixes #N"), named after the merged pull request that cross-references the issue
   when there is one;
2. else the pull request that cross-references the issue, was merged and is in the
   same repository, the last one merged before the issue closed (GitHub's "linked pull
   request"); its merge commit is looked up by the caller;
3. else nothing (`kind` `none`): closed by hand, with no change to point at.

Release order is `packaging.version` order over the tags that parse as versions
(`v0.5.3`, `0.5.3`; pre-releases and `nightly` left out); the first release holding a
commit is found by bisection, as releases of one line contain everything before them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

# Compare requests one bisection may spend (2**12 tags is more than any tracker has).
MAX_COMPARES = 12


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What closed an issue: `kind` `pull` (ref `#N`), `commit` (ref: short SHA) or `none`."""

    kind: str
    ref: str
    url: str | None = None
    sha: str | None = None
    pull: int | None = None


NO_CHANGE = Change(kind="none", ref="")


def closing_change(events: Sequence[Mapping[str, Any]], repo: str) -> Change:
    """What closed the issue, from its timeline (see the module docstring)."""
    closed = [e for e in events if e.get("event") == "closed"]
    last_closed = closed[-1] if closed else None
    closed_at = str(last_closed.get("created_at") or "") if last_closed else ""
    pulls = _merged_pulls(events, repo, before=closed_at)
    commit = last_closed.get("commit_id") if last_closed else None
    if isinstance(commit, str) and commit:
        if pulls:
            number, url = pulls[-1]
            return Change(kind="pull", ref=f"#{number}", url=url, sha=commit, pull=number)
        return Change(
            kind="commit",
            ref=commit[:12],
            url=f"https://github.com/{repo}/commit/{commit}",
            sha=commit,
        )
    if pulls:
        number, url = pulls[-1]
        return Change(kind="pull", ref=f"#{number}", url=url, pull=number)
    return NO_CHANGE


def _merged_pulls(
    events: Sequence[Mapping[str, Any]], repo: str, *, before: str
) -> list[tuple[int, str]]:
    """(number, url) of merged pull requests of `repo` cross-referencing the issue, merged
    no later than `before` (when given), in the order they were merged."""
    found: list[tuple[str, int, str]] = []
    for event in events:
        if event.get("event") != "cross-referenced":
            continue
        source = event.get("source")
        issue = source.get("issue") if isinstance(source, Mapping) else None
        if not isinstance(issue, Mapping):
            continue
        pull = issue.get("pull_request")
        if not isinstance(pull, Mapping) or not pull.get("merged_at"):
            continue
        merged = str(pull["merged_at"])
        if before and merged > before:
            continue
        if not _same_repo(issue, repo):
            continue
        number = issue.get("number")
        if isinstance(number, int):
            url = str(issue.get("html_url") or f"https://github.com/{repo}/pull/{number}")
            found.append((merged, number, url))
    found.sort()
    return [(number, url) for _, number, url in found]


def _same_repo(issue: Mapping[str, Any], repo: str) -> bool:
    where = issue.get("repository_url") or issue.get("repository", {}).get("full_name", "")
    if not isinstance(where, str) or not where:
        return True
    return where.lower().rstrip("/").endswith("/" + repo.lower()) or where.lower() == repo.lower()


def release_version(tag: str) -> Version | None:
    """The version a release tag names (`v0.5.3` -> 0.5.3), None for other tags and for
    pre-releases."""
    try:
        version = Version(tag)
    except InvalidVersion:
        return None
    if version.is_prerelease or version.is_devrelease:
        return None
    return version


def first_release(tags: Sequence[str], contains: Callable[[str], bool]) -> str | None:
    """The lowest release tag that `contains` the change, by bisection over release order;
    None when the newest release does not contain it yet."""
    releases = sorted(
        ((v, t) for t in tags if (v := release_version(t)) is not None),
        key=lambda item: (item[0], item[1]),
    )
    if not releases:
        return None
    low, high = 0, len(releases) - 1
    spent = 0
    if not contains(releases[high][1]):
        return None
    spent += 1
    while low < high and spent < MAX_COMPARES:
        middle = (low + high) // 2
        spent += 1
        if contains(releases[middle][1]):
            high = middle
        else:
            low = middle + 1
    return releases[high][1]


def deployed_version(
    repo: str, packages: Mapping[str, str], manifest_version: str = "", service: str = ""
) -> str:
    """The deployment's version of `repo`'s software: the installed package named after
    the repository (`sgl-project/sglang` -> `sglang`, `pytorch/pytorch` -> `torch`); else
    the manifest's `version` when it names that software (`sglang 0.5.2`), or is a bare
    version and the manifest's `service` names it; else "" (not known)."""
    name = repo.rsplit("/", 1)[-1].lower().replace("_", "-")
    names = [n for n in (name, _ALIASES.get(name, ""), f"{name}-python") if n]
    for candidate in names:
        if packages.get(candidate):
            return packages[candidate]
    text = manifest_version.strip()
    for candidate in names:
        match = re.search(
            rf"(?<![\w-]){re.escape(candidate)}[\s=:@-]*v?(\d[\w.+!-]*)", text, re.IGNORECASE
        )
        if match:
            return match.group(1)
    if text and any(c in service.lower() for c in names):
        bare = text.removeprefix("v")
        try:
            Version(bare)
        except InvalidVersion:
            return ""
        return bare
    return ""


_ALIASES = {"pytorch": "torch"}


def has_fix(tag: str, deployed: str) -> bool | None:
    """True when version `deployed` is at or after release `tag` (a pre-release of that
    version is before it); None when either is not a version."""
    fixed = release_version(tag)
    try:
        running = Version(deployed)
    except InvalidVersion:
        return None
    if fixed is None:
        return None
    return running >= fixed


def fixed_note(
    number: int, repo: str, change: Change, tag: str | None, deployed: str
) -> str | None:
    """One sentence for a match closed as completed, e.g. `matches sgl-project/sglang#4388,
    fixed in v0.5.3 (#4410); this deployment runs 0.5.2, without the fix`."""
    if change.kind == "none":
        return None
    by = f" ({change.ref})"
    where = f"matches {repo}#{number}"
    if tag is None:
        return f"{where}, fixed by {change.ref} in no release yet" + (
            f"; this deployment runs {deployed}" if deployed else ""
        )
    sentence = f"{where}, fixed in {tag}{by}"
    if not deployed:
        return sentence + "; the deployment's version is not in the bundle"
    verdict = has_fix(tag, deployed)
    tail = {
        True: ", which has the fix",
        False: ", without the fix: upgrading should help",
        None: "",
    }[verdict]
    return f"{sentence}; this deployment runs {deployed}{tail}"
