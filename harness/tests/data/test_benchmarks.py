"""Selecting a benchmark's cases: a split it does not have and an empty sample are refused, saying what it has."""

from helpers.cli import run


def test_a_split_the_benchmark_lacks_is_refused_naming_its_splits(tmp_path):
    """`eval extract ragtruth --split dev` said only that the paper sample found 0 answers."""
    for benchmark, split, splits in (("RAGTruth", "dev", "train, test"), ("TofuEval", "train", "dev, test")):
        result = run("eval", "extract", benchmark.lower(), "--split", split, "--data", str(tmp_path))
        assert result.exit_code == 2, result.output
        assert f"{benchmark} has no {split} split (its splits: {splits}): check --split" in result.output


def test_an_empty_sample_is_refused_by_the_option(tmp_path):
    result = run("eval", "extract", "ragtruth", "--sample", "0", "--data", str(tmp_path))
    assert result.exit_code == 2 and "Invalid value for '--sample'" in result.output and "N >= 1" in result.output
