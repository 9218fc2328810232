"""groundsense: sentence-level grounding check for RAG answers.

    from groundsense import Detector
    Detector().detect(answer=..., context=... | passages=[...], question=...)
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported when first used
    from .config import DetectorConfig
    from .detection import Detection
    from .errors import GroundsenseError, InputError, ScorerUnavailable
    from .judging.calibration import Calibration
    from .pipeline.detector import Detector
    from .result import DetectionResult
    from .scorer import Scorer
    from .verification.cascade import Cascade
    from .verification.factory import make_detection

__all__ = ["Detector", "DetectorConfig", "Detection", "make_detection", "Cascade", "DetectionResult", "Scorer",
           "Calibration", "GroundsenseError", "InputError", "ScorerUnavailable"]

_WHERE = {
    "Detector": "pipeline.detector", "DetectorConfig": "config", "Detection": "detection",
    "make_detection": "verification.factory", "Cascade": "verification.cascade",
    "DetectionResult": "result", "Scorer": "scorer", "Calibration": "judging.calibration",
    "GroundsenseError": "errors", "InputError": "errors", "ScorerUnavailable": "errors",
}


def __getattr__(name: str) -> Any:
    # Lazy, so that `groundsense --help` does not wait for torch to import.
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'groundsense' has no attribute {name!r}")
