"""Source-level paired bootstrap of several methods' ROC AUCs, as the reports tabulate it:
:func:`source_bootstrap` scores every method on the same resamples of whole sources
(:mod:`groundsense.calibration.resampling`'s vectorised AUCs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from groundsense.calibration import group_aucs, group_draws, percentile_interval


@dataclass
class BootstrapResult:
    """Full-sample AUCs (the point estimates) and per-resample AUCs of several methods."""

    point: dict[str, float]
    resamples: pd.DataFrame  # one column per method, one row per resample
    level: float = 0.95

    def _bounds(self, values: np.ndarray) -> tuple[float, float]:
        return percentile_interval(values, self.level)

    def intervals(self) -> pd.DataFrame:
        """Per method: ``auc`` (full sample), ``lo``, ``hi`` (percentile interval)."""
        rows = {m: (self.point[m], *self._bounds(self.resamples[m].to_numpy())) for m in self.point}
        return pd.DataFrame.from_dict(rows, orient="index", columns=["auc", "lo", "hi"])

    def difference(self, a: str, b: str) -> dict[str, float | bool]:
        """Paired AUC(a) - AUC(b): full-sample difference, interval, and whether it excludes 0."""
        lo, hi = self._bounds((self.resamples[a] - self.resamples[b]).to_numpy())
        return {"diff": self.point[a] - self.point[b], "lo": lo, "hi": hi, "significant": lo > 0 or hi < 0}

    def differences(self, baseline: str) -> pd.DataFrame:
        """Every other method against ``baseline``."""
        rows = {m: self.difference(m, baseline) for m in self.point if m != baseline}
        return pd.DataFrame.from_dict(rows, orient="index")


def source_bootstrap(
    y: np.ndarray,
    scores: Mapping[str, np.ndarray],
    groups: np.ndarray,
    n_resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap over ``groups`` (source ids): every method is scored on the same resamples."""
    y = np.asarray(y)
    draws, group_index = group_draws(groups, n_resamples, seed)
    point = {name: float(roc_auc_score(y, s)) for name, s in scores.items()}
    resamples = pd.DataFrame({name: group_aucs(y, s, group_index, draws) for name, s in scores.items()})
    return BootstrapResult(point, resamples, level)
