"""LlamaIndex: :class:`GroundsenseEvaluator`, a ``BaseEvaluator`` (``pip install 'groundsense[llamaindex]'``).

::

    evaluator = GroundsenseEvaluator()
    result = evaluator.evaluate_response(query=question, response=query_engine.query(question))
    result.passing, result.score, result.feedback

``evaluate(query, response, contexts)`` (and ``evaluate_response`` on a ``Response`` with its
source nodes, the async variants and ``BatchEvalRunner``: the base class routes them all
through ``aevaluate``, which scores in a worker thread) return an ``EvaluationResult``
whose ``score`` is the share of sentences judged supported (1 only where it passes),
``passing`` is the answer verdict
(true only where the detection clears the answer), and ``feedback`` names the rest (see
:mod:`groundsense.integrations.common`). No LLM and no prompt: the evaluator has no prompts to
get or update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
from llama_index.core.prompts.mixin import PromptDictType

from ..detection import Detection
from .common import acheck, detection_argument, evidence_texts

__all__ = ["GroundsenseEvaluator"]


class GroundsenseEvaluator(BaseEvaluator):
    """Evaluates whether each sentence of a response is supported by the retrieved contexts.

    ``detection``: a calibrated :class:`~groundsense.detection.Detection` (a ``Detector``, a
    ``Cascade``); by default the embedded scorer, loaded once per process (``detector``: its
    deprecated old name). ``raise_error``: raise ``ValueError``
    when the response does not pass, as LlamaIndex's ``FaithfulnessEvaluator`` does.
    """

    def __init__(self, detection: Detection | None = None, raise_error: bool = False, *,
                 detector: Detection | None = None) -> None:
        self._detection = detection_argument(detection, detector, "GroundsenseEvaluator()")
        self._raise_error = raise_error

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        pass

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        if response is None or contexts is None:
            raise ValueError("contexts and response must be provided")
        texts = evidence_texts(contexts)  # the result holds strings (one string as itself)
        # scored from what was read: contexts that can be read once (a generator) are read once
        report = await acheck(response, contexts if isinstance(contexts, str) else texts, query, self._detection)
        if self._raise_error and not report.passing:
            raise ValueError(f"The response is not supported by the contexts. {report.feedback}")
        return EvaluationResult(
            query=query, response=response, contexts=texts,
            passing=report.passing, score=report.score, feedback=report.feedback,
        )

