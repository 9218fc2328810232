"""Verification: scoring an answer's sentences against the evidence by a second method, and the
cascade that escalates a detection's most suspicious sentences to it.

    from groundsense.verification import Cascade, make_detection, make_verifier
    make_verifier("judge:qwen2.5-coder-0.5b-instruct").verify(sentences)   # a SentenceInput -> VerifierScores
    make_detection(DetectorConfig(verifier="judge:..."))                  # what every entry point runs

Modules: :mod:`.verifier` (the :class:`Verifier` interface, :class:`SentenceInput`),
:mod:`.model` (:class:`ModelVerifier`, its output :class:`VerifierScores`, the cost and cache
key), :mod:`.kinds` (the ``KIND:MODEL`` specs: :func:`make_verifier`, :func:`check_verifier`),
:mod:`.factory` (:func:`make_detection`, :func:`prepare_detection`), :mod:`.cascade` (:class:`Cascade`, its stream, the
escalation rule), the verifiers (:mod:`.lexical`, :mod:`.judge` with :mod:`.prompts`,
:mod:`.contextcite`, :mod:`.seqclf`, :mod:`.openai_judge`). ``groundsense eval verify`` runs
one over a benchmark into a cache (docs/verifiers.md).

The public names are this package's ``__all__``; its modules are private. A new verifier is a
:class:`ModelVerifier` subclass registered in :data:`KINDS` (CONTRIBUTING.md, "A new verifier"), or,
in a package of its own, under the ``groundsense.verifiers`` entry point (docs/verifiers.md):
:func:`gflops` gives its cost, and a verifier that asks a scorer a question with one-word replies
reads them as the judge does (:class:`JudgeLayout`, :func:`reply_token_ids`,
:func:`next_token_logprobs`, :func:`option_probabilities`).

Every name is imported when first used: importing the package, :func:`make_verifier` or
:func:`check_verifier` loads no torch; a verifier kind's module loads when it is asked for.
"""

from typing import TYPE_CHECKING

from ..lazy import exported

if TYPE_CHECKING:
    from typing_extensions import deprecated

    from ..scorer import Scorer
    from .cascade import Cascade, CascadeStream, escalation_mask
    from .factory import PreparedDetection, make_detection, prepare_detection
    from .judge import next_token_logprobs, option_probabilities, reply_token_ids
    from .kinds import KINDS, check_verifier, installed_kinds, make_verifier, verifier_class
    from .lexical import LexicalOverlapVerifier
    from .model import ModelVerifier, VerifierScores, gflops, model_slug
    from .prompts import JudgeLayout
    from .verifier import SentenceInput, Verifier

    @deprecated("groundsense.verification.answer_token_ids is now reply_token_ids")
    def answer_token_ids(scorer: Scorer, words: tuple[str, ...]) -> list[int]: ...

__all__ = [
    # a verifier: the interface, a model-backed one and its scores, the KIND:MODEL specs
    "Verifier", "SentenceInput", "ModelVerifier", "VerifierScores", "KINDS", "installed_kinds", "make_verifier",
    "check_verifier", "verifier_class", "LexicalOverlapVerifier",
    # what a new model verifier builds on: its cost, its cache name, and the judge's one-word reading
    "gflops", "model_slug", "JudgeLayout", "reply_token_ids", "next_token_logprobs", "option_probabilities",
    # the cascade, and every entry point's detection
    "Cascade", "CascadeStream", "escalation_mask", "make_detection", "prepare_detection", "PreparedDetection",
]

if not TYPE_CHECKING:  # at run time each name is imported when first used (a type checker sees the imports above)
    __getattr__ = exported(__name__, {
        "verifier": ["Verifier", "SentenceInput"],
        "model": ["ModelVerifier", "VerifierScores", "gflops", "model_slug"],
        "kinds": ["KINDS", "installed_kinds", "make_verifier", "check_verifier", "verifier_class"],
        "lexical": ["LexicalOverlapVerifier"],
        "judge": ["reply_token_ids", "next_token_logprobs", "option_probabilities"],
        "prompts": ["JudgeLayout"],
        "cascade": ["Cascade", "CascadeStream", "escalation_mask"],
        "factory": ["make_detection", "prepare_detection", "PreparedDetection"],
    }, renamed={"answer_token_ids": "reply_token_ids"})  # until the next release (a judge's Yes/No is its reply)
