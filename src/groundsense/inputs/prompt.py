"""The scoring prompt, as token pieces that every condition shares.

Layout: ``prefix | chunk_1 ... chunk_K | middle | answer``. The evidence comes first so
that answers over the same evidence share its encoding; the question sits in ``middle``.
Each piece is tokenised on its own, so leaving a chunk out removes exactly its tokens and
the answer's token ids are identical in every condition. The LLM judge's prompt
(:class:`~groundsense.verification.prompts.JudgeLayout`) starts the same way, so it shares the
evidence's encoding too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

_CONTEXT_SLOT = "\x00GROUNDSENSE_CONTEXT\x00"


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
