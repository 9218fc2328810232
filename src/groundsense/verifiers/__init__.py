"""Verifiers that score the same sentences and chunks as the detector: an LLM judge,
ContextCite on the scorer, and sequence classifiers (NLI, MiniCheck, AlignScore).

    from groundsense.verifiers import make_verifier
    make_verifier("judge:qwen2.5-coder-0.5b-instruct").verify(sentences)   # a SentenceInput -> Verdicts

Each is a :class:`~groundsense.cascade.verifier.Verifier`, so a cascade can escalate to it;
``make_detection(DetectorConfig(verifier="judge:..."))`` builds that cascade, as every entry point does.
``groundsense eval verify`` runs one over a benchmark into a cache (docs/verifiers.md).
"""

from .base import ModelVerifier, Verdicts
from .factory import KINDS, check_verifier, make_detection, make_verifier, verifier_class

__all__ = ["KINDS", "ModelVerifier", "Verdicts", "check_verifier", "make_detection", "make_verifier", "verifier_class"]
