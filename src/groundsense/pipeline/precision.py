"""The precision a detection runs at, resolved once, where the detection is made.

``auto`` is what ``GROUNDSENSE_PRECISION`` names where it is set (an operator's one switch for
every entry point: the CLI, `serve`, the stream, Ray actors, the integrations), else the
hardware's choice (:func:`~groundsense.scorer.loading.resolve_precision`). The scorer, the
calibration and fusion files and the verifiers below are handed the result and read no
environment."""

from __future__ import annotations

import os

from ..errors import InputError
from ..inputs.validate import PRECISIONS
from ..scorer.loading import pick_device, resolve_precision

PRECISION_VARIABLE = "GROUNDSENSE_PRECISION"


def detection_precision(precision: str, device: str | None) -> str:
    """``precision`` (a config's) as a detection on ``device`` runs it: never ``auto``."""
    if precision == "auto":
        asked = os.environ.get(PRECISION_VARIABLE, "").strip().lower() or "auto"
        if asked not in PRECISIONS:
            raise InputError(f"{PRECISION_VARIABLE}={asked!r}: expected one of {', '.join(PRECISIONS)}")
        precision = asked
    return resolve_precision(precision, pick_device(device))
