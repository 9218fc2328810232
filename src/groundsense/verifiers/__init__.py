"""Verifiers that score the same sentences and chunks as the detector: an LLM judge,
ContextCite on the scorer, and sequence classifiers (NLI, MiniCheck, AlignScore).

    from groundsense.verifiers import make_verifier
    make_verifier("judge:qwen2.5-coder-0.5b-instruct").verify(case)   # -> Verdicts

``groundsense eval verify`` runs one over a benchmark into a cache (docs/verifiers.md).
"""

from .base import Verdicts, Verifier
from .factory import KINDS, make_verifier

__all__ = ["KINDS", "Verdicts", "Verifier", "make_verifier"]
