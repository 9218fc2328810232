"""Signed sensitivity: do the signed leave-one-out features tell a sentence that conflicts
with the evidence from a baseless one?

Among the unsupported sentences of the test partition, "conflict" is the positive class and
"baseless" the negative; AUC 0.5 means no separation. Compared, each fit or oriented on the
development partition only:

- each signed feature (:data:`groundsense.features.SIGNED`) and, for reference, the gap,
  oriented so that its development AUC is at least 0.5;
- ``signed (logistic)``: a logistic regression on the three signed features — the candidate
  for a ``kind`` hint, fixed before looking at the test partition;
- ``grounding (logistic)`` and ``grounding + signed (logistic)``: the six unsigned grounding
  features without and with the signed ones (what the signed features add).

Rule for exposing a ``kind`` hint in the detector's output (:data:`KIND_MIN_AUC`): the
candidate's test AUC is at least 0.65 *and* its 95% source-level interval excludes 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from groundsense.features import GROUNDING, SIGNED, signed_features

from .bootstrap import BootstrapResult, source_bootstrap
from .methods import logistic_scores
from .metrics import auc_or_nan

KIND_MIN_AUC = 0.65
CANDIDATE = "signed (logistic)"
REFERENCE = "grounding (logistic)"


def with_signed(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the signed features computed from its ``gap`` and ``drops`` columns
    (the same function the detector uses, so cached features need no re-scoring; a sentence
    without drops gets none), or as it is where it holds no drops."""
    if "drops" not in table:
        return table
    drops = [d if isinstance(d, (list, np.ndarray)) else [] for d in table["drops"]]
    return table.assign(**signed_features(table["gap"].to_numpy(dtype=float), drops))


@dataclass
class KindSeparation:
    """Conflict-vs-baseless AUCs on the test partition's unsupported sentences."""

    bootstrap: BootstrapResult
    n_conflict: int
    n_baseless: int
    n_sources: int
    orientation: dict[str, int]  # +1: higher means conflict (chosen on dev); -1: lower

    @property
    def reliable(self) -> bool:
        """Whether the candidate meets the rule for a ``kind`` hint."""
        row = self.bootstrap.intervals().loc[CANDIDATE]
        return bool(row["auc"] >= KIND_MIN_AUC and (row["lo"] > 0.5 or row["hi"] < 0.5))

    @property
    def added(self) -> dict[str, float | bool]:
        """AUC(grounding + signed) - AUC(grounding): what the signed features add."""
        return self.bootstrap.difference("grounding + signed (logistic)", REFERENCE)

    def table(self) -> pd.DataFrame:
        frame = self.bootstrap.intervals()
        frame["higher means"] = [
            {1: "conflict", -1: "baseless"}[self.orientation[m]] if m in self.orientation else "fit on dev"
            for m in frame.index
        ]
        return frame


def _typed_unsupported(part: pd.DataFrame) -> pd.DataFrame:
    rows = part[(part["label"] == 1) & part["type"].isin(["conflict", "baseless"])]
    return rows.assign(conflict=(rows["type"] == "conflict").astype(int)).reset_index(drop=True)


def kind_separation(
    dev: pd.DataFrame, test: pd.DataFrame, seed: int = 0, n_resamples: int = 2000
) -> KindSeparation | None:
    """Conflict-vs-baseless separation (see the module docstring), or None when either
    partition lacks conflicting or baseless sentences (e.g. a benchmark without types)."""
    dev, test = _typed_unsupported(with_signed(dev)), _typed_unsupported(with_signed(test))
    if any(set(part["conflict"]) != {0, 1} for part in (dev, test)):
        return None
    y_dev = dev["conflict"].to_numpy()
    orientation, scores = {}, {}
    for feature in (*SIGNED, "gap"):
        sign = 1 if auc_or_nan(y_dev, dev[feature].to_numpy(dtype=float)) >= 0.5 else -1
        orientation[feature] = sign
        scores[feature] = sign * test[feature].to_numpy(dtype=float)
    for name, features in {
        CANDIDATE: list(SIGNED),
        REFERENCE: list(GROUNDING),
        "grounding + signed (logistic)": list(GROUNDING) + list(SIGNED),
    }.items():
        scores[name] = logistic_scores(dev, test, features, target="conflict")
    y = test["conflict"].to_numpy()
    return KindSeparation(
        bootstrap=source_bootstrap(y, scores, test["source_id"].to_numpy(), n_resamples, seed),
        n_conflict=int(y.sum()),
        n_baseless=int(len(y) - y.sum()),
        n_sources=int(test["source_id"].nunique()),
        orientation=orientation,
    )
