"""Haystack: :class:`GroundsenseChecker`, a pipeline component (``pip install 'groundsense[haystack]'``).

::

    pipeline.add_component("check", GroundsenseChecker())
    pipeline.connect("llm.replies", "check.replies")
    pipeline.connect("retriever.documents", "check.documents")

It takes a generator's ``replies`` (strings or ``ChatMessage``s; a message's text parts are
checked together), the retrieved ``documents`` and the ``query``, and returns, per reply, a
:class:`~groundsense.integrations.common.GroundingReport` (``reports``; ``report.result.to_dict()``
for JSON) and the reply's text with only its supported sentences (``grounded_replies``, strings),
and ``passing``: true only where the detection clears every reply, the answer verdict (see
:mod:`groundsense.integrations.common`; no reply does not pass). A ``ConditionalRouter`` on
``passing`` sends an answer on or to review. Bad input (no documents, a document or reply
without text) raises :class:`~groundsense.errors.InputError`, stopping the pipeline rather than
passing anything.

``detector_options`` are :class:`~groundsense.config.DetectorConfig` fields with plain values
(``scorer``, ``k``, ``mode``, ``calibration`` as a file path, ``target_recall``, ...), saved with
the pipeline. Their names and values are checked when the component is made; a scorer or
calibration file that cannot be loaded fails in ``warm_up``. By default the embedded scorer;
components with the same settings share one detection per process. The scorer loads in
``warm_up`` / ``warm_up_async`` (which a pipeline calls), or on the first run. Importing this
module turns Haystack's telemetry off (also when haystack was imported first) unless
``HAYSTACK_TELEMETRY_ENABLED`` is already set.
"""

from __future__ import annotations

import os

_TELEMETRY_CHOSEN = "HAYSTACK_TELEMETRY_ENABLED" in os.environ
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # haystack reads it once, when first imported

import asyncio  # noqa: E402
from dataclasses import fields  # noqa: E402
from typing import Any  # noqa: E402

from haystack import Document, component  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402

from ..config import DetectorConfig  # noqa: E402
from ..detection import Detection  # noqa: E402
from ..errors import InputError  # noqa: E402
from .common import GroundingReport, acheck, check, detection_for  # noqa: E402

__all__ = ["GroundsenseChecker"]

if not _TELEMETRY_CHOSEN:  # haystack may have been imported before this module: switch its client off too
    try:
        import haystack.telemetry._telemetry as _haystack_telemetry  # noqa: E402

        _haystack_telemetry.telemetry = None
    except (ImportError, AttributeError):  # another layout: the variable above still holds for new imports
        pass


@component
class GroundsenseChecker:
    """Checks which sentences of each reply the documents support (see the module's docstring)."""

    def __init__(self, detector_options: dict[str, Any] | None = None) -> None:
        self.detector_options = _checked_options(detector_options)
        self._detection: Detection | None = None

    def warm_up(self) -> None:
        """Load the scorer (once; shared by components with the same options)."""
        if self._detection is None:
            self._detection = detection_for(self.detector_options)

    async def warm_up_async(self) -> None:
        """:meth:`warm_up` in a worker thread, so that the event loop keeps running."""
        if self._detection is None:
            await asyncio.to_thread(self.warm_up)

    @component.output_types(reports=list[GroundingReport], grounded_replies=list[str], passing=bool)
    def run(self, replies: list[str] | list[ChatMessage], documents: list[Document], query: str = "") -> dict[str, Any]:
        """Score every reply against ``documents``."""
        answers, passages = _reply_texts(replies), _document_texts(documents)
        self.warm_up()
        return _outputs([check(answer, passages, query, self._detection) for answer in answers])

    @component.output_types(reports=list[GroundingReport], grounded_replies=list[str], passing=bool)
    async def run_async(self, replies: list[str] | list[ChatMessage], documents: list[Document], query: str = ""
                        ) -> dict[str, Any]:
        """:meth:`run`, loading and scoring in a worker thread so that the event loop keeps running."""
        answers, passages = _reply_texts(replies), _document_texts(documents)
        await self.warm_up_async()
        return _outputs([await acheck(answer, passages, query, self._detection) for answer in answers])


def _checked_options(options: Any) -> dict[str, Any]:
    """``options`` as a dict of known ``Detector`` arguments with plain (saveable) values."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InputError(f"detector_options must be a dict of Detector arguments, not {type(options).__name__}")
    known = {f.name for f in fields(DetectorConfig)}
    if unknown := sorted(set(options) - known):
        raise InputError(f"unknown detector option(s) {', '.join(unknown)}: use {', '.join(sorted(known))}")
    if odd := sorted(k for k, v in options.items() if not isinstance(v, (str, int, float, type(None)))):
        raise InputError(f"detector option(s) {', '.join(odd)} must be plain values (a calibration as a file path, "
                         "as a string) so that the pipeline can be saved")
    if options.get("calibration") is False:
        raise InputError("the checker needs a calibration to judge sentences: leave calibration unset or give a file")
    DetectorConfig(**options)  # bad values fail here, before any pipeline runs
    return dict(options)


def _reply_texts(replies: Any) -> list[str]:
    if not isinstance(replies, list):
        raise InputError(f"replies must be a list of strings or ChatMessages, not {type(replies).__name__}")
    texts = ["\n\n".join(reply.texts) if isinstance(reply, ChatMessage) else reply for reply in replies]
    if not all(isinstance(text, str) and text for text in texts):
        raise InputError("every reply must be a string or a ChatMessage with text")
    return texts


def _document_texts(documents: Any) -> list[str]:
    if not isinstance(documents, list) or not documents:
        raise InputError("documents must be a non-empty list of Documents: "
                         "with no evidence there is nothing to check against")
    texts: list[str] = []
    for document in documents:
        text = document.content if isinstance(document, Document) else document
        if not (isinstance(text, str) and text.strip()):
            raise InputError("every document must be a string or a Document with text content "
                             "(convert tables, images and other blobs to text first)")
        texts.append(text)
    return texts


def _outputs(reports: list[GroundingReport]) -> dict[str, Any]:
    return {"reports": reports, "grounded_replies": [r.grounded_answer for r in reports],
            "passing": bool(reports) and all(r.passing for r in reports)}
