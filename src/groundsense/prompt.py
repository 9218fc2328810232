"""The scoring prompt, as token pieces that every condition shares.

Layout: ``prefix | chunk_1 ... chunk_K | middle | answer``. The evidence comes first so
that answers over the same evidence share its encoding; the question sits in ``middle``.
Each piece is tokenised on its own, so leaving a chunk out removes exactly its tokens and
the answer's token ids are identical in every condition.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    def for_tokenizer(cls, tokenizer, question: str) -> "PromptLayout":
        rendered = user_message(_CONTEXT_SLOT, question)
        if getattr(tokenizer, "chat_template", None):
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": rendered}], tokenize=False, add_generation_prompt=True
            )
            lead = ""
        else:
            rendered += "\nAnswer:"
            lead = " "
        prefix, middle = rendered.split(_CONTEXT_SLOT)
        return cls(prefix, middle, lead)
