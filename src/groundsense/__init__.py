"""groundsense: sentence-level grounding check for RAG answers.

    from groundsense import Detector
    Detector().detect(answer=..., context=... | passages=[...], question=...)
"""

from importlib import import_module

__all__ = ["Detector", "DetectionResult", "Scorer", "Calibration", "GroundsenseError", "InputError",
           "ScorerUnavailable"]

_WHERE = {
    "Detector": "detector", "DetectionResult": "result", "Scorer": "scorer", "Calibration": "calibration",
    "GroundsenseError": "errors", "InputError": "errors", "ScorerUnavailable": "errors",
}


def __getattr__(name: str):
    # Lazy, so that `groundsense --help` does not wait for torch to import.
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'groundsense' has no attribute {name!r}")
