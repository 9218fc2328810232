"""Guardrails AI: the ``groundsense/grounded`` validator (``pip install 'groundsense[guardrails]'``).

The evidence comes from ``metadata["sources"]`` (a list of passage strings, as Guardrails'
provenance validators take it; LangChain ``Document``s and LlamaIndex nodes work too), and an
optional ``metadata["question"]``::

    guard = grounded_guard(on_fail="fix")
    outcome = guard.validate(answer, metadata={"sources": passages, "question": question})
    outcome.validated_output   # the answer without its unsupported sentences

Every sentence not judged supported becomes an ``ErrorSpan`` at its offsets in the answer;
``fix_value`` is the answer without those sentences (see :mod:`groundsense.integrations.common`
for the score and the fail-closed rule). Everything runs locally: no hub account, no remote
inference, and :func:`grounded_guard` switches Guardrails' anonymous metrics off unless your
``~/.guardrailsrc`` turns them on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from guardrails import Guard
from guardrails.classes.rc import RC
from guardrails.settings import settings
from guardrails.validator_base import ErrorSpan, FailResult, PassResult, ValidationResult, Validator, register_validator

from ..detection import Detection
from .common import check, detection_argument

__all__ = ["Grounded", "grounded_guard"]


@register_validator(name="groundsense/grounded", data_type="string")
class Grounded(Validator):
    """Fails on answer sentences that the sources in ``metadata["sources"]`` do not support.

    ``detection``: a calibrated :class:`~groundsense.detection.Detection` (a ``Detector``, a
    ``Cascade``); by default the embedded scorer, loaded once per process (``detector``: its
    deprecated old name). ``on_fail``: any Guardrails action; ``"fix"`` keeps only
    the supported sentences, ``"exception"`` (the default) raises, ``"noop"`` only reports,
    ``"filter"``/``"refrain"`` drop the value.
    """

    required_metadata_keys = ["sources"]

    def __init__(self, detection: Detection | None = None, on_fail: str | Callable | None = None, *,
                 detector: Detection | None = None, **kwargs: Any):
        super().__init__(on_fail=on_fail, **kwargs)
        self._detection = detection_argument(detection, detector, "Grounded()")

    def _validate(self, value: Any, metadata: dict[str, Any]) -> ValidationResult:
        if metadata.get("sources") is None:
            raise ValueError('groundsense/grounded needs the evidence: pass metadata={"sources": [passage, ...]}')
        report = check(str(value), metadata["sources"], metadata.get("question", ""), self._detection)
        if report.passing:
            return PassResult()
        return FailResult(
            error_message=report.feedback,
            fix_value=report.grounded_answer,
            error_spans=[ErrorSpan(start=s.start, end=s.end, reason=report.reason(s)) for s in report.rejected],
        )


def grounded_guard(detection: Detection | None = None, on_fail: str | Callable | None = "exception",
                   name: str | None = None, *, detector: Detection | None = None) -> Guard:
    """A string ``Guard`` that runs :class:`Grounded` and nothing else, with Guardrails' hub
    metrics off unless ``~/.guardrailsrc`` exists and enables them (``detector``: the deprecated
    old name of ``detection``)."""
    detection = detection_argument(detection, detector, "grounded_guard()")
    guard = Guard(name=name) if name else Guard()
    guard.use(Grounded(detection=detection, on_fail=on_fail))
    guard.configure(allow_metrics_collection=RC.exists() and settings.rc.enable_metrics is True)
    return guard
