"""A detector that escalates its most suspicious sentences to a verifier (``cascade``), what a
verifier is (``verifier``) and the simplest one, word overlap (``lexical``).

    from groundsense.cascade import Cascade
"""

from importlib import import_module
from typing import Any

__all__ = ["Cascade", "CascadeStream", "escalation_mask"]


def __getattr__(name: str) -> Any:
    # Lazy, so that the verifiers (which import .verifier) load without the scorer and torch.
    if name in __all__:
        return getattr(import_module(".cascade", __name__), name)
    raise AttributeError(f"module 'groundsense.cascade' has no attribute {name!r}")
