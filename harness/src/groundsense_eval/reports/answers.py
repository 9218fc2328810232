"""The answer-level verdict: how well training-free aggregations of sentence scores rank whole
answers (label: any unsupported scored sentence), and what moves that figure.

Every score is oriented "higher = more suspicious". The aggregation to ship is chosen on the
dev partitions; the test partitions report it. The conditions measured against the paper's
answer-level figure: scorer size (the same answers under another scorer), task mix, answers
with sentences past the answer cap, and the published reference features of a 1.5B scorer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from groundsense.calibration import shipped_calibration

from ..caches.detector_inputs import has_token_rows, token_threshold_sweep, tuned_thresholds, with_token_features
from ..caches.extract import FeatureSet
from ..caches.lexical import lexical_columns
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import source_bootstrap
from ..statistics.methods import answer_mean
from .tables import interval_cells, markdown_table


def answer_table(sentences: pd.DataFrame, sensitivity: np.ndarray | None = None) -> pd.DataFrame:
    """One row per answer: label, source, task, and each aggregation's suspicion score.

    ``sensitivity`` is the shipped detector's sentence score (higher = more suspicious),
    aligned with ``sentences``; without it that aggregation is left out. The token-level
    aggregations are added where ``sentences`` carries the token features
    (:func:`..caches.detector_inputs.with_token_features`).
    """
    case = sentences["case_id"]
    by = sentences.groupby(case, sort=False)
    answers = by.agg(source_id=("source_id", "first"), task=("task", "first"), label=("label", "max"))
    scores = pd.DataFrame(index=answers.index)
    scores["lowest sentence gap"] = -by["gap"].min()
    scores["lowest two gaps"] = -by["gap"].apply(_lowest_two)
    scores["mean gap"] = -answer_mean(sentences["gap"], sentences)
    scores["mean jsd_noctx"] = -answer_mean(sentences["jsd_noctx"], sentences)
    if sensitivity is not None:
        scores["highest sensitivity"] = pd.Series(sensitivity, index=sentences.index).groupby(case, sort=False).max()
    if "overlap_chunk" in sentences.columns:  # the word-overlap baseline, where the lexical signals are stored
        scores["highest word overlap"] = by["overlap_chunk"].max()
    scores["perplexity"] = answer_mean(sentences["surprisal"], sentences)
    scores["length"] = sentences["n_tokens"].astype(float).groupby(case, sort=False).sum()
    if "gap_dep" in sentences.columns:
        scores = scores.join(token_aggregations(sentences))
    return answers.join(scores)


TOKEN_AGGREGATIONS = ["lowest dependent-token gap", "dependent-token gap (pooled)", "highest unresolved share",
                      "unresolved share (pooled)"]


def token_aggregations(sentences: pd.DataFrame) -> pd.DataFrame:
    """Per answer, the token-level aggregations (higher = more suspicious): the lowest
    sentence's and the pooled gap over evidence-dependent tokens, and the highest sentence's
    and the pooled share of dependent tokens the full context leaves surprising.

    Pooled means are over the answer's dependent tokens, counted from each sentence's
    ``dep_share``; an answer with none falls back to its token-weighted mean gap (as
    ``gap_dep`` does for a sentence) and an unresolved share of 0.
    """
    case = sentences["case_id"]
    by = sentences.groupby(case, sort=False)
    dependent = sentences["dep_share"] * sentences["n_tokens"].astype(float)
    n_dependent = dependent.groupby(case, sort=False).sum()

    def pooled(feature: str) -> pd.Series:
        return (sentences[feature] * dependent).groupby(case, sort=False).sum() / n_dependent

    return pd.DataFrame(dict(zip(TOKEN_AGGREGATIONS, [
        -by["gap_dep"].min(),
        -pooled("gap_dep").where(n_dependent > 0, answer_mean(sentences["gap"], sentences)),
        by["unresolved_share"].max(),
        pooled("unresolved_share").where(n_dependent > 0, 0.0),
    ], strict=True)))


def _lowest_two(gaps: pd.Series) -> float:
    """The mean of an answer's two lowest sentence gaps (its only one, for one sentence)."""
    return float(np.sort(gaps.to_numpy())[:2].mean())


AGGREGATIONS = ["lowest sentence gap", "lowest two gaps", "mean gap", "mean jsd_noctx", "highest sensitivity",
                "highest word overlap", "perplexity", "length", *TOKEN_AGGREGATIONS]


def sensitivity_score(sentences: pd.DataFrame, scorer: str, k: int) -> np.ndarray | None:
    """The shipped calibration's sentence score, where one ships for the scorer and K."""
    calibration = shipped_calibration(scorer, k)
    if calibration is None:
        return None
    return calibration.score("sensitivity", {f: sentences[f].to_numpy() for f in calibration.stats})


def aucs(answers: pd.DataFrame, n_resamples: int, seed: int) -> pd.Series:
    """``auc [lo, hi]`` per aggregation present, source-level bootstrap."""
    present = [a for a in AGGREGATIONS if a in answers.columns]
    if answers["label"].nunique() < 2:
        return pd.Series("—", index=present)
    result = source_bootstrap(answers["label"].to_numpy(), {a: answers[a].to_numpy() for a in present},
                              answers["source_id"].to_numpy(), n_resamples, seed).intervals()
    return interval_cells(result)


def partition_answers(features: FeatureSet, seed: int = 0,
                      thresholds: tuple[float, float] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Answer tables of a feature set's dev and test partitions, with the token-level
    aggregations at ``thresholds`` where the set kept token rows."""
    dev, test = partitioned(lexical_columns(features, features.table), seed)
    if thresholds is not None and has_token_rows(dev):
        dev, test = with_token_features(dev, thresholds), with_token_features(test, thresholds)
    scorer, k = features.config["scorer"], features.config["k"]
    return (answer_table(dev, sensitivity_score(dev, scorer, k)),
            answer_table(test, sensitivity_score(test, scorer, k)))


def answer_thresholds(sets: Mapping[str, FeatureSet],
                      seed: int = 0) -> dict[str, tuple[tuple[float, float], list[str]]]:
    """Per scorer (thresholds in nats are a scorer's own): the token thresholds for its answer
    tables, tuned as the detector selection's rule 3 tunes them (docs/detector-selection.md,
    "Token thresholds") on the dev partitions of its first set with token rows of each
    benchmark, and the names of those sets. Scorers with no token rows are left out."""
    tuning: dict[str, dict[str, str]] = {}  # scorer -> benchmark -> set name
    for name, features in sets.items():
        if has_token_rows(features.rows):
            tuning.setdefault(features.config["scorer"], {}).setdefault(features.benchmark, name)
    return {scorer: (tuned_thresholds(token_threshold_sweep({n: partitioned(sets[n].table, seed)[0]
                                                             for n in names.values()})),
                     list(names.values()))
            for scorer, names in tuning.items()}


def truncated_answers(features: FeatureSet) -> set[str]:
    """Answers with a labelled sentence left unscored (past the answer cap)."""
    sentences = features.sentences
    return set(sentences.loc[sentences["status"] != "scored", "case_id"])


def reference_answers(folder: Path) -> pd.DataFrame | None:
    """The published 1.5B reference features as an answer table (their response means and
    lowest sentence gap), or None when the files are absent."""
    response, sentence = folder / "qwen2.5-1.5b-k5-response.csv", folder / "qwen2.5-1.5b-k5-sentence.csv"
    if not (response.exists() and sentence.exists()):
        return None
    r = pd.read_csv(response).set_index("resp_id")
    s = pd.read_csv(sentence).groupby("resp_id")["gap"]
    return pd.DataFrame({
        "source_id": r.index.astype(str), "label": r["label"],
        "lowest sentence gap": -s.min(), "lowest two gaps": -s.apply(_lowest_two),
        "mean gap": -r["gap"], "mean jsd_noctx": -r["jsd_noctx"], "perplexity": r["mean_surprisal"],
        "length": r["n_ans"],
    })


def by_aggregation(rows: Mapping[str, pd.Series]) -> pd.DataFrame:
    """One row per named :func:`aucs` result, columns in :data:`AGGREGATIONS` order."""
    table = pd.DataFrame(rows).T
    return table[[a for a in AGGREGATIONS if a in table.columns]]


def token_note(scorer: str, thresholds: tuple[float, float], tuning: list[str]) -> list[str]:
    """The report's paragraph on one scorer's tuned token thresholds."""
    dependent, unresolved = thresholds
    return [f"The token-level aggregations of {scorer} (sets scored with token rows) take a token as "
            "evidence-dependent "
            f"when its no-context surprisal is above {dependent:g} nats, and as unresolved when its full-context "
            f"surprisal is above {unresolved:g} nats: the pair with the best mean dev AUC of the sentence features "
            f"`gap_dep` and `unresolved_share` over the dev partitions of {', '.join(tuning)} "
            "(docs/detector-selection.md, \"Token thresholds\").", ""]


def answer_report(sets: Mapping[str, FeatureSet], reference: Path | None, command: str,
                  n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report: aggregations by benchmark (dev and test partitions), and the
    conditions that move the answer-level figure."""
    columns, conditions = {}, {}
    tuned = answer_thresholds(sets, seed)
    for name, features in sets.items():
        scorer = features.config["scorer"]
        dev, test = partition_answers(features, seed, tuned[scorer][0] if scorer in tuned else None)
        columns[f"{name} dev ({len(dev)})"] = aucs(dev, n_resamples, seed)
        columns[f"{name} test ({len(test)})"] = aucs(test, n_resamples, seed)
        cut = truncated_answers(features)
        whole = pd.concat([dev, test])
        conditions[f"{name}, every answer ({len(whole)})"] = aucs(whole, n_resamples, seed)
        for task in sorted(whole["task"].unique()):
            conditions[f"{name}, {task} ({(whole['task'] == task).sum()} answers, both partitions)"] = aucs(
                whole[whole["task"] == task], n_resamples, seed)
        if cut:
            kept = whole[~whole.index.isin(cut)]
            conditions[f"{name}, answers with every sentence scored ({len(kept)} of {len(whole)})"] = aucs(
                kept, n_resamples, seed)
    lines = ["# Answer-level verdict", "", f"`{command}`", "",
             "Answer-level AUC (label: the answer has an unsupported scored sentence) of training-free "
             "aggregations of sentence scores, with 95% source-level bootstrap intervals. The aggregation "
             "to ship is chosen on the dev partitions. `highest sensitivity` is the shipped detector's "
             "highest sentence score (what `answer.flagged` thresholds today). `highest word overlap` is the "
             "baseline: the answer's sentence with the smallest share of its words in its best-matching chunk "
             "(`overlap_chunk`, no model), for the sets whose lexical signals are stored (`groundsense eval "
             "lexical`).", "",
             *(line for scorer, (pair, tuning) in tuned.items() for line in token_note(scorer, pair, tuning)),
             "Feature sets: " + "; ".join(f"{n}: {fs.benchmark}/{fs.key}" for n, fs in sets.items()) + ".", "",
             "## By benchmark and partition", "", markdown_table(by_aggregation(columns)), "",
             "## Conditions (both partitions)", "", markdown_table(by_aggregation(conditions)), ""]
    ref = reference_answers(reference) if reference else None
    if ref is not None:
        assert reference is not None, "ref is read from reference"
        lines += ["## The published reference features (Qwen2.5-1.5B-Instruct, K=5, RAGTruth train, Summary and "
                  f"Data2txt, {len(ref)} answers)", "",
                  "The same aggregations on the features published with the original code "
                  f"(`{reference.name}`; their answer-level gap and JSD are means over the answer's tokens):", "",
                  markdown_table(aucs(ref, n_resamples, seed).to_frame(f"{len(ref)} answers").T), ""]
    return "\n".join(lines)
