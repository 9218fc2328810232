"""Prompts as token ids: the opening, the evidence chunks, the question and the answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..inputs.prompt import PromptLayout

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

UNFAMILIAR_SHARE = 0.5  # byte-fragment tokens past which text counts as unfamiliar to the scorer


@dataclass(frozen=True)
class EncodedAnswer:
    ids: list[int]  # the scored tokens, at most the answer cap
    offsets: np.ndarray  # [len(ids), 2] character spans in the caller's answer
    tokens_cut: int  # tokens past the cap, not scored


@dataclass(frozen=True)
class EncodedPrompt:
    prefix: list[int]
    chunks: list[list[int]]
    middle: list[int]
    answer: EncodedAnswer

    @property
    def lead(self) -> tuple[int, ...]:
        """What the evidence's caches hold after it: the middle (the question, shared by
        answers to the same question) without its last token."""
        return tuple(self.middle[:-1])

    @property
    def tail(self) -> list[int]:
        """What runs after the lead for each condition: the middle's last token and the
        answer's tokens but the last, which predict the answer's tokens."""
        return self.middle[-1:] + self.answer.ids[:-1]

    def condition_ids(self, without: int | None = None, no_context: bool = False) -> list[int]:
        """Token ids of one condition, the answer's last token excluded (it predicts nothing)."""
        chunks = [] if no_context else [c for k, c in enumerate(self.chunks) if k != without]
        return self.prefix + list(chain.from_iterable(chunks)) + self.middle + self.answer.ids[:-1]


def leading_special_ids(tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """Ids the tokenizer adds in front of plain text (a BOS token), if any."""
    with_special = tokenizer("a").input_ids
    plain = tokenizer("a", add_special_tokens=False).input_ids
    if plain and with_special[-len(plain) :] == plain:
        return with_special[: len(with_special) - len(plain)]
    return []


class PromptEncoder:
    """Encodes prompts with ``tokenizer`` (None when prompts come pre-encoded)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase | None) -> None:
        self.tokenizer = tokenizer
        self._bos = leading_special_ids(tokenizer) if tokenizer is not None else []

    def text_tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer, which a scorer made on pre-encoded prompts only lacks."""
        if self.tokenizer is None:
            raise ValueError("this scorer has no tokenizer: it was made to score pre-encoded prompts only")
        return self.tokenizer

    def tokenize(self, text: str) -> list[int]:
        return self.text_tokenizer()(text, add_special_tokens=False).input_ids

    def token_offsets(self, text: str) -> np.ndarray:
        """Character span of each token of ``text``, shape [n_tokens, 2]."""
        enc = self.text_tokenizer()(text, add_special_tokens=False, return_offsets_mapping=True)
        return np.asarray(enc.offset_mapping, dtype=np.int64).reshape(-1, 2)

    def byte_fragment_share(self, ids: Sequence[int]) -> float:
        """Share of the tokens ``ids`` that are a piece of one character's UTF-8 bytes rather
        than whole characters: high for a script the tokenizer, and so the model, saw little of."""
        if not ids:
            return 0.0
        return sum("\ufffd" in piece for piece in self.text_tokenizer().batch_decode([[i] for i in ids])) / len(ids)

    def unfamiliar_text(self, prompt: EncodedPrompt) -> list[str]:
        """Warnings for an answer or evidence that the scorer mostly reads as byte fragments
        (a script it was not trained on, such as CJK for the default English scorer): their
        scores say little, so the result says so rather than judging silently."""
        warnings = []
        for name, ids in (("answer", prompt.answer.ids), ("evidence", [i for chunk in prompt.chunks for i in chunk])):
            share = self.byte_fragment_share(ids)
            if share >= UNFAMILIAR_SHARE:
                warnings.append(
                    f"the {name} is mostly text the scorer was not trained for ({share:.0%} of its tokens are pieces "
                    f"of characters, e.g. a script other than the scorer's languages): its scores are unreliable"
                )
        return warnings

    def encode(
        self, question: str, chunk_texts: list[str], answer: str, max_answer_tokens: int
    ) -> EncodedPrompt:
        layout = PromptLayout.for_tokenizer(self.text_tokenizer(), question)
        return EncodedPrompt(
            prefix=self.encode_prefix(layout.prefix),
            chunks=[self.tokenize(text) for text in chunk_texts],
            middle=self.tokenize(layout.middle),
            answer=self._encode_answer(layout.answer_lead + answer, len(layout.answer_lead), max_answer_tokens),
        )

    def encode_prefix(self, text: str) -> list[int]:
        """Token ids of a prompt's opening text, with the BOS token the model expects."""
        prefix = self.tokenize(text)
        if self._bos and prefix[: len(self._bos)] != self._bos:
            prefix = self._bos + prefix
        return prefix

    def _encode_answer(self, text: str, lead: int, cap: int) -> EncodedAnswer:
        enc = self.text_tokenizer()(text, add_special_tokens=False, return_offsets_mapping=True)
        if not enc.input_ids:
            raise InputError("the answer has no tokens to score")
        offsets = np.clip(np.asarray(enc.offset_mapping, dtype=np.int64) - lead, 0, None)
        return EncodedAnswer(enc.input_ids[:cap], offsets[:cap], max(0, len(enc.input_ids) - cap))
