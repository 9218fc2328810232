"""Long evidence for benchmarks/long_context.py: other sources' passages added as distractors."""

import pytest

from groundsense_eval.data.cases import Case, LabelledSentence
from groundsense_eval.data.distractors import with_distractors


def words(text: str) -> int:
    return len(text.split())


def case(passages=("alpha beta", "gamma delta"), context=None) -> Case:
    return Case(id="q1", source_id="s1", task="QA", question="q?", context=context,
                passages=list(passages) if context is None else None, answer="Alpha beta.",
                sentences=[LabelledSentence(0, 11, False)], benchmark="ragtruth")


POOL = [("s1", "own source never added"), *((f"s{i}", f"distractor {i} " + "w " * 8) for i in range(2, 12))]


def test_distractors_fill_to_the_target_keep_the_case_s_passages_in_order_and_never_its_own_source():
    padded = with_distractors(case(), POOL, words, target=30)
    total = sum(map(words, padded.passages))
    assert 30 <= total < 30 + 10  # each distractor is 10 words: it stops at the first that reaches 30
    kept = [p for p in padded.passages if p in ("alpha beta", "gamma delta")]
    assert kept == ["alpha beta", "gamma delta"]
    assert "own source never added" not in padded.passages
    assert int(padded.meta["distractors"]) == len(padded.passages) - 2
    assert padded.sentences == case().sentences and padded.answer == case().answer


def test_the_same_seed_gives_the_same_evidence_and_another_seed_another():
    first, again = (with_distractors(case(), POOL, words, target=40, seed=0) for _ in range(2))
    assert first.passages == again.passages
    assert with_distractors(case(), POOL, words, target=40, seed=1).passages != first.passages


def test_a_pool_too_small_adds_all_it_has_and_a_context_case_is_refused():
    assert with_distractors(case(), POOL, words, target=10_000).meta["distractors"] == str(len(POOL) - 1)
    with pytest.raises(ValueError, match="one context"):
        with_distractors(case(context="a document"), POOL, words, target=10)
