"""`--split-cache` is the whole RAGTruth test split: a cache of part of it is refused, not reported
under the whole split's name (its partitions, and so its figures, would be another split's)."""

import shutil
from pathlib import Path

import pytest

from groundsense_eval.caches.extract import load_cache
from groundsense_eval.caches.store import record_plan, write_table
from groundsense_eval.data.ragtruth import TEST_SPLIT_ANSWERS

ROOT = Path(__file__).resolve().parents[3]
SPLIT = ROOT / "results" / "split-features"


def split_part(tmp_path: Path, answers: int, plan: bool) -> Path:
    """A copy of the committed split cache holding its first ``answers`` answers: what `eval extract
    ragtruth --sample full --limit N` writes (``plan``: its recorded plan, those N answers), or an
    older run stopped early (no plan)."""
    (whole,) = load_cache(SPLIT)
    folder = tmp_path / "ragtruth" / whole.key
    shutil.copytree(whole.folder, folder, ignore=shutil.ignore_patterns("part-*.parquet"))
    kept = sorted(whole.rows["case_id"].unique())[:answers]
    write_table(folder / "part-00000.parquet", whole.rows[whole.rows["case_id"].isin(kept)])
    if plan:
        record_plan(folder, kept)
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
