"""The detection a :class:`~groundsense.config.DetectorConfig` describes (:func:`make_detection`):
a detector, or a cascade to the verifier it names. Built here because only this layer knows
the verifier kinds; the core's :class:`~groundsense.detection.Detection` interface does not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..calibration.judge_fusion import check_scorer, fusion_for
from ..config import DetectorConfig
from ..weights import display_name
from .kinds import ON_SCORER, build_verifier, check_verifier

if TYPE_CHECKING:
    from ..detection import Detection
    from ..scorer import Scorer


def make_detection(config: DetectorConfig, scorer: Scorer | None = None) -> Detection:
    """The detection ``config`` describes: a :class:`~groundsense.pipeline.detector.Detector`, or a
    :class:`~groundsense.verification.cascade.Cascade` to its ``verifier`` when it names one (checked by
    :func:`check_verifier` before anything loads). ``scorer``: an already loaded one to use
    instead of loading ``config.scorer``. A verifier that runs on the detector's own scorer
    (``judge:``, ``contextcite:``) shares it, so that model is loaded once. A fused cascade's
    fusion is read, and refused, before anything loads too."""
    from ..pipeline.detector import Detector
    from .cascade import Cascade

    checked = check_verifier(config)
    fusion = fusion_for(config.verifier, config.fusion) if config.fuse and config.verifier else None
    if fusion is not None:
        check_scorer(fusion, scorer.name if scorer is not None else display_name(config.scorer))
    detector = Detector.from_config(config.without_verifier(), scorer)
    if checked is None:
        return detector
    cls, model, options = checked
    shared = detector.scorer if cls.kind in ON_SCORER and display_name(model) == detector.scorer.name else None
    verifier = build_verifier(cls, shared or model, config.device, detector.config.precision, options)
    return Cascade(detector, verifier, config.escalate, config.verifier_threshold, fusion or False)
