"""DSPy: :class:`GroundsenseMetric`, a metric and reward with no LLM (``pip install 'groundsense[dspy]'``).

One object serves where DSPy takes a metric or a reward::

    metric = GroundsenseMetric(answer="response")
    dspy.Evaluate(devset=devset, metric=metric)(program)             # score each example
    dspy.BestOfN(module, N=3, reward_fn=metric, threshold=1.0)        # retry until grounded
    dspy.GEPA(metric=metric, ...)                                     # feedback names the unsupported sentences

It reads the answer, the retrieved context and (optionally) the question by field name, from
the prediction first, then from the example (or, as a reward, the module's inputs), so a
program that returns its context and a generator that takes it as an input both work. The
context may be a string or a list of passages (strings, or documents as
:func:`groundsense.integrations.common.evidence_texts` reads them).

What it returns follows DSPy's conventions for a metric's callers:

- evaluating (``metric(example, pred)``) and as a reward (``reward_fn(inputs, pred)``): the
  score in [0, 1], the share of the answer's sentences judged supported;
- bootstrapping demos (a ``trace`` is given): whether the answer passes, every sentence judged
  supported, so only grounded answers become demos;
- GEPA asking for feedback on a predictor (``pred_name`` given): a ``dspy.Prediction`` with the
  score and feedback that quotes each sentence not judged supported.

Unjudged sentences count against the answer (see :mod:`groundsense.integrations.common`). A
missing field or an answer that is not text raises :class:`~groundsense.errors.InputError`
naming the fields there are, never a score.
"""

from __future__ import annotations

from typing import Any

import dspy

from ..detector import Detector
from ..errors import InputError
from .common import GroundingReport, check

__all__ = ["GroundsenseMetric"]


class GroundsenseMetric:
    """Groundedness of a prediction's answer in its retrieved context, judged sentence by sentence.

    ``answer``, ``context`` and ``question``: the field names to read (the question is optional).
    ``detector``: a calibrated :class:`~groundsense.Detector`; by default the embedded scorer,
    loaded once per process.
    """

    def __init__(self, answer: str = "answer", context: str = "context", question: str = "question",
                 detector: Detector | None = None) -> None:
        self.answer, self.context, self.question = answer, context, question
        self.detector = detector

    def __call__(self, example: Any, pred: Any, trace: Any = None, pred_name: str | None = None,
                 pred_trace: Any = None) -> float | bool | dspy.Prediction:
        report = self.report(example, pred)
        if pred_name is not None:
            return dspy.Prediction(score=report.score, feedback=report.feedback)
        if trace is not None:
            return report.passing
        return report.score

    def report(self, example: Any, pred: Any) -> GroundingReport:
        """The full verdict on ``pred``'s answer (``example``: the gold example or the module's inputs)."""
        answer = self._field("answer", pred, example)
        if not isinstance(answer, str):
            raise InputError(f"the answer field {self.answer!r} must be text, not {type(answer).__name__}")
        question = self._field("question", pred, example, required=False)
        return check(answer, self._field("context", pred, example), question if isinstance(question, str) else "",
                     self.detector)

    def _field(self, option: str, pred: Any, example: Any, required: bool = True) -> Any:
        """The field that ``option`` names, from the prediction, else from the example or inputs
        (a ``dspy.Example`` or a dict)."""
        name = getattr(self, option)
        for holder in (pred, example):
            if holder is not None and name in holder:
                return holder[name]
        if not required:
            return None
        fields = sorted({*_keys(pred), *_keys(example)})
        raise InputError(f"no field {name!r} in the prediction or the example (fields: {', '.join(fields) or 'none'}): "
                         f"name the {option}'s field, GroundsenseMetric({option}=...)")


def _keys(holder: Any) -> list[str]:
    return list(holder.keys()) if hasattr(holder, "keys") else []
