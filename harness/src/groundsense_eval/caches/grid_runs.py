"""The trained verifier's hyperparameter grid (docs/detector-selection.md, "A trained verifier":
learning rate × epochs, for each hold-out) and its runs' cached dev-partition scores, as `eval
verifier-grid` reads them.

``<root>/v135m-<hold-out>-lr<lr>-e<epochs>/``, the folder `scripts/gpu_verifier.sh train` and
``score`` fill under ``$OUT``, holds the run's ``manifest.json`` (`eval train-verifier`) and
``dev-scores.parquet`` (`eval score-bundle --benchmark … --partition dev`: P(unsupported) of the dev
sentences of the benchmarks the run trained on, with their labels and sources). A run whose
manifest is of another hold-out or setting, or whose scores hold another partition or the held-out
benchmark, is refused: the held-out benchmark's partitions inform nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..data.training_set import HOLD_OUTS
from .trained_scores import ARTEFACT, MANIFEST
from .verifier_scores import KEY

DEV_SCORES = "dev-scores.parquet"
COLUMNS = ["benchmark", *KEY, "source_id", "label", "score"]


@dataclass(frozen=True)
class Setting:
    learning_rate: str  # as the commands take it (1e-4), which names the run's folder
    epochs: int

    def label(self) -> str:
        return f"lr {self.learning_rate}, {self.epochs} epoch{'s' if self.epochs > 1 else ''}"

    def run(self, hold_out: str) -> str:
        """The run's name, as scripts/gpu_verifier.sh names it."""
        return f"v135m-{hold_out}-lr{self.learning_rate}-e{self.epochs}"


SETTINGS = tuple(Setting(lr, epochs) for lr in ("1e-4", "3e-4") for epochs in (1, 2))


@dataclass
class GridRun:
    """One setting's run for ``hold_out`` under ``folder``: its dev ``scores`` (:data:`COLUMNS`),
    None until its run has finished and scored every benchmark it trained on."""

    hold_out: str
    setting: Setting
    folder: Path
    scores: pd.DataFrame | None
    absent: list[str]  # what the folder lacks, for the page

    def missing(self) -> str:
        """What the run lacks and the commands that make it (on a GPU, and with the plain CLI)."""
        hold_out, lr, epochs = self.hold_out, self.setting.learning_rate, self.setting.epochs
        name = self.setting.run(hold_out)
        benchmarks = " ".join(f"--benchmark {b}" for b in HOLD_OUTS[hold_out])
        return (f"`{self.folder}/` ({self.setting.label()}, {hold_out} held out) lacks {', '.join(self.absent)}. "
                f"On a GPU: `bash scripts/gpu_verifier.sh train {hold_out} {lr} {epochs} 480` until trained, then "
                f"`bash scripts/gpu_verifier.sh score {hold_out} {lr} {epochs}`, and copy `$OUT/{name}/{MANIFEST}` "
                f"and `{DEV_SCORES}` here. Or: `groundsense eval train-verifier -o runs/{name} --hold-out {hold_out} "
                f"--lr {lr} --epochs {epochs}`, then `groundsense eval score-bundle runs/bundle --verifier "
                f"runs/{name}/{ARTEFACT} {benchmarks} --partition dev -o {self.folder / DEV_SCORES}`, and copy "
                f"`runs/{name}/{MANIFEST}` here.")


def load_grid_run(root: Path, hold_out: str, setting: Setting) -> GridRun:
    """The run of ``setting`` holding out ``hold_out`` under ``root``; ValueError for a run that is
    not that one, or whose scores are not of its trained-on benchmarks' dev partitions."""
    folder = root / setting.run(hold_out)
    absent = []
    if (folder / MANIFEST).exists():
        if not checked_manifest(folder / MANIFEST, hold_out, setting).get("finished"):
            absent.append("a finished training (its manifest says it has not finished)")
    else:
        absent.append(f"`{MANIFEST}`")
    scores = None
    if (folder / DEV_SCORES).exists():
        scores = dev_scores(folder / DEV_SCORES, hold_out)
        unscored = [b for b in HOLD_OUTS[hold_out] if b not in set(scores["benchmark"])]
        if unscored:
            absent.append(f"scores of {', '.join(unscored)} in `{DEV_SCORES}`")
    else:
        absent.append(f"`{DEV_SCORES}`")
    return GridRun(hold_out, setting, folder, None if absent else scores, absent)


def checked_manifest(path: Path, hold_out: str, setting: Setting) -> dict[str, Any]:
    """The manifest in ``path``, refused if it is of another hold-out or setting, or of a draw of the
    rows (a learning-curve run)."""
    manifest = json.loads(path.read_text())
    identity = manifest["identity"]
    made = identity["hyperparameters"]
    if identity["hold_out"] != hold_out:
        raise ValueError(f"{path} is a run holding out {identity['hold_out']}, not {hold_out}")
    if (made["learning_rate"], made["epochs"]) != (float(setting.learning_rate), setting.epochs):
        raise ValueError(f"{path} is a run at lr {made['learning_rate']:g}, {made['epochs']} epochs, not "
                         f"{setting.label()}")
    if identity["limit"] is not None:
        raise ValueError(f"{path} trained on a draw of {identity['limit']} rows, not on all of them")
    return manifest


def dev_scores(path: Path, hold_out: str) -> pd.DataFrame:
    """The scores in ``path``, refused unless every row is a dev sentence of a benchmark the run
    holding out ``hold_out`` trained on."""
    scores = pd.read_parquet(path)
    others = set(scores["partition"]) - {"dev"}
    if others:
        raise ValueError(f"{path} holds {', '.join(sorted(others))} partition rows: a grid run is "
                         "scored on dev partitions only (`eval score-bundle … --partition dev`)")
    unseen = set(scores["benchmark"]) - set(HOLD_OUTS[hold_out])
    if unseen:
        raise ValueError(f"{path} holds scores of {', '.join(sorted(unseen))}, which a run holding out {hold_out} "
                         f"does not train on: only {', '.join(HOLD_OUTS[hold_out])} inform its setting")
    return scores[COLUMNS]


def load_grid(root: Path) -> dict[str, list[GridRun]]:
    """Every run of the grid under ``root``, by hold-out, in :data:`SETTINGS`' order."""
    return {hold_out: [load_grid_run(root, hold_out, setting) for setting in SETTINGS] for hold_out in HOLD_OUTS}
