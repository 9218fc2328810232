"""What every framework integration shares: one ``detect`` call and the verdict read from it.

The call goes to any :class:`~groundsense.detection.Detection`: the default detector, one made
from options (``DetectorConfig`` fields; naming a ``verifier`` makes a cascade), or one passed in
as ``detection=`` (:func:`detection_argument` takes ``detector=``, its deprecated old name, too).

Every integration reports the score in [0, 1] of :func:`groundsense.result.support_score`::

    score = sentences judged supported / sentences in the answer   (+ 1 if flagged as a whole)

A sentence is *judged supported* when the detection scored it and did not flag it
(``flagged is False``). A flagged sentence and a sentence that was not judged (past the answer
token cap) both count against the answer: the check fails closed. ``passing`` is the answer
verdict that every entry point gives, ``result.answer.flagged is False``: every sentence judged
supported, and the answer's own rule not fired (the fused score's noisy-OR, a calibration's
lower answer threshold: docs/calibration.md, "The answer verdict"). The score is 1 exactly
where the answer passes: one flagged as a whole, every one of its n sentences judged
supported, scores n / (n + 1), so that a reward threshold of 1 (DSPy's ``BestOfN``) holds out
for a passing answer. The *grounded
answer* keeps only the sentences judged supported; it is empty where the answer is flagged as a
whole with every sentence judged supported, since then none of them can be vouched for.

Imports no framework: evidence items are read by duck typing (a string, a LangChain
``Document``, a LlamaIndex node or ``NodeWithScore``, or a dict with ``page_content``/``text``).
One string of evidence is a context, split into K chunks as every other entry point splits one
(:func:`evidence_arguments`); a list gives the passages, each a chunk.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

from ..config import DEFAULTS, DetectorConfig
from ..detection import Detection, as_detection
from ..errors import GroundsenseError, InputError
from ..inputs.validate import CheckedRow
from ..result import DetectionResult, SentenceResult, support_score
from ..verification import check_verifier, make_detection

if TYPE_CHECKING:
    from ..verification import PreparedDetection

# One detection at a time per process: frameworks call validators and evaluators from thread
# pools and event loops, and the scorer keeps state (its evidence cache) between calls.
_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def default_detection() -> Detection:
    """The embedded default scorer with its shipped calibration, loaded once per process."""
    return make_detection(DEFAULTS)


def detection_for(options: Mapping[str, Any]) -> Detection:
    """The calibrated detection made from :class:`DetectorConfig` fields with plain values (a
    cascade when they name a ``verifier``), loaded once per process for each distinct
    configuration (options that spell out the defaults get the default detection)."""
    config = DetectorConfig(**options)
    check_verifier(config)  # before the lock and any loading
    with _LOCK:
        return resolve_detection(None if config == DEFAULTS else _detection_for(config))


@lru_cache(maxsize=4)
def _detection_for(config: DetectorConfig) -> Detection:
    return make_detection(config)


class PreparedOnce:
    """A detection prepared when this is made (``prepare_detection``: bad settings are refused
    before any model loads) and built from that preparation once, when first asked for
    (:meth:`get`; a build that fails is tried again by the next): how a server that starts
    before its model has loaded keeps one preparation for its start and its calls."""

    def __init__(self, prepared: PreparedDetection):
        self.prepared = prepared
        self._built: Detection | None = None

    def get(self) -> Detection:
        with _LOCK:  # one build, whichever thread asks first
            if self._built is None:
                self._built = self.prepared.build()
            return self._built


def resolve_detection(detection: Detection | None) -> Detection:
    """``detection`` (any :class:`Detection`) itself, or the shared default; refuses one that cannot
    flag anything (its ``describe()`` gives no ``threshold``: no calibration)."""
    detection = as_detection(detection if detection is not None else default_detection())
    check_flags(detection.describe())
    return detection


def check_flags(about: Mapping[str, Any]) -> None:
    """Refuse a detection that cannot flag anything: ``about``, what it describes, gives no
    ``threshold`` (no calibration)."""
    if about.get("threshold") is None:
        raise GroundsenseError(
            f"the detection has no flag threshold for scorer {about.get('scorer')} (no calibration): an "
            "integration needs one to judge sentences; pass calibration=... (see `groundsense calibrate`)"
        )


def detection_argument(detection: Detection | None, detector: Detection | None, where: str,
                       stacklevel: int = 3) -> Detection | None:
    """The detection an integration was given: ``detection``, or ``detector``, its deprecated old
    name ("detector" names the :class:`~groundsense.pipeline.detector.Detector` class only, and any
    :class:`Detection` is taken), kept for one release: given (not None) it warns and serves the
    same; given with ``detection`` it is a ``TypeError``. ``where`` names the call in the messages
    (``"GroundsenseRunnable()"``); ``stacklevel`` points the warning at the caller's line (3: the
    line that called the function that calls this one)."""
    if detector is None:
        return detection
    if detection is not None:
        raise TypeError(f"{where} takes detection= or detector= (its deprecated old name), not both")
    warnings.warn(f"{where}: detector= is deprecated, pass detection= (the same object); detector= goes in the "
                  "next release", DeprecationWarning, stacklevel=stacklevel)
    return detector


class DeprecatedDetectorAttribute:
    """An integration's ``detector`` attribute, the deprecated old name of its ``detection``
    attribute: reading or setting it warns and reads or sets ``detection``. On the class it reads
    None: a dataclass that declares it as its init-only ``detector`` argument (the RAGAS metric)
    takes that as the argument's default."""

    def __get__(self, obj: Any, owner: type | None = None) -> Detection | None:
        if obj is None:
            return None
        _warn_attribute(obj)
        return obj.detection

    def __set__(self, obj: Any, value: Detection | None) -> None:
        _warn_attribute(obj)
        obj.detection = value


def _warn_attribute(obj: Any) -> None:
    name = type(obj).__name__
    warnings.warn(f"{name}.detector is deprecated, use {name}.detection (the same object); .detector goes in the "
                  "next release", DeprecationWarning, stacklevel=3)


TEXT_KEYS = ("page_content", "text", "content")  # where a document given as a mapping holds its text


def evidence_arguments(sources: Any) -> dict[str, str | list[str]]:
    """The ``detect`` arguments that hold ``sources``: one string is a ``context``, which the
    detection splits into K chunks as ``detect --context`` and MCP's ``context`` do; anything
    else gives the ``passages`` of :func:`evidence_texts`, each a chunk as it is."""
    if isinstance(sources, str):
        return {"context": sources}
    return {"passages": evidence_texts(sources)}


def evidence_texts(sources: Any) -> list[str]:
    """The passage texts of ``sources``: one string or one document, or an iterable of strings,
    LangChain ``Document``s, LlamaIndex nodes / ``NodeWithScore``s or mappings with
    ``page_content``/``text``/``content``. Another mapping, or a mapping-like object that iterates
    its keys (a ``dspy.Prediction``), is refused: its keys are no passages."""
    if sources is None:
        raise InputError("no evidence: give the retrieved passages (sources, documents or contexts)")
    if (text := _document_text(sources)) is not None:
        return [text]
    if isinstance(sources, Mapping) or _iterates_keys(sources):
        keys = ", ".join(repr(key)[:40] for key in list(sources)[:3])
        raise InputError(f"the evidence is a mapping ({keys}…), whose keys are no passages: give a list of passages "
                         "(its values, if they are the passages) or one document with a 'page_content' or 'text'")
    if not isinstance(sources, Iterable):
        raise InputError(f"the evidence must be a string or a list of passages, not {type(sources).__name__}")
    return [_text_of(item) for item in sources]


def _iterates_keys(sources: Any) -> bool:
    """Whether iterating ``sources`` gives its keys (a ``dspy.Example`` or ``Prediction``), not
    its values (a pandas ``Series``, whose ``keys()`` is its index)."""
    keys = getattr(sources, "keys", None)
    if not (callable(keys) and isinstance(sources, Iterable)):
        return False
    names = set(keys())
    try:
        return bool(names) and names <= set(sources)
    except TypeError:  # an item that cannot be a key (a list, an array): the values are iterated
        return False


def _document_text(item: Any) -> str | None:
    """The text of one passage: a string, a LangChain ``Document``, a LlamaIndex node or
    ``NodeWithScore``, or a mapping with its text; None for anything else."""
    if isinstance(item, str):
        return item
    if isinstance(getattr(item, "page_content", None), str):  # LangChain Document
        return item.page_content
    if callable(getattr(item, "get_content", None)):  # LlamaIndex BaseNode and NodeWithScore
        return item.get_content()
    if isinstance(item, Mapping):
        return next((item[key] for key in TEXT_KEYS if isinstance(item.get(key), str)), None)
    return None


def _text_of(item: Any) -> str:
    if (text := _document_text(item)) is None:
        raise InputError(f"cannot read a passage's text from a {type(item).__name__}: give strings or documents")
    return text


@dataclass(frozen=True)
class GroundingReport:
    """The verdict on one answer, as every integration reports it (see the module's docstring)."""

    answer: str
    result: DetectionResult

    @cached_property
    def supported(self) -> list[SentenceResult]:
        return [s for s in self.result.sentences if s.flagged is False]

    @cached_property
    def unsupported(self) -> list[SentenceResult]:
        """The flagged sentences."""
        return [s for s in self.result.sentences if s.flagged is True]

    @cached_property
    def unjudged(self) -> list[SentenceResult]:
        """Sentences the detector could not judge (past the answer token cap); never supported."""
        return [s for s in self.result.sentences if s.flagged is None]

    @property
    def rejected(self) -> list[SentenceResult]:
        """Every sentence not judged supported, in answer order."""
        return [s for s in self.result.sentences if s.flagged is not False]

    @property
    def score(self) -> float:
        return support_score((s.flagged for s in self.result.sentences), self.result.answer.flagged)

    @property
    def passing(self) -> bool:
        """The answer verdict: true only where the detection cleared the answer
        (``answer.flagged is False``, every sentence judged supported)."""
        return self.result.answer.flagged is False and not self.rejected

    @property
    def flagged_as_a_whole(self) -> bool:
        """Whether the answer is flagged by its own rule though every sentence is judged supported."""
        return not self.passing and not self.rejected

    @cached_property
    def grounded_answer(self) -> str:
        """The answer with only its supported sentences (none where it is :attr:`flagged_as_a_whole`).
        Two kept sentences are joined by the widest whitespace the answer had between them (a
        paragraph break survives the removal of the sentence next to it), or by a space."""
        if self.flagged_as_a_whole:
            return ""
        sentences, parts, last = self.result.sentences, [], None
        for i, sentence in enumerate(sentences):
            if sentence.flagged is not False:
                continue
            if last is not None:
                gaps = [self.answer[a.end : b.start] for a, b in zip(sentences[last:i], sentences[last + 1 : i + 1])]
                gaps = [g for g in gaps if g and not g.strip()]
                parts.append(max(gaps, key=lambda g: g.count("\n")) if gaps else " ")
            parts.append(sentence.text)
            last = i
        return "".join(parts)

    def reason(self, sentence: SentenceResult) -> str:
        """Why one sentence is not judged supported."""
        if sentence.flagged is True:
            why = f"; {sentence.explanation}" if sentence.explanation else ""
            return (f"not supported by the evidence (score {sentence.score:+.3f} "
                    f"≥ threshold {self.result.threshold:.3f}){why}")
        return f"not judged: {sentence.reason or 'no flag'}; counted as unsupported"

    @property
    def feedback(self) -> str:
        """A reviewer's summary naming every sentence that is not judged supported."""
        n = len(self.result.sentences)
        lines = [f"{len(self.supported)} of {n} sentences supported by the evidence (score {self.score:.3f})."]
        if self.flagged_as_a_whole:
            answer = self.result.answer
            rule = (f": its answer score {answer.score:.3f} ≥ answer threshold {answer.threshold:.3f}"
                    if answer.score is not None and answer.threshold is not None else "")
            lines.append(f"The answer as a whole is flagged{rule}; together its sentences are likely to hold "
                         "an unsupported one. Check it against the evidence before showing it.")
        for label, group in (("Unsupported", self.unsupported), ("Not judged", self.unjudged)):
            if group:
                lines.append(f"{label}:")
                lines += [f'- [{s.index}] "{s.text}"' + (f" ({s.explanation})" if s.explanation else "")
                          for s in group]
        return "\n".join(lines)


def detect(arguments: Mapping[str, Any] | CheckedRow, detection: Detection | None = None, *,
           detector: Detection | None = None) -> DetectionResult:
    """The one ``detect`` call, one at a time per process, on its keyword ``arguments`` or on a
    request row :func:`~groundsense.inputs.validate.check_row` already checked (not checked again).
    ``detector``: the deprecated old name of ``detection`` (:func:`detection_argument`)."""
    detection = detection_argument(detection, detector, "detect()")
    with _LOCK:  # also makes two threads' first call load the default detection once
        detection = resolve_detection(detection)
        if isinstance(arguments, CheckedRow):
            return detection.detect_checked(arguments)
        return detection.detect(**arguments)


def check(answer: str, sources: Any, question: str | None = "", detection: Detection | None = None, *,
          detector: Detection | None = None) -> GroundingReport:
    """Score ``answer`` against ``sources`` (see :func:`evidence_arguments`) and report the verdict.
    ``detector``: the deprecated old name of ``detection`` (:func:`detection_argument`)."""
    detection = detection_argument(detection, detector, "check()")
    arguments = {"answer": answer, **evidence_arguments(sources), "question": question or ""}
    return GroundingReport(answer, detect(arguments, detection))


async def acheck(answer: str, sources: Any, question: str | None = "", detection: Detection | None = None, *,
                 detector: Detection | None = None) -> GroundingReport:
    """:func:`check` in a worker thread, so an event loop keeps running while the scorer works."""
    detection = detection_argument(detection, detector, "acheck()")
    return await asyncio.to_thread(check, answer, sources, question, detection)
