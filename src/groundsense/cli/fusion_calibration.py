"""`groundsense calibrate --adapt shipped --fuse`: a fused cascade's references re-estimated on a
team's unlabelled rows (:meth:`~groundsense.verification.fusion.RankFusion.adapted`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from ..errors import InputError
from ..verification.fusion import SHIPPED_JUDGE, RankFusion, fusion_for


def fusion_base(base: str, verifier: str | None) -> RankFusion:
    """The fusion ``--adapt`` names (``shipped`` or a file), for ``verifier`` (default its own):
    its thresholds, in rank space, serve another judge once the references are that judge's."""
    fusion = fusion_for(SHIPPED_JUDGE) if base == "shipped" else RankFusion.load(base)
    return fusion if verifier in (None, fusion.verifier) else replace(fusion, verifier=verifier)


def fused_options(base: RankFusion) -> dict:
    """The detection options that score rows as a fused cascade over ``base``'s judge."""
    return {"verifier": base.verifier, "fuse": True, "fusion": base}


def write_adapted(base: RankFusion, source: Path, features: Path, output: Path) -> None:
    """Take the references from the signals of ``features`` (``source``'s rows scored by a fused
    cascade over ``base``) and write the adapted fusion to ``output``."""
    signals, answers = _signals(base, features)
    fusion = base.adapted(signals, source=source.name, answers=answers)
    fusion.save(output)
    made = fusion.made_with["adaptation"]
    click.echo(f"wrote {output}: {base.verifier} fused over {made['n_sentences']} sentences of {answers} answers; "
               f"sentences flagged at fused >= {fusion.threshold:.4f}, answers at a top-two mean >= "
               f"{fusion.answer_threshold:.4f} (rank space, as the base)", err=True)


def _signals(fusion: RankFusion, features: Path) -> tuple[dict[str, np.ndarray], int]:
    """The fused signals of every scored sentence of the batch output ``features``, and how many
    answers it scored."""
    names = (*fusion.sensitivity_stats, "overlap_chunk", "stem_novel", "bigram_novel")
    values: dict[str, list[float]] = {name: [] for name in names}
    judge: list[float] = []
    answers = 0
    for line in features.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "error" in record:
            continue
        answers += 1
        for sentence in record["sentences"]:
            if sentence["status"] == "scored":
                for name in names:
                    values[name].append(_number(sentence["features"].get(name)))
                judge.append(_number(sentence["verifier_score"]))
    if not judge:
        raise InputError(f"no sentence could be scored (see {features}): nothing to adapt to")
    arrays = {name: np.array(v, dtype=float) for name, v in values.items()}
    return fusion.signals(arrays, np.array(judge, dtype=float)), answers


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)
