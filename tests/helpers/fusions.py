"""A fusion file for a fused cascade on a test scorer: references drawn from a fixed generator."""

import numpy as np

from groundsense.calibration.fusion import JUDGE_FUSION_SIGNALS as SIGNALS
from groundsense.calibration.fusion import RankFusion, reference_sample

STATS = {"gap": (0.0, 1.0), "jsd_noctx": (0.1, 0.1), "drop_max": (0.5, 0.5), "jsd_loo_max": (0.05, 0.05)}


def fusion(scorer, threshold=0.5, answer_threshold=0.5, verifier="judge:scripted") -> RankFusion:
    """A :class:`RankFusion` for ``verifier`` on ``scorer``'s sensitivity (:data:`STATS`)."""
    rng = np.random.default_rng(0)
    references = {name: reference_sample(rng.normal(size=50) if name == "sensitivity" else rng.uniform(size=50))
                  for name in SIGNALS}
    return RankFusion(verifier, scorer.name, STATS, references, threshold, answer_threshold, {"data": "test"})
