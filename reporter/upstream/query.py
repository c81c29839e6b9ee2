"""What to search for: a `Query` from an analyzed bundle or a free text, and GitHub search strings.

Inputs: a `Bundle` with its `Analysis`, or the text of an issue draft / a pasted dump.
Output: `Query` (repos, title, text, stacks as frame keys innermost first with a
weight, error lines). From the tp_desync bundle, by example::

    Query(repos=("sgl-project/sglang",),
          title="TP ranks split between all_reduce in check_hicache_events and the idle loop",
          stacks=(QueryStack(label="[0-1] all_reduce", weight=1.0,
                             keys=("all_reduce", "writing_check", "check_hicache_events",
                                   "on_idle", "event_loop_overlap", "run_scheduler_process")),
                  QueryStack(label="[2-3]", weight=0.6, keys=("self_check_during_idle", ...))),
          ...)

`github_queries()` turns a query into at most three `GET /search/issues` strings that
fit GitHub's limits (keywords ANDed, at most 256 characters of keywords, no boolean
operators), e.g. `"check_hicache_events" "writing_check" repo:sgl-project/sglang is:issue`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from reporter.analysis.result import Analysis, RankState
from reporter.model import Bundle
from reporter.upstream import signals as sig
from reporter.upstream import terms
from reporter.upstream.extract import extract, normalize_error, stack_keys
from reporter.upstream.fixes import deployed_version
from reporter.upstream.records import IssueRecord

# Weight of a stack class relative to a stuck / collective one: the ranks that wait say
# more about the hang than ranks seen once outside a collective, and those more than
# ranks seen moving (they are doing their ordinary work).
SIDE_STACK_WEIGHT = 0.6
MOVING_STACK_WEIGHT = 0.35
# The manifest fields that describe the symptom (the others hold paths and commands).
TEXT_FIELDS = ("summary", "description", "symptoms", "symptom", "impact", "what_happened")
# The decay of a frame's term weight with its distance from the innermost frame: the
# stack similarity's (`rank.POSITION_DECAY`; not imported: rank imports this module).
FRAME_POSITION_DECAY = 0.6
MAX_GITHUB_KEYWORDS = 256
MAX_GITHUB_QUERIES = 3
_OPERATORS = frozenset({"and", "or", "not"})
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Linear time (issue 16): start only where a word starts, and never backtrack into a run
# (a 40 KB hex string took 43 s with the plain pattern: every position retried the run).
_SNAKE_RE = re.compile(r"(?<![^\W_])[^\W_]++(?:_++[^\W_]++)+")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryStack:
    """One stack to match: frame keys innermost first, how much it counts, what it is."""

    keys: tuple[str, ...]
    weight: float
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """Everything the ranker compares candidates with."""

    repos: tuple[str, ...]
    title: str
    text: str
    stacks: tuple[QueryStack, ...] = ()
    errors: tuple[str, ...] = ()
    signature: str | None = None
    deployed: tuple[tuple[str, str], ...] = ()
    """(repo, version) of the software the bundle's deployment runs, for "fixed in"."""
    issue: tuple[str, int] | None = None
    """The issue this query was made from (`owner/repo#N`): never a candidate."""
    signals: sig.Signals = sig.EMPTY
    """Exception types, versions and failure classes of the query (`signals.py`)."""
    verdict: str | None = None
    """The analysis verdict of the bundle the query comes from (None for a text)."""

    @property
    def incident(self) -> bool:
        """False for a bundle whose analysis found no hang or could not tell
        (`signals.NON_INCIDENT_VERDICTS`): it gets related issues only for strong text
        matches. A text query is always taken as an incident."""
        return self.verdict not in sig.NON_INCIDENT_VERDICTS


def query_from_analysis(bundle: Bundle, analysis: Analysis, *, repos: Sequence[str] = ()) -> Query:
    """The query for an analyzed bundle: its title, symptom text, stack classes and errors."""
    collectives = sorted({c.collective for c in analysis.classes if c.collective})
    title = bundle.manifest.title or " ".join(
        [analysis.verdict.value.replace("-", " "), *collectives, "hang"]
    )
    fields = dict(bundle.manifest.fields)
    parts = [title, *(fields[k] for k in TEXT_FIELDS if fields.get(k)), analysis.summary]
    stacks: list[QueryStack] = []
    for stack_class in analysis.classes:
        keys = stack_keys(stack_class.frames)
        if not keys:
            continue
        idle_wait = stack_class.state is RankState.IDLE and stack_class.wait is not None
        if stack_class.collective is not None or stack_class.state is RankState.STUCK or idle_wait:
            # Ranks blocked in one wait (vLLM workers in the shm queue) say as much as stuck ones.
            weight = 1.0
        elif stack_class.state in (RankState.MOVING, RankState.IDLE):
            # An idle loop passing through several places is ordinary work.
            weight = MOVING_STACK_WEIGHT
        else:
            weight = SIDE_STACK_WEIGHT
        label = " ".join(x for x in (stack_class.label, stack_class.collective or "") if x)
        stacks.append(QueryStack(keys=keys, weight=weight, label=label))
    headlines = [d.headline for d in bundle.dumps if d.headline]
    errors = tuple(dict.fromkeys(normalize_error(h) for h in headlines))
    names = tuple(repos) or bundle.manifest.upstream
    installed = {p.name.lower(): p.version for p in bundle.environment.packages if p.version}
    text = "\n".join(parts)
    # What the bundle says: its own errors and text for exception types, its installed
    # packages for versions, the analysis' verdict (never re-derived) for the class.
    package_text = "\n".join(f"{name}=={version}" for name, version in sorted(installed.items()))
    found = sig.Signals(
        exceptions=sig.exception_types("\n".join([*headlines, text])),
        versions=sig.versions(f"{package_text}\n{bundle.manifest.version}"),
        classes=sig.classes_of_verdict(analysis.verdict.value, headlines),
    )
    deployed = tuple(
        (repo, version)
        for repo in names
        if (
            version := deployed_version(
                repo, installed, bundle.manifest.version, bundle.manifest.service
            )
        )
    )
    return Query(
        repos=names,
        deployed=deployed,
        title=title,
        text=text,
        stacks=tuple(_unique_stacks(stacks)),
        errors=errors,
        signature=analysis.signature.text,
        signals=found,
        verdict=analysis.verdict.value,
    )


def query_from_text(text: str, *, repos: Sequence[str] = (), title: str | None = None) -> Query:
    """The query for a free text (an issue draft, a pasted dump): stacks found in it count."""
    found = extract(text)
    first = next((line.strip(" #\t") for line in text.splitlines() if line.strip()), "")
    stacks = [
        QueryStack(keys=keys, weight=1.0, label=f"pasted stack {i}")
        for i, keys in enumerate(found.stacks, start=1)
    ]
    return Query(
        repos=tuple(repos),
        title=title if title is not None else first[:200],
        text=text,
        stacks=tuple(stacks),
        errors=found.errors,
        signals=sig.extract_signals(title if title is not None else first[:200], text),
    )


def query_from_issue(record: IssueRecord, *, repos: Sequence[str] = ()) -> Query:
    """The query for a stored issue (triage): its title and body, searched in `repos`
    (default: its own repo); the issue itself is excluded from the results."""
    query = query_from_text(
        f"{record.title}\n{record.body}", repos=tuple(repos) or (record.repo,), title=record.title
    )
    return replace(query, issue=(record.repo, record.number))


def _unique_stacks(stacks: Sequence[QueryStack]) -> list[QueryStack]:
    """One entry per key tuple, the heaviest kept; stuck stacks first."""
    best: dict[tuple[str, ...], QueryStack] = {}
    for stack in stacks:
        kept = best.get(stack.keys)
        if kept is None or stack.weight > kept.weight:
            best[stack.keys] = stack
    return sorted(best.values(), key=lambda s: (-s.weight, s.label, s.keys))


def surface_forms(query: Query) -> dict[str, str]:
    """Each normalised term of the query with the first word it came from, for reasons
    people read (`writ` -> `writing`)."""
    forms: dict[str, str] = {}
    for text in (query.title, query.text, *(k for s in query.stacks for k in s.keys)):
        folded = terms.fold(text)
        for word in re.findall(r"[^\W_]+", folded):
            forms.setdefault(terms.stem(word), word)
        for identifier in _SNAKE_RE.findall(folded):
            forms.setdefault(terms.compound(identifier), identifier)
    return forms


def term_weights(query: Query) -> dict[str, float]:
    """Normalised terms of the query with their raw weight: title words count double,
    frame names count like title words, repeats add up to a cap of 3."""
    weights: dict[str, float] = {}

    def add(words: Sequence[str], weight: float) -> None:
        for word in words:
            weights[word] = min(3.0, weights.get(word, 0.0) + weight)

    add(terms.content_terms(query.title), 2.0)
    add(terms.content_terms(query.text), 1.0)
    for stack in query.stacks:
        for position, key in enumerate(stack.keys):
            # Frames count less the further out they are, as in the stack similarity
            # (`rank.POSITION_DECAY`): every dump of a server passes through its outer
            # loop (`event_loop_overlap > run_scheduler_process`), and so does every
            # traceback pasted in its issues; where it waits is what tells hangs apart.
            weight = stack.weight * (1.0 + position) ** -FRAME_POSITION_DECAY
            joined = terms.compounds(key)
            # An identifier's compound is what is rare; its words are common English.
            add(joined, 2.0 * weight)
            add(terms.content(terms.words(key)), (0.5 if joined else 2.0) * weight)
    return weights


def frame_phrases(query: Query) -> list[str]:
    """Distinct frame keys of the query's stacks, heaviest stack first, innermost first."""
    seen: dict[str, None] = {}
    for stack in query.stacks:
        for key in stack.keys:
            seen.setdefault(key, None)
    return list(seen)


def match_expression(words: Sequence[str], phrases: Sequence[str] = ()) -> str:
    """An FTS5 MATCH string: every word and phrase quoted, joined with OR.

    Phrases are identifiers split the way the index splits them, so
    `check_hicache_events` matches those three words in a row.
    """
    parts: dict[str, None] = {}
    for word in words:
        if word:
            parts.setdefault(f'"{word}"', None)
    for item in phrases:
        quoted = terms.phrase(item)
        if quoted != '""' and " " in quoted:
            parts.setdefault(quoted, None)
    return " OR ".join(parts)


def github_queries(
    query: Query,
    *,
    frame_df: Mapping[str, int] | None = None,
    term_df: Mapping[str, int] | None = None,
) -> tuple[str, ...]:
    """Up to three GitHub search strings: rare frame names, rare title words, an error line.

    Each ANDs a few keywords (GitHub ANDs every term, so fewer terms find rephrasings),
    adds `repo:` qualifiers and `is:issue`, and fits GitHub's limits. `frame_df` and
    `term_df` (document counts from the local index) pick the rarest words; without them
    longer words count as rarer.
    """
    qualifiers = [f"repo:{repo}" for repo in query.repos] + ["is:issue"]
    out: list[str] = []
    # Frames of the heaviest stacks first (the stuck ranks), rarest first within them.
    weight: dict[str, float] = {}
    for stack in query.stacks:
        for key in stack.keys:
            weight[key] = max(weight.get(key, 0.0), stack.weight)
    for word in _IDENT_RE.findall(query.title):
        if "_" in word:
            weight[word] = max(weight.get(word, 0.0), 1.0)
    frames = [k for k in weight if _IDENT_RE.fullmatch(k) and len(k) >= 6]
    frames.sort(key=lambda k: (-weight[k], (frame_df or {}).get(k, 0), -len(k), k))
    if frames:
        out.append(fit_github_query([f'"{k}"' for k in frames[:2]], qualifiers))
    words = [w for w in dict.fromkeys(_title_words(query.title)) if w.lower() not in _OPERATORS]
    words.sort(key=lambda w: ((term_df or {}).get(terms.stem(w.lower()), 0), -len(w), w))
    if len(words) >= 2:
        out.append(fit_github_query(words[:3], qualifiers))
    if query.errors:
        message = re.sub(r"\[[^\]]*\]", " ", query.errors[0].split(":", 1)[-1])
        text = re.sub(r"\bn\b|\bhex\b|[^\w\s]", " ", message)
        error_words = [w for w in text.split() if len(w) > 2 and w not in _OPERATORS][:6]
        if len(error_words) >= 2:
            out.append(fit_github_query(['"' + " ".join(error_words) + '"'], qualifiers))
    return tuple(dict.fromkeys(q for q in out if q))[:MAX_GITHUB_QUERIES]


def _title_words(title: str) -> list[str]:
    return [
        w
        for w in re.findall(r"[A-Za-z_][\w.-]*[A-Za-z0-9]", title)
        if len(w) > 3 and w.lower() not in terms.STOPWORDS and not w.lower().startswith("v0")
    ]


def fit_github_query(keywords: Sequence[str], qualifiers: Sequence[str]) -> str:
    """Keywords then qualifiers, dropping keywords from the end until the keyword part
    is at most 256 characters; no boolean operators are ever emitted."""
    kept = [k for k in keywords if k.strip('"').lower() not in _OPERATORS]
    while kept and len(" ".join(kept)) > MAX_GITHUB_KEYWORDS:
        kept.pop()
    if not kept:
        return ""
    return " ".join([*kept, *qualifiers])
