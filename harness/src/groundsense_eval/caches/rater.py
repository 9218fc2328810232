"""Attribution rater: an instruct scorer rates how far one passage supports one sentence.

The prompt (:func:`rating_layout`) is ``Passage:`` and the chunk, ``Sentence:`` and
the sentence, then :data:`~.rating_scale.RATING_QUESTION`, which asks for one word:
``Yes`` (full support), ``Some`` (partial), ``No`` (none) or ``False`` (contradicted). Each
word is read as every one-token spelling of it, capitalised or lower case, with and without
a leading space (:func:`reply_token_ids`); the four options' probabilities are taken over
their total (``mass``, how much of the next-token distribution they hold), and the rating is
the most probable option.

Words rather than letters: asked for ``A``-``D`` instead, the default 135M scorer gives a
sentence copied from a passage less P(full) against it than against an unrelated passage;
with these words it gives more, and so does Qwen-0.5B, by a wider margin than with letters
(``scripts/rating_options_check.py``, output in docs/verifiers.md).

The passage comes first, so all sentences rated against it share its encoding (the
scorer's evidence cache, read by the judge's pass
:func:`~groundsense.verification.judge.next_token_logprobs`): each sentence then encodes only
its own tokens and the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from groundsense.errors import InputError, VerifierUnavailable
from groundsense.scorer import Scorer
from groundsense.verification import JudgeLayout, next_token_logprobs, option_probabilities, reply_token_ids

from .rating_scale import OPTION_WORDS, RATING_QUESTION, SCALE

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def rating_layout(tokenizer: PreTrainedTokenizerBase) -> JudgeLayout:
    """The rater's prompt as a judge's: ``Passage:`` and one chunk, ``Sentence:`` and the
    sentence, then :data:`RATING_QUESTION` (no question of the benchmark's)."""
    return JudgeLayout.for_message(
        tokenizer, lambda passage, sentence: f"Passage:\n{passage}\n\nSentence: {sentence}\n\n{RATING_QUESTION}")


@dataclass
class Ratings:
    """A rater's output for the sentences rated against one passage, in their order."""

    rating: list[str]  # one of SCALE each
    probabilities: np.ndarray  # [sentences, 4]: P of each SCALE option over the four, rows sum to 1
    mass: np.ndarray  # the four options' share of the next-token distribution
    tokens: int  # tokens encoded (the passage once, then each distinct sentence)


class SupportRater:
    """Rates (passage, sentence) pairs on :data:`SCALE` with ``scorer`` as the judge (a
    built-in scorer name, a local directory or a Hugging Face id)."""

    def __init__(self, scorer: Scorer | str | None = None, device: str | None = None):
        self.scorer = scorer if isinstance(scorer, Scorer) else Scorer(scorer, device=device)
        self.name = self.scorer.name
        self.option_ids = [reply_token_ids(self.scorer, (word, word.lower())) for word in OPTION_WORDS.values()]
        self._flat_ids = [i for ids in self.option_ids for i in ids]
        if not all(self.option_ids) or len(set(self._flat_ids)) != len(self._flat_ids):
            raise VerifierUnavailable(f"the tokenizer of {self.name!r} has no distinct single token for each of "
                                      f"{', '.join(OPTION_WORDS.values())}: it cannot rate")
        layout = rating_layout(self.scorer.text_tokenizer())
        self._prefix = self.scorer.encode_prefix(layout.prefix)
        self._lead, self._suffix = self.scorer.tokenize(layout.lead), self.scorer.tokenize(layout.suffix)

    def rate(self, passage: str, sentences: Sequence[str]) -> Ratings:
        """Rate each of ``sentences`` against ``passage`` (repeated sentences are run once)."""
        if not passage.strip() or not all(s.strip() for s in sentences):
            raise InputError("the passage and every sentence to rate must have text")
        position = {s: i for i, s in enumerate(dict.fromkeys(sentences))}
        tails = [self.scorer.tokenize(s) + self._suffix for s in position]
        logp, processed = next_token_logprobs(
            self.scorer, self._prefix, [self.scorer.tokenize(passage)], self._lead, tails, self._flat_ids)
        p, mass = option_probabilities(logp, [len(ids) for ids in self.option_ids])
        rows = [position[s] for s in sentences]
        return Ratings([SCALE[i] for i in p[rows].argmax(axis=1)], p[rows], mass[rows], processed)
