"""Which scorer, at what cost: every scorer and mode cached for one benchmark's answers, side by
side. For each feature set, on its seeded test partition (:func:`..statistics.benchmark_result.partitioned`):
span AUC of the sentence gap and, in full mode, of the standardised sum (the library's
``sensitivity`` score, its statistics fitted on the dev partition); answer-level AUC of the
lowest sentence gap and, in full mode, of the highest standardised sum; each with a 95%
source-level bootstrap interval; and the scoring time the extraction recorded per answer,
under whatever else ran on the machine then.

The cost to compare is ``timings``: ``benchmarks/scorer_cost.py``'s JSON, every scorer and
mode timed on the same answers in one run. A timed configuration with no feature set yet is
a row of its own, its accuracy left empty, except a two-pass one whose scorer has a full-mode
set: two-pass mode runs the same two passes that full mode's gap comes from, so its row takes
that set's gap figures and says so (on the default scorer, where both were run, the gaps
agree to 1.5e-5 nats and the AUCs exactly). Sets of one benchmark are comparable only when
they hold the same answers; the report says how many each holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..caches.extract import FeatureSet
from ..statistics.benchmark_result import MODE_PASSES, partitioned
from ..statistics.bootstrap import source_bootstrap
from ..statistics.methods import standardised_sum
from .tables import interval_cells, markdown_table

SPAN = {"gap": "span AUC, sentence gap", "sum": "span AUC, standardised sum"}
ANSWER = {"gap": "answer AUC, lowest sentence gap", "sum": "answer AUC, highest standardised sum"}


def _intervals(y: np.ndarray, scores: dict[str, np.ndarray], groups: np.ndarray, n_resamples: int,
               seed: int) -> pd.Series:
    return interval_cells(source_bootstrap(y, scores, groups, n_resamples, seed).intervals())


def scorer_row(features: FeatureSet, n_resamples: int = 2000, seed: int = 0) -> dict[str, object]:
    """One feature set's row of the table."""
    config = features.config
    dev, test = partitioned(features.table, seed)
    sentence_scores = {"gap": -test["gap"].to_numpy()}
    if features.full_exact:
        sentence_scores["sum"] = standardised_sum(dev, test)
    span = _intervals(test["label"].to_numpy(), sentence_scores, test["source_id"].to_numpy(), n_resamples, seed)
    by_answer = test.assign(**sentence_scores).groupby("case_id", sort=False)
    answers = by_answer.agg(source_id=("source_id", "first"), label=("label", "max"),
                            **{name: (name, "max") for name in sentence_scores})
    answer = _intervals(answers["label"].to_numpy(), {n: answers[n].to_numpy() for n in sentence_scores},
                        answers["source_id"].to_numpy(), n_resamples, seed)
    ran = features.sentences.drop_duplicates("case_id")
    mode = config["mode"] + (" (masked leave-one-out)" if config.get("leave_one_out") == "masked" else "")
    row = {"scorer": config["scorer"], "parameters (M)": round(config["n_parameters"] / 1e6),
           "mode": mode,
           "passes": MODE_PASSES[config["mode"]] + (f", K={config['k']}" if config["mode"] == "full" else "")}
    row |= {SPAN[n]: span.get(n, np.nan) for n in SPAN} | {ANSWER[n]: answer.get(n, np.nan) for n in ANSWER}
    row |= {"recorded seconds per answer": float(ran["seconds"].mean()), "answers": len(ran),
            "test answers": len(answers), "key": features.key}
    return row


def scorer_table(sets: Sequence[FeatureSet], timings: Mapping | None = None, n_resamples: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """One row per feature set and per timed configuration without one, smallest scorer
    first, two-pass before full; with ``timings``, their seconds per answer and cost
    relative to the default scorer's full mode."""
    scored = [scorer_row(s, n_resamples, seed) for s in sets]
    rows = list(scored)
    for timing in (timings or {}).get("timings", []):
        matching = [r for r in rows if (r["scorer"], r["mode"]) == (timing["scorer"], timing["mode"])]
        if not matching:
            matching = [_unscored_row(timing, scored)]
            rows += matching
        for row in matching:
            row["benchmark seconds per answer"] = timing["seconds_per_answer"]
            row["relative cost"] = timing["relative_to_default_full"]
    rows.sort(key=lambda r: (r["parameters (M)"], r["mode"] != "two_pass", r["mode"]))
    columns = ["scorer", "parameters (M)", "mode", "passes", *SPAN.values(), *ANSWER.values(),
               *(["benchmark seconds per answer", "relative cost"] if timings else []),
               "recorded seconds per answer", "answers", "test answers", "key"]
    return pd.DataFrame(rows).reindex(columns=columns)  # NaN: not measured


def _unscored_row(timing: Mapping, scored: Sequence[dict]) -> dict[str, object]:
    """The row of a timed configuration with no feature set: empty, or for two-pass mode the
    gap figures of the scorer's full-mode set (the same two passes; of ``scored``, the rows of
    feature sets, the first)."""
    row = {"scorer": timing["scorer"], "parameters (M)": round(timing["n_parameters"] / 1e6), "mode": timing["mode"],
           "passes": "2" if timing["mode"] == "two_pass" else "K+2, K=5", "answers": 0, "test answers": 0,
           "key": "— (not scored yet)"}
    full = [r for r in scored if (r["scorer"], r["mode"]) == (timing["scorer"], "full")]
    if timing["mode"] == "two_pass" and full:
        copied = [SPAN["gap"], ANSWER["gap"], "answers", "test answers"]
        row |= ({column: full[0][column] for column in copied}
                | {"key": f"— (gap of {full[0]['key']}: the same two passes)"})
    return row


def scorer_report(benchmark: str, sets: Sequence[FeatureSet], command: str, timings: Mapping | None = None,
                  n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report."""
    table = scorer_table(sets, timings, n_resamples, seed).set_index("scorer")
    cost = ("No timings given (`--timings`): the only cost shown is what each extraction recorded." if not timings else
            f"Benchmark seconds per answer: `{timings['command']}`, {timings['answers']} RAGTruth test answers from "
            f"{timings['sources']} sources, every configuration in one run at {timings['threads']} torch threads "
            f"({timings['machine'].rstrip('.')}); relative cost: against the default scorer's full mode in that run.")
    return "\n".join([
        f"# Which scorer, at what cost: {benchmark}", "", f"`{command}`", "",
        "Each feature set cached for this benchmark, on its seeded source-level test partition. Span AUC: "
        "sentences (label: unsupported); answer AUC: answers (label: an unsupported scored sentence), scored by "
        "their most suspicious sentence. The standardised sum is the `sensitivity` score rule, with its statistics "
        "fitted on the set's dev partition; it needs full mode. A timed two-pass configuration with no set of its "
        "own takes the gap figures of its scorer's full-mode set, which come from the same two passes (the key "
        "column says so). 95% source-level bootstrap intervals "
        f"({n_resamples} resamples, seed {seed}).", "", cost, "",
        "Recorded seconds per answer: the scoring time each extraction recorded, averaged over every answer it "
        "scored, under whatever else the machine ran then (not comparable between rows).", "",
        markdown_table(table), "",
    ])
