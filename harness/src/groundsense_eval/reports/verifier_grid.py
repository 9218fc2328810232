"""The trained verifier's hyperparameters, chosen on dev partitions (docs/detector-selection.md, "A
trained verifier (issue #55)"): per hold-out, each setting's sentence AUC on the dev partition of
every benchmark its run trained on, their mean, and the setting the protocol's rule chooses. Only
the runs' dev scores are read (:mod:`~groundsense_eval.caches.grid_runs`): no test partition, and
nothing of the held-out benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from groundsense.calibration import interval_text

from ..caches.grid_runs import SETTINGS, GridRun, Setting
from ..caches.trained_scores import SENTENCES, TRAINING
from ..caches.verifier_scores import KEY
from ..data.training_set import HOLD_OUTS
from ..statistics.bootstrap import BootstrapResult, source_bootstrap
from .tables import markdown_table


def shown(mean: float) -> float:
    """A mean at the precision the page shows it, at which two means tie."""
    return float(f"{mean:.3f}")


def chosen(means: Mapping[Setting, float]) -> Setting:
    """The protocol's rule: the best mean wins; means equal at the page's three decimals tie, and a
    tie goes to the smaller learning rate, then to fewer epochs."""
    return min(means, key=lambda s: (-shown(means[s]), float(s.learning_rate), s.epochs))


def dev_bootstrap(runs: list[GridRun], benchmark: str, n_resamples: int, seed: int) -> BootstrapResult:
    """The AUC of each run's scores of ``benchmark``'s dev sentences, paired on the same resamples
    of sources; the runs must have scored the same sentences."""
    frames = {run.setting: sentences_of(run, benchmark) for run in runs}
    first, rows = next(iter(frames.items()))
    for setting, frame in frames.items():
        if not np.array_equal(frame[KEY].to_numpy(), rows[KEY].to_numpy()):
            raise ValueError(f"the {runs[0].hold_out}-held-out runs at {first.label()} and {setting.label()} scored "
                             f"other {benchmark} dev sentences: score them from the same bundle")
    scores = {setting.label(): frame["score"].to_numpy(float) for setting, frame in frames.items()}
    return source_bootstrap(rows["label"].to_numpy(), scores, rows["source_id"].to_numpy(), n_resamples, seed)


def sentences_of(run: GridRun, benchmark: str) -> pd.DataFrame:
    assert run.scores is not None
    rows = run.scores[run.scores["benchmark"] == benchmark]
    return rows.sort_values(KEY, kind="stable").reset_index(drop=True)


def grid_table(runs: list[GridRun], n_resamples: int, seed: int) -> tuple[pd.DataFrame, dict[Setting, float]]:
    """One row per setting: its dev AUC on each trained-on benchmark with its interval, and their
    mean; and each scored setting's mean."""
    benchmarks = HOLD_OUTS[runs[0].hold_out]
    scored = [run for run in runs if run.scores is not None]
    boots = {b: dev_bootstrap(scored, b, n_resamples, seed) for b in benchmarks} if scored else {}
    rows, means = {}, {}
    for run in runs:
        name = run.setting.label()
        if run.scores is None:
            rows[name] = {**{f"{b} dev AUC": "—" for b in benchmarks}, "mean": "—", "run": "missing"}
            continue
        intervals = {b: boot.intervals().loc[name] for b, boot in boots.items()}
        means[run.setting] = float(np.mean([row["auc"] for row in intervals.values()]))
        rows[name] = {**{f"{b} dev AUC": interval_text(row["auc"], row["lo"], row["hi"])
                         for b, row in intervals.items()},
                      "mean": f"{means[run.setting]:.3f}", "run": f"`{run.folder.name}`"}
    return pd.DataFrame.from_dict(rows, orient="index"), means


def dev_sets(runs: list[GridRun]) -> list[str]:
    """What the scored runs read: each benchmark's dev sentences, unsupported ones and sources."""
    scored = next((run for run in runs if run.scores is not None), None)
    if scored is None:
        return []
    lines = []
    for benchmark in HOLD_OUTS[scored.hold_out]:
        rows = sentences_of(scored, benchmark)
        lines.append(f"{benchmark}'s dev partition: {len(rows):,} sentences ({int(rows['label'].sum()):,} "
                     f"unsupported) of {rows['source_id'].nunique():,} sources.")
    return ["", " ".join(lines)]


def choice_lines(hold_out: str, means: Mapping[Setting, float], scores: Path) -> list[str]:
    """The chosen setting and the next step, or why none is chosen yet."""
    if len(means) < len(SETTINGS):
        return [f"Not chosen yet: {len(SETTINGS) - len(means)} of the {len(SETTINGS)} settings have no dev scores "
                "(see what is missing)."]
    best = chosen(means)
    lr, epochs = best.learning_rate, best.epochs
    return [f"**Chosen: {best.label()}** (mean {means[best]:.3f}), run `{best.run(hold_out)}`. Next, on a GPU: "
            f"`bash scripts/gpu_verifier.sh evaluate {hold_out} {lr} {epochs}` scores it on the test partitions; "
            f"copy what it returns (`$OUT/{best.run(hold_out)}/`: manifest.json, {SENTENCES} and {TRAINING}) into "
            f"`{scores / hold_out}/`, which `eval verifier-selection` reads (docs/results/selection-V.md)."]


def verifier_grid_report(grid: Mapping[str, list[GridRun]], root: Path, scores: Path, command: str,
                         n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown page: ``grid``, the runs by hold-out (:func:`~..caches.grid_runs.load_grid` of
    ``root``); ``scores``, the hold-outs' folders the chosen runs go to."""
    lines = ["# Detector selection: the trained verifier's hyperparameters, on dev partitions (candidate V-135M)",
             "", f"`{command}`", "",
             "Protocol: docs/detector-selection.md (\"A trained verifier (issue #55)\", \"Hyperparameters, on dev "
             "partitions only\"). Each setting of the grid (learning rate 1e-4 or 3e-4, one or two epochs) is "
             "trained with one benchmark held out, on the data of the others, and scored by sentence AUC on the dev "
             "partitions (the seeded source-level 60%) of the benchmarks it trained on. No test partition is read, "
             "and nothing of the held-out benchmark. AUC with 95% source-level bootstrap intervals "
             f"({n_resamples:,} resamples, seed {seed}), a hold-out's settings paired on the same resamples.", "",
             "The rule: the setting with the best mean of its dev AUCs wins. Two means tie when they are equal to "
             "the three decimals shown; a tie goes to the smaller learning rate, then to fewer epochs. A hold-out's "
             "setting is chosen once all four of its runs are scored.", "",
             f"Each run's folder, `{root}/v135m-HOLD_OUT-lrLR-eEPOCHS/`, holds its `manifest.json` (`eval "
             "train-verifier`) and `dev-scores.parquet` (`eval score-bundle --partition dev`), as "
             "`scripts/gpu_verifier.sh train` and `score` return them under `$OUT`.", ""]
    missing = []
    for hold_out, runs in grid.items():
        table, means = grid_table(runs, n_resamples, seed)
        lines += [f"## {hold_out} held out (trained on {', '.join(HOLD_OUTS[hold_out])})", *dev_sets(runs), "",
                  markdown_table(table), "", *choice_lines(hold_out, means, scores), ""]
        missing += [run.missing() for run in runs if run.scores is None]
    if missing:
        lines += ["## What is missing", "", f"{len(missing)} of the {sum(map(len, grid.values()))} runs:", "",
                  *(f"- {line}" for line in missing), "",
                  "CONTRIBUTING.md, \"On a lent GPU machine\", gives the calls and what each carries.", ""]
    return "\n".join(lines)
