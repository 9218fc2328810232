"""The few-label fit against the training-free score on held-out sources (groundsense.eval.reports.few_labels),
on synthetic features where the truth is known."""

import numpy as np
import pandas as pd
import pytest

from groundsense.errors import InputError
from groundsense.eval.reports.few_labels import (
    DRAWS,
    SIZES,
    compare,
    cross_validate,
    curve,
    curve_table,
    draw_answers,
    goal_text,
    logistic_sides,
)
from groundsense.judging.calibration import Calibration
from groundsense.lexical import LEXICAL

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

FEATURES = ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean", "drop_min", "neg_drop_mass")


def _sentences(n_sources=40, per_source=3, sentences=4, signal=2.0, seed=0):
    """Sentences of answers of sources; ``surprisal`` (which the default ignores) separates the
    labels with ``signal``, the default's features carry a weak signal."""
    rng = np.random.default_rng(seed)
    n = n_sources * per_source * sentences
    labels = (rng.random(n) < 0.25).astype(int)
    features = {name: rng.normal(size=n) - 0.3 * labels for name in FEATURES}
    features.update(surprisal=signal * labels + rng.normal(size=n), n_tokens=rng.integers(3, 30, size=n).astype(float))
    features.update({name: rng.random(n) + 0.1 * labels for name in LEXICAL})  # word overlap among them, faint
    answers = np.arange(n) // sentences
    return features, labels, answers, answers // per_source


DEFAULT = Calibration("s", 5, {f: (0.0, 1.0) for f in ("gap", "jsd_noctx", "drop_max", "jsd_loo_max")}, {})


def test_cross_validation_finds_the_gain_the_default_cannot_reach():
    features, labels, _, sources = _sentences()
    held = cross_validate(labels, sources, logistic_sides(features, labels, DEFAULT.score("sensitivity", features)))
    assert len(held.labels) == len(labels)  # every sentence judged once, out of fold
    comparison = compare(held, n_resamples=500)
    assert comparison.groups == 40 and comparison.better
    diff, lo, hi = comparison.auc["fitted − default"]
    assert lo > 0 and lo <= diff <= hi
    assert comparison.auc["fitted"][0] > 0.8 and comparison.f1["fitted − default"][0] > 0
    assert list(comparison.table().index) == ["fitted", "default", "fitted − default"]


def test_without_a_signal_beyond_the_default_the_fit_is_not_better():
    features, labels, _, sources = _sentences(signal=0.0, seed=1)
    rng = np.random.default_rng(1)  # the default's four features carry all the signal, equally: it is optimal
    features = {**features, **{f: rng.normal(size=len(labels)) for f in (*FEATURES, *LEXICAL)},
                **{f: rng.normal(size=len(labels)) - 0.8 * labels for f in DEFAULT.stats}}
    sides = logistic_sides(features, labels, DEFAULT.score("sensitivity", features))
    comparison = compare(cross_validate(labels, sources, sides), 500)
    assert not comparison.better


def test_cross_validation_needs_five_sources():
    features, labels, _, sources = _sentences()
    with pytest.raises(InputError, match="at least 5 sources"):
        cross_validate(labels, sources % 4, logistic_sides(features, labels, DEFAULT.score("sensitivity", features)))


def test_a_draw_takes_whole_sources_but_the_last():
    by_source = {s: [f"{s}-{i}" for i in range(3)] for s in "abcdefg"}
    drawn, touched = draw_answers(by_source, 7, np.random.default_rng(0))
    assert len(drawn) == 7 and len(touched) == 3
    assert sum(set(answers) <= drawn for s, answers in by_source.items() if s in touched) == 2


def test_the_learning_curve_judges_on_sources_not_drawn():
    features, labels, answers, sources = _sentences(n_sources=200, per_source=2, sentences=3)
    dev = pd.DataFrame({**features, "label": labels, "case_id": answers, "source_id": sources})
    draws = curve(dev, DEFAULT)
    assert list(draws["n"].unique()) == [n for n in SIZES if n < 400] and (draws.groupby("n").size() == DRAWS).all()
    assert (draws["answers evaluated"] == 400 - draws["n"] - draws["n"] % 2).all()  # sources, not answers, held out
    assert (draws["fitted AUC"] > draws["default AUC"]).mean() > 0.9
    assert (draws["fitted AUC"] > draws["word overlap AUC"]).all() and (draws["word overlap AUC"] > 0.5).mean() > 0.9
    table = curve_table(draws)
    assert list(table.index) == ["50 answers", "100 answers", "200 answers"]
    assert "word overlap AUC" in table.columns
    assert "The goal holds" in goal_text({"a": draws, "b": draws}) and "is missed" in goal_text({"a": draws})


def _signals(n_sources=40, per_source=3, sentences=4, carried=("bigram_novel",), seed=0):
    """A fused cascade's five signals over sentences of answers of sources: each of ``carried``
    separates the labels, the others are noise."""
    from groundsense.judging.fusion import SIGNALS

    rng = np.random.default_rng(seed)
    n = n_sources * per_source * sentences
    labels = (rng.random(n) < 0.25).astype(int)
    values = {name: rng.normal(size=n) + (1.2 * labels if name in carried else 0) for name in SIGNALS}
    return values, labels, np.arange(n) // (per_source * sentences)


def test_a_fused_fit_beats_the_ranks_average_when_one_signal_carries_the_labels():
    from helpers.fusions import STATS

    from groundsense.eval.reports.few_labels import fusion_sides
    from groundsense.judging.fusion import SIGNALS, RankFusion

    base = RankFusion("judge:x", "s", STATS, {name: [0.0] for name in SIGNALS}, 0.5, 0.5,
                      weights={"intercept": 9.0, "coefficients": dict.fromkeys(SIGNALS, -1.0)})  # not used
    values, labels, sources = _signals()
    held = cross_validate(labels, sources, fusion_sides(base, values, labels))
    average = RankFusion(**{**vars(base), "weights": None}).with_references(values).score(values)
    assert np.corrcoef(held.scores["default"], average)[0, 1] > 0.99  # the base's weights unused; fold references
    comparison = compare(held, n_resamples=500)
    assert comparison.groups == 40 and comparison.better  # the average dilutes the one signal four to one
    # Every signal carries the labels equally: the average is what a fit would learn, nothing to gain.
    values, labels, sources = _signals(carried=SIGNALS, seed=1)
    assert not compare(cross_validate(labels, sources, fusion_sides(base, values, labels)), 500).better
