"""groundsense: sentence-level grounding check for RAG answers.

    from groundsense import Detector
    Detector().detect(answer=..., context=... | passages=[...], question=...)

The public surface is this ``__all__`` and those of the modules docs/architecture.md lists
("The public surface"); every other module is private, and may change without notice.
"""

from typing import TYPE_CHECKING

from .lazy import exported

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
    from .result import AnswerSummary, DetectionResult, ResultRecord, SentenceRecord, SentenceResult, Truncation
    from .scorer import Scorer
    from .verification.cascade import Cascade
    from .verification.factory import make_detection
    from .verification.kinds import make_verifier
    from .verification.lexical import LexicalOverlapVerifier

__all__ = ["Detector", "DetectorConfig", "Detection", "DetectionOptions", "make_detection", "Cascade", "make_verifier",
           "LexicalOverlapVerifier", "DetectionResult", "SentenceResult", "AnswerSummary", "Truncation", "ResultRecord",
           "SentenceRecord", "Scorer",
           "Calibration", "shipped_calibration", "LexicalFusions", "DomainSentences", "adapt", "segment_sentences",
           "load_example", "GroundsenseError", "InputError", "ScorerUnavailable"]

if not TYPE_CHECKING:  # at run time each name is imported when first used: `groundsense -h` imports no torch
    __getattr__ = exported(__name__, {
        "pipeline.detector": ["Detector"], "config": ["DetectorConfig"], "detection": ["Detection", "DetectionOptions"],
        "verification.factory": ["make_detection"], "verification.cascade": ["Cascade"],
        "verification.kinds": ["make_verifier"], "verification.lexical": ["LexicalOverlapVerifier"],
        "result": ["DetectionResult", "SentenceResult", "AnswerSummary", "Truncation", "ResultRecord",
                   "SentenceRecord"],
        "scorer": ["Scorer"],
        "calibration.calibration": ["Calibration", "shipped_calibration"], "calibration.fusion": ["LexicalFusions"],
        "calibration.adaptation": ["DomainSentences", "adapt"], "inputs.text": ["segment_sentences"],
        "inputs.files": ["load_example"], "errors": ["GroundsenseError", "InputError", "ScorerUnavailable"],
    })
