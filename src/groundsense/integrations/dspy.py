"""DSPy: :class:`GroundsenseMetric`, a metric and reward with no LLM (``pip install 'groundsense[dspy]'``).

One object serves where DSPy takes a metric or a reward::

    metric = GroundsenseMetric(answer="response")
    dspy.Evaluate(devset=devset, metric=metric)(program)             # score each example
    dspy.BestOfN(module, N=3, reward_fn=metric, threshold=1.0)        # retry until grounded
    dspy.GEPA(metric=metric, ...)                                     # feedback names the unsupported sentences

It reads the answer from the prediction, and the retrieved context and (optionally) the
question from the prediction first, then from the example (or, as a reward, the module's
inputs): a program that returns its context and a generator that takes it as an input both
work. The answer is never read from the example, whose ``answer`` is the gold label. The
context may be a string or a list of passages (strings, or documents as
:func:`groundsense.integrations.common.evidence_texts` reads them).

What it returns follows DSPy's conventions for a metric's callers:

- evaluating (``metric(example, pred)``) and as a reward (``reward_fn(inputs, pred)``): the
  score in [0, 1], the share of the answer's sentences judged supported, 1 only where the
  answer passes (:mod:`groundsense.integrations.common`);
- bootstrapping demos (``BootstrapFewShot`` and the optimisers built on it pass a ``trace``):
  whether the answer passes (the answer verdict: cleared, every sentence judged supported), so
  only grounded answers become demos;
- GEPA asking for feedback on a predictor (``pred_name`` given): a ``dspy.Prediction`` with the
  score and feedback that quotes each sentence not judged supported.

``pass_fail=True`` returns the verdict (``True`` where the detection clears the answer) to
every caller instead, for optimisers that filter on a truthy score without passing a trace
(``BootstrapFinetune`` keeps any example whose score is not 0).

Unjudged sentences count against the answer (see :mod:`groundsense.integrations.common`). A
missing field, an answer or question that is not text, or a context without passages raises
:class:`~groundsense.errors.InputError` naming the field, never a score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dspy

from ..detection import Detection
from ..errors import InputError
from .common import DeprecatedDetectorAttribute, GroundingReport, check, detection_argument

__all__ = ["GroundsenseMetric"]


class GroundsenseMetric:
    """Groundedness of a prediction's answer in its retrieved context, judged sentence by sentence.

    ``answer``, ``context`` and ``question``: the field names to read (the question is optional).
    ``pass_fail``: return the pass/fail verdict to every caller rather than the score.
    ``detection``: a calibrated :class:`~groundsense.detection.Detection` (a ``Detector``, a
    ``Cascade``); by default the embedded scorer, loaded once per process. ``detector``: its
    deprecated old name.
    """

    detector = DeprecatedDetectorAttribute()

    def __init__(self, answer: str = "answer", context: str = "context", question: str = "question",
                 pass_fail: bool = False, detection: Detection | None = None, *,
                 detector: Detection | None = None) -> None:
        self.answer, self.context, self.question = answer, context, question
        self.pass_fail = pass_fail
        self.detection = detection_argument(detection, detector, "GroundsenseMetric()")

    def __call__(self, example: Any, pred: Any, trace: Any = None, pred_name: str | None = None,
                 pred_trace: Any = None) -> float | bool | dspy.Prediction:
        """The score, the verdict or GEPA's feedback, as the caller expects (see the module's
        docstring). ``pred_trace`` is unused; GEPA checks that a metric accepts it."""
        report = self.report(example, pred)
        if pred_name is not None:
            return dspy.Prediction(score=float(report.passing) if self.pass_fail else report.score,
                                   feedback=report.feedback)
        if trace is not None or self.pass_fail:
            return report.passing
        return report.score

    def report(self, example: Any, pred: Any) -> GroundingReport:
        """The full verdict on ``pred``'s answer (``example``: the gold example or the module's inputs)."""
        answer = self._field("answer", pred)
        context = self._field("context", pred, example)
        question = self._field("question", pred, example, required=False)
        if not isinstance(answer, str):
            raise InputError(f"the answer field {self.answer!r} must be text, not {type(answer).__name__}")
        if question is not None and not isinstance(question, str):
            raise InputError(f"the question field {self.question!r} must be text, not {type(question).__name__}")
        if context is None or (isinstance(context, (str, list, tuple)) and not context):
            raise InputError(f"the context field {self.context!r} holds no passages: nothing can support the answer")
        return check(answer, context, question or "", self.detection)

    def _field(self, option: str, pred: Any, example: Any = None, required: bool = True) -> Any:
        """The field that ``option`` names, from the prediction, else from the example or inputs."""
        name = getattr(self, option)
        holders = [h for h in (pred, example) if h is not None]
        for holder in holders:
            if not isinstance(holder, (Mapping, dspy.Example)):  # dspy.Prediction is an Example
                raise InputError(f"a prediction, example or inputs must be a dspy.Example, dspy.Prediction or dict, "
                                 f"not {type(holder).__name__}")
            if name in holder:
                return holder[name]
        if not required:
            return None
        where = "the prediction" if example is None else "the prediction or the example"
        fields = sorted({key for holder in holders for key in holder.keys()})
        raise InputError(f"no field {name!r} in {where} (fields: {', '.join(fields) or 'none'}): "
                         f"name the {option}'s field, GroundsenseMetric({option}=...)")
