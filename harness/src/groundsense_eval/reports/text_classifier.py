"""A trained text classifier, the baseline a trained detector sets (docs/detector-selection.md,
"A trained text classifier"): TF-IDF of the sentence's words and a logistic regression, fixed
before it met a test partition and not tuned. It reads the sentence, not the evidence.

Trained on RAGTruth's training answers (the shipped calibration's) and measured on every
benchmark's test partition against ``sensitivity`` and word overlap; and trained on each
benchmark's own dev labels, out of fold, against word overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from groundsense.calibration import Calibration, Sides, compare, cross_validate

from ..caches.detector_inputs import detector_table
from ..caches.extract import FeatureSet
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import BootstrapResult, source_bootstrap
from .ceiling import comparison_row
from .few_labels import OVERLAP
from .fusion import Domain, answer_labels, answer_scores, fusion_table, test_sets
from .tables import interval_cells, interval_text, markdown_table

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

CLASSIFIER = "text classifier"
# Fixed in the protocol; not tuned.
VECTORIZER = {"lowercase": True, "ngram_range": (1, 2), "min_df": 2, "sublinear_tf": True}
C = 1.0
MAX_ITER = 1000
TOP_TERMS = 15  # the terms shown that weigh most toward "unsupported"
COMPARED = ("sensitivity", "word overlap")


def text_classifier(texts: Iterable[str], labels: np.ndarray) -> Pipeline:
    """The classifier fitted on ``texts`` (sentences) and their labels (1: unsupported)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(TfidfVectorizer(**VECTORIZER), LogisticRegression(C=C, max_iter=MAX_ITER))
    return model.fit(list(texts), np.asarray(labels, dtype=int))


def unsupported_probability(model: Pipeline, texts: Iterable[str]) -> np.ndarray:
    return model.predict_proba(list(texts))[:, 1]


def top_terms(model: Pipeline, n: int = TOP_TERMS) -> list[str]:
    """The ``n`` words and word pairs whose weights push a sentence most toward "unsupported"."""
    vectorizer, logistic = model.steps[0][1], model.steps[-1][1]
    terms = vectorizer.get_feature_names_out()
    return [str(terms[i]) for i in np.argsort(logistic.coef_[0])[::-1][:n]]


def text_sides(texts: np.ndarray, labels: np.ndarray, default: np.ndarray) -> Sides:
    """For :func:`~groundsense.calibration.cross_validation.cross_validate`: the classifier fitted on
    the training rows against the fixed ``default`` score."""
    def sides(train: np.ndarray) -> dict[str, np.ndarray]:
        model = text_classifier(texts[train], labels[train])
        return {"fitted": unsupported_probability(model, texts), "default": np.asarray(default, float)}

    return sides


def _level_row(boot: BootstrapResult, rows: pd.DataFrame, counts: str) -> dict[str, str]:
    """A table row: the counts, each method's AUC and the classifier's paired differences."""
    row = {"n (unsupported)": counts, "sources": f"{rows['source_id'].nunique():,}"}
    row |= {str(method): text for method, text in interval_cells(boot.intervals()).items()}
    for method in COMPARED:
        found = boot.difference(CLASSIFIER, method)
        row[f"classifier − {method}"] = interval_text(found["diff"], found["lo"], found["hi"], sign="+")
    return row


def transfer_rows(model: Pipeline, domains: Sequence[Domain], n_resamples: int, seed: int
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per test set (:func:`fusion.test_sets`): the classifier, ``sensitivity`` and word overlap,
    at sentence level and at answer level (each answer's most suspicious sentence)."""
    sentence, answer = {}, {}
    for _, rows, label in test_sets(domains):
        scores = {CLASSIFIER: unsupported_probability(model, rows["sentence"]),
                  "sensitivity": rows["sensitivity"].to_numpy(float), "word overlap": rows[OVERLAP].to_numpy(float)}
        y = rows["label"].to_numpy(int)
        boot = source_bootstrap(y, scores, rows["source_id"].to_numpy(), n_resamples, seed)
        sentence[label] = _level_row(boot, rows, f"{len(y):,} ({y.sum():,})")
        answers = answer_labels(rows)
        by_answer = {m: answer_scores(rows, s, s)["most suspicious sentence"] for m, s in scores.items()}
        boot = source_bootstrap(answers["label"].to_numpy(), by_answer, answers["source_id"].to_numpy(),
                                n_resamples, seed)
        answer[label] = _level_row(boot, rows, f"{len(answers):,} ({int(answers['label'].sum()):,})")
    return pd.DataFrame.from_dict(sentence, orient="index"), pd.DataFrame.from_dict(answer, orient="index")


def in_domain_rows(devs: Mapping[str, pd.DataFrame], n_resamples: int, seed: int) -> pd.DataFrame:
    """Per benchmark: the classifier trained on its dev partition's own labels, out of fold
    (five source-grouped folds), against word overlap on the same sentences (as
    :func:`ceiling.ceiling_rows` fits the product's signals)."""
    table = {}
    for name, dev in devs.items():
        labels = dev["label"].to_numpy(int)
        sides = text_sides(dev["sentence"].to_numpy(object), labels, dev[OVERLAP].to_numpy(float))
        table[name] = comparison_row(compare(cross_validate(labels, dev["source_id"].to_numpy(), sides),
                                             n_resamples, seed))
    return pd.DataFrame.from_dict(table, orient="index")


def text_classifier_report(train: FeatureSet, sets: Mapping[str, FeatureSet], calibration: Calibration,
                           command: str, n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report: the classifier trained on ``train``'s answers (RAGTruth's training
    answers) on every benchmark's test partition, then trained in each domain, out of fold on its
    dev partition."""
    training = detector_table(train)  # the sentences and labels are all it reads
    model = text_classifier(training["sentence"], training["label"].to_numpy(int))
    domains = [Domain(name, *partitioned(fusion_table(features, calibration), seed)) for name, features in sets.items()]
    sentence, answer = transfer_rows(model, domains, n_resamples, seed)
    settings = ", ".join(f"`{k}={v!r}`" for k, v in VECTORIZER.items())
    lines = [
        "# A trained text classifier of the sentence's words", "", f"`{command}`", "",
        "The baseline a trained detector sets (docs/detector-selection.md, \"A trained text classifier\"): "
        f"scikit-learn's `TfidfVectorizer` ({settings}; its default tokens: runs of two or more word characters) "
        f"over the sentence's text and a `LogisticRegression` (C = {C}, `max_iter={MAX_ITER}`), fixed before any "
        "test partition was read and not tuned. It reads the sentence only, not the evidence. A sentence's score "
        "is its P(unsupported); an answer's, its most suspicious sentence's. "
        f"Intervals: 95%, over sources, paired ({n_resamples:,} resamples). "
        "`sensitivity` is today's shipped score; word overlap is `1 −` the share of the sentence's words in "
        "its best-matching chunk (`groundsense.lexical`).", "",
        f"## Trained on RAGTruth's training answers ({training['case_id'].nunique():,} answers, "
        f"{len(training):,} sentences)", "",
        f"The answers the shipped calibration is fitted on ({train.key}). Measured on each benchmark's test "
        "partition (the seeded source-level 40%), RAGTruth's tasks apart.", "",
        f"The {TOP_TERMS} words and word pairs it weighs most toward unsupported: "
        + ", ".join(f"*{term}*" for term in top_terms(model)) + ".", "",
        "Sentence level:", "", markdown_table(sentence), "",
        "Answer level (label: any unsupported sentence):", "", markdown_table(answer), "",
        "## Trained on each benchmark's own labels", "",
        "On each benchmark's dev partition (the seeded source-level 60%; no test sentence is read), each sentence "
        "scored by a classifier trained on the other four of five source-grouped folds, as `eval ceiling` fits "
        "the product's signals; word overlap on the same sentences.", "",
        markdown_table(in_domain_rows({d.name: d.dev for d in domains}, n_resamples, seed)), "",
    ]
    return "\n".join(lines)
