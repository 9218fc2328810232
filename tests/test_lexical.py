"""The lexical signals and absent terms (groundsense.lexical): the word-overlap baseline exactly,
numbers compared by value, names, and a sentence copied from the evidence scoring nothing."""

import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundsense.lexical import LEXICAL, EvidenceWords, absent_terms, lexical_signals, normalise_number, numbers
from groundsense.verification.lexical import LexicalOverlapVerifier
from groundsense_eval.caches.lexical import lexical_rows, with_lexical

pytestmark = pytest.mark.numeric  # run again with the fallback SIMD paths (CONTRIBUTING)

CHUNKS = [
    "The Golden Gate Bridge is a suspension bridge spanning the Golden Gate strait. It opened in 1937.",
    "The bridge's main span is 4,200 feet (1,280 m) long. Its chief engineer was Joseph Strauss; it took six years.",
]
EVIDENCE = EvidenceWords.of(CHUNKS)


def signals(sentence: str) -> dict[str, float]:
    return lexical_signals(sentence, EVIDENCE)


def test_overlap_chunk_is_the_word_overlap_verifier():
    sentences = ["It opened in 1937.", "The main span is 4,200 feet long.", "Painted red by Gustave Eiffel."]
    baseline = LexicalOverlapVerifier().score_sentences("", CHUNKS, sentences)
    assert [signals(s)["overlap_chunk"] for s in sentences] == pytest.approx(baseline, abs=1e-12)


@pytest.mark.parametrize(("written", "canonical"), [
    ("4,200", "4200"), ("4200", "4200"), ("1.50", "1.5"), ("1.5", "1.5"), ("1990", "1990"), ("0.0", "0"),
    ("1,280.00", "1280"),
])
def test_numbers_are_compared_by_value(written, canonical):
    assert normalise_number(written) == canonical
    assert list(numbers(f"about {written} of them")) == [canonical]


def test_numbers_the_evidence_states_are_not_novel_however_written():
    assert signals("Its main span is 4200.0 feet, about 1280 m.")["novel_numbers"] == 0
    assert signals("It took 6 years.")["novel_numbers"] == 0  # the evidence says "six"
    assert signals("It took 7 years, 12% over budget.")["novel_numbers"] == 2
    assert signals("Built in 1933 and opened in 1937.")["novel_numbers"] == 1


def test_names_are_capitalised_words_past_the_first_the_evidence_lacks():
    assert signals("Joseph Strauss was its chief engineer.")["novel_names"] == 0
    assert signals("Engineers say Gustave Eiffel designed it.")["novel_names"] == 2  # not "Engineers"


def test_absent_terms_name_numbers_and_names_first():
    sentence = "The bridge was designed by Gustave Eiffel in 1990 and painted red."
    assert absent_terms(sentence, EVIDENCE) == ["Gustave", "Eiffel", "1990", "designed", "painted", "red"]
    # another form of a word the evidence has (a stem it shares) is not absent; stop words never are
    assert absent_terms("The bridges open.", EVIDENCE) == []


_WORDS = st.lists(st.sampled_from(["alpha", "Beta", "gamma", "delta", "4,200", "1.5", "eleven", "the", "of", "Zeta"]),
                  min_size=1, max_size=12)


@given(_WORDS, _WORDS)
def test_a_sentence_copied_from_a_chunk_scores_nothing(chunk_words, other_words):
    chunk = " ".join(chunk_words)
    evidence = EvidenceWords.of([" ".join(other_words), chunk])
    values = lexical_signals(chunk, evidence)
    assert values == dict.fromkeys(LEXICAL, 0.0)
    assert absent_terms(chunk, evidence) == []


@given(_WORDS, _WORDS)
def test_signals_are_shares_or_counts(sentence_words, chunk_words):
    values = lexical_signals(" ".join(sentence_words), EvidenceWords.of([" ".join(chunk_words)]))
    assert set(values) == set(LEXICAL)
    assert all(0.0 <= values[name] <= 1.0 for name in LEXICAL if not name.startswith("novel_"))
    assert all(values[name] >= 0 and values[name] == int(values[name]) for name in ("novel_numbers", "novel_names"))


def test_no_evidence_leaves_every_word_absent():
    values = lexical_signals("Gustave Eiffel painted it.", EvidenceWords.of([]))
    assert values["overlap_chunk"] == values["overlap_evidence"] == 1.0


def test_the_eval_cache_joins_on_the_sentence_and_says_how_to_compute_it(tmp_path):
    table = pd.DataFrame({"case_id": ["a", "a", "b"], "sentence_index": [0, 1, 0],
                          "sentence": ["It opened in 1937.", "Gustave Eiffel painted it.", "Unscored case."]})
    rows = lexical_rows(table, {"a": CHUNKS})
    assert list(rows["case_id"]) == ["a", "a"]  # case b's evidence is unknown: no row
    assert rows["absent"].tolist() == ["", "Gustave|Eiffel|painted"]
    path = tmp_path / "tofueval" / "key" / "lexical.parquet"
    with pytest.raises(FileNotFoundError, match="groundsense eval lexical tofueval"):
        with_lexical(table, path)
    path.parent.mkdir(parents=True)
    rows.to_parquet(path)
    again = re.escape(f"`groundsense eval lexical tofueval --cache {tmp_path} --force`")
    with pytest.raises(ValueError, match=r"lacks the signals of 1 of 3 sentences .*: compute them again with " + again):
        with_lexical(table, path)
    joined = with_lexical(table.iloc[:2], path)
    assert joined["overlap_chunk"].tolist() == [signals(s)["overlap_chunk"] for s in table["sentence"][:2]]
