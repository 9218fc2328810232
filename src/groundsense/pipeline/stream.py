"""Streaming detection: judge each sentence of an answer as soon as it ends, while the
answer is still being generated.

The scorer is causal, so a sentence's token scores depend only on the prompt, the answer
before it and its own tokens. The evidence is encoded once; each condition's KV cache then
grows with the answer, and a finished sentence costs only its own tokens under each
condition. The final result equals :meth:`Detector.detect` on the whole answer with the same
sentence spans (the stream's own segmentation, frozen sentence by sentence).

A token is scored once it can no longer change: the tokens that end before the answer's last
run of whitespace are final (:class:`~groundsense.pipeline.stream_tokens.FinalTokens`, which tokenises
only the answer's unfinished tail). A sentence is judged once the next one has begun and its
tokens are final (a sentence the segmenter may still regroup, an inline list's marker or an open
quotation, waits for up to :data:`REGROUP_WAIT` more sentences: :func:`_may_regroup`). Final
tokens are scored as soon as the text reaches a sentence's end mark (so that the sentence's
verdict waits on its last word only), when a sentence ends, and whenever ``score_every`` of
them are waiting.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace

import numpy as np

from ..calibration.adjudicator import Adjudicator
from ..errors import InputError
from ..inputs.evidence import build_evidence
from ..inputs.prompt import PromptLayout
from ..inputs.text import Span, is_blank, segment_sentences
from ..inputs.validate import check_evidence, check_text
from ..result import DetectionResult, InFlightVerdict, SentenceResult
from ..scorer import EncodedAnswer, EncodedPrompt, Scorer, TokenScores
from .stream_tokens import FinalTokens

# The text may have just finished a sentence: an end mark (closing quotes or brackets after it),
# or a line break, then only whitespace.
_MAY_END = re.compile(r"(?:[.!?…][\"')\]”’]*|[\n\r\v\f\x85\u2028\u2029])\s*\Z")
# A sentence that is a list marker ("1.") or ends in one after a colon ("Results: 1."): the
# segmenter's reading of an inline list before it has seen the next item's marker, which then
# joins each marker to its item ("1. The bridge opened in 1937.").
_LIST_MARKER_END = re.compile(r"(?:\A|:\s+)\(?(?:\d{1,3}|[A-Za-z])[.)]\Z")
_STRAIGHT_QUOTE = re.compile(r'(?<!\d)"')  # not an inch mark (5")
REGROUP_WAIT = 2  # sentences that end after a sentence the segmenter may regroup before it is judged as it stands


def _may_regroup(sentence: str, to_boundary: str) -> bool:
    """Whether the segmenter may still join ``sentence`` to the text after it once more arrives
    (``to_boundary``: the text from the sentence's start to the last final token): it may be an
    inline list's marker, or a quotation is still open (the segmenter ends a sentence at a
    quoted end mark until the closing quote has come)."""
    if _LIST_MARKER_END.search(sentence) or len(_STRAIGHT_QUOTE.findall(to_boundary)) % 2:
        return True
    if "„" in to_boundary:  # German quotes: „ opens, “ closes
        return to_boundary.count("„") > to_boundary.count("“")
    return to_boundary.count("“") > to_boundary.count("”")


class DetectionStream:
    """Feed an answer's text as it is generated; get each sentence's verdict when it ends.

    Made by :meth:`Detector.stream`, on its scorer and its :class:`Adjudicator` (whose config gives
    K, the token budgets and the mode). ``feed(delta)`` returns the sentences that the new text
    finished; ``close()`` judges the rest and returns the whole answer's result. The answer
    token cap applies as in ``detect``: sentences past it come back unscored.
    """

    def __init__(self, scorer: Scorer, adjudicator: Adjudicator, question: str = "", context: str | None = None,
                 passages: list[str] | None = None, score_every: int = 16):
        if adjudicator.leave_one_out == "masked":
            raise InputError("streaming scores exact leave-one-out only, and this detector's is masked: stream "
                             "with exact leave-one-out (leave_one_out='exact', --loo exact, "
                             "GROUNDSENSE_LEAVE_ONE_OUT=exact) or in two-pass mode (mode='two_pass', --mode two_pass, "
                             "a request's \"options\": {\"mode\": \"two_pass\"})")
        check_evidence(context, passages)
        question = "" if question is None else check_text(question, "question")
        if isinstance(score_every, bool) or not isinstance(score_every, int) or score_every < 1:
            raise InputError(f"score_every must be a whole number of tokens, at least 1, not {score_every!r}")
        self.scorer, self.adjudicator, self.score_every = scorer, adjudicator, score_every
        config = adjudicator.config
        with scorer.lock:  # streams on one scorer, in threads of their own, take turns on it
            self.evidence = build_evidence(scorer, context, passages, config.k, config.max_context_tokens)
            self._cap = config.max_answer_tokens
            layout = PromptLayout.for_tokenizer(scorer.text_tokenizer(), question)
            self._tokens = FinalTokens(scorer.text_tokenizer(), layout.answer_lead)
            self._prompt = EncodedPrompt(  # the answer is filled in as it arrives
                scorer.encode_prefix(layout.prefix),
                [scorer.tokenize(self.evidence.chunk_text(c)) for c in self.evidence.chunks],
                scorer.tokenize(layout.middle), EncodedAnswer([], np.zeros((0, 2), dtype=np.int64), 0),
            )
            self._conditions = scorer.open_conditions(
                self._prompt.prefix, self._prompt.chunks, self._prompt.middle, leave_one_out=config.mode == "full"
            )
        self.text = ""  # the answer so far
        self._ids: list[int] = []  # scored tokens (final)
        self._offsets = np.zeros((0, 2), dtype=np.int64)
        self._logp: list[np.ndarray] = []
        self._jsd: list[np.ndarray] = []
        self._cut = 0  # tokens past the cap
        self._spans: list[Span] = []  # judged sentences
        self._in_flight: list[InFlightVerdict] = []  # what feed returned
        self.closed = False

    def feed(self, delta: str) -> list[SentenceResult]:
        """Add generated text; returns the sentences it finished, judged."""
        with self.scorer.lock:
            return self._feed(delta)

    def _feed(self, delta: str) -> list[SentenceResult]:
        if self.closed:
            raise InputError("this stream is closed: start a new one for another answer")
        self.text += check_text(delta, "delta")
        became_final = self._tokens.advance(self.text)
        # A sentence ends once the next has begun and its tokens are final: without a newly final
        # token there is nothing to segment again.
        ended = self._ended(self._pending_sentences()[:-1]) if became_final else []
        waiting = len(self._tokens.ids) - len(self._ids)
        if ended or waiting >= self.score_every or (waiting and _MAY_END.search(self.text)):
            self._score()
        if not ended:
            return []
        finished = self._judge(ended).sentences[-len(ended):]
        self._in_flight += [InFlightVerdict(s.index, s.score, s.flagged) for s in finished]
        return finished

    def close(self) -> DetectionResult:
        """Judge the sentences not returned yet; the whole answer's result, with ``in_flight``, the
        verdicts :meth:`feed` returned. At a precision other than fp32 the finished answer is
        scored once more as :meth:`Detector.detect` scores it (the evidence's kept encodings
        reused where the scorer kept them), so that the result is ``detect``'s on the same
        sentence spans at the same thread count (docs/streaming.md, "Precision")."""
        with self.scorer.lock:
            return self._close()

    def _close(self) -> DetectionResult:
        if self.closed:
            raise InputError("this stream is closed already")
        if is_blank(self.text):
            raise InputError("the answer is empty: feed the answer text before closing the stream")
        self.closed = True
        self._tokens.advance(self.text, complete=True)
        self._score()
        stream_result = self._judge(self._pending_sentences(), final=True)
        if not stream_result.sentences:
            raise InputError("the answer has no sentence to score")
        if self.scorer.precision == "fp32":  # the stream's own scores are detect's (within 1e-4)
            return replace(stream_result, in_flight=self._in_flight)
        streamed_tokens = self._conditions.tokens_processed
        self._conditions.caches = []  # the answer-extended caches, freed before the answer is scored again
        scores = self.scorer.score(self._prompt, leave_one_out=self.adjudicator.config.mode == "full")
        scores = replace(scores, tokens_processed=scores.tokens_processed + streamed_tokens)
        return replace(self._result(scores, final=True), in_flight=self._in_flight)

    @property
    def chunks(self) -> int:
        """How many chunks the evidence is scored in."""
        return len(self.evidence.chunks)

    async def afeed(self, delta: str) -> list[SentenceResult]:
        """:meth:`feed` in a worker thread, for an event loop."""
        return await asyncio.to_thread(self.feed, delta)

    async def aclose(self) -> DetectionResult:
        """:meth:`close` in a worker thread, for an event loop."""
        return await asyncio.to_thread(self.close)

    def _score(self) -> None:
        """Score the final tokens not scored yet, up to the answer cap."""
        cap, final = self._cap, self._tokens.ids
        new = final[len(self._ids) : cap]
        if new:
            scores = self.scorer.score_next(self._conditions, new)
            self._logp.append(scores.logp)
            self._jsd.append(scores.jsd)
            self._ids += new
            self._offsets = self._tokens.offsets[: len(self._ids)]
        if self._tokens.complete or len(final) > cap:
            self._cut = max(0, len(final) - cap)

    def _ended(self, begun_after: list[Span]) -> list[Span]:
        """Those of ``begun_after`` (pending sentences the next one has begun after) to judge now:
        their tokens final, and none the segmenter may still regroup (:func:`_may_regroup`) until
        :data:`REGROUP_WAIT` sentences have ended after it and it still stands; the sentences
        after a waiting one wait with it."""
        boundary, ended = self._tokens.boundary, []
        for i, sentence in enumerate(begun_after):
            settled = len(begun_after) - 1 - i >= REGROUP_WAIT
            if sentence.end > boundary or not settled and _may_regroup(
                    self.text[sentence.start : sentence.end], self.text[sentence.start : boundary]):
                break
            ended.append(sentence)
        return ended

    def _pending_sentences(self) -> list[Span]:
        """The sentences of the text after the judged ones, by the built-in segmenter, which reads
        the last judged sentence too (an inline list's item is read as one after the item before
        it: "2." alone is a sentence of its own), unless it would end that sentence elsewhere."""
        start = self._spans[-1].end if self._spans else 0
        before = self._spans[-1].start if self._spans else 0
        spans = [Span(before + s.start, before + s.end) for s in segment_sentences(self.text[before:])]
        if any(s.end == start for s in spans):
            return [s for s in spans if s.start >= start]
        return [Span(start + s.start, start + s.end) for s in segment_sentences(self.text[start:])]

    def _judge(self, ended: list[Span], final: bool = False) -> DetectionResult:
        """Freeze ``ended`` and judge every frozen sentence over the tokens scored so far (``final``:
        the whole answer's, with the scorer's warnings about its text)."""
        self._spans += ended
        n, rows = len(self._ids), self._conditions.rows
        logp = np.concatenate(self._logp, axis=1) if self._logp else np.zeros((rows, 0))
        jsd = np.concatenate(self._jsd, axis=1) if self._jsd else np.zeros((rows, 0))
        self._prompt = replace(self._prompt, answer=EncodedAnswer(self._ids, self._offsets[:n], self._cut))
        return self._result(TokenScores(logp, jsd, self._conditions.tokens_processed, self.scorer.threads), final)

    def _result(self, scores: TokenScores, final: bool) -> DetectionResult:
        """The frozen sentences judged on ``scores`` of the answer so far."""
        warnings = self.scorer.unfamiliar_text(self._prompt) if final else None
        return self.adjudicator.result(self.text, self._spans, self.evidence, self._prompt, scores, warnings)
