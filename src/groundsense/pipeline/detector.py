"""The facade: ``Detector(...).detect(answer=..., context=... | passages=[...], question=...)``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..calibration.adjudicator import Adjudicator, rule_answer
from ..calibration.calibration import Calibration
from ..calibration.fusion import LexicalFusions
from ..calibration.loaded import Loaded, apart, load_files
from ..config import DEFAULTS, DetectorConfig
from ..detection import Detection
from ..errors import InputError
from ..inputs.evidence import build_evidence
from ..inputs.text import segment_sentences
from ..inputs.validate import PRECISIONS, CheckedRow
from ..result import AnswerSummary, DetectionResult, SentenceResult
from ..scorer import Scorer
from ..weights import check_available, display_name
from .precision import detection_precision
from .stream import DetectionStream


class Detector(Detection):
    """Sentence-level grounding detector.

    ``scorer``: a :class:`Scorer`, a scorer name (built-in, directory or Hugging Face id)
    or ``None`` for the embedded default. ``mode="full"`` scores K+2 conditions and the
    ``sensitivity`` score rule; ``"two_pass"`` scores only full and no context, with the
    ``gap`` score rule. ``calibration`` is a file or :class:`Calibration`; by default the
    one shipped for the scorer serves, fitted on as many chunks as an answer's evidence was
    scored in, and without one nothing is flagged (with a warning; ``calibration=False`` asks
    for no calibration and no warning): ``detector.adjudicator``, a
    :class:`~groundsense.calibration.adjudicator.Adjudicator`, chooses, and builds the results.

    ``leave_one_out`` (full mode): ``"exact"`` re-encodes the context without each chunk;
    ``"masked"`` approximates that by hiding the chunk from the answer over one encoding
    of the full context (cheaper; see docs/performance.md). The shipped calibrations are
    fitted on exact features, so masked mode uses them for the ``gap`` score rule only; for
    ``sensitivity`` pass a calibration fitted with masked features. ``precision``: ``fp32``, or the
    faster, approximate ``bf16`` or ``int8`` (docs/performance.md); int8 needs its own calibration.
    ``score``: ``auto`` (``fused`` where a shipped fusion serves these settings, else
    ``sensitivity``), ``fused`` (the lexical fusion) or ``sensitivity`` (the calibration's); see
    :class:`DetectorConfig`. ``fusion``: the fused score's lexical fusions adapted to a domain
    (:class:`~groundsense.calibration.fusion.LexicalFusions` or the file ``groundsense calibrate
    --adapt`` wrote) in place of the shipped ones.

    The settings are checked as a :class:`DetectorConfig` before the scorer loads, and kept
    as ``detector.config``; :meth:`from_config` builds a detector from one. It is a
    :class:`~groundsense.detection.Detection`: it implements ``detect_checked`` (and ``with_options``,
    ``stream``) and inherits ``detect``, ``iter_detect`` and ``detect_many``. Its settings are read
    from ``detector.config`` only (``detector.config.k``, ``.mode``, ...); ``detector.scorer`` and
    ``detector.adjudicator`` are what it runs with.
    """

    def __init__(
        self,
        scorer: Scorer | str | None = None,
        k: int = DEFAULTS.k,
        mode: str = DEFAULTS.mode,
        calibration: Calibration | str | Path | None | bool = None,
        max_context_tokens: int = DEFAULTS.max_context_tokens,
        max_answer_tokens: int = DEFAULTS.max_answer_tokens,
        device: str | None = None,
        leave_one_out: str = DEFAULTS.leave_one_out,
        target_recall: float | None = None,
        target_precision: float | None = None,
        precision: str = DEFAULTS.precision,
        score: str = DEFAULTS.score,
        fusion: LexicalFusions | str | Path | None = None,
    ):
        files, calibration_object, fusion_object = apart(calibration, fusion)
        config = DetectorConfig(  # checked before the scorer loads; an object given: True, beside it
            scorer=scorer.name if isinstance(scorer, Scorer) else scorer, k=k, mode=mode, leave_one_out=leave_one_out,
            max_context_tokens=max_context_tokens, max_answer_tokens=max_answer_tokens,
            device=device, target_recall=target_recall, target_precision=target_precision, precision=precision,
            score=score, **files,
        )
        loaded = load_files(config, calibration_object, fusion_object)
        self._build(*loaded, scorer if isinstance(scorer, Scorer) else None, {})

    def _build(self, config: DetectorConfig, loaded: Loaded, scorer: Scorer | None,
               siblings: dict[tuple[int, str], Detector]) -> None:
        """The one way a detector is made: from ``config`` and the objects it names, ``loaded``
        (:func:`~groundsense.calibration.loaded.load_files`), with ``config``'s scorer loaded
        (unless ``scorer`` is given); ``siblings``, the detectors by K and mode that share it."""
        if scorer is None:
            check_available(config.scorer)
        name, precision = ((scorer.name, scorer.precision) if scorer is not None
                           else (display_name(config.scorer), detection_precision(config.precision, config.device)))
        # which calibration judges, the thresholds, the result; made before the scorer loads, so that
        # a setting it refuses costs no load
        self._judge_by(Adjudicator(replace(config, scorer=name, precision=precision), loaded), loaded, scorer, siblings)

    def _judge_by(self, adjudicator: Adjudicator, loaded: Loaded, scorer: Scorer | None,
                  siblings: dict[tuple[int, str], Detector]) -> None:
        self.adjudicator = adjudicator
        # What this detector was built from (its siblings, :meth:`with_options`, too): the scorer by
        # the name it resolves to and at its precision, the score resolved (``auto``: ``fused`` or
        # ``sensitivity``).
        self.config = adjudicator.config
        self.loaded = loaded
        self.scorer = scorer or Scorer(self.config.scorer, device=self.config.device, precision=self.config.precision)
        self._siblings = siblings
        siblings[(self.config.k, self.config.mode)] = self

    @classmethod
    def from_config(cls, config: DetectorConfig, scorer: Scorer | None = None, *,
                    calibration: Calibration | None = None, fusion: LexicalFusions | None = None) -> Detector:
        """The detector ``config`` describes; ``scorer``, an already loaded one to use instead
        of loading ``config.scorer``; ``calibration`` and ``fusion``, objects to use instead of the
        files the config names (:func:`~groundsense.calibration.loaded.load_files`). A config that
        names a verifier describes a cascade, which ``groundsense.make_detection`` builds."""
        if config.verifier is not None:
            raise InputError(f"this config names a verifier ({config.verifier}), so it describes a cascade: "
                             "build it with groundsense.make_detection(config)")
        detector = cls.__new__(cls)
        detector._build(*load_files(config, calibration, fusion), scorer, {})
        return detector

    @classmethod
    def judging_by(cls, adjudicator: Adjudicator, loaded: Loaded, scorer: Scorer | None = None) -> Detector:
        """The detector that judges by ``adjudicator`` (made for ``loaded``, its config's objects),
        loading the scorer it names, or taking ``scorer``, loaded already at that name and precision:
        how a prepared detection is built (:func:`~groundsense.verification.factory.prepare_detection`)."""
        config = adjudicator.config
        resolved = config.scorer == display_name(config.scorer) and config.precision in set(PRECISIONS) - {"auto"}
        if not resolved:
            raise InputError(f"the adjudicator was made for scorer {config.scorer} at {config.precision}, not for a "
                             "scorer's resolved name and precision: make the detector with "
                             "groundsense.verification.prepare_detection(config).build()")
        if scorer is not None and (scorer.name, scorer.precision) != (config.scorer, config.precision):
            raise InputError(f"the scorer given is {scorer.name} at {scorer.precision}, and the detection was prepared "
                             f"for {config.scorer} at {config.precision}: prepare it with this scorer")
        detector = cls.__new__(cls)
        detector._judge_by(adjudicator, loaded, scorer, {})
        return detector

    def describe(self, chunks: int | None = None) -> dict:
        """The scorer, mode and leave-one-out kind (None in two-pass mode), and what judges an
        answer scored in ``chunks`` chunks (default: K): the score rule (``sensitivity``, ``gap`` or ``fused``),
        its calibration's source (``given``, ``shipped`` or None: nothing is flagged) and the
        sentence and answer thresholds."""
        config = self.config
        judged_by = self.adjudicator.describe(config.k if chunks is None else chunks)
        return {"kind": "detector", "scorer": self.scorer.name, "precision": self.scorer.precision,
                "mode": config.mode, "leave_one_out": self.adjudicator.leave_one_out, "k": config.k, **judged_by}

    def with_options(self, k: int | None = None, mode: str | None = None) -> Detector:
        """This detector with another ``k`` or ``mode`` (a request's ``options``): a detector
        that shares the scorer and the rest of its configuration (token budgets, leave-one-out
        kind, an explicitly given calibration), made once and kept."""
        key = (self.config.k if k is None else k, self.config.mode if mode is None else mode)
        if key not in self._siblings:
            sibling = type(self).__new__(type(self))
            sibling._build(replace(self.config, k=key[0], mode=key[1]), self.loaded, self.scorer, self._siblings)
            self._siblings[key] = sibling  # under the key asked for too (a checked k may read otherwise)
        return self._siblings[key]

    def verified_answer(self, result: DetectionResult, sentences: list[SentenceResult]) -> AnswerSummary:
        """The answer's summary under this detector's answer rule once a cascade's verifier has
        judged some of ``result``'s sentences again: flagged when a sentence is, or when the rule
        (the fused score's noisy-OR, a calibration's answer threshold) fires on the sentences the
        verifier did not clear (:func:`~groundsense.calibration.adjudicator.rule_answer`)."""
        rule = self.with_options(mode=result.mode).adjudicator.rule(len(result.chunks))
        cleared = {i for i, s in enumerate(sentences) if s.verifier_score is not None and s.flagged is False}
        return rule_answer(rule, sentences, cleared)

    def detect_checked(self, row: CheckedRow, stop: Callable[[], bool] | None = None) -> DetectionResult:
        """Score every sentence of a request row :func:`validate.check_row` accepted (not checked
        again) against its evidence, with the ``k`` and ``mode`` it asks for. ``stop``, asked
        between the scorer's conditions, cancels the work when it returns True (``errors.Cancelled``)."""
        detector, arguments = self.with_options(**row.options), row.arguments
        answer = arguments["answer"]
        spans = list(segment_sentences(answer) if row.spans is None else row.spans)
        if not spans:
            raise InputError("the answer has no sentence to score")
        config, scorer = detector.config, detector.scorer
        with scorer.lock:  # threads calling one detector take turns on its scorer
            evidence = build_evidence(scorer, arguments["context"], arguments["passages"], config.k,
                                      config.max_context_tokens)
            chunk_texts = [evidence.chunk_text(c) for c in evidence.chunks]
            prompt = scorer.encode(arguments["question"], chunk_texts, answer, config.max_answer_tokens)
            scores = scorer.score(prompt, leave_one_out=config.mode == "full",
                                  masked=detector.adjudicator.leave_one_out == "masked", stop=stop)
            warnings = scorer.unfamiliar_text(prompt)
        return detector.adjudicator.result(answer, spans, evidence, prompt, scores, warnings)

    def stream(self, question: str = "", context: str | None = None, passages: list[str] | None = None,
               score_every: int = 16) -> DetectionStream:
        """Check an answer while it is generated: ``stream.feed(delta)`` returns the sentences
        each piece of text finished, judged; ``stream.close()`` the whole answer's result,
        equal to :meth:`detect` with the same sentence spans (see :mod:`groundsense.pipeline.stream`)."""
        return DetectionStream(self.scorer, self.adjudicator, question, context, passages, score_every)
