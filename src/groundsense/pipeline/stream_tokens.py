"""The final tokens of an answer that arrives in pieces, tokenised as it grows.

A byte-level BPE tokenizer (the scorers' kind) never merges across the start of a run of
whitespace, so the tokens that end before the text's last whitespace run are final: later
text cannot change them. Each time, only the text from one such boundary back is tokenised
again: the tokens between that boundary and the last one were final already and must come
out the same (a tokenizer that re-splits them cannot stream); the rest is new. When the
answer is complete the whole of it is tokenised once more and must give the same tokens, so
the stream scores exactly the tokens that ``detect`` scores.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

# The last whitespace run and whatever follows it. Whitespace as the tokenizers' pre-tokenizers
# see it (Unicode's White_Space): Python's \s also takes the separators U+001C to U+001F, which
# they do not, and merge into the next word.
_TRAILING = re.compile(r"[^\S\x1c-\x1f]+[\S\x1c-\x1f]*\Z")
RESPLIT = "the scorer's tokenizer re-split text it had already produced; this scorer cannot stream"


class FinalTokens:
    """The final tokens of ``lead + answer`` (``lead``: the prompt's text that goes with the
    answer's first word), with their character spans in the answer."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, lead: str) -> None:
        self._tokenizer, self._lead = tokenizer, lead
        self.ids: list[int] = []
        self._spans: list[np.ndarray] = []  # pieces of [n, 2] spans in lead + answer
        self._end = 0  # position in lead + answer up to which every token is final
        self._back = (0, 0)  # the boundary before that one: its position and the tokens before it
        self.complete = False

    @property
    def boundary(self) -> int:
        """The answer position up to which every token is final."""
        return max(0, self._end - len(self._lead))

    @property
    def offsets(self) -> np.ndarray:
        """The final tokens' character spans in the answer, shape [n, 2]."""
        if len(self._spans) > 1:
            self._spans = [np.concatenate(self._spans)]
        spans = self._spans[0] if self._spans else np.zeros((0, 2), dtype=np.int64)
        return np.clip(spans - len(self._lead), 0, None)

    def advance(self, answer: str, complete: bool = False) -> int:
        """Tokenise what ``answer`` (the whole answer so far) added; how many tokens became
        final. ``complete``: the answer has ended, so every token is final."""
        text = self._lead + answer
        start, before = self._back
        ids, spans = self._tokenize(text[start:], start)
        known = len(self.ids) - before
        if ids[:known] != self.ids[before:]:
            raise RuntimeError(RESPLIT)
        trailing = _TRAILING.search(text, self._end)
        end = len(text) if complete else (trailing.start() if trailing else self._end)
        final = len(ids) if complete else int(np.searchsorted(spans[:, 1], end, side="right"))
        self.ids += ids[known:final]
        self._spans.append(spans[known:final])
        if end > self._end:
            self._back, self._end = (self._end, before + known), end
        self.complete = complete
        if complete and self._tokenize(text, 0)[0] != self.ids:
            raise RuntimeError(RESPLIT)
        return max(0, final - known)

    def _tokenize(self, text: str, start: int) -> tuple[list[int], np.ndarray]:
        enc = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return enc.input_ids, np.asarray(enc.offset_mapping, dtype=np.int64).reshape(-1, 2) + start
