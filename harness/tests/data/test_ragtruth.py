import json

import pytest

from groundsense_eval.data.ragtruth import TEST_SPLIT_ANSWERS, load_ragtruth, sentence_type, split_passages

pytestmark = pytest.mark.data  # reads the benchmark data


def test_streams_a_few_test_cases_with_labels_mapped_to_sentences():
    cases, dropped = load_ragtruth(splits={"test"}, limit=30)
    assert len(cases) == 30 and len(dropped) == 0
    for case in cases:
        assert case.split == "test" and case.benchmark == "ragtruth"
        assert case.id.startswith("ragtruth:") and case.source_id.startswith("ragtruth:")
        assert case.meta["quality"] in {"good", "incorrect_refusal", "truncated"}
        assert (case.passages is not None) == (case.task == "QA")
        assert all(case.sentence_text(s) == case.sentence_text(s).strip() for s in case.sentences)


def test_test_split_counts_and_labels(ragtruth_test):
    cases, dropped = ragtruth_test
    assert len(cases) == TEST_SPLIT_ANSWERS and len(dropped) == 0
    assert all(c.split == "test" for c in cases)
    qa = [c for c in cases if c.task == "QA"]
    assert all(len(c.passages) == 3 for c in qa)
    assert sum(c.meta["quality"] != "good" for c in cases) == 25  # kept, only recorded
    types = {s.type for c in cases for s in c.sentences}
    assert types == {None, "baseless", "conflict"}
    assert all((s.type is None) != s.unsupported for c in cases for s in c.sentences)


def test_sentence_labels_follow_span_overlap(tmp_path):
    answer = "The shop opens at 9. It sells fish. It has parking."
    row = {
        "id": 7, "split": "test", "source_id": 3, "task_type": "Summary", "model": "m",
        "temperature": 0.7, "quality": "good", "query": "Summarise:", "context": "The shop opens at 9.",
        "output": answer,
        "hallucination_labels": json.dumps([
            {"start": 21, "end": 35, "text": "It sells fish.", "label_type": "Evident Baseless Info"},
            {"start": 24, "end": 29, "text": "sells", "label_type": "Subtle Conflict"},
            {"start": 43, "end": 50, "text": "parking", "label_type": "Subtle Baseless Info"},
        ]),
    }
    path = tmp_path / "rt.jsonl"
    path.write_text(json.dumps(row) + "\n")
    [case], dropped = load_ragtruth(path)
    assert len(dropped) == 0
    assert [(case.sentence_text(s), s.unsupported, s.type) for s in case.sentences] == [
        ("The shop opens at 9.", False, None),
        ("It sells fish.", True, "conflict"),
        ("It has parking.", True, "baseless"),
    ]
    assert case.context == "The shop opens at 9." and case.question == "Summarise:"


def test_drops_are_reported(tmp_path):
    base = {"split": "test", "source_id": 1, "task_type": "Summary", "query": "q", "context": "c"}
    rows = [
        {**base, "id": 1, "output": "   ", "hallucination_labels": "[]"},
        {**base, "id": 2, "output": "Fine.", "hallucination_labels": json.dumps(
            [{"start": 0, "end": 4, "text": "Nope", "label_type": "Evident Conflict"}])},
        {**base, "id": 3, "output": "Fine.", "hallucination_labels": "[]"},
    ]
    path = tmp_path / "rt.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cases, dropped = load_ragtruth(path)
    assert [c.id for c in cases] == ["ragtruth:3"]
    assert dict(dropped.entries) == {"ragtruth:1": "empty answer", "ragtruth:2": "label span text mismatch: 0:4"}


def test_original_layout_gives_the_same_cases(ragtruth_test, tmp_path):
    processed = {c.id: c for c in ragtruth_test[0]}
    first_of_task = {}
    for case in ragtruth_test[0]:
        first_of_task.setdefault(case.task, case)
    responses, sources = [], []
    for case in first_of_task.values():
        if case.task == "QA":
            info = {"question": case.question,
                    "passages": "".join(f"passage {i + 1}:{p}\n\n" for i, p in enumerate(case.passages))}
            prompt = "Answer:\n" + info["passages"]
        else:
            info = case.context
            prompt = case.question + case.context + "\noutput:"
        source_id = case.source_id.split(":")[1]
        sources.append({"source_id": source_id, "task_type": case.task, "source": "x", "source_info": info,
                        "prompt": prompt})
        labels = [{"start": s.start, "end": s.end, "text": case.sentence_text(s),
                   "label_type": "Evident Conflict" if s.type == "conflict" else "Evident Baseless Info"}
                  for s in case.sentences if s.unsupported]
        responses.append({"id": case.id.split(":")[1], "source_id": source_id, "model": case.meta["model"],
                          "temperature": 0.7, "labels": labels, "split": case.split,
                          "quality": case.meta["quality"], "response": case.answer})
    (tmp_path / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses))
    (tmp_path / "source_info.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sources))
    loaded, dropped = load_ragtruth(tmp_path)
    assert len(loaded) == 3 and len(dropped) == 0
    for case in loaded:
        original = processed[case.id]
        assert (case.answer, case.sentences, case.passages, case.context, case.source_id, case.task) == (
            original.answer, original.sentences, original.passages, original.context, original.source_id, original.task)
        # the original layout has no query field: the instruction is cut from the prompt
        assert case.question.strip() == original.question.strip()


def test_passage_splitting_and_type_precedence():
    assert split_passages("passage 1:A a.\n\npassage 2:B\n \nC\n\n") == ["A a.", "B", "C"]
    assert sentence_type(["Evident Baseless Info", "Subtle Conflict"]) == "conflict"
    assert sentence_type(["Subtle Baseless Info"]) == "baseless"
    assert sentence_type([]) is None
