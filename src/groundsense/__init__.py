"""groundsense: sentence-level grounding check for RAG answers.

    from groundsense import Detector
    Detector().detect(answer=..., context=... | passages=[...], question=...)
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported when first used
    from .calibration.adaptation import DomainSentences, adapt
    from .calibration.calibration import Calibration, shipped_calibration
    from .calibration.fusion import LexicalFusions
    from .config import DetectorConfig
    from .detection import Detection, DetectionOptions
    from .errors import GroundsenseError, InputError, ScorerUnavailable
    from .inputs.files import load_example
    from .inputs.text import segment_sentences
    from .pipeline.detector import Detector
    from .result import AnswerSummary, DetectionResult, SentenceResult, Truncation
    from .scorer import Scorer
    from .verification.cascade import Cascade
    from .verification.factory import make_detection
    from .verification.kinds import make_verifier
    from .verification.lexical import LexicalOverlapVerifier

__all__ = ["Detector", "DetectorConfig", "Detection", "DetectionOptions", "make_detection", "Cascade", "make_verifier",
           "LexicalOverlapVerifier", "DetectionResult", "SentenceResult", "AnswerSummary", "Truncation", "Scorer",
           "Calibration", "shipped_calibration", "LexicalFusions", "DomainSentences", "adapt", "segment_sentences",
           "load_example", "GroundsenseError", "InputError", "ScorerUnavailable"]

_WHERE = {
    "Detector": "pipeline.detector", "DetectorConfig": "config",
    "Detection": "detection", "DetectionOptions": "detection",
    "make_detection": "verification.factory", "Cascade": "verification.cascade",
    "make_verifier": "verification.kinds", "LexicalOverlapVerifier": "verification.lexical",
    "DetectionResult": "result", "SentenceResult": "result", "AnswerSummary": "result", "Truncation": "result",
    "Scorer": "scorer", "Calibration": "calibration.calibration", "shipped_calibration": "calibration.calibration",
    "LexicalFusions": "calibration.fusion", "DomainSentences": "calibration.adaptation",
    "adapt": "calibration.adaptation",
    "segment_sentences": "inputs.text", "load_example": "inputs.files",
    "GroundsenseError": "errors", "InputError": "errors", "ScorerUnavailable": "errors",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that `groundsense --help` does not wait for torch to import.
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'groundsense' has no attribute {name!r}")
