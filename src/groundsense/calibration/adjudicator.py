"""The calibration stage's last step: from an answer's token scores to its :class:`DetectionResult`.

:class:`Adjudicator` holds what a detector configuration judges by: which calibration and score
rule apply to an answer (they depend on how many chunks its evidence was scored in), the
sentence and answer thresholds, each sentence's score, flag and support, and the answer's
summary. The detector (:meth:`Detector.detect <groundsense.pipeline.detector.Detector.detect>`) and the
stream (:class:`~groundsense.pipeline.stream.DetectionStream`) both build their results through it, once.

Named *adjudicator*, not *judge*: ``verification/judge.py`` is the LLM judge, a verifier a
cascade escalates sentences to.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Container, Mapping
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..config import DetectorConfig
from ..errors import InputError
from ..features import SENTENCE_VALUES, assign_tokens, sentence_features, support_chunk
from ..inputs.evidence import Evidence
from ..inputs.text import Span
from ..lexical import LEXICAL, EvidenceWords, absent_terms, lexical_signals
from ..result import AnswerSummary, ChunkSpan, DetectionResult, SentenceResult, Support, TokenRows, Truncation
from ..scorer import EncodedPrompt, TokenScores
from ..weights import display_name
from .calibration import LEVELS, Calibration, gap_score, shipped_calibration
from .fusion import LexicalFusions, RankFusion, shipped_lexical_fusion
from .loaded import Loaded

log = logging.getLogger(__name__)


class Rule(NamedTuple):
    """What judges an answer whose evidence was scored in some number of chunks."""

    calibration: Calibration | None  # None: nothing is flagged, unless a fusion scores
    score_rule: str  # the score rule: "sensitivity", "gap" or "fused"
    threshold: float | None  # where a sentence is flagged
    answer_threshold: float | None  # where the answer is
    fusion: RankFusion | None = None  # the lexical fusion, where the score rule is "fused"


class Adjudicator:
    """The verdicts of one detector configuration: ``config`` with its scorer resolved to a name
    and its precision to ``fp32``, ``bf16`` or ``int8``, and ``loaded``, the objects it names
    (:func:`~groundsense.calibration.loaded.load_files`; None: it names none): a calibration
    given (else the shipped ones, or none where ``config.calibration`` is False), and the fused
    score's lexical fusions, given (else the shipped ones).

    Made, it has resolved the score ``auto`` (``config`` then names ``fused`` or ``sensitivity``),
    refused a calibration fitted on the other leave-one-out kind, settings the fused score cannot
    honour, and a target recall or precision that a calibration or fusion which may judge cannot
    meet, and warned when nothing will be flagged for want of a calibration.
    """

    def __init__(self, config: DetectorConfig, loaded: Loaded | None = None):
        calibration, fusions = (loaded.calibration, loaded.lexical_fusions) if loaded is not None else (None, None)
        if (calibration is None) != (config.calibration in (None, False)) or (fusions is None) != (
                config.fusion is None or config.fuse):
            raise InputError("the config names a calibration or fusion that was not loaded, or was given one it does "
                             "not name: pass what groundsense.calibration.loaded.load_files(config) returns")
        self.config = config  # its score resolved below, where it is ``auto``
        self.calibration = calibration
        self.leave_one_out = config.leave_one_out if config.mode == "full" else None  # two-pass mode has none
        if calibration is not None and calibration.scorer != display_name(config.scorer):
            raise InputError(f"the calibration was fitted for scorer {calibration.scorer}, and this detector runs "
                             f"{display_name(config.scorer)}: detect with -m {calibration.scorer}, or fit one for "
                             "this scorer with `groundsense calibrate`")
        if calibration is not None and self.leave_one_out and calibration.leave_one_out != self.leave_one_out:
            raise InputError(
                f"the calibration was fitted on {calibration.leave_one_out} leave-one-out features, not "
                f"{self.leave_one_out} ones: fit one with `groundsense calibrate --loo {self.leave_one_out}`"
            )
        if config.calibration is None and self._shipped(None) is None:
            log.warning("no calibration for scorer %s at %s: scores are -gap and nothing is flagged; "
                        "run `groundsense calibrate` to make one", display_name(config.scorer), config.precision)
        self._calibrations: dict[int, tuple[Calibration | None, str]] = {}
        self._fusions: dict[str, RankFusion | None] = {}
        self._given_fusions = fusions
        if fusions is not None:
            self._check_fusions(fusions)
        _, score_rule = self.calibration_for(config.k)  # that of an answer scored in K chunks
        if config.score == "auto":
            config = self.config = replace(config, score="fused" if self._fused_serves() else "sensitivity")
        if config.score == "fused":
            self._check_fused()
        elif any(target is not None for target in config.targets):
            self._check_targets(score_rule)

    def calibration_for(self, chunks: int) -> tuple[Calibration | None, str]:
        """The calibration and the score rule (``sensitivity`` or ``gap``) that judge an answer
        whose evidence was scored in ``chunks`` chunks (passages ignore K).

        A given calibration judges every answer. Otherwise the ``sensitivity`` score, whose
        statistics depend on the chunks, takes the shipped calibration fitted on answers
        scored in as many; the ``gap`` score, whose threshold depends neither on the
        chunks nor on the leave-one-out rows, takes any shipped one where there is none, in
        two-pass mode, and in masked mode (the shipped ones are fitted on exact features).
        """
        if self.calibration is not None:
            return self.calibration, "sensitivity" if self.config.mode == "full" else "gap"
        if self.config.calibration is False:
            return None, "gap"
        if chunks not in self._calibrations:
            fitted = self._shipped(chunks) if self.leave_one_out == "exact" else None
            found = (fitted, "sensitivity") if fitted else (self._shipped(None), "gap")
            self._calibrations[chunks] = found
        return self._calibrations[chunks]

    def fusion_for(self, chunks: int) -> RankFusion | None:
        """The lexical fusion that scores an answer scored in ``chunks`` chunks (``score="fused"``):
        full mode's where :meth:`calibration_for` gives the ``sensitivity`` score (its statistics
        are that calibration's), else two-pass mode's, which ranks the gap; None where none is
        shipped for the scorer at its precision."""
        mode = "full" if self.calibration_for(chunks)[1] == "sensitivity" else "two_pass"
        if self._given_fusions is not None:
            return self._given_fusions.for_mode(mode)
        if mode not in self._fusions:
            scorer = display_name(self.config.scorer)
            self._fusions[mode] = shipped_lexical_fusion(scorer, self.config.precision, mode)
        return self._fusions[mode]

    def _check_fusions(self, fusions: LexicalFusions) -> None:
        """Refuse given lexical fusions made for another scorer or precision than the config's."""
        config = self.config
        scorer = display_name(config.scorer)
        if (fusions.scorer, fusions.precision) != (scorer, config.precision):
            raise InputError(f"the fusion file was made for scorer {fusions.scorer} at {fusions.precision}, and this "
                             f"detector runs {scorer} at {config.precision}: detect with -m {fusions.scorer} "
                             f"--precision {fusions.precision}, or adapt the fusions again at these settings")

    def _fused_serves(self) -> bool:
        """Whether the fused score serves the config: no calibration file (or ``False``) is given,
        and fusions are shipped for its scorer at its precision."""
        config = self.config
        return config.calibration is None and self.fusion_for(config.k) is not None and self.fusion_for(0) is not None

    def _check_fused(self) -> None:
        """The fused score flags at its shipped fusion's thresholds: refuse what it cannot honour."""
        config = self.config
        if config.calibration is False:
            raise InputError("calibration=False asks for no flags, and the fused score flags at its shipped fusion's "
                             "thresholds: leave calibration out, or use score='sensitivity' without a calibration")
        if config.calibration is not None:
            raise InputError("a calibration file holds the sensitivity score's statistics and thresholds, and the "
                             "fused score flags at its shipped fusion's: drop --calibration, or use --score "
                             "sensitivity")
        fusions = (self.fusion_for(config.k), self.fusion_for(0))  # 0 chunks: the two-pass one
        if any(fusion is None for fusion in fusions):
            raise InputError(f"the fused score ranks against references shipped for the default scorer at fp32 and "
                             f"bf16, and scorer {display_name(config.scorer)} at {config.precision} has none: use "
                             "--score sensitivity")
        if any(target is not None for target in config.targets):
            for fusion in fusions:  # each must reach it: either may judge an answer
                assert fusion is not None
                fusion.target_threshold(*config.targets)

    def _shipped(self, chunks: int | None) -> Calibration | None:
        """The calibration shipped for the scorer, its precision and ``chunks`` (None: any). None
        at int8: the shipped ones are fitted on fp32 or bf16 features, which int8's are not near
        (docs/performance.md, "Numeric precision")."""
        if self.config.precision == "int8":
            return None
        return shipped_calibration(display_name(self.config.scorer), chunks, self.config.precision)

    def rule(self, chunks: int) -> Rule:
        """For an answer scored in ``chunks`` chunks: :meth:`calibration_for`'s calibration and
        score rule, and where that score flags a sentence and the answer (the fitted thresholds,
        or those meeting the config's target)."""
        if self.config.score == "fused":
            fusion = self.fusion_for(chunks)
            assert fusion is not None, "the adjudicator refused a fused score without its fusions"
            if any(target is not None for target in self.config.targets):  # the answer: flagged when a sentence is
                return Rule(None, "fused", fusion.target_threshold(*self.config.targets), None, fusion)
            return Rule(None, "fused", fusion.threshold, fusion.answer_threshold, fusion)
        calibration, score_rule = self.calibration_for(chunks)
        if calibration is None:
            return Rule(None, score_rule, None, None)
        targets = self.config.targets
        threshold, answer_threshold = (calibration.threshold(score_rule, level, *targets) for level in LEVELS)
        return Rule(calibration, score_rule, threshold, answer_threshold)

    def sentence_scores(self, values: Mapping[str, np.ndarray], chunks: int) -> np.ndarray | None:
        """The scores :meth:`result` gives sentences with these ``values`` (name -> array over
        them) in an answer scored in ``chunks`` chunks, by :meth:`rule`; None where no
        calibration or fusion judges it (the score is then −gap and nothing is flagged)."""
        rule = self.rule(chunks)
        if rule.fusion is not None:
            return rule.fusion.score(rule.fusion.signals(values))
        return rule.calibration.score(rule.score_rule, dict(values)) if rule.calibration else None

    def describe(self, chunks: int) -> dict:
        """What judges an answer scored in ``chunks`` chunks: the score rule, its calibration's
        source (``given``, ``shipped`` or None: nothing is flagged) and the two thresholds."""
        rule = self.rule(chunks)
        given = self.calibration is not None or self._given_fusions is not None
        source = "given" if given else "shipped"
        return {"score_rule": rule.score_rule,
                "calibration": None if rule.calibration is None and rule.fusion is None else source,
                "threshold": rule.threshold, "answer_threshold": rule.answer_threshold}

    def result(self, answer: str, spans: list[Span], evidence: Evidence, prompt: EncodedPrompt,
               scores: TokenScores, warnings: list[str] | None = None) -> DetectionResult:
        """The result of ``answer``'s sentences ``spans`` from the token ``scores`` of ``prompt``
        (as scored so far, for a stream); ``warnings``: about the text, for the reader."""
        encoded, n = prompt.answer, len(prompt.answer.offsets)
        owner = assign_tokens(encoded.offsets, spans) if spans and n else np.full(n, -1)
        features = sentence_features(scores.logp, scores.jsd, owner, len(spans))
        values = features.values
        scored_until = len(answer) if not encoded.tokens_cut else int(encoded.offsets[-1, 1])
        unscored = [
            "past the answer token cap" if span.end > scored_until
            else "no answer token" if values["n_tokens"][i] == 0
            else None
            for i, span in enumerate(spans)
        ]
        texts = [span.of(answer) for span in spans]
        words = EvidenceWords.of([c.content.of(evidence.context) for c in evidence.chunks])
        # the words the whole evidence has, to tell a term the budget cut off from one it lacks
        whole = EvidenceWords.of([c.content.of(evidence.context) for c in evidence.chunks] + [evidence.cut_text]) \
            if evidence.tokens_removed else None
        lexical = [lexical_signals(text, words) for text in texts]
        values = {**values, **{name: np.array([row[name] for row in lexical]) for name in LEXICAL}}
        rule = self.rule(len(evidence.chunks))
        ranks: list[dict[str, float]] | None = None  # per sentence, where a fusion scores
        if rule.fusion is not None:
            signal_ranks = rule.fusion.ranks(rule.fusion.signals(values))  # a row per signal
            score, ranks = rule.fusion.combined(signal_ranks), rule.fusion.named_ranks(signal_ranks)
        else:
            score = rule.calibration.score(rule.score_rule, values) if rule.calibration else gap_score(values)
        sentences = []
        for i, span in enumerate(spans):
            scored = unscored[i] is None
            absent = absent_terms(texts[i], words)
            found_in_cut = set(absent) - set(absent_terms(texts[i], whole)) if whole and absent else set()
            sentences.append(
                SentenceResult(
                    index=i, start=span.start, end=span.end, text=texts[i],
                    score=float(score[i]) if scored else None,
                    flagged=bool(score[i] >= rule.threshold)
                    if scored and rule.threshold is not None and math.isfinite(score[i]) else None,
                    features={name: float(values[name][i]) for name in SENTENCE_VALUES},
                    drops=features.drops[i].tolist(), jsds=features.jsds[i].tolist(),
                    support=_support(evidence, features.drops[i]) if scored else None,
                    status="scored" if scored else "unscored", reason=unscored[i],
                    absent=absent, in_cut_evidence=[term for term in absent if term in found_in_cut],
                    ranks=ranks[i] if ranks is not None and scored else None,
                )
            )
        return DetectionResult(
            scorer=display_name(self.config.scorer), precision=self.config.precision, threads=scores.threads,
            mode=self.config.mode, leave_one_out=self.leave_one_out,
            k=None if any(c.passage is not None for c in evidence.chunks) else self.config.k,  # passages: as given
            max_context_tokens=self.config.max_context_tokens, max_answer_tokens=self.config.max_answer_tokens,
            score_rule=rule.score_rule, threshold=rule.threshold, sentences=sentences,
            answer=rule_answer(rule, sentences),
            truncated=Truncation(evidence.tokens_removed, encoded.tokens_cut),
            chunks=[ChunkSpan(c.index, c.content.start, c.content.end, c.passage) for c in evidence.chunks],
            warnings=list(warnings or []), tokens_processed=scores.tokens_processed,
            prompt_tokens=len(prompt.condition_ids()),  # what one full-context pass feeds
            tokens=TokenRows(scores.logp, scores.jsd, owner, encoded.offsets),
        )

    def _check_targets(self, score_rule: str) -> None:
        """A target recall or precision needs the labelled curve of every calibration that may judge,
        and must be reached by each score rule that may: the ``gap`` judges answers scored in
        chunk counts the calibration was not fitted on, so a full-mode target must suit it too."""
        scorer = self.config.scorer
        if self.calibration is not None:
            calibrations = [self.calibration]
        else:
            shipped = (self._shipped(n) for n in (None, self.config.k))
            calibrations = [c for c in shipped if c is not None] if self.config.calibration is None else []
        if not calibrations:
            raise InputError(f"a target recall or precision needs a labelled calibration, and scorer "
                             f"{scorer} has none: fit one with `groundsense calibrate`")
        for calibration in calibrations:
            for each in dict.fromkeys((score_rule, "gap")):  # in order: the message names the first
                try:
                    calibration.threshold(each, "sentence", *self.config.targets)
                except InputError as exc:
                    if each == score_rule:
                        raise
                    raise InputError(f"{exc}. It must reach it too: it judges the answers scored in a number of "
                                     f"chunks that the {score_rule} calibration was not fitted on") from None


def answer_summary(sentences: list[SentenceResult], threshold: float | None = None,
                   scores: list[float | None] | None = None) -> AnswerSummary:
    """The answer-level summary of its sentence results. The answer's score is the most
    suspicious of ``scores`` (default: every scored sentence's; NaN ones left out). The answer is
    flagged when a sentence is, or when its score reaches ``threshold`` (None: only when a
    sentence is); it is cleared only when every sentence was judged, so a failure never reads as
    supported."""
    scored = [s for s in sentences if s.status == "scored"]
    n = np.array([s.features["n_tokens"] for s in scored])
    gaps = np.array([s.features["gap"] for s in scored])
    n_flagged = sum(bool(s.flagged) for s in sentences)
    read = [s.score for s in scored] if scores is None else scores
    finite = [x for x in read if x is not None and math.isfinite(x)]
    top = max(finite, default=None)
    blocked = n_flagged > 0 or (threshold is not None and top is not None and top >= threshold)
    undecided = any(s.flagged is None for s in sentences)
    return AnswerSummary(
        gap=float((gaps * n).sum() / n.sum()) if scored else None,
        min_sentence_gap=float(gaps.min()) if scored else None,
        n_sentences=len(sentences),
        n_flagged=n_flagged,
        n_unscored=len(sentences) - len(scored),
        flagged=True if blocked else (None if undecided else False),
        score=top,
        threshold=threshold,
    )


def fused_answer(sentences: list[SentenceResult], fused: np.ndarray, fusion: RankFusion,
                 threshold: float | None) -> AnswerSummary:
    """The answer summary of sentences flagged by a fused score (``fused``: the scores its
    answer rule reads, the scored sentences'): the answer is flagged when a sentence is, or when
    their :meth:`~groundsense.calibration.fusion.RankFusion.answer_score` reaches ``threshold``
    (None: only when a sentence is, as at a target); cleared only when every sentence was judged."""
    return answer_summary(sentences, threshold, [fusion.answer_score(fused)] if len(fused) else [])


def rule_answer(rule: Rule, sentences: list[SentenceResult], cleared: Container[int] = ()) -> AnswerSummary:
    """The answer summary that ``rule`` gives ``sentences``. The sentences in ``cleared`` (indices:
    those a cascade's verifier judged supported) count by their flags only: their scores are left
    out of the answer's own rule (the fused score's noisy-OR, a calibration's answer threshold)."""
    scores = [s.score for i, s in enumerate(sentences) if s.status == "scored" and i not in cleared]
    if rule.fusion is None:
        return answer_summary(sentences, rule.answer_threshold, scores)
    return fused_answer(sentences, np.array(scores, float), rule.fusion, rule.answer_threshold)


def _support(evidence: Evidence, drops: np.ndarray) -> Support | None:
    """The chunk whose removal lowers the sentence's likelihood most, if any does."""
    k = support_chunk(drops)
    if k is None:
        return None
    chunk = evidence.chunks[k]
    return Support(k, chunk.content.start, chunk.content.end, chunk.content.of(evidence.context), float(drops[k]),
                   chunk.passage)
