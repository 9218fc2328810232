"""The training data of a trained verifier (issue #55; the protocol is in docs/detector-selection.md,
"A trained verifier"), version :data:`VERSION`.

Labelled sentences of RAGTruth's train split and RAGBench's validation and train splits, and one
synthetic hard negative (:mod:`.hard_negatives`) of each of their supported sentences where a
recipe applies. No TofuEval (the held-out domain) and no benchmark's test split: the evaluation's
dev and test partitions are drawn from those, and an answer whose source has an answer in a test
split is left out too (:func:`training_cases`). Each benchmark and task is balanced: at most
:data:`PER_SOURCE` sentences of a label from one source, then as many unsupported rows as supported
ones. A row names its answer and sentence instead of carrying the evidence: the evidence is the
answer's, less ``replaced`` for the ``delete`` recipe (:func:`row_evidence`). The same data and seed
give the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .cases import Case
from .hard_negatives import delete, hard_negative

VERSION = "td-2"  # td-1 also held swapped numbers and names: dropped on its label-noise reading
SPLITS = {"ragtruth": ("train",), "ragbench": ("validation", "train")}
HOLD_OUTS = {"tofueval": ("ragtruth", "ragbench"), "ragbench": ("ragtruth",)}  # held out -> trained on
PER_SOURCE = 8
COLUMNS = ["benchmark", "task", "source_id", "case_id", "sentence_index", "sentence", "label", "recipe", "detail",
           "replaced", "by"]


def training_cases(cases: Sequence[Case], splits: Sequence[str]) -> list[Case]:
    """The cases of ``splits`` whose source has no case outside them (in a test split), by id.
    Load the benchmark with its test split too, so that RAGBench's source groups span both."""
    held_out = {c.source_id for c in cases if c.split not in splits}
    return sorted((c for c in cases if c.split in splits and c.source_id not in held_out), key=lambda c: c.id)


def case_evidence(case: Case) -> tuple[str, ...]:
    return tuple(case.passages) if case.passages is not None else (case.context or "",)


def row_evidence(case: Case, row: pd.Series | dict[str, Any]) -> tuple[str, ...]:
    """The evidence a training row is judged against: its answer's, less the removed sentence of a
    ``delete`` row."""
    evidence = case_evidence(case)
    if row["recipe"] != "delete":
        return evidence
    made = delete(row["sentence"], evidence, np.random.default_rng(0))  # delete draws nothing at random
    if made is None or made.replaced != row["replaced"]:
        raise ValueError(f"{row['case_id']}: the delete row no longer matches its evidence (data changed?)")
    return made.evidence


def sentence_rows(cases: Sequence[Case], seed: int = 0) -> pd.DataFrame:
    """Every labelled sentence of ``cases`` (label 1: unsupported), and a hard negative of each
    supported one where a recipe applies, before balancing."""
    rng = np.random.default_rng(seed)
    rows = []
    for case in sorted(cases, key=lambda c: c.id):
        evidence = case_evidence(case)
        base = {"benchmark": case.benchmark, "task": case.task, "source_id": case.source_id, "case_id": case.id}
        for index, sentence in enumerate(case.sentences):
            text = case.sentence_text(sentence)
            rows.append({**base, "sentence_index": index, "sentence": text, "label": int(sentence.unsupported),
                         "recipe": "", "detail": "", "replaced": "", "by": ""})
            if sentence.unsupported:
                continue
            made = hard_negative(text, evidence, rng)
            if made is not None:
                rows.append({**base, "sentence_index": index, "sentence": made.sentence, "label": 1,
                             "recipe": made.recipe, "detail": made.detail, "replaced": made.replaced, "by": made.by})
    return pd.DataFrame(rows, columns=COLUMNS)


def balanced(rows: pd.DataFrame, seed: int = 0, per_source: int = PER_SOURCE) -> pd.DataFrame:
    """At most ``per_source`` rows of each label from a source, then, per benchmark and task, as
    many rows of each label as the rarer one has: the first ones of a seeded shuffle, returned in
    a stable order."""
    shuffled = rows.sample(frac=1, random_state=seed)
    capped = shuffled[shuffled.groupby(["source_id", "label"]).cumcount() < per_source]
    per_label = capped.groupby(["benchmark", "task", "label"]).size().unstack(fill_value=0).reindex(
        columns=[0, 1], fill_value=0)
    rarer = per_label.min(axis=1)
    limit = pd.MultiIndex.from_frame(capped[["benchmark", "task"]]).map(rarer.to_dict())
    kept = capped[capped.groupby(["benchmark", "task", "label"]).cumcount().to_numpy() < limit.to_numpy()]
    return kept.sort_values(["benchmark", "case_id", "sentence_index", "label"], kind="stable").reset_index(drop=True)


def manifest(rows: pd.DataFrame, seed: int, command: str) -> dict[str, Any]:
    """What a training set holds: its version, seed and command, and its rows counted by
    benchmark, task, label and recipe."""
    counts = rows.assign(recipe=rows["recipe"].replace("", "natural")).groupby(
        ["benchmark", "task", "label", "recipe"]).size()
    return {"version": VERSION, "seed": seed, "command": command, "splits": {k: list(v) for k, v in SPLITS.items()},
            "per_source": PER_SOURCE, "rows": len(rows), "unsupported": int(rows["label"].sum()),
            "counts": [{"benchmark": b, "task": t, "label": int(label), "recipe": r, "rows": int(n)}
                       for (b, t, label, r), n in counts.items()]}
