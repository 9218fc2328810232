"""The fused sentence score: the rank average of the scorer's signal and lexical signals (and a
judge's score, in a fused cascade). Each signal is ranked against a reference sample of
unlabelled sentences (the share of the sample below it, ties counted half) and the ranks are
averaged.

- A cascade whose verifier is a judge (candidate J of docs/detector-selection.md, adopted
  there) fuses five, :data:`JUDGE_FUSION_SIGNALS`: the detector's ``sensitivity``, the judge's
  P(unsupported) and three lexical signals; an answer's score is the mean of its two most
  suspicious sentences. Its cascade and shipped file are :mod:`groundsense.calibration.judge_fusion`'s.
- The lexical fusion (candidate F, issue #52) fuses four, :data:`LEXICAL_FUSION_SIGNALS`: the
  scorer's ``sensitivity`` (in two-pass mode its ``gap``) and the same lexical signals; an
  answer's score is the length-aware noisy-OR of its sentences (:meth:`RankFusion.answer_score`,
  chosen in docs/results/aggregation-F.md). Its shipped files: :func:`shipped_lexical_fusion`.

A :class:`RankFusion` holds what a fused score needs: the references, the ``sensitivity``
statistics (so the signal is the one the references were taken of, whatever calibration the
detector flags with), the sentence and answer thresholds, in rank space, and the answer rule.
``calibrate --adapt`` re-estimates the references on a team's unlabelled rows
(:meth:`RankFusion.adapted`); the thresholds keep their place in rank space, as
``restandardise`` keeps a threshold's place in z-sum space.

``fit --fuse`` learns from a team's labels instead (:meth:`RankFusion.with_references`,
:meth:`~RankFusion.weighted`, :meth:`~RankFusion.thresholded`): the references from its rows,
``weights`` that make the score the log-odds of a logistic regression over the ranks in
place of their plain average, and thresholds on those log-odds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from .calibration import gap_score, sensitivity_score, shipped_calibration, threshold_quality
from .files import FUSION, LEXICAL_FUSIONS, file_text, read_file
from .fitting import REGULARISATION, fit_logistic
from .thresholds import compact_curve, curve_threshold, forced_scores, labelled_threshold, verdict_threshold

if TYPE_CHECKING:
    from importlib.abc import Traversable

    from .adaptation import DomainSentences

# A judge's fused signals, in the order they are ranked: ``judge`` is the cascade's verifier's
# score, the lexical ones are a sentence result's ``features`` of the same names.
JUDGE_FUSION_SIGNALS = ("sensitivity", "judge", "overlap_chunk", "stem_novel", "bigram_novel")
# The lexical fusion's, by mode: ``gap`` is the sentence's gap score (:func:`gap_score`, higher
# = more suspicious), for two-pass mode, which has no leave-one-out features.
LEXICAL_FUSION_SIGNALS = {"full": ("sensitivity", *JUDGE_FUSION_SIGNALS[2:]),
                          "two_pass": ("gap", *JUDGE_FUSION_SIGNALS[2:])}
LENGTH_AWARE_NOISY_OR = "length-aware noisy-OR"
REFERENCE_SIZE = 1001  # the most values a reference keeps: evenly spaced order statistics of the sample
ONE_LINE = ("references", "curves")  # a fusion file's long arrays, each written on one line
FOLDER = "calibrations"  # where the shipped fusions lie in the package, beside the calibrations


def rank_share(ordered: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The share of the sorted ``ordered`` that lies below each of ``values``, ties counted half."""
    ordered, values = np.asarray(ordered, float), np.asarray(values, float)
    below, not_above = np.searchsorted(ordered, values, "left"), np.searchsorted(ordered, values, "right")
    return (below + not_above) / (2 * len(ordered))


def reference_sample(values: np.ndarray, size: int = REFERENCE_SIZE) -> list[float]:
    """``values``' finite ones sorted, or, past ``size`` of them, ``size`` evenly spaced order
    statistics (the lowest and highest included): what a fusion file keeps of a sample."""
    ordered = np.sort(np.asarray(values, float)[np.isfinite(values)])
    if len(ordered) > size:
        ordered = ordered[np.round(np.linspace(0, len(ordered) - 1, size)).astype(int)]
    return [float(v) for v in ordered]


def top_two_mean(scores: np.ndarray) -> float:
    """The mean of the two highest finite ``scores`` (one: itself; none: NaN)."""
    finite = np.sort(np.asarray(scores, float)[np.isfinite(scores)])
    return float(finite[-2:].mean()) if len(finite) else float("nan")


def unsupported_probability(scores: np.ndarray, intercept: float, coefficient: float) -> np.ndarray:
    """P(unsupported) of fused ``scores`` under a logistic map (``intercept + coefficient x score``)."""
    return 1.0 / (1.0 + np.exp(-(intercept + coefficient * np.asarray(scores, float))))


def length_aware_noisy_or(probabilities: np.ndarray) -> float:
    """``−Σ log(1 − p) / √n`` over the finite ``probabilities`` (NaN where none is): the
    noisy-OR ``1 − ∏(1 − p)`` with each factor raised to ``1/√n``, in the same order, so that
    an answer of many sentences each a little suspect grows as √n, not n."""
    finite = np.asarray(probabilities, float)[np.isfinite(probabilities)]
    if not len(finite):
        return float("nan")
    return float(-np.log1p(-np.clip(finite, 0.0, 1 - 1e-9)).sum() / np.sqrt(len(finite)))


def answer_scores(answers: np.ndarray, scores: np.ndarray, labels: np.ndarray,
                  aggregate: Callable[[np.ndarray], float] = top_two_mean) -> tuple[np.ndarray, np.ndarray]:
    """Per answer (``answers``: each sentence's answer id): ``aggregate`` of its sentences'
    ``scores``, and whether any of them is labelled unsupported."""
    _, index, counts = np.unique(np.asarray(answers), return_inverse=True, return_counts=True)
    groups = np.split(np.argsort(index, kind="stable"), np.cumsum(counts)[:-1])
    scores, labels = np.asarray(scores, float), np.asarray(labels, dtype=int)
    return (np.array([aggregate(scores[g]) for g in groups]),
            np.array([int(labels[g].max()) for g in groups]))


# What a fusion's record says of its reference samples and of its quality against them: an
# adapted copy moves them under ``adaptation.base`` (:meth:`RankFusion.adapted`).
REFERENCE_RECORD = ("command", "references", "n_sentences", "n_answers", "on_labelled_set", "adaptation")


@dataclass
class RankFusion:
    """A fused score: the signals' ``references`` (signal -> sorted sample, in the order they
    are ranked: :attr:`signal_names`), the ``sensitivity_stats`` of its ``scorer`` (feature ->
    mean, deviation), where it flags a sentence (``threshold``) and an answer
    (``answer_threshold``, on :meth:`answer_score`), for the cascade to ``verifier`` (None: the
    lexical fusion, which has none); ``made_with``: data, sizes and rules. ``weights`` (only in
    a fusion `groundsense fit --fuse` wrote): ``intercept`` and ``coefficients`` (signal ->
    weight of its rank), which make the score a fitted log-odds instead of the ranks' average;
    None in every other fusion, and then not written. ``answer_rule`` (the lexical fusion's):
    ``aggregation`` (:data:`LENGTH_AWARE_NOISY_OR`) and the ``intercept`` and ``coefficient`` of
    its sentences' P(unsupported); None: the mean of the top two, and then not written.
    ``curves`` (a fusion fitted on labels, :meth:`thresholded`): ``{"sentence": curve}``, the
    :func:`~groundsense.calibration.thresholds.compact_curve` of the labelled sentences' fused scores,
    where :meth:`target_threshold` reads a target recall or precision; None: not written."""

    verifier: str | None
    scorer: str
    sensitivity_stats: dict[str, tuple[float, float]]
    references: dict[str, list[float]]
    threshold: float
    answer_threshold: float
    made_with: dict = field(default_factory=dict)
    weights: dict | None = None
    answer_rule: dict | None = None
    curves: dict[str, list[list[float]]] | None = None

    @property
    def signal_names(self) -> tuple[str, ...]:
        """The fused signals, in the order they are ranked (:data:`JUDGE_FUSION_SIGNALS` for a judge's)."""
        return tuple(self.references)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The sentence features its signals are made of."""
        made_of = {"sensitivity": tuple(self.sensitivity_stats), "gap": ("gap",), "judge": ()}
        return tuple(dict.fromkeys(f for name in self.signal_names for f in made_of.get(name, (name,))))

    def signals(self, features: Mapping[str, np.ndarray], judge: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The :attr:`signal_names`' values for sentences given their ``features`` (name -> array,
        as a sentence result holds them) and, for a judge's fusion, the judge's scores."""
        values = {}
        for name in self.signal_names:
            if name == "sensitivity":
                values[name] = sensitivity_score(self.sensitivity_stats, dict(features))
            elif name == "gap":
                values[name] = gap_score(dict(features))
            elif name == "judge":
                if judge is None:
                    raise ValueError("this fusion ranks a judge's scores: give them")
                values[name] = np.asarray(judge, float)
            else:
                values[name] = np.asarray(features[name], float)
        return values

    def answer_score(self, scores: np.ndarray) -> float:
        """An answer's score from its sentences' fused ``scores`` (NaN ones left out; none: NaN):
        the :func:`length_aware_noisy_or` of their P(unsupported) under ``answer_rule``, or
        without one the :func:`top_two_mean`."""
        if self.answer_rule is None:
            return top_two_mean(scores)
        return length_aware_noisy_or(unsupported_probability(
            scores, self.answer_rule["intercept"], self.answer_rule["coefficient"]))

    def ranks(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """Each signal's ranks (:func:`rank_share`) against its reference, a row per signal of
        :attr:`signal_names` given each signal's ``values``; NaN where a value is."""
        ranks = []
        for name in self.signal_names:
            x = np.asarray(values[name], float)
            ranks.append(np.where(np.isfinite(x), rank_share(np.asarray(self.references[name]), x), np.nan))
        return np.array(ranks)

    def score(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """The fused score of sentences given each signal's ``values``: the mean of their
        :meth:`ranks`, or with ``weights`` the fitted log-odds ``intercept + sum(coefficient x
        rank)``; NaN where a signal is."""
        return self.combined(self.ranks(values))

    def named_ranks(self, ranks: np.ndarray) -> list[dict[str, float]]:
        """Per sentence, its :meth:`ranks` (a row per signal) by signal name."""
        return [dict(zip(self.signal_names, map(float, column))) for column in np.asarray(ranks).T]

    def combined(self, ranks: np.ndarray) -> np.ndarray:
        """The fused score of sentences from their :meth:`ranks` (a row per signal), as :meth:`score`."""
        if self.weights is None:
            return ranks.mean(axis=0)
        coefficients = np.array([self.weights["coefficients"][name] for name in self.signal_names], dtype=float)
        return float(self.weights["intercept"]) + (coefficients[:, None] * ranks).sum(axis=0)

    def target_threshold(self, target_recall: float | None, target_precision: float | None) -> float:
        """The sentence threshold that met ``target_recall`` or ``target_precision`` on the labelled
        sentences it was fitted on, read from its stored curve (the answer is then flagged when
        any sentence is, as a calibration's target does)."""
        curve = (self.curves or {}).get("sentence")
        if not curve:
            raise InputError("this fusion keeps no precision-recall curve (fitted without labels, adapted to a "
                             "domain, or by an older version): refit it on labelled rows to pick a target recall "
                             "or precision")
        return curve_threshold(curve, target_recall, target_precision, "fused")

    def with_references(self, values: Mapping[str, np.ndarray]) -> RankFusion:
        """A copy whose references are taken from ``values`` (each signal over a domain's
        sentences), all else kept."""
        references = {name: reference_sample(values[name]) for name in self.signal_names}
        empty = [name for name, sample in references.items() if not sample]
        if empty:
            raise InputError(f"no sentence of the domain has a finite {', '.join(empty)}: nothing to rank against")
        return replace(self, references=references, curves=None)  # a curve holds for the references it was made on

    def adapted(self, values: Mapping[str, np.ndarray], **provenance: object) -> RankFusion:
        """A copy whose references are taken from ``values`` (each signal over a domain's
        unlabelled sentences), the thresholds kept in rank space; ``provenance`` is recorded
        in ``made_with["adaptation"]``, with what the base's record said of its own references
        (:data:`REFERENCE_RECORD`), which no longer describes this file's."""
        kept = {key: value for key, value in self.made_with.items() if key not in REFERENCE_RECORD}
        made_with = {**kept, "adaptation": {
            "references": "re-estimated from the domain's unlabelled sentences; thresholds kept in rank space",
            "n_sentences": int(np.isfinite(self.score(values)).sum()), **provenance,
            "base": {key: self.made_with[key] for key in REFERENCE_RECORD if key in self.made_with}}}
        return replace(self.with_references(values), made_with=made_with)

    def weighted(self, values: Mapping[str, np.ndarray], labels: np.ndarray) -> RankFusion:
        """A copy whose ``weights`` are the logistic regression of ``labels`` (1: unsupported) on
        the signals' :meth:`ranks` against these references (:func:`~groundsense.calibration.fitting.fit_logistic`:
        standardised, C = :data:`~groundsense.calibration.fitting.REGULARISATION`), over the
        sentences with every signal finite; the standardisation is folded into the weights, so
        that the score is the log-odds of the ranks themselves. ``made_with["fit"]`` keeps the
        standardised fit (weights comparable across signals). The thresholds are kept: refit
        them (:meth:`thresholded`)."""
        ranks = self.ranks(values)
        rows = np.isfinite(ranks).all(axis=0)
        names = self.signal_names
        fit = fit_logistic(ranks[:, rows].T, np.asarray(labels)[rows], names)
        scale = {name: fit["coefficients"][name] / fit["stats"][name][1] for name in names}
        intercept = fit["intercept"] - sum(scale[name] * fit["stats"][name][0] for name in names)
        made_with = {**self.made_with, "fit": {
            "model": f"logistic regression over the signals' ranks, C={REGULARISATION}, standardised ranks",
            "n_sentences": int(rows.sum()), "standardised": fit}}
        return replace(self, weights={"intercept": intercept, "coefficients": scale}, made_with=made_with,
                       curves=None)

    def thresholded(self, values: Mapping[str, np.ndarray], labels: np.ndarray, answers: np.ndarray,
                    target_recall: float | None = None, target_precision: float | None = None) -> RankFusion:
        """A copy with the sentence and answer thresholds fitted on labelled sentences (``labels``;
        ``answers``: each one's answer id) with a fused score, by `calibrate`'s rules
        (:func:`~groundsense.calibration.thresholds.labelled_threshold`): the best F1, or the target
        recall or precision; an answer's score is its :meth:`answer_score`, against whether any
        of its sentences is unsupported. For a top-two mean its threshold is at most the sentence
        one; for the noisy-OR of an ``answer_rule`` it is fitted on the verdict itself (an answer
        is flagged when a sentence is, or when its noisy-OR reaches the threshold) by Youden's J
        (:func:`~groundsense.calibration.thresholds.verdict_threshold`). When the answers are all
        supported or all unsupported, it is a one-sentence answer's at the sentence threshold:
        an answer is then flagged when a sentence is.
        ``made_with`` records the rules and their quality on these sentences (optimistic: fitted
        there)."""
        scores = self.score(values)
        rows = np.isfinite(scores)
        scores, labels = scores[rows], np.asarray(labels, dtype=int)[rows]
        threshold, sentence_rule = labelled_threshold(scores, labels, target_recall, target_precision)
        quality = {"sentence": threshold_quality(scores, labels, threshold)}
        answer_ids = np.asarray(answers)[rows]
        top, unsupported = answer_scores(answer_ids, scores, labels, self.answer_score)
        if unsupported.min() < unsupported.max() and self.answer_rule is not None:
            # a noisy-OR is not on the sentences' scale: the answer verdict is "a sentence flagged, or
            # the noisy-OR at its threshold", so the threshold is fitted on that decision
            forced = answer_scores(answer_ids, scores >= threshold, labels, np.max)[0] > 0
            decided = forced_scores(top, forced)
            answer_threshold, answer_rule = verdict_threshold(decided, unsupported, target_recall, target_precision)
            # the verdict's flags, and the noisy-OR's own ranking of the answers
            quality["answer"] = {**threshold_quality(decided, unsupported, answer_threshold),
                                 "auc": threshold_quality(top, unsupported, answer_threshold)["auc"]}
        elif unsupported.min() < unsupported.max():  # a top-two mean is on the sentences' scale, at most theirs
            answer_threshold, answer_rule = labelled_threshold(top, unsupported, target_recall, target_precision,
                                                               threshold)
            quality["answer"] = threshold_quality(top, unsupported, answer_threshold)
        else:
            answer_threshold = self.answer_score(np.array([threshold]))  # a one-sentence answer at the threshold
            answer_rule = "the sentence threshold (not fitted: the answers are all supported or all unsupported)"
        made_with = {**self.made_with, "n_sentences": int(rows.sum()), "n_answers": len(top),
                     "threshold_rule": {"sentence": sentence_rule, "answer": answer_rule},
                     "on_labelled_set": quality}
        return replace(self, threshold=threshold, answer_threshold=answer_threshold, made_with=made_with,
                       curves={"sentence": compact_curve(scores, labels)})

    def save(self, path: str | Path) -> None:
        """Indented JSON, each reference and curve on one line."""
        Path(path).write_text(file_text(FUSION, self.fields(), *ONE_LINE))

    def fields(self) -> dict:
        """What its file holds: ``weights``, ``answer_rule`` and ``curves`` only when there are
        some (a fusion without is written as before they existed)."""
        data = asdict(self)
        for optional in ("weights", "answer_rule", "curves"):
            if data[optional] is None:
                del data[optional]
        return data

    @classmethod
    def load(cls, path: str | Path | Traversable) -> RankFusion:
        return cls.from_dict(read_file(path, FUSION), path)

    @classmethod
    def from_dict(cls, data: dict, path: object) -> RankFusion:
        """The fusion ``data`` (a file's JSON) holds, checked; ``path`` names it in errors."""
        try:
            data = {**data, "sensitivity_stats": {f: tuple(v) for f, v in data["sensitivity_stats"].items()}}
            fusion = cls(**data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InputError(f"cannot read fusion file {path}: {exc}") from exc
        names = fusion.signal_names
        known = [JUDGE_FUSION_SIGNALS, *LEXICAL_FUSION_SIGNALS.values()]
        if not isinstance(fusion.references, dict) or set(names) not in map(set, known):
            raise InputError(f"cannot read fusion file {path}: its references must be of one of these signal sets: "
                             + "; ".join(", ".join(signals) for signals in known))
        missing = [name for name in names if not fusion.references.get(name)]
        if missing:
            raise InputError(f"cannot read fusion file {path}: it has no reference for {', '.join(missing)}")
        weights = fusion.weights
        if weights is not None and not (
                isinstance(weights, dict) and _number(weights.get("intercept"))
                and isinstance(weights.get("coefficients"), dict) and set(weights["coefficients"]) == set(names)
                and all(_number(c) for c in weights["coefficients"].values())):
            raise InputError(f"cannot read fusion file {path}: its 'weights' need a numeric 'intercept' and "
                             f"'coefficients' of exactly {', '.join(names)}")
        curve = (fusion.curves or {}).get("sentence") if isinstance(fusion.curves, dict) else None
        if fusion.curves is not None and not (isinstance(curve, list) and all(
                isinstance(point, list) and len(point) == 3 and all(map(_number, point)) for point in curve)):
            raise InputError(f"cannot read fusion file {path}: its 'curves' need a 'sentence' list of "
                             "[threshold, precision, recall] points")
        rule = fusion.answer_rule
        if rule is not None and not (isinstance(rule, dict) and rule.get("aggregation") == LENGTH_AWARE_NOISY_OR
                                     and _number(rule.get("intercept")) and _number(rule.get("coefficient"))):
            raise InputError(f"cannot read fusion file {path}: its 'answer_rule' needs 'aggregation' "
                             f"{LENGTH_AWARE_NOISY_OR!r} and a numeric 'intercept' and 'coefficient'")
        return fusion


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class LexicalFusions:
    """The fused score's two lexical fusions, as ``groundsense calibrate --adapt`` writes them for
    a domain: ``full`` ranks ``sensitivity`` (answers scored in the chunk count its statistics
    serve), ``two_pass`` the gap (two-pass mode, and other chunk counts). One file holds both, so
    that one ``--fusion`` serves every answer the default score judges."""

    full: RankFusion
    two_pass: RankFusion

    def __post_init__(self) -> None:
        for mode in ("full", "two_pass"):
            fusion: RankFusion = getattr(self, mode)
            if fusion.verifier is not None:
                raise InputError(f"the {mode} lexical fusion is a fused cascade's (judge {fusion.verifier}): detect "
                                 "with it by --verifier and --fuse")
            if set(fusion.signal_names) != set(LEXICAL_FUSION_SIGNALS[mode]):
                raise InputError(f"the {mode} lexical fusion must rank {', '.join(LEXICAL_FUSION_SIGNALS[mode])}, "
                                 f"not {', '.join(fusion.signal_names)}")
        made = [(f.scorer, f.made_with.get("precision", "fp32")) for f in (self.full, self.two_pass)]
        if made[0] != made[1]:
            raise InputError(f"the two lexical fusions were made for two settings: {made[0]} and {made[1]}")

    @property
    def scorer(self) -> str:
        return self.full.scorer

    @property
    def precision(self) -> str:
        return str(self.full.made_with.get("precision", "fp32"))

    def for_mode(self, mode: str) -> RankFusion:
        return self.full if mode == "full" else self.two_pass

    def score(self, features: Mapping[str, np.ndarray], served: np.ndarray) -> np.ndarray:
        """The fused score of sentences given their ``features`` (name -> array): by full mode's
        fusion where ``served`` (answers scored in a chunk count its statistics serve), else by
        two-pass mode's, as the detector scores a full-mode answer."""
        full, two_pass = (fusion.score(fusion.signals(features)) for fusion in (self.full, self.two_pass))
        return np.where(served, full, two_pass)

    @classmethod
    def shipped(cls, scorer: str, precision: str) -> LexicalFusions | None:
        full, two_pass = (shipped_lexical_fusion(scorer, precision, mode) for mode in ("full", "two_pass"))
        return cls(full, two_pass) if full is not None and two_pass is not None else None

    def adapted(self, features: Mapping[str, np.ndarray], served: np.ndarray, **provenance: object) -> LexicalFusions:
        """Both fusions' references re-estimated from a domain's unlabelled sentences (``features``:
        name -> array over them), the thresholds kept in rank space (:meth:`RankFusion.adapted`):
        full mode's from the ``served`` ones (answers in a chunk count its ``sensitivity``
        statistics serve; kept as it was where there are none), two-pass mode's, which ranks the
        gap, from all."""
        full = self.full
        if np.any(served):
            full = full.adapted(full.signals({name: np.asarray(v)[served] for name, v in features.items()}),
                                **provenance)
        return LexicalFusions(full, self.two_pass.adapted(self.two_pass.signals(features), **provenance))

    def served_chunk_counts(self, chunk_counts: np.ndarray) -> list[int]:
        """Those of ``chunk_counts`` whose answers full mode's fusion judges: the counts served by
        the ``sensitivity`` statistics of the calibration shipped for this scorer and precision
        (the fused score runs with the shipped calibration only)."""
        return [int(c) for c in np.unique(chunk_counts) if shipped_calibration(self.scorer, int(c), self.precision)]

    def adapted_to(self, domain: DomainSentences, **provenance: object) -> LexicalFusions:
        """:meth:`adapted` to a domain's scored sentences, e.g. ``DomainSentences.from_results`` of
        detections made in full mode: full mode's references from those of answers scored in a
        chunk count it serves (:meth:`served_chunk_counts`), two-pass mode's from all."""
        served = np.isin(domain.chunk_counts, self.served_chunk_counts(domain.chunk_counts))
        return self.adapted(domain.features, served, **provenance)

    def save(self, path: str | Path) -> None:
        fields = {"full": self.full.fields(), "two_pass": self.two_pass.fields()}
        Path(path).write_text(file_text(LEXICAL_FUSIONS, fields, *ONE_LINE))

    @classmethod
    def load(cls, path: str | Path) -> LexicalFusions:
        data = read_file(path, LEXICAL_FUSIONS)
        if not isinstance(data.get("full"), dict) or not isinstance(data.get("two_pass"), dict):
            raise InputError(f"cannot read fusion file {path}: it needs a 'full' and a 'two_pass' fusion")
        return cls(RankFusion.from_dict(data["full"], f"{path} (full)"),
                   RankFusion.from_dict(data["two_pass"], f"{path} (two_pass)"))


def lexical_fusion_name(scorer: str, precision: str, mode: str) -> str:
    """The shipped lexical fusion file's name for a scorer, precision and mode
    (``fusion-lexical-smollm2-135m-instruct-bf16-k5.json``; two-pass: ``…-two-pass.json``)."""
    kind = "k5" if mode == "full" else "two-pass"  # full mode's: those of the calibration smollm2-135m-instruct-k5
    return f"fusion-lexical-{scorer}{'-bf16' if precision == 'bf16' else ''}-{kind}.json"


def shipped_lexical_fusion(scorer: str, precision: str, mode: str) -> RankFusion | None:
    """The lexical fusion shipped for ``scorer`` at ``precision`` in ``mode``, if any (none at int8:
    the shipped ones are fitted on fp32 or bf16 features, which int8's are not near)."""
    if precision not in ("fp32", "bf16"):
        return None
    path = resources.files("groundsense") / FOLDER / lexical_fusion_name(scorer, precision, mode)
    return RankFusion.load(path) if path.is_file() else None
