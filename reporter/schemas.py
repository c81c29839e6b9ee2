"""The `--json` documents of every command, as JSON Schema (draft 2020-12) data.

One schema per command that produces a result. They are the contract: the tests
validate every command's `--json` output against them, and `tools/gen_cli_docs.py`
writes them into `docs/cli.md` and the README's "JSON output" section. Objects allow
keys beyond the ones listed (new keys may be added; listed keys keep their meaning
and type), except where a schema says otherwise.
"""

from __future__ import annotations

from typing import Any

from reporter.documents import MERGE_OUTCOMES

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer", "minimum": 0}
NUM: Schema = {"type": "number"}
BOOL: Schema = {"type": "boolean"}
STR_OR_NULL: Schema = {"type": ["string", "null"]}
STRS: Schema = {"type": "array", "items": STR}


def obj(description: str, /, **properties: Schema) -> Schema:
    """An object with these required properties (more keys allowed)."""
    return {
        "type": "object",
        "description": description,
        "required": list(properties),
        "properties": properties,
    }


def array(items: Schema) -> Schema:
    """A list of `items`."""
    return {"type": "array", "items": items}


def described(schema: Schema, description: str) -> Schema:
    """`schema` with a description (shown in the docs)."""
    return {**schema, "description": description}


def nullable(schema: Schema) -> Schema:
    """An object schema that may also be null."""
    return {**schema, "type": ["object", "null"]}


MERGE = nullable(
    obj(
        "null for a new report; else what merging into the edited report did "
        "(region ids per outcome)",
        **{key: STRS for key, _field, _label in MERGE_OUTCOMES},
        damaged=array(obj("a region left as text", line=INT, problem=STR)),
    )
)

RATE = obj("the core REST limit", limit=INT, remaining=INT, reset=INT)

INT_OR_NULL: Schema = {"type": ["integer", "null"]}
LOCK_THREAD = obj(
    "one blocked thread",
    tid=STR,
    name=STR_OR_NULL,
    waits_at=described(STR, "file:line of the lock it is acquiring"),
    waits_for=described(STR, "the lock as the code names it (Stats.lock); empty if unknown"),
    holding=STRS,
    holding_from=described(STR, "file:line where it took the lock it holds; empty if unknown"),
)

SCHEMAS: dict[str, Schema] = {
    "analyze": obj(
        "The verdict and everything behind it (see README 'analyze --json').",
        verdict=STR,
        confidence=STR,
        summary=STR,
        snapshots=INT,
        classes=array({"type": "object"}),
        branch_point={"type": ["object", "null"]},
        missing_ranks=array({"type": "integer"}),
        failed_dumps=array({"type": "object"}),
        signature={"type": ["object", "string"]},
        warnings=array({"type": ["string", "object"]}),
        headline=described(STR, "the title the report would get: who waits for whom"),
        summary_lines=described(
            array(obj("one line of the summary block", topic=STR, text=STR, sources=STRS)),
            "the summary block; each line cites its evidence as file:line",
        ),
        next_steps=described(
            array(obj("one suggested step", action=STR, why=STR, rule=STR)),
            "from reporter/data/next_steps.toml",
        ),
        seen_before=described(
            array(obj("an earlier report", path=STR, date=STR, status=STR, same=BOOL)),
            "earlier reports of the same (same: true) or a similar hang",
        ),
        waits_for=described(
            array(
                obj(
                    "one edge",
                    waiting=obj(
                        "the waiting ranks",
                        ranks=array(INT),
                        collective=STR,
                        at=STR,
                        process_group=STR_OR_NULL,
                        group_ranks=array(INT),
                    ),
                    **{"for": obj("the ranks waited for", ranks=array(INT), state=STR, at=STR)},
                    kind=described(
                        {"enum": ["collective", "p2p"]},
                        "collective, or p2p: one rank waits in a point-to-point call for its peer",
                    ),
                )
            ),
            "who waits for whom; process_group is default, a name or non-default (null: not "
            "known); group_ranks the ranks the wait is compared with",
        ),
        p2p_cycles=described(
            array(
                obj(
                    "one cycle of point-to-point waits",
                    ranks=array(INT),
                    order=array(INT),
                    name=STR,
                    directions=STRS,
                    sites=STRS,
                    deadlock=BOOL,
                )
            ),
            "cycles point-to-point waits close (a deadlock: every member stuck, none sends)",
        ),
        p2p_deadlock=described(
            STR_OR_NULL, "for verdict p2p-deadlock: the cycles and what each side waits in"
        ),
        crashes=described(
            array(
                obj(
                    "one fatal error faulthandler reported",
                    rank=INT_OR_NULL,
                    pid=INT_OR_NULL,
                    what=described(STR, "faulthandler's words: Segmentation fault, Aborted, ..."),
                    signal=described(STR, "SIGSEGV, SIGABRT, ...; empty for an interpreter abort"),
                    thread=STR,
                    at=described(STR, "the crashing thread's innermost application frame"),
                    frames=described(STRS, "the crashing thread's frames, innermost first"),
                    source=STR,
                )
            ),
            "verdict `crashed`, or the cause of a wait for a crashed rank",
        ),
        thread_deadlocks=described(
            array(
                obj(
                    "threads of one process each waiting for a lock the next one holds",
                    pid=INT_OR_NULL,
                    proof=described(STR, "objects (the same lock objects) or names"),
                    threads=array(LOCK_THREAD),
                    behind=array(LOCK_THREAD),
                )
            ),
            "verdict `thread-deadlock`",
        ),
        blocked_threads=described(
            array(
                obj(
                    "threads blocked in every snapshot with no proven lock cycle",
                    pid=INT_OR_NULL,
                    threads=array(LOCK_THREAD),
                    settle=described(STR, "the capture that would decide it"),
                )
            ),
            "named on the first screen with what would settle them",
        ),
    ),
    "draft": obj(
        "Where the report went.",
        path=described(STR, "the report written (or found up to date)"),
        backup=described(STR_OR_NULL, "the previous version kept as .bak, if any"),
        unchanged=described(BOOL, "true when the report was already up to date"),
        charts=described(STR_OR_NULL, "the metrics SVG beside the report, if any"),
        verdict=STR,
        signature=STR,
        merge=MERGE,
    ),
    "diff": obj(
        "Ranked changes between two runs, likeliest culprit first.",
        changes=array(
            obj(
                "one change",
                kind=STR,
                key=STR,
                status=STR,
                before=STR_OR_NULL,
                after=STR_OR_NULL,
                score={"type": "integer"},
                why=STR,
            )
        ),
        unchanged={"type": "object", "additionalProperties": {"type": "integer"}},
        notes=STRS,
        good=STR,
        bad=STR,
    ),
    "init": obj(
        "The manifest written and the guesses it holds as comments.",
        path=STR,
        suggestions=array(
            obj(
                "one guess, written commented out",
                key=STR,
                value={"type": ["string", "integer", "array"]},
                why=STR,
            )
        ),
    ),
    "lint": obj(
        "Findings, by file and line.",
        files=STRS,
        findings=array(obj("one finding", path=STR, line=INT, rule=STR, message=STR, hint=STR)),
    ),
    "status": {
        "type": "array",
        "description": "One row per report (kept a list for compatibility).",
        "items": obj(
            "one report",
            path=STR,
            kind=STR,
            status=STR,
            owners=STRS,
            title=STR,
            signature=STR,
            todos=INT,
            upstream_issue=STR_OR_NULL,
            same_hang=described(
                INT,
                "incident reports (this one included) of the same hang as seen-before counts "
                "it: the same signature or the same shape",
            ),
        ),
    },
    "preview": obj("The HTML page written.", path=STR),
    "search-upstream": obj(
        "Candidates best first, the query and the index searched.",
        candidates=array(
            obj(
                "one upstream issue",
                repo=STR,
                number=INT,
                title=STR,
                state=STR,
                url=STR,
                score=NUM,
                level=STR,
                reasons={"type": "object"},
                rank_in_repo=described(INT, "place among the candidates of the same repo"),
                fixed_in=described(
                    {"type": ["object", "null"]},
                    "for a match closed as completed: change, release, deployment_has_fix",
                ),
            )
        ),
        fixed=described(STRS, '"matches #N, fixed in vX; this deployment runs Y" lines'),
        query=obj("what was searched for", repos=STRS, title=STR, errors=STRS),
        index=obj(
            "the index searched",
            path=STR,
            example=described(BOOL, "true for the bundled example index"),
            issues_searched=INT,
        ),
        notes=STRS,
    ),
    "sync": obj(
        "What each repository's sync fetched.",
        index=STR,
        repos=array(
            obj(
                "one repository",
                repo=STR,
                stored=INT,
                pages=INT,
                requests=INT,
                not_modified=described(
                    BOOL, "GitHub answered 304: nothing changed since the last sync (one request)"
                ),
                resumed=BOOL,
                skipped=described(INT, "malformed items in GitHub's answer, left out"),
                fixes=described(
                    {"type": ["object", "null"]},
                    "fix look-ups: checked, found, left for the next sync (null: not run)",
                ),
            )
        ),
        notes=STRS,
    ),
    "triage": obj(
        "Each triaged issue with its likely duplicates, never itself.",
        issues=array(
            obj(
                "one triaged issue",
                repo=STR,
                number={"type": ["integer", "null"]},
                title=STR,
                url=STR,
                candidates=array(
                    {"type": "object", "required": ["repo", "number", "score", "level"]}
                ),
            )
        ),
        notes=STRS,
    ),
    "index import": obj(
        "Issues imported and lines skipped.",
        index=STR,
        imported=INT,
        skipped=described(STRS, "`file:line: reason` per skipped line"),
    ),
    "index export": obj(
        "The indexed issues (the same objects as the JSONL lines).",
        index=STR,
        repo=STR_OR_NULL,
        count=INT,
        issues=array(
            described(
                {"type": "object", "required": ["repo", "number", "title", "state"]},
                "one issue as `index import` reads it: repo, number, title, body, state, "
                "state_reason, labels, created_at, updated_at, closed_at, comments, url, "
                "is_pull, and fixed_in (kind, ref, url, sha, tag, checked_at) when a sync "
                "looked up what fixed it",
            )
        ),
    ),
    "collect": obj(
        "What a live collection took and skipped.",
        status=described(
            {"enum": ["complete", "incomplete", "partial", "interrupted", "failed"]},
            "incomplete: no stack came back from any process it was asked to dump, or "
            "nothing from a URL it was asked to read; partial: stacks from some hosts, not "
            "from others",
        ),
        out=STR,
        targets=INT,
        dumps_ok=INT,
        dumps_failed=INT,
        scrapes=INT,
        files=INT,
        seconds=NUM,
        skipped=array(obj("one thing not captured", what=STR, reason=STR)),
        missing_stacks=described(STRS, "status incomplete: why, per target"),
        missing=described(STRS, "status incomplete: why, per URL that gave nothing"),
        advice=STRS,
        hosts=described(
            array(
                obj(
                    "one host",
                    host=STR,
                    via=STR,
                    status=described(
                        {"enum": ["complete", "incomplete", "failed", "timeout", "interrupted"]},
                        "incomplete: reached, but no stack came back",
                    ),
                    reason=STR,
                    hostname=STR,
                    targets=INT,
                    dumps=INT,
                    failed_dumps=INT,
                    seconds=NUM,
                )
            ),
            "--ssh/--exec: each host's outcome, in the order named; [] on this host",
        ),
    ),
    "upstream draft": obj(
        "The redacted draft written for review.",
        path=STR,
        backup=STR_OR_NULL,
        repo=STR,
        form=described(STR, "the issue form followed (or 'generic')"),
        characters=INT,
        redacted=described(INT, "values replaced by placeholders"),
        redactions=array(obj("one kind of value in one place", kind=STR, where=STR, count=INT)),
        todos=described(INT, "TODO(reviewer) lines left to fill"),
        leaks=described(STRS, "what the final scan still flags"),
        trimmed=STRS,
        notes=STRS,
    ),
    "upstream file": obj(
        "The decision and, when sent, the issue or comment URL.",
        action=described(
            {"enum": ["new-issue", "comment", "already-filed", "skip-identical-comment"]},
            "what was (or would be) done",
        ),
        repo=STR,
        sent=BOOL,
        url=described(STR, "the filed issue or comment (sent), or the duplicate's"),
        target={"type": ["integer", "null"]},
        reasons=STRS,
        refusals=described(STRS, "why it was not sent; empty when it could be"),
        notes=STRS,
        recorded=STR_OR_NULL,
        request=nullable(
            obj(
                "exactly what would be sent (the body only as its length)",
                method=STR,
                url=STR,
                title=STR_OR_NULL,
                labels=STRS,
                characters=INT,
            )
        ),
    ),
    "auth status": obj(
        "Which host, where its token came from (never the token) and the limit left.",
        host=STR,
        api_url=STR,
        authenticated=BOOL,
        token_source=described(STR_OR_NULL, "e.g. GH_TOKEN, or gh auth token (keyring)"),
        rate_limit=nullable(RATE),
        error=STR_OR_NULL,
    ),
    "config show": obj(
        "The config file and the settings it gives.",
        path=STR,
        exists=BOOL,
        settings=obj(
            "every key, null when unset",
            repos=STRS,
            index=STR_OR_NULL,
            forms=STR_OR_NULL,
            host=STR_OR_NULL,
        ),
    ),
}
