"""Paired comparison of two cached feature sets of one benchmark, e.g. exact against masked
leave-one-out, or two scorers on the same answers: span and answer AUC of each method under each configuration, the
source-level paired bootstrap interval of their difference, and how well the features agree.

Only sentences scored under both configurations count. Both tables get the same seeded
source-level 60/40 development/test split (the one :func:`metrics.evaluate` draws); trained
methods are fitted on each configuration's own development rows, and every AUC and
difference is taken on the shared test rows, resampled by source in pairs. An answer's score
is its most suspicious sentence's, its label whether any sentence is unsupported. Where either
side is a two-pass extraction, only what two passes give is compared: the methods of
:func:`methods.two_pass_scores` and the no-context features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..caches.extract import FeatureSet
from ..data.split import assign_partition
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import source_bootstrap
from ..statistics.methods import method_scores, two_pass_scores
from .tables import frame_numbers, json_safe, markdown_table

KEYS = ["case_id", "sentence_index"]
LOO_FEATURES = ["drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean"]  # lower = more suspicious
TWO_PASS_AGREEMENT = ["gap", "jsd_noctx", "surprisal"]
AGREEMENT = ["gap", "jsd_noctx", *LOO_FEATURES, "surprisal"]
DROPS = "drops (per chunk)"


@dataclass
class Comparison:
    a: str  # the two configurations' cache keys
    b: str
    sentences: int  # scored under both
    answers: int
    left_out: dict[str, int]  # scored sentences of each side without a partner in the other
    span: pd.DataFrame  # per method: auc_a, auc_b, diff (a - b), lo, hi, significant
    answer: pd.DataFrame  # the same, per answer
    agreement: pd.DataFrame  # per feature: pearson, spearman, max_abs_diff, mean_abs_diff

    def report(self) -> str:
        return "\n".join([
            f"A = {self.a}", f"B = {self.b}",
            f"{self.answers} answers, {self.sentences} sentences scored under both "
            f"(left out, scored on one side only: A {self.left_out['a']}, B {self.left_out['b']}).", "",
            "Span-level AUC on the test partition; A - B with a 95% source-level paired bootstrap interval:", "",
            markdown_table(self.span), "",
            "Answer-level AUC on the test partition (an answer's score: its most suspicious sentence's); "
            "A - B as above:", "",
            markdown_table(self.answer), "",
            "Feature agreement over all shared sentences"
            + (" (drops: every chunk's drop, paired):" if DROPS in self.agreement.index else ":"), "",
            markdown_table(self.agreement), "",
        ])

    def to_dict(self) -> dict:
        """JSON-safe numbers (NaN becomes null)."""
        safe = json_safe({"a": self.a, "b": self.b, "sentences": self.sentences, "answers": self.answers,
                          "left_out": self.left_out, "span": frame_numbers(self.span),
                          "answer": frame_numbers(self.answer),
                          "agreement": frame_numbers(self.agreement)})
        assert isinstance(safe, dict), "json_safe keeps a dict a dict"
        return safe


def aligned(a: FeatureSet, b: FeatureSet) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """The two analysis tables restricted to the sentences both scored, in the same row order,
    and how many scored sentences each side lost."""
    if a.benchmark != b.benchmark:
        raise ValueError(f"compare one benchmark: A is {a.benchmark}, B is {b.benchmark}")
    shared = a.table[KEYS].merge(b.table[KEYS], on=KEYS)
    if shared.empty:
        raise ValueError("A and B share no scored sentence: extract the same cases under both configurations")
    tables = [s.table.merge(shared, on=KEYS).sort_values(KEYS, ignore_index=True) for s in (a, b)]
    return tables[0], tables[1], {"a": len(a.table) - len(shared), "b": len(b.table) - len(shared)}


def compared_scores(table: pd.DataFrame, seed: int, full: bool) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The test rows of ``table`` (which carries a ``partition``) and every method's score on
    them: with ``full``, the report's methods and each leave-one-out feature alone (negated);
    otherwise the two-pass methods."""
    dev, test = partitioned(table, seed)
    if not full:
        return test, two_pass_scores(test)
    scores = method_scores(dev, test, seed)
    scores.update({feature: -test[feature].to_numpy() for feature in LOO_FEATURES})
    return test, scores


def agreement(a: pd.DataFrame, b: pd.DataFrame, full: bool = True) -> pd.DataFrame:
    """Pearson and Spearman correlation and absolute differences of each feature between two
    aligned tables (with ``full``, the leave-one-out ones too, and ``drops``, which pairs every
    chunk's drop where both have the same chunks)."""
    features = AGREEMENT if full else TWO_PASS_AGREEMENT
    pairs = {feature: (a[feature].to_numpy(float), b[feature].to_numpy(float)) for feature in features}
    if full and (same_chunks := a["drops"].map(len) == b["drops"].map(len)).any():
        flat = lambda t: np.concatenate(t.loc[same_chunks, "drops"].map(np.asarray).tolist()).astype(float)  # noqa: E731
        pairs[DROPS] = (flat(a), flat(b))
    rows = {}
    for name, (x, y) in pairs.items():
        x_, y_ = pd.Series(x), pd.Series(y)
        rows[name] = {"pearson": x_.corr(y_), "spearman": x_.corr(y_, method="spearman"),
                      "max_abs_diff": float(np.abs(x - y).max()), "mean_abs_diff": float(np.abs(x - y).mean())}
    return pd.DataFrame.from_dict(rows, orient="index")


def compare(a: FeatureSet, b: FeatureSet, seed: int = 0, n_resamples: int = 2000) -> Comparison:
    table_a, table_b, left_out = aligned(a, b)
    full = a.config["mode"] == b.config["mode"] == "full"
    partition = assign_partition(table_a, seed=seed)  # the same split for both
    (test, scores_a), (_, scores_b) = (compared_scores(t.assign(partition=partition), seed, full)
                                       for t in (table_a, table_b))
    if set(test["label"]) != {0, 1}:
        raise ValueError("the shared test partition lacks grounded or unsupported sentences: compare more answers")
    paired = {**{f"{m} [A]": s for m, s in scores_a.items()}, **{f"{m} [B]": s for m, s in scores_b.items()}}
    span = paired_aucs(test, paired, list(scores_a), n_resamples, seed)
    answers = pd.DataFrame(paired, index=test.index).assign(**{c: test[c] for c in ("case_id", "source_id", "label")})
    answers = answers.groupby("case_id", sort=False).agg(
        {"source_id": "first", "label": "max", **dict.fromkeys(paired, "max")})
    answer = paired_aucs(answers, {m: answers[m].to_numpy() for m in paired}, list(scores_a), n_resamples, seed)
    return Comparison(a.key, b.key, len(table_a), int(table_a["case_id"].nunique()), left_out, span, answer,
                      agreement(table_a, table_b, full))


def paired_aucs(rows: pd.DataFrame, paired: dict[str, np.ndarray], methods: list[str], n_resamples: int,
                seed: int) -> pd.DataFrame:
    """Per method, the AUC of its ``[A]`` and ``[B]`` scores of ``rows`` (with ``label`` and
    ``source_id``) and their difference's source-level paired bootstrap interval."""
    boot = source_bootstrap(rows["label"].to_numpy(), paired, rows["source_id"].to_numpy(), n_resamples, seed)
    return pd.DataFrame.from_dict(
        {m: {"auc_a": boot.point[f"{m} [A]"], "auc_b": boot.point[f"{m} [B]"],
             **boot.difference(f"{m} [A]", f"{m} [B]")}
         for m in methods},
        orient="index",
    )
