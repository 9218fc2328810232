"""The result of one detection: per-sentence scores, flags, features and support.

``to_dict()`` is the stable JSON contract of ``groundsense detect --json`` and of the
service; fields may be added, none renamed. Its type is :class:`ResultRecord` (docs/output.md),
so that a type checker sees each field a reader takes from a record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DetectionResult", "SentenceResult", "AnswerSummary", "Truncation", "Support", "TokenRows", "ChunkSpan",
           "InFlightVerdict", "support_score", "ResultRecord", "SentenceRecord", "SupportRecord", "AnswerRecord",
           "TruncationRecord", "ChunkRecord", "InFlightRecord"]


def support_score(flags: Iterable[bool | None], answer_flagged: bool | None = None) -> float:
    """The score in [0, 1] that the integrations and the AlignScore route report, defined here
    only: the share of sentences judged supported (``flagged is False``), given each sentence's
    ``flagged``. A flagged sentence and one that could not be judged (``None``) both count
    against the answer: the check fails closed. It is 1 only where the answer passes: an answer
    not cleared (``answer_flagged``, its ``answer.flagged``, not False; not given: not known to
    be cleared) though every sentence is judged supported, as the fused score's answer rule
    flags one, scores n / (n + 1), its verdict counted as one more judgement against it."""
    flags = list(flags)
    supported = sum(flag is False for flag in flags)
    if supported == len(flags) and answer_flagged is not False:
        return supported / (len(flags) + 1)
    return supported / len(flags)


# How a fused signal is named to a reader (``SentenceResult.ranks``' keys; calibration/fusion.py).
# Each reads as "higher = more suspicious", as the ranks do: ``sensitivity`` and ``gap`` rank how
# little the sentence's likelihood uses the evidence.
RANK_LABELS = {"sensitivity": "evidence unused", "gap": "evidence unused", "overlap_chunk": "missing words",
               "stem_novel": "missing stems", "bigram_novel": "missing word pairs", "judge": "judge's doubt"}


def percentile(share: float) -> str:
    """A rank as an ordinal percentile, 1st to 99th: 0.881 -> ``"88th"``, 0.021 -> ``"2nd"``."""
    n = min(max(int(share * 100 + 1e-9), 1), 99)  # below or above every reference: 1st, 99th
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


class SupportRecord(TypedDict):
    """:class:`Support` in a record."""

    chunk: int
    start: int
    end: int
    text: str
    drop: float
    passage: int | None


class SentenceRecord(TypedDict):
    """A sentence in a record (:meth:`SentenceResult.to_dict`): a number that is not finite is null."""

    index: int
    start: int
    end: int
    text: str
    score: float | None
    flagged: bool | None
    features: dict[str, float | None]
    drops: list[float | None]
    jsds: list[float | None]
    support: SupportRecord | None
    status: str
    reason: str | None
    verifier_score: float | None
    absent: list[str]
    in_cut_evidence: list[str]
    fused: float | None
    ranks: dict[str, float | None] | None
    explanation: str | None


class AnswerRecord(TypedDict):
    """:class:`AnswerSummary` in a record."""

    gap: float | None
    min_sentence_gap: float | None
    n_sentences: int
    n_flagged: int
    n_unscored: int
    flagged: bool | None
    score: float | None
    threshold: float | None


class TruncationRecord(TypedDict):
    """:class:`Truncation` in a record."""

    context: bool
    answer: bool
    context_tokens_removed: int
    answer_tokens_unscored: int


class ChunkRecord(TypedDict):
    """:class:`ChunkSpan` in a record."""

    index: int
    start: int
    end: int
    passage: int | None


class InFlightRecord(TypedDict):
    """:class:`InFlightVerdict` in a record."""

    index: int
    score: float | None
    flagged: bool | None


class _ResultFields(TypedDict):
    scorer: str
    precision: str
    threads: int | None
    mode: str
    leave_one_out: str | None
    k: int | None
    max_context_tokens: int | None
    max_answer_tokens: int | None
    score_rule: str
    detector: str  # score_rule's name before, kept so that readers of stored results work
    threshold: float | None
    sentences: list[SentenceRecord]
    answer: AnswerRecord
    truncated: TruncationRecord
    chunks: list[ChunkRecord]
    cascade: dict[str, Any] | None
    warnings: list[str]


class ResultRecord(_ResultFields, total=False):
    """A detection's record (:meth:`DetectionResult.to_dict`), the fields docs/output.md lists;
    ``in_flight`` only in a stream's closing result."""

    in_flight: list[InFlightRecord]


@dataclass(frozen=True)
class Support:
    """The chunk whose removal lowers the sentence's likelihood most."""

    chunk: int
    start: int  # character span of the chunk's text in the scored context string
    end: int
    text: str
    drop: float
    passage: int | None = None  # index in the caller's passage list, when passages were given


@dataclass(frozen=True)
class SentenceResult:
    index: int
    start: int  # answer[start:end] == text
    end: int
    text: str
    score: float | None  # higher = more suspicious; None when unscored
    flagged: bool | None  # None when unscored or when no calibration gives a threshold
    features: dict[str, float | None]
    drops: list[float]  # one per chunk; empty in two-pass mode
    jsds: list[float]
    support: Support | None
    status: str = "scored"  # or "unscored"
    reason: str | None = None  # why a sentence is unscored
    verifier_score: float | None = None  # set when a cascade escalated the sentence to its verifier
    # What the sentence states that no chunk contains (numbers, and words whose stem the evidence
    # lacks), as written: the reason shown with a flag (groundsense.lexical.absent_terms).
    absent: list[str] = field(default_factory=list)
    # Those of ``absent`` that the evidence cut to fit the scorer's budget does contain.
    in_cut_evidence: list[str] = field(default_factory=list)
    # A fused cascade's score (calibration/fusion.py): the rank average, in [0, 1], that decides the flag.
    fused: float | None = None
    # Where a fused score decides the flag: each of its signals' rank, the share of the fusion's
    # reference sentences below the sentence's value (ties counted half; higher = more suspicious).
    ranks: dict[str, float] | None = None

    @property
    def explanation(self) -> str | None:
        """Why the sentence scored as it did: its fused signals' ranks as percentiles (``"evidence
        unused 88th percentile, missing words 97th, ..."``), then ``"absent from the evidence:
        Eiffel, 1990"``, with the terms only the cut evidence holds named apart (``"...; only in the
        evidence cut to fit the budget: Seine"``); None when there are no ranks and every term it
        states is in the evidence scored."""
        nowhere = [term for term in self.absent if term not in self.in_cut_evidence]
        pairs = [(RANK_LABELS.get(name, name), percentile(share)) for name, share in (self.ranks or {}).items()
                 if share is not None and math.isfinite(share)]
        parts = [", ".join(f"{label} {rank}{' percentile' if not i else ''}" for i, (label, rank) in enumerate(pairs)),
                 f"absent from the evidence: {', '.join(nowhere)}" if nowhere else "",
                 f"only in the evidence cut to fit the budget: {', '.join(self.in_cut_evidence)}"
                 if self.in_cut_evidence else ""]
        return "; ".join(p for p in parts if p) or None

    def to_dict(self) -> SentenceRecord:
        data = asdict(self)
        data["score"] = _finite(self.score)
        data["verifier_score"] = _finite(self.verifier_score)
        data["fused"] = _finite(self.fused)
        data["ranks"] = None if self.ranks is None else {k: _finite(v) for k, v in self.ranks.items()}
        data["explanation"] = self.explanation
        data["features"] = {k: _finite(v) for k, v in self.features.items()}
        data["drops"] = [_finite(v) for v in self.drops]
        data["jsds"] = [_finite(v) for v in self.jsds]
        return cast("SentenceRecord", data)


@dataclass(frozen=True)
class AnswerSummary:
    gap: float | None  # token-weighted mean gap over scored sentences
    min_sentence_gap: float | None
    n_sentences: int
    n_flagged: int
    n_unscored: int
    flagged: bool | None  # the block/allow verdict (see adjudicator.answer_summary); None: not judged
    score: float | None = None  # the most suspicious scored sentence's score
    threshold: float | None = None  # where the answer is flagged (None: when any sentence is)


@dataclass(frozen=True)
class Truncation:
    context_tokens_removed: int = 0
    answer_tokens_unscored: int = 0

    @property
    def context(self) -> bool:
        return self.context_tokens_removed > 0

    @property
    def answer(self) -> bool:
        return self.answer_tokens_unscored > 0

    def to_dict(self) -> TruncationRecord:
        return {"context": self.context, "answer": self.answer, "context_tokens_removed": self.context_tokens_removed,
                "answer_tokens_unscored": self.answer_tokens_unscored}


@dataclass(frozen=True)
class TokenRows:
    """Per scored answer token: the passes' scores and the sentence that owns the token.

    ``logp`` and ``jsd`` are [conditions, T] (row 0 full context, 1 no context, ``2 + k``
    without chunk ``k``; ``jsd`` against row 0); ``owner`` is each token's sentence index
    (-1 between sentences) and ``offsets`` its [T, 2] character span in the answer.
    """

    logp: Any
    jsd: Any
    owner: Any
    offsets: Any


@dataclass(frozen=True)
class ChunkSpan:
    """One scored chunk of the evidence: where its text lies in the scored context string."""

    index: int
    start: int
    end: int
    passage: int | None = None  # index in the caller's passage list, when passages were given


@dataclass(frozen=True)
class InFlightVerdict:
    """A sentence's verdict as a stream's ``feed`` returned it, before the stream closed."""

    index: int
    score: float | None
    flagged: bool | None


@dataclass(frozen=True)
class DetectionResult:
    """Built once, by :meth:`Adjudicator.result <groundsense.calibration.adjudicator.Adjudicator.result>`; a changed
    result (a cascade's verdicts) is a copy, made with :func:`dataclasses.replace`."""

    scorer: str
    mode: str  # "full" (K+2 conditions) or "two_pass"
    leave_one_out: str | None  # full mode: "exact" (chunk removed) or "masked" (chunk hidden); None in two-pass
    score_rule: str  # "sensitivity", "gap" or "fused"
    threshold: float | None  # None: uncalibrated, nothing is flagged
    sentences: list[SentenceResult]
    answer: AnswerSummary
    truncated: Truncation
    chunks: list[ChunkSpan] = field(default_factory=list)
    cascade: dict | None = None  # {verifier, escalate, threshold, n_escalated[, verifier_usage]} from a Cascade
    warnings: list[str] = field(default_factory=list)  # e.g. text the scorer was not trained for
    # Cost accounting, not part of to_dict(): tokens_processed depends on what the scorer's
    # evidence cache already held, and the same input must always give the same output.
    tokens_processed: int = 0
    prompt_tokens: int = 0  # tokens one full-context pass feeds (prompt + answer): the unit of cost
    # The passes' raw per-token scores, for re-aggregating features offline (``eval extract
    # --token-rows``); not part of to_dict().
    tokens: TokenRows | None = None
    precision: str = "fp32"  # the scorer's numbers as run: "fp32", "bf16" or "int8"
    threads: int | None = None  # the CPU threads that scored it; None on a GPU
    # The settings that shape the features: the chunks a context string was split into (None where
    # passages were given: each is a chunk) and the token budgets; None in a result made elsewhere.
    k: int | None = None
    max_context_tokens: int | None = None
    max_answer_tokens: int | None = None
    # A stream's closing result only: the verdicts its feed returned while the answer arrived (the
    # sentences judged at the close have none). In fp32 they are the result's own; in bf16 the
    # result is scored again as detect scores it, and they may differ (docs/streaming.md, "Precision").
    in_flight: list[InFlightVerdict] | None = None

    def to_dict(self) -> ResultRecord:
        record: ResultRecord = {
            "scorer": self.scorer,
            "precision": self.precision,
            "threads": self.threads,
            "mode": self.mode,
            "leave_one_out": self.leave_one_out,
            "k": self.k,
            "max_context_tokens": self.max_context_tokens,
            "max_answer_tokens": self.max_answer_tokens,
            "score_rule": self.score_rule,
            "detector": self.score_rule,  # its name before, kept so that readers of stored results work
            "threshold": _finite(self.threshold),
            "sentences": [s.to_dict() for s in self.sentences],
            "answer": cast("AnswerRecord", {k: _finite(v) if isinstance(v, float) else v
                                            for k, v in asdict(self.answer).items()}),
            "truncated": self.truncated.to_dict(),
            "chunks": [cast("ChunkRecord", asdict(c)) for c in self.chunks],
            "cascade": self.cascade,
            "warnings": list(self.warnings),
        }
        if self.in_flight is not None:
            record["in_flight"] = [{"index": v.index, "score": _finite(v.score), "flagged": v.flagged}
                                   for v in self.in_flight]
        return record

    def to_df(self) -> pd.DataFrame:
        """One row per sentence with its features, score, flag, a cascade's ``verifier_score``,
        a fused cascade's ``fused`` score, a fused score's ``rank_SIGNAL`` ranks, and support chunk."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "index": s.index, "start": s.start, "end": s.end, "text": s.text,
                    "score": s.score, "flagged": s.flagged, "status": s.status, "verifier_score": s.verifier_score,
                    "fused": s.fused, **s.features, **{f"rank_{name}": rank for name, rank in (s.ranks or {}).items()},
                    "support_chunk": s.support.chunk if s.support else None,
                }
                for s in self.sentences
            ]
        )
