"""Haystack: :class:`GroundsenseChecker`, a pipeline component (``pip install 'groundsense[haystack]'``).

::

    pipeline.add_component("check", GroundsenseChecker())
    pipeline.connect("llm.replies", "check.replies")
    pipeline.connect("retriever.documents", "check.documents")

It takes a generator's ``replies`` (strings or ``ChatMessage``s), the retrieved ``documents``
and the ``query``, and returns, per reply, a
:class:`~groundsense.integrations.common.GroundingReport` (``reports``) and the reply with only
its supported sentences (``grounded_replies``), and ``passing``: true only when every sentence
of every reply is judged supported (see :mod:`groundsense.integrations.common`; no reply does
not pass). A
``ConditionalRouter`` on ``passing`` sends an answer on or to review.

``detector_options`` are :class:`~groundsense.Detector`'s keyword arguments (``scorer``,
``k``, ``mode``, ``calibration`` as a file path, ``target_recall``, ...), checked when the
component is made and serialised with the pipeline; by default the embedded scorer, shared by
every integration in the process. The scorer loads in ``warm_up`` (which a pipeline calls),
or on the first run. Importing this module turns Haystack's telemetry off (also when haystack
was imported first) unless ``HAYSTACK_TELEMETRY_ENABLED`` is already set.
"""

from __future__ import annotations

import os

_TELEMETRY_CHOSEN = "HAYSTACK_TELEMETRY_ENABLED" in os.environ
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # haystack reads it once, when first imported

from dataclasses import fields  # noqa: E402
from typing import Any  # noqa: E402

from haystack import Document, component  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402

from ..config import DetectorConfig  # noqa: E402
from ..detector import Detector  # noqa: E402
from ..errors import InputError  # noqa: E402
from .common import GroundingReport, acheck, check, resolve_detector  # noqa: E402

__all__ = ["GroundsenseChecker"]

if not _TELEMETRY_CHOSEN:  # haystack may have been imported before this module: switch its client off too
    import haystack.telemetry._telemetry as _haystack_telemetry  # noqa: E402

    _haystack_telemetry.telemetry = None


@component
class GroundsenseChecker:
    """Checks which sentences of each reply the documents support (see the module's docstring)."""

    def __init__(self, detector_options: dict[str, Any] | None = None) -> None:
        self.detector_options = dict(detector_options or {})
        known = {f.name for f in fields(DetectorConfig)}
        if unknown := sorted(set(self.detector_options) - known):
            raise InputError(f"unknown detector option(s) {', '.join(unknown)}: use {', '.join(sorted(known))}")
        DetectorConfig(**self.detector_options)  # bad values fail here, before any pipeline runs
        self._detector: Detector | None = None

    def warm_up(self) -> None:
        """Load the scorer (once)."""
        if self._detector is None:
            self._detector = resolve_detector(Detector(**self.detector_options) if self.detector_options else None)

    @component.output_types(reports=list[GroundingReport], grounded_replies=list[str], passing=bool)
    def run(self, replies: list[str] | list[ChatMessage], documents: list[Document], query: str = "") -> dict[str, Any]:
        """Score every reply against ``documents``."""
        self.warm_up()
        texts = _document_texts(documents)
        return _outputs([check(answer, texts, query, self._detector) for answer in _reply_texts(replies)])

    @component.output_types(reports=list[GroundingReport], grounded_replies=list[str], passing=bool)
    async def run_async(self, replies: list[str] | list[ChatMessage], documents: list[Document], query: str = ""
                        ) -> dict[str, Any]:
        """:meth:`run`, scoring in a worker thread so that the event loop keeps running."""
        self.warm_up()
        texts = _document_texts(documents)
        return _outputs([await acheck(answer, texts, query, self._detector) for answer in _reply_texts(replies)])


def _reply_texts(replies: list[str] | list[ChatMessage]) -> list[str]:
    texts = [reply.text if isinstance(reply, ChatMessage) else reply for reply in replies]
    if not all(isinstance(text, str) for text in texts):
        raise InputError("every reply must be a string or a ChatMessage with text")
    return texts


def _document_texts(documents: list[Document]) -> list[str]:
    texts = [d.content if isinstance(d, Document) else d for d in documents]
    if not all(isinstance(text, str) for text in texts):
        raise InputError("every document must be a string or a Document with text content "
                         "(convert tables, images and other blobs to text first)")
    return texts


def _outputs(reports: list[GroundingReport]) -> dict[str, Any]:
    return {"reports": reports, "grounded_replies": [r.grounded_answer for r in reports],
            "passing": bool(reports) and all(r.passing for r in reports)}
