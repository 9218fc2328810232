"""The synthetic hard negatives of issue #55: each recipe changes what it says it changes (delete
keeps the claim and removes its support), and is deterministic given its seed."""

import numpy as np
import pytest

from groundsense_eval.data.hard_negatives import RECIPES, delete, hard_negative, negate

EVIDENCE = ("The council approved 12 new parks in 2019. Mayor Jane Smith opposed the plan.",
            "Councilmember Tom Lee said the budget grew by 5% before the vote. The library closes at 8 pm.")


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_negate_adds_or_removes_a_negation_and_flips_a_comparison():
    added = negate("The library closes at 8 pm and is open.", EVIDENCE, rng())
    assert added is not None and added.detail == "negate:add" and "is not open" in added.sentence
    removed = negate("The mayor did not support the plan.", EVIDENCE, rng())
    assert removed is not None and removed.detail == "negate:remove"
    assert removed.sentence == "The mayor did support the plan."
    flipped = negate("The budget grew before the vote.", EVIDENCE, rng())
    assert flipped is not None and flipped.detail == "negate:flip"
    assert flipped.sentence == "The budget grew after the vote."
    assert negate("Parks everywhere.", EVIDENCE, rng()) is None
    for contracted in ("They can't afford it.", "They can’t afford it.", "They did n't go."):  # left alone
        assert negate(contracted, EVIDENCE, rng()) is None


def test_delete_removes_the_one_supporting_sentence_and_keeps_the_claim():
    claim = "Mayor Jane Smith opposed the plan."
    made = delete(claim, EVIDENCE, rng())
    assert made is not None and made.sentence == claim and made.replaced == "Mayor Jane Smith opposed the plan."
    assert made.evidence == ("The council approved 12 new parks in 2019.", EVIDENCE[1])
    assert delete("Something else entirely happened.", EVIDENCE, rng()) is None  # nothing supports it
    twice = (EVIDENCE[0], "Mayor Jane Smith opposed the plan in March.")  # said twice: the claim keeps support
    assert delete(claim, twice, rng()) is None


@pytest.mark.parametrize("seed", range(5))
def test_a_hard_negative_is_the_same_for_the_same_seed_and_names_its_recipe(seed):
    sentence = "Tom Lee said the budget grew by 5% before the vote and was approved."
    first, again = hard_negative(sentence, EVIDENCE, rng(seed)), hard_negative(sentence, EVIDENCE, rng(seed))
    assert first == again and first is not None and first.recipe in RECIPES
    assert first.sentence != sentence or first.evidence != EVIDENCE

