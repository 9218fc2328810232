"""The detection a :class:`~groundsense.config.DetectorConfig` describes (:func:`make_detection`):
a detector, or a cascade to the verifier it names. Built here because only this layer knows
the verifier kinds; the core's :class:`~groundsense.detection.Detection` interface does not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..calibration.judge_fusion import check_scorer
from ..calibration.loaded import load_files
from ..config import DetectorConfig
from ..weights import display_name
from .kinds import ON_SCORER, build_verifier, check_verifier

if TYPE_CHECKING:
    from ..calibration.calibration import Calibration
    from ..calibration.fusion import LexicalFusions, RankFusion
    from ..detection import Detection
    from ..scorer import Scorer


def make_detection(config: DetectorConfig, scorer: Scorer | None = None, *, calibration: Calibration | None = None,
                   fusion: LexicalFusions | RankFusion | None = None) -> Detection:
    """The detection ``config`` describes: a :class:`~groundsense.pipeline.detector.Detector`, or a
    :class:`~groundsense.verification.cascade.Cascade` to its ``verifier`` when it names one (checked by
    :func:`check_verifier` before anything loads). ``scorer``: an already loaded one to use
    instead of loading ``config.scorer``; ``calibration`` and ``fusion``: objects to use instead of
    the files the config names. The files are read here, once, and a fused cascade's fusion is
    checked against the scorer before any model loads. A verifier that runs on the detector's own
    scorer (``judge:``, ``contextcite:``) shares it, so that model is loaded once."""
    from ..pipeline.detector import Detector
    from .cascade import Cascade

    checked = check_verifier(config)
    config, loaded = load_files(config, calibration, fusion)
    if loaded.cascade_fusion is not None:
        check_scorer(loaded.cascade_fusion, scorer.name if scorer is not None else display_name(config.scorer))
    detector = Detector.from_config(config.without_verifier(), scorer, calibration=loaded.calibration,
                                    fusion=loaded.lexical_fusions)
    if checked is None:
        return detector
    cls, model, options = checked
    shared = detector.scorer if cls.kind in ON_SCORER and display_name(model) == detector.scorer.name else None
    verifier = build_verifier(cls, shared or model, config.device, detector.config.precision, options)
    return Cascade.made(detector, verifier, config, loaded.cascade_fusion)
