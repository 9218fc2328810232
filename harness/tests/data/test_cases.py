
import pytest

from groundsense_eval.data.cases import Case, DropLog, LabelledSentence, locate_sentences, overlaps


def test_locate_sentences_moves_a_cursor_and_tolerates_reflowed_whitespace():
    text = "Steps:\n\n1. Wash it. Done. Done."
    spans = locate_sentences(text, ["Steps: 1.", "Wash it.", "Done.", "Done.", "Missing."])
    assert spans[:4] == [(0, 10), (11, 19), (20, 25), (26, 31)]
    assert spans[4] is None
    assert text[spans[0][0] : spans[0][1]] == "Steps:\n\n1."


def test_locate_sentences_does_not_reuse_text_before_the_cursor():
    assert locate_sentences("A b. C.", ["C.", "A b."]) == [(5, 7), None]


def test_overlaps_is_half_open():
    assert overlaps((0, 5), (4, 9))
    assert not overlaps((0, 5), (5, 9))


def test_case_requires_exactly_one_evidence_form_and_valid_spans():
    good = dict(id="x", source_id="s", task="QA", question="q", answer="Hi.", benchmark="b")
    Case(**good, context="c", passages=None, sentences=[LabelledSentence(0, 3, False)])
    with pytest.raises(ValueError):
        Case(**good, context="c", passages=["p"], sentences=[])
    with pytest.raises(ValueError):
        Case(**good, context=None, passages=None, sentences=[])
    with pytest.raises(ValueError):
        Case(**good, context="c", passages=None, sentences=[LabelledSentence(0, 4, False)])


def test_drop_log_summary_counts_reasons_without_detail():
    log = DropLog()
    log.add("a", "sentence not found: key b")
    log.add("c", "sentence not found: key d")
    log.add("e", "empty answer")
    assert len(log) == 3
    assert log.reasons() == {"sentence not found": 2, "empty answer": 1}
    assert "2  sentence not found" in log.summary()
    assert list(log.to_frame()["case_id"]) == ["a", "c", "e"]

