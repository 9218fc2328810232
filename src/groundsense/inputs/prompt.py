"""The scoring prompt, as token pieces that every condition shares.

Layout: ``prefix | chunk_1 ... chunk_K | middle | answer``. The evidence comes first so
that answers over the same evidence share its encoding; the question sits in ``middle``.
Each piece is tokenised on its own, so leaving a chunk out removes exactly its tokens and
the answer's token ids are identical in every condition. The LLM judge's prompt
(:class:`JudgeLayout`) starts the same way, so it shares the evidence's encoding too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_CONTEXT_SLOT = "\x00GROUNDSENSE_CONTEXT\x00"
_SENTENCE_SLOT = "\x00GROUNDSENSE_SENTENCE\x00"


def user_message(context: str, question: str) -> str:
    return f"Context:\n{context}" + (f"\n\nQuestion: {question}" if question.strip() else "")


@dataclass(frozen=True)
class PromptLayout:
    """Text around the evidence: ``prefix`` before it, ``middle`` up to the answer.

    ``answer_lead`` is prepended to the answer before tokenising it: a plain prompt ends
    with ``Answer:`` and the space goes with the answer's first word, which avoids the
    artefact of a lone trailing-space token at the end of the prompt.
    """

    prefix: str
    middle: str
    answer_lead: str

    @classmethod
    def for_tokenizer(cls, tokenizer: PreTrainedTokenizerBase, question: str) -> PromptLayout:
        rendered, lead = render_user_turn(tokenizer, user_message(_CONTEXT_SLOT, question))
        prefix, middle = rendered.split(_CONTEXT_SLOT)
        return cls(prefix, middle, lead)


def render_user_turn(tokenizer: PreTrainedTokenizerBase, message: str) -> tuple[str, str]:
    """The prompt text for one user ``message`` up to the assistant's answer (the chat
    template where the tokenizer has one, else ``message`` + ``Answer:``), and the lead
    the answer's text takes (a space after a plain ``Answer:``)."""
    if getattr(tokenizer, "chat_template", None):
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        assert isinstance(rendered, str)  # tokenize=False: the text
        return rendered, ""
    return message + "\nAnswer:", " "


JUDGE_INSTRUCTION = "Is the following sentence supported by the context? Answer Yes or No."
JUDGE_YES, JUDGE_NO = ("Yes", "yes", "YES"), ("No", "no", "NO")  # the spellings of the judge's answers read


def judge_message(context: str, question: str, sentence: str) -> str:
    """The judge's user message: the context, the question, the instruction and the sentence."""
    return user_message(context, question) + f"\n\n{JUDGE_INSTRUCTION}\nSentence: {sentence}"
RATING_QUESTION = (
    "Does the passage support the sentence? Answer Yes (it says everything the sentence says), Some (it says only "
    "part of it), No (it does not say it) or False (it says otherwise)."
)


@dataclass(frozen=True)
class JudgeLayout:
    """The judge prompt ``prefix | chunks | lead | sentence | suffix``: the context as in
    :class:`PromptLayout` (so the judge shares the scorer's evidence encoding), then the
    question, the instruction and the sentence, and the text up to the judge's answer."""

    prefix: str
    lead: str
    suffix: str

    @classmethod
    def for_tokenizer(cls, tokenizer: PreTrainedTokenizerBase, question: str) -> JudgeLayout:
        return cls._around_slots(tokenizer, judge_message(_CONTEXT_SLOT, question, _SENTENCE_SLOT))

    @classmethod
    def for_rating(cls, tokenizer: PreTrainedTokenizerBase) -> JudgeLayout:
        """The attribution rater's prompt: ``Passage:`` and one chunk, ``Sentence:`` and the
        sentence, then :data:`RATING_QUESTION` (no question of the benchmark's)."""
        message = f"Passage:\n{_CONTEXT_SLOT}\n\nSentence: {_SENTENCE_SLOT}\n\n{RATING_QUESTION}"
        return cls._around_slots(tokenizer, message)

    @classmethod
    def _around_slots(cls, tokenizer: PreTrainedTokenizerBase, message: str) -> JudgeLayout:
        rendered, _ = render_user_turn(tokenizer, message)
        prefix, rest = rendered.split(_CONTEXT_SLOT)
        lead, suffix = rest.split(_SENTENCE_SLOT)
        return cls(prefix, lead, suffix)
