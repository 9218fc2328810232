"""LangChain: :class:`GroundsenseRunnable`, a Runnable (``pip install 'groundsense[langchain]'``).

It takes ``{"question": str, "documents": [Document, ...], "answer": str}`` and returns a
:class:`~groundsense.integrations.common.GroundingReport`: ``.passing``, ``.score``,
``.unsupported`` sentences, ``.grounded_answer`` (the answer without them), ``.feedback`` and the
full ``.result`` (a :class:`~groundsense.DetectionResult`). As the guard step after an LLM::

    chain = (
        RunnablePassthrough.assign(answer=prompt | llm | StrOutputParser())
        | GroundsenseRunnable()
        | RunnableLambda(lambda report: report.grounded_answer)
    )

``answer`` may also be a chat message (its text content is checked); ``documents`` may also be
plain strings. ``invoke``, ``ainvoke``, ``batch`` and streaming of the chain all work, with
LangChain callbacks and tracing seeing the step under its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from ..detection import Detection
from ..errors import InputError
from .common import DeprecatedDetectorAttribute, GroundingReport, acheck, check, detection_argument

__all__ = ["GroundsenseRunnable"]


class GroundsenseRunnable(Runnable[Mapping[str, Any], GroundingReport]):
    """Checks which sentences of ``input["answer"]`` the ``input["documents"]`` support.

    ``detection``: a calibrated :class:`~groundsense.detection.Detection` (a ``Detector``, a
    ``Cascade``); by default the embedded scorer, loaded once per process. ``detector``: its
    deprecated old name.
    """

    detector = DeprecatedDetectorAttribute()

    def __init__(self, detection: Detection | None = None, name: str = "groundsense", *,
                 detector: Detection | None = None) -> None:
        self.detection = detection_argument(detection, detector, "GroundsenseRunnable()")
        self.name = name

    def invoke(self, input: Mapping[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> GroundingReport:
        return self._call_with_config(lambda value: check(*self._arguments(value)), input, config)

    async def ainvoke(self, input: Mapping[str, Any], config: RunnableConfig | None = None,
                      **kwargs: Any) -> GroundingReport:
        return await self._acall_with_config(lambda value: acheck(*self._arguments(value)), input, config)

    def _arguments(self, value: Mapping[str, Any]) -> tuple[str, Any, str, Detection | None]:
        if not isinstance(value, Mapping) or "answer" not in value or "documents" not in value:
            raise InputError('GroundsenseRunnable takes {"question": ..., "documents": [Document, ...], "answer": ...}')
        answer = value["answer"]
        if isinstance(answer, BaseMessage):
            answer = answer.text
        if not isinstance(answer, str):
            raise InputError(f"the answer must be text or a chat message, not {type(value['answer']).__name__}")
        return answer, value["documents"], value.get("question") or "", self.detection
