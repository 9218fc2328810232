"""A committed feature set cut to its first answers, as a `--limit` run (or one stopped early) leaves it."""

import shutil
from pathlib import Path

from groundsense_eval.caches.extract import FeatureSet
from groundsense_eval.caches.store import write_table


def first_answers(whole: FeatureSet, root: Path, answers: int) -> Path:
    """A copy of ``whole`` under ``root`` (its config and lexical signals, and the rows of its first
    ``answers`` answers by case id) in the cache layout; its folder."""
    assert whole.folder is not None, "a cached set"
    folder = root / whole.benchmark / whole.key
    shutil.copytree(whole.folder, folder, ignore=shutil.ignore_patterns("part-*.parquet", "planned.parquet"))
    kept = sorted(whole.rows["case_id"].unique())[:answers]
    write_table(folder / "part-00000.parquet", whole.rows[whole.rows["case_id"].isin(kept)])
    return folder
