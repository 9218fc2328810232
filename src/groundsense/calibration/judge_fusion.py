"""A fused cascade's fusion: the :class:`~groundsense.calibration.fusion.RankFusion` a cascade whose
verifier is a judge ranks with (candidate J of docs/detector-selection.md), the one shipped for
the 1.5B judge, and the checks that a fusion suits the cascade's verifier and scorer.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import InputError
from .fusion import FOLDER, LexicalFusions, RankFusion

SHIPPED_JUDGE = "judge:qwen2.5-coder-1.5b-instruct"  # the verifier of the one shipped fusion


def shipped_name(verifier: str) -> str:
    """The shipped fusion file's name for a verifier spec (``judge:M`` -> ``fusion-judge-M.json``)."""
    return f"fusion-{verifier.replace(':', '-').replace('/', '-')}.json"


def shipped_fusion(verifier: str) -> RankFusion | None:
    """The fusion shipped with the package for ``verifier`` (a spec), if any."""
    path = resources.files("groundsense") / FOLDER / shipped_name(verifier)
    return RankFusion.load(path) if path.is_file() else None


def fusion_for(verifier: str, given: RankFusion | LexicalFusions | str | Path | None = None) -> RankFusion:
    """The fusion a fused cascade to ``verifier`` (its name, a spec) ranks with: ``given`` (a
    :class:`RankFusion` or a file), else the one shipped for it; refused when there is none or
    when it was made for another verifier (its references hold that judge's scores)."""
    if given is None:
        shipped = shipped_fusion(verifier)
        if shipped is None:
            raise InputError(f"a fused cascade needs the reference sample of its verifier's scores, and {verifier} "
                             f"has none: the shipped one is for {SHIPPED_JUDGE}; for another judge, "
                             "pass a fusion file (--fusion) that `groundsense calibrate --adapt shipped --fuse` (or, "
                             "on labelled rows, `groundsense fit --fuse`) made with it")
        return shipped
    if isinstance(given, LexicalFusions):
        raise InputError("a fused cascade ranks with its judge's fusion, not the fused score's lexical fusions: "
                         "drop --fuse to score with these, or pass the judge's fusion file")
    fusion = given if isinstance(given, RankFusion) else RankFusion.load(given)
    if fusion.verifier != verifier:
        raise InputError(f"the fusion was made for verifier {fusion.verifier}, not {verifier}: its references hold "
                         "that judge's scores; use that verifier, or adapt a fusion with this one")
    return fusion


def check_scorer(fusion: RankFusion, scorer: str | None) -> None:
    """Refuse a detector of another scorer than the one whose ``sensitivity`` the fusion ranks."""
    if scorer != fusion.scorer:
        raise InputError(f"the fusion ranks the {fusion.scorer} scorer's sensitivity, not {scorer}'s: fuse with "
                         f"-m {fusion.scorer}, or adapt a fusion with this scorer "
                         "(`groundsense calibrate --adapt shipped --fuse`)")
