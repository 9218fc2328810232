"""The detection a :class:`~groundsense.config.DetectorConfig` describes (:func:`make_detection`):
a detector, or a cascade to the verifier it names. Built here because only this layer knows
the verifier kinds; the core's :class:`~groundsense.detection.Detection` interface does not.

Made in two steps: :func:`prepare_detection` checks everything that needs no model, and
:meth:`PreparedDetection.build` loads the models. `serve` prepares before it listens and builds in
the background; a Ray batch prepares on the driver before Ray starts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..calibration.judge_fusion import check_scorer
from ..calibration.loaded import Loaded, load_files
from ..config import DetectorConfig
from ..errors import ScorerUnavailable
from ..weights import check_available, display_name
from .kinds import ON_SCORER, build_verifier, check_verifier

if TYPE_CHECKING:
    from ..calibration.adjudicator import Adjudicator
    from ..calibration.calibration import Calibration
    from ..calibration.fusion import LexicalFusions, RankFusion
    from ..detection import Detection
    from ..scorer import Scorer
    from .model import ModelVerifier


@dataclass(frozen=True)
class PreparedDetection:
    """A detection checked and ready to load: ``config`` as :func:`load_files` records it, with
    ``loaded``, the objects it names; the verifier it names (:func:`check_verifier`'s class, model
    and options); and the detector's ``adjudicator`` (how its scores become flags), made for the
    scorer's name and precision, with ``detector_loaded``, the detector's objects."""

    config: DetectorConfig
    loaded: Loaded
    verifier: tuple[type[ModelVerifier], str, dict] | None
    adjudicator: Adjudicator
    detector_loaded: Loaded

    def build(self, scorer: Scorer | None = None) -> Detection:
        """The detection, its models loaded (``scorer``: the loaded one it was prepared with). A
        verifier that runs on the detector's own scorer (``judge:``, ``contextcite:``) shares it,
        so that model is loaded once."""
        from ..pipeline.detector import Detector
        from .cascade import Cascade

        detector = Detector.judging_by(self.adjudicator, self.detector_loaded, scorer)
        if self.verifier is None:
            return detector
        cls, model, options = self.verifier
        shared = detector.scorer if cls.kind in ON_SCORER and display_name(model) == detector.scorer.name else None
        verifier = build_verifier(cls, shared or model, self.config.device, detector.config.precision, options)
        return Cascade.made(detector, verifier, self.config, self.loaded.cascade_fusion)


def prepare_detection(config: DetectorConfig, scorer: Scorer | None = None, *, calibration: Calibration | None = None,
                      fusion: LexicalFusions | RankFusion | None = None) -> PreparedDetection:
    """What :func:`make_detection` builds, with all that can be refused without loading a model
    refused: the verifier spec; the files the config names (read here, once) or the ``calibration``
    and ``fusion`` objects given instead; a fused cascade's fusion against the scorer; the
    precision on this device and how the scores become flags at it (the calibration's scorer and
    leave-one-out kind, the score and its targets); and the weights of the scorer (``scorer``: an
    already loaded one, used instead) and of a verifier that runs on a scorer, which must be
    findable here."""
    from ..calibration.adjudicator import Adjudicator  # torch: imported once a detection is made
    from ..pipeline.precision import detection_precision

    checked = check_verifier(config)
    config, loaded = load_files(config, calibration, fusion)
    name = scorer.name if scorer is not None else display_name(config.scorer)
    if loaded.cascade_fusion is not None:
        check_scorer(loaded.cascade_fusion, name)
    detector_config, detector_loaded = load_files(config.without_verifier(), loaded.calibration, loaded.lexical_fusions)
    precision = scorer.precision if scorer is not None else detection_precision(config.precision, config.device)
    if scorer is None:  # before the adjudicator, whose warnings name the scorer
        check_available(config.scorer)
    adjudicator = Adjudicator(replace(detector_config, scorer=name, precision=precision), detector_loaded)
    if checked is not None and checked[0].kind in ON_SCORER and display_name(checked[1]) != name:
        try:
            check_available(checked[1])
        except ScorerUnavailable as exc:
            raise ScorerUnavailable(f"verifier {config.verifier}: {exc}") from exc
    return PreparedDetection(config, loaded, checked, adjudicator, detector_loaded)


def make_detection(config: DetectorConfig, scorer: Scorer | None = None, *, calibration: Calibration | None = None,
                   fusion: LexicalFusions | RankFusion | None = None) -> Detection:
    """The detection ``config`` describes: a :class:`~groundsense.pipeline.detector.Detector`, or a
    :class:`~groundsense.verification.cascade.Cascade` to its ``verifier`` when it names one.
    ``scorer``: an already loaded one to use instead of loading ``config.scorer``; ``calibration``
    and ``fusion``: objects to use instead of the files the config names. Every setting is checked
    before any model loads (:func:`prepare_detection`)."""
    return prepare_detection(config, scorer, calibration=calibration, fusion=fusion).build(scorer)
