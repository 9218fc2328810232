"""How a score becomes a flag, in one home: calibrations and their thresholds (``calibration``,
``thresholds``), fused scores' references and thresholds (``fusion``; a fused cascade's,
``judge_fusion``), fitting one on labels (``fitting``, checked by ``cross_validation`` with
``resampling``'s intervals) or adapting one without (``adaptation``), their one file format
(``files``), and the
:class:`~groundsense.calibration.adjudicator.Adjudicator` that builds a result (``adjudicator``).

The public names are this package's ``__all__``, imported from here (``from groundsense.calibration
import Calibration``); its modules are private. A score rule is a name in :data:`SCORE_RULES`
with its function here (:func:`gap_score`, :func:`sensitivity_score`); CONTRIBUTING.md says how to
add one.
"""

from typing import TYPE_CHECKING

from ..lazy import exported

if TYPE_CHECKING:
    from .adaptation import DEFAULT_METHOD, METHODS, DomainSentences, adapt
    from .calibration import (
        LOGISTIC_FEATURES,
        LOGISTIC_SIGNALS,
        SCORE_RULES,
        STANDARDISED,
        Calibration,
        fit_calibration,
        gap_score,
        sensitivity_score,
        shipped_calibration,
        standardisation,
        threshold_quality,
    )
    from .cross_validation import (
        SIDES,
        Comparison,
        HeldOut,
        Sides,
        compare,
        cross_validate,
        fusion_sides,
        logistic_sides,
        score_fold,
    )
    from .fitting import REGULARISATION, fit_detector, fitted_rows
    from .fusion import (
        JUDGE_FUSION_SIGNALS,
        LENGTH_AWARE_NOISY_OR,
        LEXICAL_FUSION_SIGNALS,
        LexicalFusions,
        RankFusion,
        answer_scores,
        length_aware_noisy_or,
        rank_share,
        reference_sample,
        shipped_lexical_fusion,
        top_two_mean,
        unsupported_probability,
    )
    from .judge_fusion import shipped_fusion
    from .resampling import (
        flag_intervals,
        flag_metrics,
        group_aucs,
        group_counts,
        group_draws,
        interval_text,
        paired_f1,
        percentile_interval,
        resample_aucs,
    )
    from .thresholds import best_f1_threshold, forced_scores, youden_threshold

__all__ = [
    # a calibration: score rules and their thresholds, shipped or fitted
    "Calibration", "shipped_calibration", "fit_calibration", "SCORE_RULES", "gap_score", "sensitivity_score",
    "standardisation", "STANDARDISED", "LOGISTIC_FEATURES", "LOGISTIC_SIGNALS", "threshold_quality",
    # thresholds
    "best_f1_threshold", "youden_threshold", "forced_scores",
    # fused scores: a rank fusion, the shipped lexical and judge fusions, how an answer's sentences combine
    "RankFusion", "LexicalFusions", "shipped_lexical_fusion", "shipped_fusion", "JUDGE_FUSION_SIGNALS",
    "LEXICAL_FUSION_SIGNALS", "reference_sample", "rank_share", "answer_scores", "top_two_mean",
    "unsupported_probability", "length_aware_noisy_or", "LENGTH_AWARE_NOISY_OR",
    # label-free adaptation
    "DomainSentences", "adapt", "METHODS", "DEFAULT_METHOD",
    # fitting on labels, and its cross-validation against the training-free score
    "fit_detector", "fitted_rows", "REGULARISATION", "Sides", "SIDES", "logistic_sides", "fusion_sides", "score_fold",
    "cross_validate", "HeldOut", "compare", "Comparison",
    # resampled intervals (a bootstrap over sources)
    "group_draws", "group_aucs", "resample_aucs", "group_counts", "flag_metrics", "flag_intervals", "paired_f1",
    "percentile_interval", "interval_text",
]

if not TYPE_CHECKING:  # at run time each name is imported when first used (a type checker sees the imports above)
    __getattr__ = exported(__name__, {
        "calibration": ["Calibration", "shipped_calibration", "fit_calibration", "SCORE_RULES", "gap_score",
                        "sensitivity_score", "standardisation", "STANDARDISED", "LOGISTIC_FEATURES", "LOGISTIC_SIGNALS",
                        "threshold_quality"],
        "thresholds": ["best_f1_threshold", "youden_threshold", "forced_scores"],
        "fusion": ["RankFusion", "LexicalFusions", "shipped_lexical_fusion", "JUDGE_FUSION_SIGNALS",
                   "LEXICAL_FUSION_SIGNALS", "reference_sample", "rank_share", "answer_scores", "top_two_mean",
                   "unsupported_probability", "length_aware_noisy_or", "LENGTH_AWARE_NOISY_OR"],
        "judge_fusion": ["shipped_fusion"],
        "adaptation": ["DomainSentences", "adapt", "METHODS", "DEFAULT_METHOD"],
        "fitting": ["fit_detector", "fitted_rows", "REGULARISATION"],
        "cross_validation": ["Sides", "SIDES", "logistic_sides", "fusion_sides", "score_fold", "cross_validate",
                             "HeldOut", "compare", "Comparison"],
        "resampling": ["group_draws", "group_aucs", "resample_aucs", "group_counts", "flag_metrics", "flag_intervals",
                       "paired_f1", "percentile_interval", "interval_text"],
    })
