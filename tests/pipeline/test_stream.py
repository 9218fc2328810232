"""Streaming detection on real RAGTruth answers with the real default scorer: the stream's
result equals `detect` on the whole answer with the same sentence spans."""

import asyncio
import random
import re

import pytest
from helpers.same_result import assert_same

from groundsense import Detector
from groundsense.errors import InputError

pytestmark = pytest.mark.slow

CASE_IDS = ["ragtruth:16360", "ragtruth:6249", "ragtruth:1990"]  # QA, Data2txt, Summary (each with a hallucination)


@pytest.fixture(scope="module")
def cases():
    from groundsense_eval.data.ragtruth import load_ragtruth

    try:
        found, _ = load_ragtruth(ids=set(CASE_IDS))
    except FileNotFoundError as exc:
        pytest.skip(f"RAGTruth is not under ../shared/data: {exc}")
    return sorted(found, key=lambda c: CASE_IDS.index(c.id))


def evidence(case) -> dict:
    return {"passages": case.passages} if case.passages is not None else {"context": case.context}


def streamed(detector, case, seed=0, largest=12):
    """Feed the answer in random pieces of 1..``largest`` characters, as an LLM emits text."""
    rng = random.Random(seed)
    stream = detector.stream(question=case.question, **evidence(case))
    emitted, i = [], 0
    while i < len(case.answer):
        n = rng.randint(1, largest)
        emitted += stream.feed(case.answer[i : i + n])
        i += n
    return emitted, stream.close(), stream


# Each mode and each score rule once: a stream's features are the mode's, and its score rule is
# applied to them as in `detect` (tests/pipeline/test_fused_score.py and the calibration's tests).
# Full mode (K+2 conditions) on passages and on a context, without the long Data2txt answer.
@pytest.mark.parametrize(("mode", "score", "which"),
                         [("two_pass", "sensitivity", (0, 1, 2)), ("full", "fused", (0, 2))])
def test_stream_equals_detect_with_the_same_spans(scorer, cases, mode, score, which):
    detector = Detector(scorer, mode=mode, score=score)
    for seed, case in ((seed, cases[seed]) for seed in which):
        emitted, result, _ = streamed(detector, case, seed)
        spans = [(s.start, s.end) for s in result.sentences]
        reference = detector.detect(answer=case.answer, question=case.question, sentences=spans, **evidence(case))
        assert_same(result, reference)
        # every sentence but the last is judged before the stream closes, exactly as in the result
        assert len(emitted) >= len(result.sentences) - 1
        assert [s.to_dict() for s in emitted] == [s.to_dict() for s in result.sentences[: len(emitted)]]
        assert any(s.flagged for s in result.sentences) == bool(result.answer.n_flagged)


def test_a_new_sentence_costs_only_its_own_tokens(scorer, cases):
    detector = Detector(scorer)
    case = cases[2]
    stream = detector.stream(question=case.question, **evidence(case))
    rows = 2 + len(stream.evidence.chunks)
    before = stream._conditions.tokens_processed
    half = len(case.answer) // 2
    stream.feed(case.answer[:half])
    fed = len(stream._ids)
    assert stream._conditions.tokens_processed - before == rows * fed  # each token once per condition
    stream.feed(case.answer[half:])
    stream.close()
    assert stream._conditions.tokens_processed - before == rows * len(stream._ids)


def test_the_answer_cap_applies_as_in_detect(scorer, cases):
    detector = Detector(scorer, max_answer_tokens=40)
    case = cases[1]  # Data2txt: well over 40 tokens
    _, result, _ = streamed(detector, case)
    assert result.truncated.answer and any(s.reason == "past the answer token cap" for s in result.sentences)
    spans = [(s.start, s.end) for s in result.sentences]
    assert_same(result, detector.detect(answer=case.answer, question=case.question, sentences=spans, **evidence(case)))


def test_async_stream_gives_the_same_result(scorer, cases):
    detector = Detector(scorer, mode="two_pass")
    case = cases[0]

    async def run():
        stream = detector.stream(question=case.question, **evidence(case))
        for word in case.answer.split(" "):
            await stream.afeed(word + " ")
        return await stream.aclose()

    result = asyncio.run(run())
    _, sync, _ = streamed(detector, case)
    assert [s.score for s in result.sentences] == pytest.approx([s.score for s in sync.sentences], abs=1e-4)


def test_stream_refuses_what_it_cannot_do(scorer, cases):
    case = cases[0]
    with pytest.raises(InputError, match="exact leave-one-out"):
        Detector(scorer, leave_one_out="masked").stream(**evidence(case))
    detector = Detector(scorer, mode="two_pass")
    with pytest.raises(InputError, match="evidence is empty"):
        detector.stream(passages=["  "])
    stream = detector.stream(**evidence(case))
    stream.feed("   ")
    with pytest.raises(InputError, match="answer is empty"):
        stream.close()
    stream.feed(case.answer)  # a refused close loses nothing: the stream goes on
    assert stream.close().sentences
    with pytest.raises(InputError, match="closed"):
        stream.feed("More text.")
    for bad in ({"question": 123}, {"question": "\ud800"}, {"score_every": 0}, {"score_every": 2.5},
                {"score_every": "3"}, {"score_every": True}):
        with pytest.raises(InputError, match="question|score_every"):
            detector.stream(**evidence(case), **bad)


REGROUPED = [  # texts whose beginning the segmenter splits otherwise than the whole
    "The findings are as follows. 1. The bridge opened in 1937. 2. Its span is 4,200 feet.",
    "Results: 1. It opened in 1937. 2. It is 4,200 feet long.",
    "The answer has two parts. 1. The bridge opened in 1937. It is red.",  # a list that never goes on
    "Results: i. It opened in 1937. ii. It is 4,200 feet long. It is red.",  # detect keeps "Results: i."
    'A plaque reads "Opened 1937. Built to last." It is on the south tower.',
]
STANDING = [  # texts whose sentences wait for nothing: each is judged as soon as the next begins
    'The board is 5" wide. It fits the shelf. It is oak. It is old.',  # an inch mark, not a quotation
    "Er sagte „Hallo“. Dann ging er. Es war spät. Das Ende kam.",
    "The result is shown in Fig. 3. It opened in 1937. It is red. It is old.",
]


@pytest.mark.parametrize("answer", REGROUPED + STANDING)
def test_the_stream_gets_detects_sentences_however_the_answer_is_fed(detector, answer):
    """The segmenter reads "1." as a sentence until the list's next marker arrives, and ends a
    sentence inside a quotation until the quote closes: the stream waits for them, for at most
    REGROUP_WAIT more sentences, rather than judge the piece alone, so its sentences are
    detect's, word by word or character by character (its result equals detect's on its
    sentences: above); a sentence that cannot be regrouped is judged as soon as the next begins."""
    from groundsense.inputs.text import segment_sentences
    from groundsense.pipeline.stream import REGROUP_WAIT

    whole = [(s.start, s.end) for s in segment_sentences(answer)]
    for pieces in (re.findall(r"\S+\s*", answer), list(answer)):  # word by word, character by character
        stream = detector.stream(passages=["The Golden Gate Bridge opened in 1937.", "Its span is 4,200 feet."])
        emitted = [sentence for piece in pieces for sentence in stream.feed(piece)]
        result = stream.close()
        assert [(s.start, s.end) for s in result.sentences] == whole
        assert [(s.start, s.end) for s in emitted] == whole[: len(emitted)]
        assert len(emitted) == len(whole) - 1 if answer in STANDING else len(emitted) >= len(whole) - 1 - REGROUP_WAIT
