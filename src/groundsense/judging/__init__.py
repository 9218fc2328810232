"""Deprecated: this package is now :mod:`groundsense.calibration` (issue #54: "judging" read as
the judge's). ``groundsense.judging`` and its modules still import, as the new ones, with a
:class:`DeprecationWarning`, until the next release."""

from __future__ import annotations

import importlib
import sys
import warnings

warnings.warn("groundsense.judging is now groundsense.calibration; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)

MODULES = ("adaptation", "adjudicator", "calibration", "cross_validation", "fitting", "fusion", "resampling",
           "thresholds")
for _name in MODULES:
    sys.modules[f"{__name__}.{_name}"] = globals()[_name] = importlib.import_module(f"groundsense.calibration.{_name}")
