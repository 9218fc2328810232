import json

import pandas as pd
import pytest

from groundsense_eval.data.locations import benchmark_path
from groundsense_eval.data.tofueval import load_tofueval, sentence_type

pytestmark = pytest.mark.data  # reads the benchmark data


def test_loads_summaries_and_reports_drops():
    cases, dropped = load_tofueval()
    assert len(cases) == 882  # 884 summaries less two with gaps in sent_idx
    assert {c.split for c in cases} == {"dev", "test"}
    assert sum(c.split == "test" for c in cases) == 267
    reasons = dropped.reasons()
    assert reasons["sentence indices not 1..n, summary incomplete"] == 2
    assert reasons["duplicate sentence row removed (case kept)"] == 1
    assert sum(len(c.sentences) for c in cases) == 2396
    assert sum(s.unsupported for c in cases for s in c.sentences) == 438


def test_offsets_round_trip_to_the_labelled_sentences():
    cases, _ = load_tofueval(splits=["test"])
    rows = pd.read_csv(benchmark_path("tofueval") / "meetingbank_factual_eval_test.csv")
    split = json.loads((benchmark_path("tofueval") / "document_ids_dev_test_split.json").read_text())
    official = set(split["test"]["meetingbank"])
    for case in cases:
        doc_id, topic, model = case.id.split(":", 2)[2].split("|")
        group = (rows[(rows.doc_id == doc_id) & (rows.topic == topic) & (rows.model_name == model)]
                 .sort_values("sent_idx"))
        assert [case.sentence_text(s) for s in case.sentences] == group["summ_sent"].tolist()
        assert [s.unsupported for s in case.sentences] == (group["sent_label"] == "no").tolist()
        assert case.answer == " ".join(group["summ_sent"])
        assert case.question == topic and case.context.startswith("Speaker")
        assert doc_id in official and case.source_id == f"tofueval:{doc_id}"


def test_type_mapping():
    assert sentence_type("Extrinsic Information") == "baseless"
    assert sentence_type("Contradiction, Extrinsic Information") == "conflict"
    assert sentence_type("Mis-Referencing") is None
