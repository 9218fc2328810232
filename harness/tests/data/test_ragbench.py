import pandas as pd
import pytest
from helpers.cli import run

from groundsense_eval.data.locations import benchmark_path
from groundsense_eval.data.ragbench import load_ragbench, source_groups

pytestmark = pytest.mark.data  # reads the benchmark data


def test_offsets_round_trip_up_to_whitespace():
    cases, dropped = load_ragbench(subsets={"msmarco", "covidqa"}, splits={"test"})
    assert len(cases) + len(dropped) == 423 + 246
    rows = {
        (subset, row["id"]): row
        for subset in ("covidqa", "msmarco")
        for _, row in pd.read_parquet(benchmark_path("ragbench") / subset / "test-00000-of-00001.parquet").iterrows()
    }
    exact = 0
    for case in cases:
        row = rows[(case.task, case.id.split(":")[3])]
        labelled = [str(text) for _, text in row["response_sentences"]]
        located = [case.sentence_text(s) for s in case.sentences]
        assert [t.split() for t in located] == [t.split() for t in labelled]
        exact += sum(a == b for a, b in zip(located, labelled))
        bad = {k.rstrip(".") for k in row["unsupported_response_sentence_keys"]}
        assert [s.unsupported for s in case.sentences] == [k in bad for k, _ in row["response_sentences"]]
        assert case.passages == list(row["documents"]) and case.context is None
    assert exact > 0.9 * sum(len(c.sentences) for c in cases)


def test_all_subsets_load_with_few_reported_drops():
    cases, dropped = load_ragbench()
    assert {c.task for c in cases} == {"covidqa", "delucionqa", "emanual", "expertqa", "hagrid", "hotpotqa", "msmarco"}
    assert 0 < len(dropped) < 20
    assert set(dropped.reasons()) <= {"sentence not found in the response", "unsupported key not among the sentences"}
    assert len({c.id for c in cases}) == len(cases)
    hagrid = [c for c in cases if c.task == "hagrid"]
    assert len({c.source_id for c in hagrid}) < len({c.question for c in hagrid}) + 1 < len(hagrid)


def test_source_groups_link_shared_questions_and_documents_transitively():
    questions = ["q1", "q2", "q1", "q3", "q4"]
    documents = [("a",), ("b",), ("c",), ("b",), ("d",)]
    # rows 0 and 2 share a question; rows 1 and 3 share documents; row 4 is alone
    assert source_groups(questions, documents) == [0, 1, 0, 1, 4]
    assert source_groups(["x", "y", "z"], [("a",), ("b",), ("a",)]) == [0, 1, 0]
    assert source_groups(["x", "y", "y"], [("a",), ("b",), ("a",)]) == [0, 0, 0]


def test_a_subset_not_in_the_data_is_an_input_error_listing_those_there():
    """`--subsets covidqa,nosuch` loaded covidqa alone, without a word."""
    result = run("eval", "extract", "ragbench", "--subsets", "covidqa,nosuch,pubmedqa", "--limit", "1")
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert f"no RAGBench subset nosuch, pubmedqa in {benchmark_path('ragbench')}: check --subsets" in message
    assert "the subsets there: covidqa, delucionqa, emanual, expertqa, hagrid, hotpotqa, msmarco" in message


def test_a_split_no_chosen_subset_has_is_an_input_error_listing_those_there():
    """`--subsets covidqa --split train` said only 'no cases selected' (the release has no train file there)."""
    result = run("eval", "extract", "ragbench", "--subsets", "covidqa", "--split", "train", "--limit", "1")
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert (f"no RAGBench train split in {benchmark_path('ragbench')} (subsets covidqa): check --split; "
            "the splits there: test, validation") in message
