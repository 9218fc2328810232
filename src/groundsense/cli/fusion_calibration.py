"""`groundsense calibrate --adapt`'s fusions: the default fused score's lexical fusions, and with
``--fuse`` a fused cascade's, their references re-estimated on a team's unlabelled rows
(:meth:`~groundsense.calibration.fusion.RankFusion.adapted`); and the base fusion and scoring options
that `groundsense fit --fuse` shares with it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from ..calibration.files import WrongKind
from ..calibration.fusion import LexicalFusions, RankFusion
from ..calibration.judge_fusion import SHIPPED_JUDGE, fusion_for
from ..errors import InputError
from .calibration_data import read_scored


def fusion_base(base: str, verifier: str | None) -> RankFusion:
    """The fusion ``--adapt`` names (``shipped`` or a file), for ``verifier`` (default its own):
    its thresholds, in rank space, serve another judge once the references are that judge's."""
    try:
        fusion = fusion_for(SHIPPED_JUDGE) if base == "shipped" else RankFusion.load(base)
    except WrongKind as exc:  # the reader's advice is detect's
        raise InputError(f"{base} is {exc.found}, and --fuse takes a fused cascade's fusion: `shipped`, or a file "
                         "that `fit --fuse` or `calibrate --adapt ... --fuse` wrote") from None
    return fusion if verifier in (None, fusion.verifier) else replace(fusion, verifier=verifier)


def fused_options(base: RankFusion) -> dict:
    """The detection options that score rows as a fused cascade over ``base``'s judge (``base``
    itself goes beside them: the config records ``True``)."""
    return {"verifier": base.verifier, "fuse": True, "fusion": True}


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


def lexical_base(base: str, scorer: str, precision: str) -> LexicalFusions:
    """The lexical fusions ``--adapt`` names: ``shipped`` (the scorer's, at ``precision``) or a file."""
    if base != "shipped":
        return LexicalFusions.load(base)
    fusions = LexicalFusions.shipped(scorer, precision)
    if fusions is None:
        raise InputError(f"groundsense ships no lexical fusions for scorer {scorer} at {precision}: adapt its "
                         "calibration instead (--score sensitivity)")
    return fusions


def check_lexical_base(fusions: LexicalFusions, base: str, scorer: str, precision: str) -> None:
    """Refuse fusions made for another scorer or precision than the rows are scored at."""
    if (fusions.scorer, fusions.precision) != (scorer, precision):
        raise InputError(f"--adapt {base} holds the fusions of scorer {fusions.scorer} at {fusions.precision}, and "
                         f"the rows would be scored by {scorer} at {precision}: pass -m {fusions.scorer} --precision "
                         f"{fusions.precision}")


def write_adapted_lexical(base: LexicalFusions, source: Path, features: Path, output: Path) -> None:
    """Re-estimate both lexical fusions' references from ``features`` (``source``'s rows scored in
    full mode) and write them to ``output``: the full-mode fusion's from the sentences of answers
    scored in a chunk count its ``sensitivity`` statistics serve (kept as they were where there
    are none), the two-pass fusion's, which ranks the gap, from every sentence."""
    from ..calibration.adaptation import FEW_ANSWERS, DomainSentences

    scored = read_scored(source, features)
    if not len(scored.answers):
        raise InputError(f"no sentence of {source} could be scored (see {features}): nothing to adapt to")
    answers = scored.made_with["answers"]
    served = base.served_chunk_counts(scored.chunk_counts)
    adapted = base.adapted_to(DomainSentences(scored.features, scored.answers, scored.chunk_counts),
                              source=source.name, answers=answers)
    adapted.save(output)
    full, two_pass = adapted.full, adapted.two_pass
    click.echo(f"wrote {output}: the fused score's references re-estimated from {answers} answers "
               f"({two_pass.made_with['adaptation']['n_sentences']} sentences; "
               + (f"{full.made_with['adaptation']['n_sentences']} of them in answers scored in "
                  f"{', '.join(map(str, served))} chunks, for full mode's" if served else
                  "none scored in a chunk count full mode's statistics serve, whose references are kept")
               + f"); thresholds kept in rank space. Detect with --fusion {output}", err=True)
    if scored.labels is not None:
        click.echo("  (the rows' labels were not read)", err=True)
    if answers < FEW_ANSWERS:
        click.echo(f"warning: only {answers} answers: the estimate is loose; adapt on a few hundred", err=True)
