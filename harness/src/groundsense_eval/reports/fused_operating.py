"""The default (``fused``) score's flag on answers it never saw: per benchmark's test partition
(RAGTruth's tasks apart), the precision, recall, F1 and share flagged of its sentence flags and
its answer verdict at the shipped thresholds, of word overlap flagging as many, and of the
operating points `detect --target-recall/--target-precision` offers, with source-level
intervals. `groundsense eval operating`'s report; ``--score sensitivity`` has
:mod:`.operating`'s.

The test partitions, not every held-out answer: F's signals and aggregation were chosen on the
dev partitions (docs/results/selection-F.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from groundsense.calibration import Calibration, RankFusion, flag_intervals
from groundsense.errors import InputError

from ..caches.extract import FeatureSet
from ..statistics.benchmark_result import partitioned
from .default_score import product_judgements
from .fusion import Domain, fusion_table, test_sets
from .operating import OVERLAP_POINT, POINTS, OperatingPoint, no_test_partition, top_share
from .tables import interval_text, markdown_table

TARGETS = [point for point in POINTS if point != OperatingPoint()]
MODES = {"full": "full mode", "two_pass": "two-pass mode"}


def thresholds_table(fusions: Mapping[str, RankFusion]) -> pd.DataFrame:
    """Each operating point's sentence and answer threshold on each mode's fusion (a target's
    answer: a flagged sentence; NaN where a fusion's training sentences never reached the target)."""
    rows: dict[str, dict[str, float | str]] = {
        OperatingPoint().name: {f"{MODES[mode]}, {level}": value for mode, fusion in fusions.items()
                                for level, value in (("sentence", fusion.threshold),
                                                     ("answer", fusion.answer_threshold))}}
    for point in TARGETS:
        row: dict[str, float | str] = {}
        for mode, fusion in fusions.items():
            try:
                row[f"{MODES[mode]}, sentence"] = fusion.target_threshold(point.target_recall,
                                                                          point.target_precision)
            except InputError:
                row[f"{MODES[mode]}, sentence"] = np.nan
            row[f"{MODES[mode]}, answer"] = "a flagged sentence"
        rows[point.name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def _metrics(point: str, level: str, y: np.ndarray, flagged: np.ndarray, sources: np.ndarray, n_resamples: int,
             seed: int) -> dict[str, Any]:
    found = flag_intervals(y, flagged, sources, n_resamples, seed)
    return {"operating point": point, "level": level, "n": len(y),
            **{m: interval_text(*values) for m, values in found.items()}}


def point_rows(sentences: pd.DataFrame, answers: pd.DataFrame, fusions: Mapping[str, RankFusion],
               n_resamples: int, seed: int) -> list[dict[str, Any]]:
    """One row per operating point and level of :func:`.default_score.product_judgements`' sentences
    and answers: the shipped thresholds (a sentence at its fusion's threshold; an answer when a
    sentence is flagged or its noisy-OR reaches the answer threshold), word overlap flagging as
    many sentences and blocking as many answers by their least-overlapping sentence, and each
    target both fusions reached (the answer flagged when a sentence is)."""
    y, sources = sentences["label"].to_numpy(int), sentences["source_id"].to_numpy()
    answer_y, answer_sources = answers["label"].to_numpy(int), answers["source_id"].to_numpy()
    fitted = OperatingPoint().name
    sentence_flags, answer_flags = sentences["f_flag"].to_numpy(bool), answers["f_flag"].to_numpy(bool)
    overlap = sentences["overlap_chunk"].to_numpy(float)
    least = sentences.groupby("case_id", sort=False)["overlap_chunk"].max().reindex(answers.index).to_numpy(float)
    rows = [_metrics(fitted, "sentence", y, sentence_flags, sources, n_resamples, seed),
            _metrics(fitted, "answer", answer_y, answer_flags, answer_sources, n_resamples, seed),
            _metrics(OVERLAP_POINT, "sentence", y, top_share(overlap, int(sentence_flags.sum())), sources,
                     n_resamples, seed),
            _metrics(OVERLAP_POINT, "answer", answer_y, top_share(least, int(answer_flags.sum())), answer_sources,
                     n_resamples, seed)]
    for point in TARGETS:
        try:
            at = {mode: fusion.target_threshold(point.target_recall, point.target_precision)
                  for mode, fusion in fusions.items()}
        except InputError:  # a target a fusion's training sentences never reached
            continue
        flagged = sentences["f"].to_numpy(float) >= np.where(sentences["served"], at["full"], at["two_pass"])
        by_answer = sentences.assign(flag=flagged).groupby("case_id", sort=False)["flag"].max()
        rows += [_metrics(point.name, "sentence", y, flagged, sources, n_resamples, seed),
                 _metrics(point.name, "answer", answer_y, by_answer.reindex(answers.index).to_numpy(bool),
                          answer_sources, n_resamples, seed)]
    return rows


def fused_operating_report(sets: Mapping[str, FeatureSet], calibration: Calibration,
                           fusions: Mapping[str, RankFusion], command: str, n_resamples: int = 2000,
                           seed: int = 0) -> str:
    """The Markdown report of `groundsense eval operating` (``--score fused``, the default)."""
    domains = [Domain(name, *partitioned(fusion_table(features, calibration))) for name, features in sets.items()]
    made = fusions["full"].made_with
    adapted = made.get("adaptation")
    sections = []
    for domain, rows, label in test_sets(domains):
        if rows.empty:
            sections += no_test_partition(f"## {label}", domain.dev)
            continue
        sentences, answers = product_judgements(rows, calibration, fusions)
        table = pd.DataFrame(point_rows(sentences, answers, fusions, n_resamples, seed)).set_index("operating point")
        sections += [f"## {label}: {len(answers):,} answers, {len(sentences):,} sentences "
                     f"({int((~answers['served']).sum()):,} answers by two-pass mode's fusion)", "",
                     markdown_table(table), ""]
    precision = made.get("precision", "fp32")
    return "\n".join([
        "# The default score's flag on held-out answers", "", f"`{command}`", "",
        f"The fused score (F) at {precision}, as `detect` computes it: full mode's lexical fusion where the "
        f"calibration serves the answer's chunk count ({calibration.chunk_counts}), two-pass mode's elsewhere. Its "
        f"files: fitted on {made['fitted_on']}; thresholds: sentence {made['threshold_rule']['sentence']}, answer "
        f"{made['threshold_rule']['answer']}"
        + (f"; the references since re-estimated without labels on {adapted.get('source', 'a domain')}'s answers "
           "(`calibrate --adapt`), the thresholds kept in rank space" if adapted else "") + ".", "",
        "Precision, recall, F1 and share flagged, with 95% source-level bootstrap intervals "
        f"({n_resamples:,} resamples), on each benchmark's test partition: the source-level 40% of the sources "
        "the cache holds, split by task with seed 0 (on the whole held-out sets, the answers F's signals and "
        "aggregation were not chosen on), RAGTruth's tasks apart. *sentence*: scored sentences "
        "(labelled unsupported when they overlap an annotated span), flagged at their fusion's sentence threshold. "
        "*answer*: `answer.flagged`, the block/allow verdict, against whether any sentence of the answer is "
        "unsupported: blocked when a sentence is flagged or the length-aware noisy-OR of its sentences reaches the "
        "answer threshold. An operating point is a `detect` option: a target moves the sentence threshold along "
        "the precision-recall curve of the training sentences each fusion file keeps, and the answer is then "
        "flagged when a sentence is; a target a fusion's training sentences never reached is left out. "
        f"*{OVERLAP_POINT}*: the baseline, word overlap (1 − the share of a sentence's words found in its "
        "best-matching chunk; no model) flagging as many sentences as the shipped flag, and blocking as many "
        "answers by their least-overlapping sentence as the answer verdict. `--score sensitivity`'s report: "
        "`groundsense eval operating --score sensitivity` (operating-sensitivity.md).", "",
        "## Thresholds", "", "On the fused score's rank scale (the sentence's average rank; the answer's noisy-OR).",
        "", markdown_table(thresholds_table(fusions)), "",
        *sections,
    ])
