"""Synthetic labelled sentences where the truth is known, for the few-label fit's tests: the
cross-validation (tests/calibration) and the learning curve (harness/tests/reports)."""

import numpy as np

from groundsense.calibration import Calibration
from groundsense.lexical import LEXICAL

FEATURES = ("gap", "jsd_noctx", "drop_max", "drop_mean", "jsd_loo_max", "jsd_loo_mean", "drop_min", "neg_drop_mass")


def labelled_sentences(n_sources=40, per_source=3, sentences=4, signal=2.0, seed=0):
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
