"""`groundsense fit`'s check: the fit against the training-free score on held-out sources
(groundsense.calibration.cross_validation), on synthetic features where the truth is known."""

import numpy as np
import pytest
from helpers.labelled_sentences import DEFAULT, FEATURES, labelled_sentences

from groundsense.calibration.cross_validation import compare, cross_validate, fusion_sides, logistic_sides
from groundsense.errors import InputError
from groundsense.lexical import LEXICAL

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)


def test_cross_validation_finds_the_gain_the_default_cannot_reach():
    features, labels, _, sources = labelled_sentences()
    held = cross_validate(labels, sources, logistic_sides(features, labels, DEFAULT.score("sensitivity", features)))
    assert len(held.labels) == len(labels)  # every sentence judged once, out of fold
    comparison = compare(held, n_resamples=500)
    assert comparison.groups == 40 and comparison.better
    diff, lo, hi = comparison.auc["fitted − default"]
    assert lo > 0 and lo <= diff <= hi
    assert comparison.auc["fitted"][0] > 0.8 and comparison.f1["fitted − default"][0] > 0
    assert list(comparison.cells()) == ["fitted", "default", "fitted − default"]
    assert comparison.markdown().splitlines()[2].startswith("| fitted | ")


def test_without_a_signal_beyond_the_default_the_fit_is_not_better():
    features, labels, _, sources = labelled_sentences(signal=0.0, seed=1)
    rng = np.random.default_rng(1)  # the default's four features carry all the signal, equally: it is optimal
    features = {**features, **{f: rng.normal(size=len(labels)) for f in (*FEATURES, *LEXICAL)},
                **{f: rng.normal(size=len(labels)) - 0.8 * labels for f in DEFAULT.stats}}
    sides = logistic_sides(features, labels, DEFAULT.score("sensitivity", features))
    comparison = compare(cross_validate(labels, sources, sides), 500)
    assert not comparison.better


def test_cross_validation_needs_five_sources():
    features, labels, _, sources = labelled_sentences()
    with pytest.raises(InputError, match="at least 5 sources"):
        cross_validate(labels, sources % 4, logistic_sides(features, labels, DEFAULT.score("sensitivity", features)))


def _signals(n_sources=40, per_source=3, sentences=4, carried=("bigram_novel",), seed=0):
    """A fused cascade's five signals over sentences of answers of sources: each of ``carried``
    separates the labels, the others are noise."""
    from groundsense.calibration.fusion import JUDGE_FUSION_SIGNALS as SIGNALS

    rng = np.random.default_rng(seed)
    n = n_sources * per_source * sentences
    labels = (rng.random(n) < 0.25).astype(int)
    values = {name: rng.normal(size=n) + (1.2 * labels if name in carried else 0) for name in SIGNALS}
    return values, labels, np.arange(n) // (per_source * sentences)


def test_a_fused_fit_beats_the_ranks_average_when_one_signal_carries_the_labels():
    from helpers.fusions import STATS

    from groundsense.calibration.fusion import JUDGE_FUSION_SIGNALS as SIGNALS
    from groundsense.calibration.fusion import RankFusion

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
