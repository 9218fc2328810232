"""`--split-cache` is the whole RAGTruth test split: a cache of part of it is refused, not reported
under the whole split's name (its partitions, and so its figures, would be another split's)."""

from pathlib import Path

import pandas as pd
import pytest
from helpers.cut_cache import first_answers

from groundsense_eval.caches.extract import load_cache
from groundsense_eval.caches.store import record_plan
from groundsense_eval.data.ragtruth import TEST_SPLIT_ANSWERS

ROOT = Path(__file__).resolve().parents[3]
SPLIT = ROOT / "results" / "split-features"


def split_part(tmp_path: Path, answers: int, plan: bool) -> Path:
    """The committed split cache cut to its first ``answers`` answers: what `eval extract ragtruth
    --sample full --limit N` writes (``plan``: its recorded plan, those N answers), or an older run
    stopped early (no plan)."""
    (whole,) = load_cache(SPLIT)
    folder = first_answers(whole, tmp_path, answers)
    if plan:
        record_plan(folder, pd.read_parquet(folder / "part-00000.parquet", columns=["case_id"])["case_id"])
    return tmp_path


@pytest.mark.parametrize("plan", [True, False], ids=["limit run", "stopped run"])
@pytest.mark.parametrize("command", [["default-score"], ["selection"]])
def test_a_split_cache_of_part_of_the_split_is_refused_naming_what_it_holds(command, plan, tmp_path, monkeypatch):
    from helpers.cli import run

    monkeypatch.chdir(ROOT)
    split = split_part(tmp_path, 40, plan)
    refused = run("eval", *command, "--cache", "results/features", "--split-cache", str(split), "--resamples", "100")
    assert refused.exit_code == 2, refused.output
    assert f"--split-cache {split} holds 40 of the {TEST_SPLIT_ANSWERS:,} answers of RAGTruth's test split" in (
        refused.output)
    assert f"groundsense eval extract ragtruth --sample full --scorer smollm2-135m-instruct --cache {split}" in (
        refused.output)


def test_selection_refuses_a_split_cache_without_ragtruth(tmp_path, monkeypatch):
    from helpers.cli import run

    monkeypatch.chdir(ROOT)
    refused = run("eval", "selection", "--cache", "results/features", "--split-cache", str(tmp_path))
    assert refused.exit_code == 2
    assert f"no finished smollm2-135m-instruct RAGTruth feature set under {tmp_path} (--split-cache)" in refused.output


@pytest.mark.parametrize("command", [["operating"], ["operating", "--score", "sensitivity"], ["adaptation"],
                                     ["learning-curve"]])
def test_a_held_out_cache_of_part_of_the_split_given_first_is_refused_not_reported(command, tmp_path, monkeypatch):
    """`eval operating`, `adaptation` and `learning-curve` publish the whole split's figures: a `--limit`
    run's part of it, given before the whole split's cache, is refused rather than serving RAGTruth."""
    from helpers.cli import run

    monkeypatch.chdir(ROOT)
    part = split_part(tmp_path, 40, plan=True)
    resamples = [] if command == ["learning-curve"] else ["--resamples", "100"]
    refused = run("eval", *command, "--cache", str(part), "--cache", str(SPLIT), "--cache", "results/features",
                  *resamples)
    assert refused.exit_code == 2, refused.output
    assert f"--cache {part} holds 40 of the {TEST_SPLIT_ANSWERS:,} answers of RAGTruth's test split" in (
        refused.output)
