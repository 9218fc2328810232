"""Training a :class:`~.verifier.TrainedVerifier` (docs/detector-selection.md, "A trained verifier"):
binary cross-entropy, AdamW (weight decay 0.01) with the learning rate decaying linearly to 0, batches
of 16 (in micro-batches whose gradients add up to the batch's), seed 0, each epoch in its own seeded
order.

Resumable: every ``checkpoint_every`` steps, and where a run stops, ``checkpoint.pt`` in the output
folder holds the adapter and head, the optimiser, the schedule, the step, the losses and the RNG
state, and training again into that folder continues from it as if it had not stopped. The folder's
``manifest.json`` (:func:`run_manifest`) says what is trained on and how; a folder holding another
run's manifest is refused (:func:`begin`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from groundsense.errors import InputError
from groundsense.inputs import Tokenizer
from groundsense.progress import track

from ..data.benchmarks import load_benchmark
from ..data.cases import Case
from ..data.training_set import HOLD_OUTS, SPLITS, row_evidence
from .verifier import Ids, TrainedVerifier, VerifierModel, padded
from .verifier_inputs import chunk_texts, input_ids

CHECKPOINT, MANIFEST, ARTEFACT = "checkpoint.pt", "manifest.json", "verifier.safetensors"


@dataclass(frozen=True)
class Hyperparameters:
    learning_rate: float
    epochs: int
    batch_size: int = 16
    weight_decay: float = 0.01
    seed: int = 0


def training_rows(data: pd.DataFrame, hold_out: str, limit: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The rows of the benchmarks a run that holds out ``hold_out`` learns from (:data:`HOLD_OUTS`);
    with ``limit``, the first ``limit`` of one seeded permutation of them (so a smaller draw lies
    inside a larger one), in the data's order."""
    kept = data[data["benchmark"].isin(HOLD_OUTS[hold_out])]
    if limit is not None and limit < len(kept):
        kept = kept.iloc[np.sort(np.random.default_rng(seed).permutation(len(kept))[:limit])]
    return kept


def training_cases(rows: pd.DataFrame, data: Path | None = None) -> dict[str, Case]:
    """The answers ``rows`` name, by id, from the splits the training data reads."""
    wanted = set(rows["case_id"])
    cases: dict[str, Case] = {}
    for benchmark in sorted(set(rows["benchmark"])):
        loaded, _ = load_benchmark(benchmark, SPLITS[benchmark], data=data)
        cases |= {case.id: case for case in loaded if case.id in wanted}
    missing = wanted - set(cases)
    if missing:
        raise InputError(f"{len(missing)} answers of the training data are not in the benchmark data "
                         f"(e.g. {min(missing)}): is it the data the training set was built from?")
    return cases


def row_inputs(rows: pd.DataFrame, cases: Mapping[str, Case], tokenizer: Tokenizer) -> list[list[int]]:
    """Each row's input ids (:func:`.verifier_inputs.input_ids`) over its evidence
    (:func:`~groundsense_eval.data.training_set.row_evidence`), chunked as the detector chunks it."""

    @lru_cache(maxsize=64)  # an answer's rows come together: its evidence and its delete rows' are chunked once
    def chunks_of(evidence: tuple[str, ...], passages: bool) -> list[str]:
        return chunk_texts(tokenizer, None if passages else evidence[0], evidence if passages else None)

    out = []
    for _, row in rows.iterrows():
        case = cases[row["case_id"]]
        chunks = chunks_of(row_evidence(case, row), case.passages is not None)
        out.append(input_ids(tokenizer, chunks, row["sentence"]))
    return out


def total_steps(n_rows: int, settings: Hyperparameters) -> int:
    return math.ceil(n_rows / settings.batch_size) * settings.epochs


def epoch_order(n_rows: int, epoch: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n_rows)


def train(verifier: TrainedVerifier, inputs: Sequence[Ids], labels: Sequence[int] | np.ndarray,
          settings: Hyperparameters, folder: Path, micro_batch: int = 4, checkpoint_every: int = 50,
          precision: str = "fp32", steps: int | None = None, progress: bool = True,
          say: Callable[[str], None] = lambda _: None) -> list[float]:
    """Train ``verifier`` on ``inputs`` (1: unsupported), from ``folder``'s checkpoint where there is
    one, for at most ``steps`` steps this time (all that are left: None); each step's loss so far.
    ``precision`` bf16 runs the passes under bf16 autocast (the weights and optimiser stay fp32)."""
    model, device = verifier.model, verifier.scorer.device
    total = total_steps(len(inputs), settings)
    per_epoch = total // settings.epochs
    optimizer = torch.optim.AdamW(model.trained_parameters(), lr=settings.learning_rate,
                                  weight_decay=settings.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda done: max(0.0, 1 - done / total))
    start, losses = resume(folder / CHECKPOINT, model, optimizer, schedule, total)
    if start == 0:
        torch.manual_seed(settings.seed)  # LoRA's dropout draws
    stop = total if steps is None else min(total, start + steps)
    targets = torch.tensor(np.asarray(labels), dtype=torch.float32)
    model.train()
    for step in track(range(start, stop), f"Training the verifier (steps {start + 1:,}-{stop:,} of {total:,})",
                      enabled=progress):
        epoch, index = divmod(step, per_epoch)
        batch = epoch_order(len(inputs), epoch, settings.seed)[index * settings.batch_size:][: settings.batch_size]
        optimizer.zero_grad(set_to_none=True)
        loss = 0.0
        for part in np.array_split(batch, math.ceil(len(batch) / micro_batch)):
            ids, mask = padded([inputs[i] for i in part], verifier.pad_id, device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
                logits = model(ids, mask)
            part_loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, targets[torch.as_tensor(part)].to(device), reduction="sum") / len(batch)
            part_loss.backward()
            loss += part_loss.item()
        optimizer.step()
        schedule.step()
        losses.append(loss)
        if (step + 1) % checkpoint_every == 0 or step + 1 == stop:
            save_checkpoint(folder / CHECKPOINT, model, optimizer, schedule, step + 1, total, losses)
            say(f"step {step + 1:,} of {total:,}: loss {np.mean(losses[-checkpoint_every:]):.4f} "
                f"(mean of the last {min(checkpoint_every, len(losses))} steps); checkpoint saved")
    model.eval()
    return losses


def save_checkpoint(path: Path, model: VerifierModel, optimizer: torch.optim.Optimizer,
                    schedule: torch.optim.lr_scheduler.LRScheduler, step: int, total: int,
                    losses: list[float]) -> None:
    """Written to a temporary file, then renamed over the last one: a kill leaves one whole."""
    state = {"trained": model.trained_state(), "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
             "step": step, "total": total, "losses": losses, "rng": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    scratch = path.with_suffix(".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, scratch)
    os.replace(scratch, path)


def resume(path: Path, model: VerifierModel, optimizer: torch.optim.Optimizer,
           schedule: torch.optim.lr_scheduler.LRScheduler, total: int) -> tuple[int, list[float]]:
    """The step and losses of the checkpoint at ``path``, its state restored; (0, []) without one."""
    if not path.exists():
        return 0, []
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if saved["total"] != total:
        raise InputError(f"{path} is a run of {saved['total']:,} steps, not {total:,}: other data or settings")
    model.load_trained_state(saved["trained"])
    optimizer.load_state_dict(saved["optimizer"])
    schedule.load_state_dict(saved["schedule"])
    torch.set_rng_state(saved["rng"])
    if "cuda_rng" in saved and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(saved["cuda_rng"])
    return saved["step"], list(saved["losses"])


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def source_commit() -> str | None:
    """The commit of the checkout this code runs from (``+dirty`` with uncommitted changes to
    tracked files), or None outside one."""
    here = Path(__file__).parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                                 capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit.stdout.strip() + ("+dirty" if changed.stdout.strip() else "")


def data_identity(data_file: Path) -> dict[str, Any]:
    """The training data file's path, digest and version (from its manifest beside it)."""
    data_manifest = data_file.with_suffix(".json")
    version = json.loads(data_manifest.read_text()).get("version") if data_manifest.exists() else None
    return {"data": str(data_file), "data_sha256": file_sha256(data_file), "data_version": version}


def run_manifest(data: dict[str, Any], rows: pd.DataFrame, hold_out: str, limit: int | None,
                 settings: Hyperparameters, base: str) -> dict[str, Any]:
    """What a run trains on and how: its ``identity`` (a rerun into the same folder must match it),
    the data's first (:func:`data_identity`), and the training rows used (their positions in the
    data file)."""
    identity = {**data, "hold_out": hold_out, "trained_on": list(HOLD_OUTS[hold_out]), "limit": limit, "base": base,
                "hyperparameters": asdict(settings)}
    return {"identity": identity, "rows": len(rows), "unsupported": int(rows["label"].sum()),
            "row_positions": [int(i) for i in rows.index]}


def begin(folder: Path, manifest: dict[str, Any]) -> None:
    """Write ``manifest`` into ``folder``, or check that the one there is the same run's."""
    path = folder / MANIFEST
    if path.exists():
        before = json.loads(path.read_text())
        if before["identity"] != manifest["identity"] or before["row_positions"] != manifest["row_positions"]:
            changed = sorted(k for k in manifest["identity"] if before["identity"].get(k) != manifest["identity"][k])
            raise InputError(f"{folder} holds another run (it differs in: {', '.join(changed) or 'its rows'}): "
                             "train into another folder")
        return
    folder.mkdir(parents=True, exist_ok=True)
    write_manifest(path, manifest)


def record_run(folder: Path, run: dict[str, Any], losses: Iterable[float] = (), finished: bool = False) -> None:
    """Add one invocation (its commit, device, precision, the steps it ran) to the manifest, with
    the loss of every step so far and whether training has finished."""
    path = folder / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["runs"] = [*manifest.get("runs", []), {**run, "commit": source_commit()}]
    manifest["losses"] = [round(loss, 6) for loss in losses]
    manifest["finished"] = finished
    write_manifest(path, manifest)


def write_manifest(path: Path, content: dict[str, Any]) -> None:
    """Indented, but a list of numbers (the rows, the losses) on one line."""
    text = re.sub(r"\[[\d\s.,eE+-]*\]", lambda found: re.sub(r"\s+", "", found.group()), json.dumps(content, indent=1))
    path.write_text(text + "\n")
