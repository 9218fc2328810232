"""The record types (``groundsense.ResultRecord`` and the types inside it) name exactly the
fields ``to_dict()`` writes, and docs/output.md lists each of them: a field added to one and not
the others fails here, not in a user's type checker."""

import re
from pathlib import Path

import pytest
from helpers.bridge_answer import ANSWER, PASSAGES

from groundsense.result import (
    AnswerRecord,
    ChunkRecord,
    InFlightRecord,
    ResultRecord,
    SentenceRecord,
    SupportRecord,
    TruncationRecord,
)

OUTPUT_DOC = Path(__file__).resolve().parents[1] / "docs" / "output.md"


def fields(record_type) -> set[str]:
    return set(record_type.__required_keys__ | record_type.__optional_keys__)


@pytest.mark.slow  # the real scorer's record
def test_each_record_type_names_the_fields_to_dict_writes(detector):
    stream = detector.stream(question="", passages=PASSAGES)
    stream.feed(ANSWER)
    record = stream.close().to_dict()
    assert set(record) == fields(ResultRecord) and set(ResultRecord.__optional_keys__) == {"in_flight"}
    assert set(detector.detect(ANSWER, passages=PASSAGES).to_dict()) == set(ResultRecord.__required_keys__)
    for sentence in record["sentences"]:
        assert set(sentence) == fields(SentenceRecord)
    assert any(s["support"] for s in record["sentences"])
    for sentence in record["sentences"]:
        if sentence["support"] is not None:
            assert set(sentence["support"]) == fields(SupportRecord)
    assert set(record["answer"]) == fields(AnswerRecord)
    assert set(record["truncated"]) == fields(TruncationRecord)
    assert record["chunks"] and all(set(chunk) == fields(ChunkRecord) for chunk in record["chunks"])
    assert record["in_flight"] and all(set(verdict) == fields(InFlightRecord) for verdict in record["in_flight"])


def test_docs_output_lists_every_field_of_the_record_types():
    contract = re.search(r"```text\n(.*?)```", OUTPUT_DOC.read_text(encoding="utf-8"), flags=re.S).group(1)
    listed = set(re.findall(r'"(\w+)"', contract))
    for record_type in (ResultRecord, SentenceRecord, SupportRecord, AnswerRecord, TruncationRecord, ChunkRecord,
                        InFlightRecord):
        assert fields(record_type) <= listed, (record_type.__name__, fields(record_type) - listed)
