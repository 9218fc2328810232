"""The training set of a trained verifier (issue #55): no source of a test split, capped per source,
balanced per task, and the same rows for the same seed."""

import pandas as pd

from groundsense_eval.data.cases import Case, LabelledSentence
from groundsense_eval.data.training_set import COLUMNS, balanced, training_cases


def test_the_training_rows_are_capped_per_source_balanced_per_task_and_seeded():
    rows = pd.DataFrame([{"benchmark": "b", "task": task, "source_id": f"{task}{i % 3}", "case_id": f"{task}{i}",
                          "sentence_index": i, "sentence": f"s{i}", "label": int(i % 4 == 0), "recipe": "",
                          "detail": "", "replaced": "", "by": ""} for task in ("QA", "Summary") for i in range(40)],
                        columns=COLUMNS)
    kept = balanced(rows, seed=0, per_source=5)
    assert kept.groupby(["source_id", "label"]).size().max() <= 5
    per_task = kept.groupby(["task", "label"]).size().unstack()
    assert (per_task[0] == per_task[1]).all() and (per_task[1] > 0).all()
    assert kept.equals(balanced(rows, seed=0, per_source=5)) and not kept.equals(balanced(rows, seed=1, per_source=5))


def test_training_cases_leave_out_every_source_with_an_answer_in_a_test_split():
    def case(id_, source, split):
        return Case(id_, source, "QA", "q", "ctx", None, "An answer.", [LabelledSentence(0, 10, False)], "b", split)

    cases = [case("a", "s1", "train"), case("b", "s1", "test"), case("c", "s2", "validation"), case("d", "s3", "test")]
    assert [c.id for c in training_cases(cases, ("train", "validation"))] == ["c"]
