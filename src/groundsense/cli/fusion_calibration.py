"""`groundsense calibrate --adapt shipped --fuse`: a fused cascade's references re-estimated on a
team's unlabelled rows (:meth:`~groundsense.judging.fusion.RankFusion.adapted`); and the
base fusion and scoring options that `groundsense fit --fuse` shares with it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from ..errors import InputError
from ..judging.fusion import RankFusion
from ..verification.fusion import SHIPPED_JUDGE, fusion_for
from .calibration_data import read_scored


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
    scored = read_scored(source, features)
    if not len(scored.answers):
        raise InputError(f"no sentence could be scored (see {features}): nothing to adapt to")
    answers = scored.made_with["answers"]
    fusion = base.adapted(base.signals(scored.features, scored.verifier_scores), source=source.name, answers=answers)
    fusion.save(output)
    made = fusion.made_with["adaptation"]
    click.echo(f"wrote {output}: {base.verifier} fused over {made['n_sentences']} sentences of {answers} answers; "
               f"sentences flagged at fused >= {fusion.threshold:.4f}, answers at a top-two mean >= "
               f"{fusion.answer_threshold:.4f} (rank space, as the base)", err=True)
