"""Fusions for tests: one for a fused cascade on a test scorer (references drawn from a fixed
generator), and the default scorer's lexical fusions moved so that the answer rule alone decides."""

from dataclasses import replace

import numpy as np

from groundsense.calibration.fusion import JUDGE_FUSION_SIGNALS as SIGNALS
from groundsense.calibration.fusion import LexicalFusions, RankFusion, reference_sample, shipped_lexical_fusion
from groundsense.weights import DEFAULT_SCORER

STATS = {"gap": (0.0, 1.0), "jsd_noctx": (0.1, 0.1), "drop_max": (0.5, 0.5), "jsd_loo_max": (0.05, 0.05)}


def fusion(scorer, threshold=0.5, answer_threshold=0.5, verifier="judge:scripted") -> RankFusion:
    """A :class:`RankFusion` for ``verifier`` on ``scorer``'s sensitivity (:data:`STATS`)."""
    rng = np.random.default_rng(0)
    references = {name: reference_sample(rng.normal(size=50) if name == "sensitivity" else rng.uniform(size=50))
                  for name in SIGNALS}
    return RankFusion(verifier, scorer.name, STATS, references, threshold, answer_threshold, {"data": "test"})


def answer_rule_fusions() -> LexicalFusions:
    """The default scorer's shipped fp32 lexical fusions, flagging no sentence (a threshold above
    every fused score) and every answer by their noisy-OR (answer threshold 0)."""
    return LexicalFusions(**{mode: replace(shipped_lexical_fusion(DEFAULT_SCORER, "fp32", mode), threshold=1.01,
                                           answer_threshold=0.0) for mode in ("full", "two_pass")})
