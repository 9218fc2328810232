"""The trained verifier's cached scores, by the benchmark its model holds out (docs/detector-selection.md,
"A trained verifier"), as `eval verifier-selection` reads them.

``<root>/<hold-out>/`` holds the run's ``manifest.json`` (`eval train-verifier`), and the scores its
model gave: ``scores.parquet`` (`eval score-bundle --benchmark …`: P(unsupported) of the evaluation
sentences of the benchmarks it is tested on, :data:`SCORED`) and ``training-scores.parquet`` (`eval
score-bundle --training HOLD_OUT`: of the rows it trained on, the fused partner's reference sample).
The sentence scores may come from a verifier cache instead (`eval verify --verifier trained:FILE`,
keyed by the file's digest), with the file copied into the folder as ``verifier.safetensors``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .verifier_scores import KEY, load_verifier_cache, scored

MANIFEST, SENTENCES, TRAINING, ARTEFACT = "manifest.json", "scores.parquet", "training-scores.parquet", \
    "verifier.safetensors"
# Per hold-out: the benchmarks its model is tested on (RAGTruth in-domain) and the partitions it
# scores there (TofuEval's dev: the balanced accuracy's threshold).
SCORED = {"tofueval": (("tofueval", "ragtruth"), ("dev", "test")), "ragbench": (("ragbench",), ("test",))}
MODEL_OF = {benchmark: hold_out for hold_out, (benchmarks, _) in SCORED.items() for benchmark in benchmarks}


def artefact_digest(path: str | Path) -> str:
    """The digest a trained verifier's file goes by in its cache key (``params["sha256"]``)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@dataclass
class ModelScores:
    """What the folder of the model holding out ``hold_out`` holds: its run's ``manifest``, its
    ``sentences``' scores (``benchmark``, ``case_id``, ``sentence_index``, ``score``; ``source``
    says where they were read) and its ``training`` rows' scores; None where absent."""

    hold_out: str
    folder: Path
    manifest: dict | None
    sentences: pd.DataFrame | None
    source: str | None
    training: np.ndarray | None

    def benchmarks(self) -> set[str]:
        """The benchmarks its sentence scores cover."""
        return set() if self.sentences is None else set(self.sentences["benchmark"])

    def scores_of(self, benchmark: str) -> pd.DataFrame:
        """Its sentence scores of ``benchmark`` (none: no row)."""
        if self.sentences is None:
            return pd.DataFrame(columns=["benchmark", *KEY, "score"])
        return self.sentences[self.sentences["benchmark"] == benchmark]

    def missing(self) -> list[str]:
        """A line for each file that is absent, with the command that makes it."""
        benchmarks, partitions = SCORED[self.hold_out]
        run = f"runs/v135m-{self.hold_out}"
        lines = []
        if self.manifest is None:
            lines.append(f"`{self.folder / MANIFEST}`, the run's manifest: train with `groundsense eval train-verifier "
                         f"-o {run} --hold-out {self.hold_out} --lr LR --epochs EPOCHS` at the setting chosen on "
                         f"dev partitions (on a GPU: `scripts/gpu_verifier.sh train`), then copy it here: "
                         f"`eval verifier-grid` (docs/results/selection-V-grid.md) names the chosen run")
        if self.sentences is None:
            lines.append(f"`{self.folder / SENTENCES}`: `groundsense eval score-bundle runs/bundle --verifier "
                         f"{run}/{ARTEFACT} " + " ".join(f"--benchmark {b}" for b in benchmarks) + " "
                         + " ".join(f"--partition {p}" for p in partitions) + f" -o {self.folder / SENTENCES}` "
                         f"(or `eval verify BENCHMARK --sample full --verifier trained:{run}/{ARTEFACT}` on each, "
                         f"that file copied to `{self.folder / ARTEFACT}`, and `--verifiers`)")
        elif not set(benchmarks) <= self.benchmarks():
            lines.append(f"{self.source} holds no score of {', '.join(sorted(set(benchmarks) - self.benchmarks()))}: "
                         "score it as above")
        if self.training is None:
            lines.append(f"`{self.folder / TRAINING}`, the fused partner's reference: `groundsense eval score-bundle "
                         f"runs/bundle --verifier {run}/{ARTEFACT} --training {self.hold_out} -o "
                         f"{self.folder / TRAINING}`")
        return lines


def load_model_scores(root: Path, hold_out: str, verifiers: Path | None = None) -> ModelScores:
    """The scores of the model holding out ``hold_out`` under ``root``; its sentence scores from
    ``verifiers`` (a verifier cache) where its folder has none of its own."""
    folder = root / hold_out
    manifest = json.loads((folder / MANIFEST).read_text()) if (folder / MANIFEST).exists() else None
    if manifest is not None and manifest["identity"]["hold_out"] != hold_out:
        raise ValueError(f"{folder / MANIFEST} is a run holding out {manifest['identity']['hold_out']}, not {hold_out}")
    sentences, source = None, None
    if (folder / SENTENCES).exists():
        sentences, source = pd.read_parquet(folder / SENTENCES)[["benchmark", *KEY, "score"]], str(folder / SENTENCES)
    elif verifiers is not None and (folder / ARTEFACT).exists():
        sentences, source = cached_scores(verifiers, folder / ARTEFACT, SCORED[hold_out][0])
    training = pd.read_parquet(folder / TRAINING)["score"].to_numpy(float) if (folder / TRAINING).exists() else None
    return ModelScores(hold_out, folder, manifest, sentences, source, training)


def cached_scores(verifiers: Path, artefact: Path, benchmarks: tuple[str, ...]
                  ) -> tuple[pd.DataFrame | None, str | None]:
    """The scores `eval verify --verifier trained:FILE` cached for ``artefact`` on ``benchmarks``
    (the caches whose configuration names its digest), and their folders; (None, None) without any."""
    digest = artefact_digest(artefact)
    frames, keys = [], []
    for benchmark in benchmarks:
        for key, rows in load_verifier_cache(verifiers, benchmark).items():
            config = rows.attrs["config"]
            if config["verifier"] == "trained" and config["params"].get("sha256") == digest:
                frames.append(scored(rows)[[*KEY, "score"]].assign(benchmark=benchmark))
                keys.append(f"{verifiers}/{benchmark}/{key}")
    if not frames:
        return None, None
    return pd.concat(frames, ignore_index=True)[["benchmark", *KEY, "score"]], ", ".join(keys)
