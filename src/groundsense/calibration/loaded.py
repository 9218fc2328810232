"""What a detection runs with besides its scorer: the calibration and fusions its
:class:`~groundsense.config.DetectorConfig` names, read once where the detection is made
(:func:`load_files`), or handed over as objects beside the config (:func:`apart` splits what
a caller gave into the two).

The config holds plain values only: a file's path, ``True`` for an object given beside it,
``None`` for the shipped ones and, for a calibration, ``False`` for none. So a config can be
compared, hashed, sent to a Ray actor and written into a record, and the objects travel apart:
``Detector(calibration=...)``, ``make_detection(config, calibration=..., fusion=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypedDict

from ..config import DetectorConfig
from ..errors import InputError
from .calibration import Calibration
from .fusion import LexicalFusions, RankFusion
from .judge_fusion import fusion_for

_NOT_GIVEN = ("says a {name} is given as an object ({name}=True), and none was: pass it beside the config, "
              "Detector({name}=...) or make_detection(config, {name}=...), or name its file")


@dataclass(frozen=True)
class Loaded:
    """The objects a config's ``calibration`` and ``fusion`` stand for."""

    calibration: Calibration | None = None  # a given one; None: the shipped ones, or none (``calibration=False``)
    lexical_fusions: LexicalFusions | None = None  # the fused score's, given; None: the shipped ones
    cascade_fusion: RankFusion | None = None  # a fused cascade's, given or shipped; None: not a fused cascade

    @property
    def fusion(self) -> LexicalFusions | RankFusion | None:
        """What ``make_detection(config, fusion=...)`` takes back: the one fusion the config names."""
        return self.cascade_fusion or self.lexical_fusions


def load_files(config: DetectorConfig, calibration: Calibration | None = None,
               fusion: LexicalFusions | RankFusion | None = None) -> tuple[DetectorConfig, Loaded]:
    """``config``, recording what was given, and the objects it runs with: ``calibration`` and
    ``fusion`` where given (the config then keeps a path it names, as the file they were read
    from, else records ``True``), else the files the config names, read here. A fused cascade
    ranks with its verifier's fusion: the one given or named, else the one shipped for it,
    refused when made for another verifier."""
    if calibration is not None and not isinstance(calibration, Calibration):
        raise InputError(f"calibration must be a Calibration, not {type(calibration).__name__}")
    if fusion is not None and not isinstance(fusion, (LexicalFusions, RankFusion)):
        raise InputError(f"fusion must be a LexicalFusions or a RankFusion, not {type(fusion).__name__}")
    if calibration is not None and config.calibration is False:
        raise InputError("calibration=False asks for no calibration, and one was given: drop one of them")
    if calibration is not None:
        config = replace(config, calibration=_record(config.calibration))
    elif config.calibration is True:
        raise InputError("the config " + _NOT_GIVEN.format(name="calibration"))
    elif isinstance(config.calibration, (str, Path)):
        calibration = Calibration.load(config.calibration)
    if fusion is not None:
        config = replace(config, fusion=_record(config.fusion))
    elif config.fusion is True:
        raise InputError("the config " + _NOT_GIVEN.format(name="fusion"))
    named = fusion if fusion is not None else config.fusion if isinstance(config.fusion, (str, Path)) else None
    if config.fuse and config.verifier is not None:
        return config, Loaded(calibration, None, fusion_for(config.verifier, named))
    if isinstance(named, RankFusion):
        raise InputError("a fusion without a verifier must be the fused score's lexical fusions (a LexicalFusions, "
                         "or a file `groundsense calibrate --adapt` wrote), not one RankFusion")
    lexical = named if named is None or isinstance(named, LexicalFusions) else LexicalFusions.load(named)
    return config, Loaded(calibration, lexical)


class ConfigValues(TypedDict):
    """A config's ``calibration`` and ``fusion`` values."""

    calibration: str | Path | bool | None
    fusion: str | Path | bool | None


def apart(calibration: Calibration | str | Path | bool | None, fusion: LexicalFusions | RankFusion | str | Path | None,
          ) -> tuple[ConfigValues, Calibration | None, LexicalFusions | RankFusion | None]:
    """A calibration and a fusion each given as a file or an object, split for :func:`load_files`:
    the config's values (``True`` for an object), then the objects that travel beside it."""
    calibration_object = calibration if isinstance(calibration, Calibration) else None
    fusion_object = fusion if isinstance(fusion, (LexicalFusions, RankFusion)) else None
    values = ConfigValues(
        calibration=True if isinstance(calibration, Calibration) else calibration,
        fusion=True if isinstance(fusion, (LexicalFusions, RankFusion)) else fusion,
    )
    return values, calibration_object, fusion_object


def _record(value: object) -> str | Path | bool:
    """What a config records for an object given beside it: the file it names, else ``True``."""
    return value if isinstance(value, (str, Path)) else True
