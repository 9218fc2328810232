"""The LLM judge's prompt: the context and the question as in the scorer's prompt
(:func:`~groundsense.inputs.prompt.user_message`), then the instruction and the sentence.

:func:`judge_message` is the whole user message (what a remote judge is sent);
:class:`JudgeLayout` the same turn as the text pieces around the evidence and the sentence,
for a judge that encodes the evidence once and reads each sentence after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..inputs.prompt import render_user_turn, user_message

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

JUDGE_INSTRUCTION = "Is the following sentence supported by the context? Answer Yes or No."
JUDGE_YES, JUDGE_NO = ("Yes", "yes", "YES"), ("No", "no", "NO")  # the spellings of the judge's answers read

_CONTEXT_SLOT = "\x00GROUNDSENSE_CONTEXT\x00"
_SENTENCE_SLOT = "\x00GROUNDSENSE_SENTENCE\x00"


def judge_message(context: str, question: str, sentence: str) -> str:
    """The judge's user message: the context, the question, the instruction and the sentence."""
    return user_message(context, question) + f"\n\n{JUDGE_INSTRUCTION}\nSentence: {sentence}"


@dataclass(frozen=True)
class JudgeLayout:
    """The judge prompt ``prefix | chunks | lead | sentence | suffix``: the context as in
    :class:`~groundsense.inputs.prompt.PromptLayout` (so the judge shares the scorer's evidence
    encoding), then the question, the instruction and the sentence, and the text up to the
    judge's answer."""

    prefix: str
    lead: str
    suffix: str

    @classmethod
    def for_tokenizer(cls, tokenizer: PreTrainedTokenizerBase, question: str) -> JudgeLayout:
        return cls.for_message(tokenizer, lambda context, sentence: judge_message(context, question, sentence))

    @classmethod
    def for_message(cls, tokenizer: PreTrainedTokenizerBase, message: Callable[[str, str], str]) -> JudgeLayout:
        """The layout of another one-turn prompt over a text and a sentence: ``message(text,
        sentence)`` is its user message, the text placed before the sentence."""
        rendered, _ = render_user_turn(tokenizer, message(_CONTEXT_SLOT, _SENTENCE_SLOT))
        prefix, rest = rendered.split(_CONTEXT_SLOT)
        lead, suffix = rest.split(_SENTENCE_SLOT)
        return cls(prefix, lead, suffix)
