"""Verification: scoring an answer's sentences against the evidence by a second method, and the
cascade that escalates a detection's most suspicious sentences to it.

    from groundsense.verification import Cascade, make_detection, make_verifier
    make_verifier("judge:qwen2.5-coder-0.5b-instruct").verify(sentences)   # a SentenceInput -> VerifierScores
    make_detection(DetectorConfig(verifier="judge:..."))                  # what every entry point runs

Modules: :mod:`.verifier` (the :class:`Verifier` interface, :class:`SentenceInput`),
:mod:`.model` (:class:`ModelVerifier`, its output :class:`VerifierScores`, the cost and cache
key), :mod:`.kinds` (the ``KIND:MODEL`` specs: :func:`make_verifier`, :func:`check_verifier`),
:mod:`.factory` (:func:`make_detection`), :mod:`.cascade` (:class:`Cascade`, its stream, the
escalation rule), the verifiers (:mod:`.lexical`, :mod:`.judge` with :mod:`.prompts`,
:mod:`.contextcite`, :mod:`.seqclf`, :mod:`.openai_judge`). ``groundsense eval verify`` runs
one over a benchmark into a cache (docs/verifiers.md).

Every name is imported when first used: importing the package, :func:`make_verifier` or
:func:`check_verifier` loads no torch; a verifier kind's module loads when it is asked for.
"""

from importlib import import_module
from typing import Any

_WHERE = {
    "Cascade": "cascade", "CascadeStream": "cascade", "escalation_mask": "cascade",
    "SentenceInput": "verifier", "Verifier": "verifier",
    "ModelVerifier": "model", "VerifierScores": "model",
    "KINDS": "kinds", "check_verifier": "kinds", "make_verifier": "kinds", "verifier_class": "kinds",
    "make_detection": "factory",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'groundsense.verification' has no attribute {name!r}")
