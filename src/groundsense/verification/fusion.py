"""Deprecated: now :mod:`groundsense.calibration.judge_fusion` (issue #54: one home for how a score
becomes a flag). This name still imports, with a :class:`DeprecationWarning`, until the next release."""

import warnings

from ..calibration.judge_fusion import SHIPPED_JUDGE, check_scorer, fusion_for, shipped_fusion, shipped_name

warnings.warn("groundsense.verification.fusion is now groundsense.calibration.judge_fusion; the old name goes in "
              "the next release", DeprecationWarning, stacklevel=2)

__all__ = ["SHIPPED_JUDGE", "check_scorer", "fusion_for", "shipped_fusion", "shipped_name"]
