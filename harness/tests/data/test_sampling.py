import pytest

from groundsense_eval.data.ragtruth import load_ragtruth
from groundsense_eval.data.sampling import even_allocation, sample_ragtruth

pytestmark = pytest.mark.data  # reads the benchmark data


def test_even_allocation_fills_small_strata_first():
    assert (even_allocation(300, {"QA": 160, "Summary": 204, "Data2txt": 579})
            == {"QA": 100, "Summary": 100, "Data2txt": 100})
    assert even_allocation(300, {"a": 50, "b": 1000, "c": 1000}) == {"a": 50, "b": 125, "c": 125}
    assert even_allocation(7, {"a": 10, "b": 10}) == {"a": 4, "b": 3}
    with pytest.raises(ValueError):
        even_allocation(5, {"a": 2, "b": 2})


def test_paper_sample_is_balanced_and_seeded(ragtruth_test):
    cases, _ = ragtruth_test
    sample = sample_ragtruth(cases, seed=0)
    assert len(sample) == 600 and len({c.id for c in sample}) == 600
    assert all(c.split == "test" for c in sample)
    for task in ("QA", "Summary", "Data2txt"):
        in_task = [c for c in sample if c.task == task]
        assert sum(c.unsupported for c in in_task) == 100
        assert sum(not c.unsupported for c in in_task) == 100
    assert [c.id for c in sample_ragtruth(cases, seed=0)] == [c.id for c in sample]
    assert [c.id for c in sample_ragtruth(cases, seed=1)] != [c.id for c in sample]


def test_whole_split_and_train_sample(ragtruth_test):
    cases, _ = ragtruth_test
    assert len(sample_ragtruth(cases, n_unsupported=None, n_supported=None)) == 2700
    assert sample_ragtruth(cases, split="train", n_unsupported=None, n_supported=None) == []
    train_cases, _ = load_ragtruth(splits={"train"}, limit=400)
    train = sample_ragtruth(train_cases, split="train", n_unsupported=30, n_supported=60, seed=3)
    assert all(c.split == "train" for c in train)
    assert sum(c.unsupported for c in train) == 30 and len(train) == 90
