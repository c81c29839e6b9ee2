"""Fit the duplicate search's text-side model on real pairs, and show whether it carries over.

The ranker's `p_text` (reporter/upstream/rank.py) is a logistic model over sub-scores.
This script fits it on real duplicate pairs kept outside the repository (folders in the
`eval_search.py --real` format) and measures it where the fit did not look:

* **held-out tracker**: fit on one tracker's queries (vLLM), rank the other's (SGLang),
  and the other way round; each query is ranked once by a model that never saw its
  tracker, and the figures pool them;
* **alternating halves**: fit on the even-numbered queries, rank the odd, and the
  other way round (pooled the same way);
* **in-sample**: fit and rank on every query (what a tuned figure looks like).

Each row shows ours (the fitted model), ours without the semantic model (fitted the
same way without its features), the previous round's hand-set weighted mean applied to
this round's sub-scores and pool (not the previous code: run `eval_search.py` on an old
checkout for that), and plain BM25 over the same pool. Then a backward elimination: a feature whose removal does not
lower the out-of-sample MRR (held-out tracker and halves, averaged) is dropped, so no
weight is kept that helps only in-sample. It prints the coefficients to paste into
rank.py.

    python benchmarks/fit_search.py /work/shared/eval/dupes-dev [/work/notes/dupes-mined ...]

The retrieval (which candidates are scored) does not depend on the coefficients, so each
query is searched once with the model and once without, every candidate's sub-scores
are kept, and every fit is scored on those: exactly what a search with those
coefficients would rank.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_search import PlainBM25, RealPair, Scores, load_real, recall_mrr

from reporter.upstream import rank
from reporter.upstream.index import Index

# L2 penalty of the fit (features are in [-1, 1]); strong enough that five queries of
# one tracker cannot drive a coefficient far.
L2 = 1.0


@dataclass(frozen=True)
class Ranked:
    """One query: its pair, its candidates' sub-scores with and without the model, and
    plain BM25's ranking of the same pool."""

    pair: RealPair
    tracker: str
    rows: list[tuple[int, rank.SubScores]]
    rows_plain: list[tuple[int, rank.SubScores]]
    bm25: list[int]


def collect(folders: Sequence[Path]) -> list[Ranked]:
    """Search every pair of every folder once with the semantic model and once without."""
    from reporter.upstream import semantic
    from reporter.upstream.query import query_from_text
    from reporter.upstream.search import find_duplicates
    from reporter.upstream.titles import embed_missing

    model = semantic.load()
    if model is None:
        raise SystemExit(semantic.MISSING_NOTE)
    out: list[Ranked] = []
    for folder in folders:
        pairs, pool = load_real(folder)
        plain = PlainBM25(pool)
        with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "fit.sqlite3") as index:
            index.import_jsonl([json.dumps(issue) for issue in pool], source=str(folder))
            embed_missing(index, model)
            for pair in pairs:
                query = query_from_text(
                    f"{pair.title}\n{pair.body}", repos=(pair.repo,), title=pair.title
                )
                own = [(pair.repo, pair.number)]
                found = {
                    name: find_duplicates(
                        index,
                        query,
                        limit=100_000,
                        include_weak=True,
                        embedder=embedder,
                        exclude=own,
                    )
                    for name, embedder in (("semantic", model), ("plain", None))
                }
                bm25 = [n for _, n in plain.rank(f"{pair.title} {pair.body}", (pair.repo,), 11)]
                out.append(
                    Ranked(
                        pair=pair,
                        tracker=pair.repo.split("/")[-1],
                        rows=[(c.issue.record.number, c.reasons.scores) for c in found["semantic"]],
                        rows_plain=[
                            (c.issue.record.number, c.reasons.scores) for c in found["plain"]
                        ],
                        bm25=[n for n in bm25 if n != pair.number],
                    )
                )
    return out


# --- the fit: L2-regularised logistic regression by Newton's method --------------------


def fit(data: Sequence[Ranked], names: Sequence[str], *, semantic: bool) -> dict[str, float]:
    """Coefficients (and intercept) of a logistic model of "is a duplicate" over the
    candidates of `data`, on the features `names`."""
    import numpy as np

    rows: list[list[float]] = []
    labels: list[float] = []
    for item in data:
        for number, subs in item.rows if semantic else item.rows_plain:
            values = rank.features(subs)
            rows.append([1.0, *(values[n] for n in names)])
            labels.append(1.0 if number in item.pair.duplicates else 0.0)
    x = np.asarray(rows, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    w = np.zeros(x.shape[1])
    penalty = np.full(x.shape[1], L2)
    penalty[0] = 0.0  # the intercept is not shrunk
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) + penalty * w
        hessian = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return {"intercept": float(w[0]), **{n: float(v) for n, v in zip(names, w[1:], strict=True)}}


# --- ranking and figures --------------------------------------------------------------

Scorer = Callable[[rank.SubScores], float]


def scorer_of(coefficients: dict[str, float]) -> Scorer:
    """The ranker's total with these text-side coefficients."""
    return lambda subs: rank.total(subs, coefficients)


def ranked_numbers(item: Ranked, scorer: Scorer, *, semantic: bool) -> list[int]:
    """The query's candidates by `scorer`, best first (ties: number)."""
    rows = item.rows if semantic else item.rows_plain
    return [n for _, n in sorted(((-scorer(s), n) for n, s in rows))]


def figures(items: Sequence[tuple[Ranked, list[int]]]) -> Scores:
    """R@1/5/10 and MRR of (query, ranking) pairs."""
    return recall_mrr([(numbers, item.pair.duplicates) for item, numbers in items])


def previous_total(subs: rank.SubScores) -> float:
    """The previous round's score (issue 14): the hand-set weighted mean of sub-scores."""
    weights = {"text": 0.30, "title": 0.20, "bm25": 0.35, "error": 0.25, "semantic": 0.85}
    parts = {"text": subs.text, "title": subs.title, "bm25": subs.bm25}
    if subs.error is not None:
        parts["error"] = subs.error
    if subs.semantic is not None:
        parts["semantic"] = subs.semantic
    return sum(weights[k] * v for k, v in parts.items()) / sum(weights[k] for k in parts)


Split = tuple[str, list[tuple[list[Ranked], list[Ranked]]]]


def splits(data: Sequence[Ranked]) -> list[Split]:
    """(name, [(fit on, rank)...]): the held-out-tracker and the alternating-halves splits."""
    trackers = sorted({d.tracker for d in data})
    by_tracker = [
        ([d for d in data if d.tracker != t], [d for d in data if d.tracker == t]) for t in trackers
    ]
    even = [d for d in data if d.pair.number % 2 == 0]
    odd = [d for d in data if d.pair.number % 2 == 1]
    return [
        ("held-out tracker", [(fit_on, test) for fit_on, test in by_tracker if fit_on and test]),
        ("alternating halves", [(even, odd), (odd, even)]),
    ]


def out_of_sample(
    data: Sequence[Ranked],
    names: Sequence[str],
    *,
    semantic: bool,
    subset: Callable[[Ranked], bool],
) -> dict[str, Scores]:
    """Pooled out-of-sample figures of a model on `names`, per split, on `subset`."""
    out: dict[str, Scores] = {}
    for split_name, folds in splits(data):
        ranked: list[tuple[Ranked, list[int]]] = []
        for fit_on, test in folds:
            coefficients = fit(fit_on, names, semantic=semantic)
            for item in test:
                if subset(item):
                    ranked.append(
                        (
                            item,
                            ranked_numbers(item, scorer_of(coefficients), semantic=semantic),
                        )
                    )
        out[split_name] = figures(ranked)
    return out


def select(data: Sequence[Ranked], names: Sequence[str], *, semantic: bool) -> list[str]:
    """Backward elimination on the mean out-of-sample MRR (non-re-submission queries):
    drop the feature whose removal scores best while that is no worse than keeping it."""
    kept = list(names)

    def score(features: Sequence[str]) -> float:
        found = out_of_sample(data, features, semantic=semantic, subset=_hard)
        return sum(s.mrr for s in found.values()) / len(found)

    current = score(kept)
    while len(kept) > 1:
        trials = [(score([f for f in kept if f != drop]), drop) for drop in kept]
        best, drop = max(trials, key=lambda t: (t[0], t[1]))
        print(f"  without {drop:<10} {best:.4f} (with it {current:.4f})", file=sys.stderr)
        if best < current:
            break
        kept.remove(drop)
        current = best
    return kept


def ablation(data: Sequence[Ranked], start: Sequence[str], *, semantic: bool) -> list[str]:
    """A Markdown table: the out-of-sample MRR (non-re-submission queries) of the model
    on `start`, and without each feature in turn."""

    def row(name: str, features: Sequence[str]) -> str:
        found = out_of_sample(data, features, semantic=semantic, subset=_hard)
        values = [found[k].mrr for k in sorted(found)]
        mean = sum(values) / len(values)
        return f"| {name} | " + " | ".join(f"{v:.3f}" for v in values) + f" | {mean:.3f} |"

    names = sorted(s[0] for s in splits(data))
    lines = [
        "| features | " + " | ".join(f"MRR {n}" for n in names) + " | mean |",
        "|---|" + "---|" * (len(names) + 1),
        row("all of them", start),
    ]
    lines += [row(f"without {f}", [g for g in start if g != f]) for f in start]
    return lines


def _hard(item: Ranked) -> bool:
    return not item.pair.resubmission


def _row(name: str, s: Scores) -> str:
    r = s.recall
    return f"| {name} | {r[1]:.3f} | {r[5]:.3f} | {r[10]:.3f} | {s.mrr:.3f} |"


def report(data: Sequence[Ranked], sem_names: list[str], plain_names: list[str]) -> list[str]:
    """The Markdown tables: each split and set, ours / no semantic / previous / BM25."""
    lines: list[str] = []
    sets: dict[str, Callable[[Ranked], bool]] = {"non-re-submission": _hard, "all": lambda _: True}
    for set_name, subset in sets.items():
        chosen = [d for d in data if subset(d)]
        lines += [
            "",
            f"### {set_name} pairs (n={len(chosen)})",
            "",
            "| split / method | R@1 | R@5 | R@10 | MRR |",
            "|---|---|---|---|---|",
        ]
        sem_all = fit(data, sem_names, semantic=True)
        plain_all = fit(data, plain_names, semantic=False)
        lines.append("| **in-sample** (fit and rank on all) | | | | |")
        lines.append(
            _row(
                "ours",
                figures(
                    [(d, ranked_numbers(d, scorer_of(sem_all), semantic=True)) for d in chosen]
                ),
            )
        )
        lines.append(
            _row(
                "ours without semantic",
                figures(
                    [(d, ranked_numbers(d, scorer_of(plain_all), semantic=False)) for d in chosen]
                ),
            )
        )
        lines.append(
            _row(
                "previous round's weighted mean, on these sub-scores",
                figures([(d, ranked_numbers(d, previous_total, semantic=True)) for d in chosen]),
            )
        )
        lines.append(_row("BM25", figures([(d, d.bm25) for d in chosen])))
        sem = out_of_sample(data, sem_names, semantic=True, subset=subset)
        plain = out_of_sample(data, plain_names, semantic=False, subset=subset)
        for split_name in sem:
            lines.append(f"| **{split_name}** (fit elsewhere, pooled) | | | | |")
            lines.append(_row("ours", sem[split_name]))
            lines.append(_row("ours without semantic", plain[split_name]))
        for tracker in sorted({d.tracker for d in chosen}):
            mine = [d for d in chosen if d.tracker == tracker]
            lines.append(f"| tracker {tracker} (n={len(mine)}): previous / BM25 | | | | |")
            lines.append(
                _row(
                    "previous round's weighted mean",
                    figures([(d, ranked_numbers(d, previous_total, semantic=True)) for d in mine]),
                )
            )
            lines.append(_row("BM25", figures([(d, d.bm25) for d in mine])))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+", help="real pair folders")
    parser.add_argument(
        "--features", help="comma-separated features to start from (default: all of rank.FEATURES)"
    )
    parser.add_argument("--no-select", action="store_true", help="keep every feature")
    args = parser.parse_args(argv)
    data = collect(args.folders)
    start = args.features.split(",") if args.features else list(rank.FEATURES)
    plain_start = [f for f in start if f not in ("semantic", "body")]
    if args.no_select:
        sem_names, plain_names = start, plain_start
    else:
        print("backward elimination, with the semantic model:", file=sys.stderr)
        sem_names = select(data, start, semantic=True)
        print("backward elimination, without it:", file=sys.stderr)
        plain_names = select(data, plain_start, semantic=False)
    trackers = {d.tracker: sum(1 for x in data if x.tracker == d.tracker) for d in data}
    print(f"queries: {len(data)} ({trackers})")
    print(f"features kept with the model: {sem_names}")
    print(f"features kept without it: {plain_names}")
    for line in report(data, sem_names, plain_names):
        print(line)
    print("\n### each feature left out, with the semantic model (out of sample)\n")
    print("\n".join(ablation(data, start, semantic=True)))
    print("\n### each feature left out, without it (out of sample)\n")
    print("\n".join(ablation(data, plain_start, semantic=False)))
    print("\ncoefficients fitted on every query (paste into rank.py):")
    print("round 4 (one-standard-error choices of eval_search.py --cv):")
    print("COEFFICIENTS =", _fmt(fit(data, ["bm25", "semantic", "reference"], semantic=True)))
    print("COEFFICIENTS_NO_SEMANTIC =", _fmt(fit(data, ["bm25", "reference"], semantic=False)))
    print("round 3's feature sets (backward elimination above, in-sample):")
    print("COEFFICIENTS =", _fmt(fit(data, sem_names, semantic=True)))
    print("COEFFICIENTS_NO_SEMANTIC =", _fmt(fit(data, plain_names, semantic=False)))
    return 0


def _fmt(coefficients: dict[str, Any]) -> str:
    return "{" + ", ".join(f'"{k}": {v:.3f}' for k, v in coefficients.items()) + "}"


if __name__ == "__main__":
    sys.exit(main())


# --- cross-validation: every model choice scored where its fit did not look -------------

# Round 3's model as shipped (rank.py before issue 34), kept here to compare with: fitted
# on every dev pair, so its figures on those pairs are in-sample.
ROUND3 = {
    "intercept": -8.242,
    "title": 1.956,
    "bm25": 3.228,
    "semantic": 3.770,
    "body": 1.396,
    "error": 1.784,
    "version": 1.159,
    "failure": 0.394,
}
ROUND3_NO_SEMANTIC = {
    "intercept": -7.667,
    "title": 4.296,
    "bm25": 4.005,
    "error": 2.050,
    "version": 1.467,
}
ROUND3_FEATURES = [k for k in ROUND3 if k != "intercept"]
FOLDS = 5


def light_stem(word: str) -> str:
    """Round 3's hand-written suffix stemmer (terms.py before issue 34), for comparison."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if word.endswith("ing") and len(word) >= 6:
        base = word[:-3]
        if len(base) >= 3 and base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]
        return base
    return word


def collect_with_stemmer(folders: Sequence[Path], stemmer: str) -> list[Ranked]:
    """`collect` with the index and queries tokenised by `stemmer` ("snowball", the
    product's, or "light", round 3's): the tokenizer is swapped for the whole run."""
    from reporter.upstream import terms

    if stemmer == "snowball":
        return collect(folders)
    saved, saved_stops = terms.stem, terms._STOP_STEMS
    terms.stem = light_stem  # type: ignore[assignment]
    terms._STOP_STEMS = terms.STOPWORDS | {light_stem(w) for w in terms.STOPWORDS}
    try:
        return collect(folders)
    finally:
        terms.stem, terms._STOP_STEMS = saved, saved_stops


def kfold(data: Sequence[Ranked], k: int = FOLDS) -> list[tuple[str, list[Ranked], list[Ranked]]]:
    """k folds over the queries in a fixed order (tracker, number), query i in fold i mod k:
    (name, fit on, test)."""
    ordered = sorted(data, key=lambda d: (d.pair.repo, d.pair.number))
    out = []
    for fold in range(k):
        test = [d for i, d in enumerate(ordered) if i % k == fold]
        rest = [d for i, d in enumerate(ordered) if i % k != fold]
        out.append((f"fold {fold + 1}", rest, test))
    return out


def by_tracker(data: Sequence[Ranked]) -> list[tuple[str, list[Ranked], list[Ranked]]]:
    """Leave one tracker out: fit on the others, test on it."""
    trackers = sorted({d.tracker for d in data})
    return [
        (f"test {t}", [d for d in data if d.tracker != t], [d for d in data if d.tracker == t])
        for t in trackers
    ]


@dataclass(frozen=True)
class Model:
    """A ranking to cross-validate: fitted per fold on `features` (None: fixed `fixed`
    coefficients, or plain BM25 when both are None)."""

    name: str
    features: list[str] | None = None
    fixed: dict[str, float] | None = None
    semantic: bool = True

    @property
    def parameters(self) -> int:
        """Free parameters fitted per fold (the intercept included)."""
        return 0 if self.features is None else len(self.features) + 1

    def rank(
        self, fit_on: Sequence[Ranked], test: Sequence[Ranked]
    ) -> list[tuple[Ranked, list[int]]]:
        """Each test query's ranking after fitting on `fit_on`."""
        if self.features is None and self.fixed is None:
            return [(d, d.bm25) for d in test]
        coefficients = (
            self.fixed
            if self.fixed is not None
            else fit(fit_on, self.features or [], semantic=self.semantic)
        )
        return [
            (d, ranked_numbers(d, scorer_of(coefficients), semantic=self.semantic)) for d in test
        ]


def cross_validate(
    data: Sequence[Ranked], models: Sequence[Model], subset: Callable[[Ranked], bool]
) -> dict[str, dict[str, Scores]]:
    """Per model, per fold (k-fold and held-out tracker): R@k and MRR on `subset` of the
    test queries."""
    out: dict[str, dict[str, Scores]] = {}
    for model in models:
        out[model.name] = {}
        for name, fit_on, test in [*kfold(data), *by_tracker(data)]:
            ranked = model.rank(fit_on, [d for d in test if subset(d)])
            out[model.name][name] = figures(ranked)
        # In-sample: fitted and ranked on every query (what a tuned figure looks like).
        out[model.name]["in-sample"] = figures(model.rank(data, [d for d in data if subset(d)]))
    return out


def one_se_choice(results: dict[str, dict[str, Scores]], models: Sequence[Model]) -> Model:
    """The one-standard-error rule: among the fitted models whose k-fold mean MRR is
    within one standard error of the best fitted model's, the one with the fewest free
    parameters (then the higher mean)."""
    fitted = [m for m in models if m.features is not None]

    def mean_se(model: Model) -> tuple[float, float]:
        values = [v.mrr for k, v in results[model.name].items() if k.startswith("fold")]
        mean, sd = _spread(values)
        return mean, sd / len(values) ** 0.5

    best = max(fitted, key=lambda m: mean_se(m)[0])
    floor = mean_se(best)[0] - mean_se(best)[1]
    near = [m for m in fitted if mean_se(m)[0] >= floor]
    return min(near, key=lambda m: (m.parameters, -mean_se(m)[0]))


def _spread(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1)
    return mean, var**0.5


def cv_table(results: dict[str, dict[str, Scores]], models: Sequence[Model]) -> list[str]:
    """Markdown: one row per model; MRR and R@5 per fold, their mean ± sd over the k
    folds, and per held-out tracker."""
    first = next(iter(results.values()))
    folds = [n for n in first if n.startswith("fold")]
    trackers = [n for n in first if n.startswith("test")]
    head = (
        "| model | params | "
        + " | ".join(f"{f} MRR / R@5" for f in folds)
        + " | k-fold MRR mean ± sd | k-fold R@5 mean ± sd | "
        + " | ".join(f"{t} MRR / R@5" for t in trackers)
        + " | in-sample MRR / R@5 |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for model in models:
        row = results[model.name]
        mrr = _spread([row[f].mrr for f in folds])
        r5 = _spread([row[f].recall[5] for f in folds])
        cells = [f"{row[f].mrr:.2f} / {row[f].recall[5]:.2f}" for f in folds]
        cells += [f"{mrr[0]:.3f} ± {mrr[1]:.3f}", f"{r5[0]:.3f} ± {r5[1]:.3f}"]
        cells += [f"{row[t].mrr:.2f} / {row[t].recall[5]:.2f}" for t in trackers]
        cells.append(f"{row['in-sample'].mrr:.2f} / {row['in-sample'].recall[5]:.2f}")
        lines.append(f"| {model.name} | {model.parameters} | " + " | ".join(cells) + " |")
    return lines


def candidate_models() -> list[Model]:
    """BM25, round 3 as shipped and refitted, and the candidate designs of round 4."""
    return [
        Model("BM25 (plain FTS5)"),
        Model("round 3 as shipped (in-sample coefficients)", fixed=ROUND3),
        Model("round 3 as shipped, no semantic", fixed=ROUND3_NO_SEMANTIC, semantic=False),
        Model("round 3 features, refitted per fold", features=ROUND3_FEATURES),
        Model("round 3 features + reference", features=[*ROUND3_FEATURES, "reference"]),
        Model(
            "bm25, title, semantic, body, reference",
            features=["bm25", "title", "semantic", "body", "reference"],
        ),
        Model("bm25, semantic, reference", features=["bm25", "semantic", "reference"]),
        Model(
            "round 3 no-semantic features + reference",
            features=[*[k for k in ROUND3_NO_SEMANTIC if k != "intercept"], "reference"],
            semantic=False,
        ),
        Model(
            "bm25, title, reference (no semantic)",
            features=["bm25", "title", "reference"],
            semantic=False,
        ),
        Model("bm25, reference (no semantic)", features=["bm25", "reference"], semantic=False),
        Model(
            "bm25, title, semantic, body (no reference)",
            features=["bm25", "title", "semantic", "body"],
        ),
    ]


def cv_report(
    folders: Sequence[Path], stemmers: Sequence[str] = ("light", "snowball")
) -> list[str]:
    """The cross-validated tables for each stemmer, on the non-re-submission pairs and on
    all, and on the pairs whose query names no duplicate (where references cannot help)."""
    lines: list[str] = []
    models = candidate_models()
    for stemmer in stemmers:
        data = collect_with_stemmer(folders, stemmer)
        sets: dict[str, Callable[[Ranked], bool]] = {
            "non-re-submission": _hard,
            "all": lambda _: True,
            "non-re-submission, query names no duplicate": lambda d: (
                _hard(d)
                and not any(s.reference >= 1.0 for n, s in d.rows if n in d.pair.duplicates)
            ),
        }
        for set_name, subset in sets.items():
            n = sum(1 for d in data if subset(d))
            lines += ["", f"### stemmer {stemmer}: {set_name} pairs (n={n})", ""]
            results = cross_validate(data, models, subset)
            lines += cv_table(results, models)
            if set_name == "non-re-submission":
                for semantic in (True, False):
                    group = [m for m in models if m.semantic is semantic]
                    chosen = one_se_choice(results, group)
                    what = "with" if semantic else "without"
                    lines.append(
                        f"\none-standard-error choice {what} the semantic model: {chosen.name}"
                    )
    return lines


def calibration(data: Sequence[Ranked], model: Model, cutoffs: Sequence[float]) -> list[str]:
    """Out of sample (k-fold): per cut-off, the share of queries whose duplicate in the
    top 5 scores at or above it, and the other issues per query at or above it."""
    rows: list[tuple[float, bool]] = []
    for _, fit_on, test in kfold(data):
        coefficients = fit(fit_on, model.features or [], semantic=model.semantic)
        for d in test:
            scored = sorted(
                (
                    (rank.total(s, coefficients), n)
                    for n, s in (d.rows if model.semantic else d.rows_plain)
                ),
                reverse=True,
            )[:5]
            rows += [(score, n in d.pair.duplicates) for score, n in scored]
    queries = len(data) or 1
    lines = [
        "| cut-off | duplicates at or above (share of queries) | other issues per query |",
        "|---|---|---|",
    ]
    for cut in cutoffs:
        right = sum(1 for score, dup in rows if dup and score >= cut)
        wrong = sum(1 for score, dup in rows if not dup and score >= cut)
        lines.append(f"| {cut:.3f} | {right / queries:.2f} | {wrong / queries:.2f} |")
    return lines
