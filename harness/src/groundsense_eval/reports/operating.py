"""The shipped flag on answers it never saw: precision, recall and F1 of a calibration's
thresholds, with source-level bootstrap intervals, per benchmark, for sentences and for whole
answers, and at the operating points a reviewer can pick instead of the default.

Sentence level counts the scored sentences (the ones a verdict exists for). Answer level is
the guardrail's block/allow decision and fails closed as ``answer.flagged`` does: an answer is
blocked when its most suspicious sentence reaches the answer threshold or when one of its
sentences could not be scored; it is unsupported when any of its sentences is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from groundsense.calibration import Calibration, flag_intervals
from groundsense.errors import InputError
from groundsense.features import SIGNED

from ..statistics.signed import with_signed
from .tables import interval_text, markdown_table


@dataclass(frozen=True)
class OperatingPoint:
    """Where a reviewer sets the flag: the calibration's fitted thresholds (no target), or
    those that met a target recall or precision on its labelled set (``--target-recall``,
    ``--target-precision``)."""

    target_recall: float | None = None
    target_precision: float | None = None

    @property
    def name(self) -> str:
        if self.target_recall is not None:
            return f"--target-recall {self.target_recall}"
        if self.target_precision is not None:
            return f"--target-precision {self.target_precision}"
        return "fitted (default)"


def require_inputs(calibration: Calibration, sentences: pd.DataFrame) -> None:
    """Refuse cached ``sentences`` without a value the calibration's score reads (the lexical
    signals of a `groundsense fit` file, where `groundsense eval lexical` has not stored them)."""
    missing = [f for f in ("gap", *calibration.inputs)
               if f not in sentences and not (f in SIGNED and "drops" in sentences)]  # (signed: from the drops)
    if missing:
        held = ", ".join(map(str, sentences["benchmark"].unique())) if "benchmark" in sentences else "these answers"
        raise InputError(f"the calibration's score reads {', '.join(missing)}, which the cached sentences of {held} "
                         "lack: compute the lexical signals with `groundsense eval lexical BENCHMARK --cache CACHE`")


def judged(calibration: Calibration, sentences: pd.DataFrame, point: OperatingPoint) -> pd.DataFrame:
    """``sentences`` (every sentence that ran) with the product's judgement at ``point``:
    ``score`` (NaN where unscored) and the sentence and answer ``threshold``s. As the detector
    does with a shipped calibration, answers scored in a chunk count the calibration was fitted
    on get the ``sensitivity`` score rule, the others the ``gap`` score rule and its thresholds."""
    table = with_signed(sentences) if set(SIGNED) & set(calibration.inputs) else sentences
    require_inputs(calibration, table)
    features = {f: table[f].to_numpy(dtype=float) for f in ("gap", *calibration.inputs)}
    served = np.array([calibration.serves(int(n)) for n in sentences["n_chunks"]], dtype=bool)
    targets = (point.target_recall, point.target_precision)
    columns = {"score": np.where(served, calibration.score("sensitivity", features),
                                 calibration.score("gap", features))}
    for level, column in (("sentence", "threshold"), ("answer", "answer_threshold")):
        # a rule without a threshold gives NaN (what ``astype(float)`` made of its None)
        by_rule = {rule: np.nan if (t := calibration.threshold(rule, level, *targets)) is None else t
                   for rule in ("sensitivity", "gap")}
        columns[column] = np.where(served, by_rule["sensitivity"], by_rule["gap"]).astype(float)
    columns["score"] = np.where(sentences["status"].to_numpy() == "scored", columns["score"], np.nan)
    return sentences.assign(**columns)


def answer_outcomes(sentences: pd.DataFrame, any_sentence: bool = False) -> pd.DataFrame:
    """Per answer of :func:`judged` sentences: source, label (any unsupported sentence) and the
    fail-closed verdict of ``answer.flagged``: blocked when the most suspicious sentence reaches
    the answer threshold (``any_sentence``: when any sentence reaches the sentence threshold)
    or when a sentence could not be scored."""
    score = sentences["score"].fillna(np.inf)  # an unscored sentence blocks
    bar = sentences["threshold"] if any_sentence else sentences["answer_threshold"]
    frame = sentences.assign(blocking=score >= bar)
    by = frame.groupby("case_id", sort=False)
    return by.agg(source_id=("source_id", "first"), label=("label", "max"), flagged=("blocking", "max"))


Levels = dict[str, tuple[pd.Series, np.ndarray, pd.Series]]  # level -> (labels, flags, sources)


def judged_levels(frame: pd.DataFrame, any_sentence_too: bool = False) -> Levels:
    """The flags of :func:`judged` sentences per level: the scored sentences at their threshold,
    the answers' fail-closed verdict (:func:`answer_outcomes`) and, with ``any_sentence_too``,
    the answers blocked as soon as one sentence is flagged."""
    scored = frame[frame["score"].notna()]
    levels = {"sentence": (scored["label"], (scored["score"] >= scored["threshold"]).to_numpy(), scored["source_id"])}
    for level, any_sentence in (("answer", False), ("answer, any sentence flagged", True))[: 1 + any_sentence_too]:
        answers = answer_outcomes(frame, any_sentence)
        levels[level] = (answers["label"], answers["flagged"].to_numpy(), answers["source_id"])
    return levels


def flag_cells(y: pd.Series, flagged: np.ndarray, groups: pd.Series, n_resamples: int = 2000, seed: int = 0
               ) -> dict[str, str]:
    """Each metric of :func:`flag_intervals` as ``value [lo, hi]``."""
    return _cells(flag_intervals(y.to_numpy(), np.asarray(flagged), groups.to_numpy(), n_resamples, seed))


OVERLAP_POINT = "word overlap, as many flagged"


def top_share(values: np.ndarray, count: int) -> np.ndarray:
    """Flags on the ``count`` highest ``values`` (and any tied with the last of them): a
    baseline flagging as many as another flag does, whatever its own scale."""
    if count <= 0:
        return np.zeros(len(values), dtype=bool)
    return values >= np.sort(values)[::-1][min(count, len(values)) - 1]


def overlap_levels(frame: pd.DataFrame) -> Levels:
    """Word overlap (``overlap_chunk``: 1 − the share of a sentence's words in its best-matching
    chunk) at the fitted point's rate: it flags as many scored sentences as the shipped flag,
    and blocks as many answers by their least-overlapping sentence as the answer verdict does
    (an answer with an unscored sentence blocked, as the verdict fails closed)."""
    scored = frame[frame["score"].notna()]
    flagged = top_share(scored["overlap_chunk"].to_numpy(float), int((scored["score"] >= scored["threshold"]).sum()))
    answers = answer_outcomes(frame)
    by = frame.assign(overlap=frame["overlap_chunk"].where(frame["score"].notna(), np.inf)).groupby(
        "case_id", sort=False)["overlap"].max()
    blocked = top_share(by.reindex(answers.index).to_numpy(float), int(answers["flagged"].sum()))
    return {"sentence": (scored["label"], flagged, scored["source_id"]),
            "answer": (answers["label"], blocked, answers["source_id"])}


def flag_table(test_sets: Mapping[str, pd.DataFrame], calibration: Calibration, points: list[OperatingPoint],
               n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One row per (benchmark, operating point, level): each metric as ``value [lo, hi]``, and
    how many sentences or answers it counts. A point whose target the calibration set never
    reached is left out. Where the sentences carry their lexical signals, the word-overlap
    baseline follows the fitted point (:func:`overlap_levels`)."""
    rows = []
    for name, sentences in test_sets.items():
        require_inputs(calibration, sentences)
        for point in points:
            try:
                frame = judged(calibration, sentences, point)
            except InputError:  # a target the calibration set never reached
                continue
            fitted = point == OperatingPoint()  # under a target, the answer verdict is already "any sentence"
            named = [(point.name, judged_levels(frame, fitted))]
            if fitted and "overlap_chunk" in frame.columns:
                named.append((OVERLAP_POINT, overlap_levels(frame)))
            for point_name, point_levels in named:
                for level, (y, flagged, groups) in point_levels.items():
                    rows.append({"benchmark": name, "operating point": point_name, "level": level, "n": len(y),
                                 **flag_cells(y, flagged, groups, n_resamples, seed)})
    return pd.DataFrame(rows)


def _rules(threshold_rule: Mapping[str, Mapping[str, str]]) -> str:
    """A calibration's threshold rules per level (``made_with.threshold_rule``), e.g.
    "sentence: best F1; answer: Youden's J"."""
    def one_level(rules: Mapping[str, str]) -> str:
        if len(set(rules.values())) == 1:
            return next(iter(rules.values()))
        return ", ".join(f"{score_rule} {rule}" for score_rule, rule in rules.items())

    return "; ".join(f"{level}: {one_level(rules)}" for level, rules in threshold_rule.items())


def _cells(intervals: Mapping[str, tuple[float, float, float]]) -> dict[str, str]:
    return {m: interval_text(*values) for m, values in intervals.items()}


POINTS = [OperatingPoint(), *(OperatingPoint(target_recall=r) for r in (0.5, 0.8, 0.9)),
          *(OperatingPoint(target_precision=p) for p in (0.15, 0.2))]


def thresholds_table(calibration: Calibration, points: list[OperatingPoint]) -> pd.DataFrame:
    """Each operating point's thresholds per score rule and level (— where the target was not reached)."""
    rows = {}
    for point in points:
        row = {}
        for rule in ("sensitivity", "gap"):
            for level in ("sentence", "answer"):
                try:
                    row[f"{rule}, {level}"] = calibration.threshold(rule, level, point.target_recall,
                                                                    point.target_precision)
                except InputError:
                    row[f"{rule}, {level}"] = np.nan
        rows[point.name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def operating_report(test_sets: Mapping[str, pd.DataFrame], calibration: Calibration, command: str,
                     n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report of `groundsense eval operating --score sensitivity`."""
    made = calibration.made_with
    table = flag_table(test_sets, calibration, POINTS, n_resamples, seed)
    lines = [
        "# The shipped flag on held-out answers", "", f"`{command}`", "",
        f"Calibration: scorer {calibration.scorer}, fitted on {made.get('source', '?')} ({made.get('answers', '?')} "
        f"answers, {made.get('n_sentences', '?')} scored sentences, chunk counts {calibration.chunk_counts}); fitted "
        f"thresholds: {_rules(made.get('threshold_rule', {}))}. Answers scored in another "
        "chunk count are judged by the gap score rule and its thresholds, as the detector does.", "",
        "Precision, recall, F1 and share flagged, with 95% source-level bootstrap intervals "
        f"({n_resamples:,} resamples), on answers the calibration never saw. *sentence*: scored sentences "
        "(labelled unsupported when they overlap an annotated span). *answer*: `answer.flagged`, the "
        "guardrail's block/allow verdict, against whether any sentence of the answer is unsupported; it "
        "fails closed (an answer with a sentence past the answer cap is blocked). *answer, any sentence "
        "flagged*: the same answers blocked as soon as one sentence is flagged instead, for comparison. An "
        "operating point is a `detect` option; a target moves the sentence threshold along the calibration "
        "set's curve, and the answer is then flagged when any sentence is. A target the calibration set "
        f"never reached is left out. *{OVERLAP_POINT}*: the baseline, word overlap (1 − the share of a "
        "sentence's words found in its best-matching chunk; no model) flagging as many sentences as the fitted "
        "flag, and blocking as many answers by their least-overlapping sentence as the answer verdict: at the "
        "same rates, which precision and recall are higher.", "",
        "## Thresholds", "", markdown_table(thresholds_table(calibration, POINTS)), "",
    ]
    for name, rows in table.groupby("benchmark", sort=False):
        sentences = test_sets[str(name)]  # the benchmark names, strings
        lines += [f"## {name}: {sentences['case_id'].nunique()} answers, {len(sentences)} sentences", "",
                  markdown_table(rows.drop(columns="benchmark").set_index("operating point")), ""]
    return "\n".join(lines)


def no_test_partition(heading: str, dev: pd.DataFrame) -> list[str]:
    """A report's section for a benchmark whose cached answers all fell in the dev partition (a
    cache of a few answers, as a `--limit` run leaves): nothing to measure on, said instead of failing."""
    return [f"{heading}: no test partition", "",
            f"The cached answers ({dev['case_id'].nunique():,}) all fall in the dev partition: score more of them.", ""]
