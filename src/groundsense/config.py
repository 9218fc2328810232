"""The detection's settings, declared once.

:class:`DetectorConfig` holds everything that builds a detection (a
:class:`~groundsense.pipeline.detector.Detector`, or a :class:`~groundsense.verification.cascade.Cascade` when it
names a verifier) besides a loaded scorer, with its defaults and its checks. Every entry point
builds its detection from one (``groundsense.verification.make_detection``): the Python API, the
command line (whose options are made from its fields), `serve` (flags and ``GROUNDSENSE_*``
variables), the stream, the Ray engine, the integrations, MCP and `eval extract`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .errors import InputError
from .inputs.validate import MODES, PRECISIONS, check_k

__all__ = ["DetectorConfig", "DEFAULTS", "SCORES", "LEAVE_ONE_OUT", "VERIFIER_FIELDS"]

LEAVE_ONE_OUT = ("exact", "masked")
# The sentence scores: ``fused``, the lexical fusion, and ``sensitivity`` (the calibrated score of
# the scorer's features; in two-pass mode the gap) (docs/architecture.md, glossary); ``auto``, the
# default, is ``fused`` wherever a shipped fusion serves the settings, else ``sensitivity``.
SCORES = ("auto", "fused", "sensitivity")
# A cascade's settings; the rest a detector's.
VERIFIER_FIELDS = ("verifier", "escalate", "verifier_threshold", "verifier_url", "fuse", "fusion")


@dataclass(frozen=True, kw_only=True)
class DetectorConfig:
    """A detector's settings; invalid ones raise :class:`InputError` when it is made.

    ``scorer``: a built-in name, a local model directory or a Hugging Face id (``None``: the
    embedded default). ``k``: the chunks a context string is split into (passages are chunks
    as given). ``mode``: ``full`` (K+2 conditions, the ``sensitivity`` score rule) or
    ``two_pass`` (the ``gap`` score rule). ``leave_one_out`` (full mode): ``exact`` or the
    cheaper, approximate ``masked``. ``calibration``: a file; ``None``
    for the one shipped for the scorer, ``False`` for none, ``True`` for a
    :class:`~groundsense.calibration.calibration.Calibration` given beside the config (a config
    holds plain values; the objects it stands for: :mod:`groundsense.calibration.loaded`). ``max_context_tokens`` and
    ``max_answer_tokens``: where the evidence is cut and where answer tokens stop being
    scored. ``device``: a torch device (``None``: cuda if available, else cpu).
    ``precision``: the scorer's numbers: ``auto`` (``bf16`` on CUDA and on a CPU with AVX-512
    BF16 or AMX, ``fp32`` elsewhere), ``fp32``, ``bf16`` (the model in bfloat16) or, on a CPU
    only, ``int8`` (its linear layers in int8); see docs/performance.md, "Numeric precision".
    ``score``: what flags a sentence: ``fused`` (the lexical fusion: the rank average of
    ``sensitivity``, or the gap where the calibration does not serve, with word overlap, stem and
    bigram novelty, flagged at its shipped thresholds; docs/calibration.md, "The fused score"),
    ``sensitivity`` (the calibration's score), or ``auto``: ``fused``, except where no shipped
    fusion serves (another scorer, int8, a calibration file or none), where it is
    ``sensitivity``. A made detector holds the score ``auto`` resolved to.
    ``target_recall`` or ``target_precision`` (at most one): flag at the sentence threshold that
    met it on the labelled set the score's thresholds were fitted on (the calibration's, or the
    fusion's curve), instead of the fitted thresholds; the answer is then flagged when a
    sentence is. Needs a calibration fitted with labels, or a fusion that keeps its curve.

    ``verifier`` (a spec such as ``judge:qwen2.5-coder-1.5b-instruct``; ``None``: no cascade):
    the detector's ``escalate`` most suspicious share of each answer's sentences goes to it, and
    it flags those whose score reaches ``verifier_threshold``. ``verifier_url``: the server of a
    verifier kind that calls one (``openai:``). The spec and whether its kind takes a URL are
    checked where verifiers are known, by ``groundsense.verification.check_verifier``.
    ``fuse``: verify every sentence instead, and flag by the fused score of the detector's and the
    judge's signals (docs/verifiers.md, "A fused cascade"), ranked against ``fusion`` (a file, or
    ``True`` for a ``RankFusion`` given beside the config; ``None``: the one shipped for the
    verifier). Without a verifier, ``fusion`` is the fused score's own lexical fusions, as
    ``groundsense calibrate --adapt`` writes them for a domain (a file, or ``True`` for a
    ``LexicalFusions`` given beside the config), in place of the shipped ones.
    """

    scorer: str | None = None
    k: int = 5
    mode: str = "full"
    leave_one_out: str = "exact"
    calibration: str | Path | bool | None = None
    max_context_tokens: int = 1800
    max_answer_tokens: int = 256
    device: str | None = None
    precision: str = "auto"
    score: str = "auto"
    target_recall: float | None = None
    target_precision: float | None = None
    verifier: str | None = None
    escalate: float = 0.2
    verifier_threshold: float = 0.5
    verifier_url: str | None = None
    fuse: bool = False
    fusion: str | Path | bool | None = None

    def __post_init__(self) -> None:
        if self.scorer is not None and (not isinstance(self.scorer, str) or not self.scorer.strip()):
            raise InputError(f"scorer must be a name (a built-in scorer, a Hugging Face id or a local folder) or None "
                             f"for the default, not {self.scorer!r}")
        for name in ("calibration", "fusion"):
            value = getattr(self, name)
            if not isinstance(value, (str, Path, bool, type(None))):
                raise InputError(f"a config holds the {name}'s file (a path), not a {type(value).__name__}: pass "
                                 f"the object beside it, to Detector({name}=...) or make_detection(config, {name}=...)")
        if self.fusion is False:
            raise InputError("fusion takes a file (a path), True (an object given beside the config) or None (the "
                             "shipped ones), not False: to score without the fused score, use score='sensitivity'")
        if self.mode not in MODES:
            raise InputError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.leave_one_out not in LEAVE_ONE_OUT:
            raise InputError(f"leave_one_out must be one of {', '.join(LEAVE_ONE_OUT)}, not {self.leave_one_out!r}")
        if self.precision not in PRECISIONS:
            raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        if self.score not in SCORES:
            raise InputError(f"score must be one of {', '.join(SCORES)}, not {self.score!r}")
        object.__setattr__(self, "k", check_k(self.k))
        for name in ("max_context_tokens", "max_answer_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} must be a whole number of tokens, at least 1, not {value!r}")
        for name in ("target_recall", "target_precision"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1
            ):
                raise InputError(f"{name} must be a share in (0, 1], not {value!r}")
        if self.target_recall is not None and self.target_precision is not None:
            raise InputError("ask for a target recall or a target precision, not both")
        if self.device is not None:
            check_device(self.device)
            if self.precision == "int8" and self.device.split(":")[0] != "cpu":
                raise InputError(f"precision int8 runs on a CPU only, not on device {self.device!r}")
        self._check_verifier()

    def _check_verifier(self) -> None:
        for name in ("escalate", "verifier_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise InputError(f"{name} must be a share in [0, 1], not {value!r}")
        for name in ("verifier", "verifier_url"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InputError(f"{name} must be a non-empty string, not {value!r}")
        if not isinstance(self.fuse, bool):
            raise InputError(f"fuse must be true or false, not {self.fuse!r}")
        if self.fusion is not None and not self.fuse and self.verifier is not None:
            raise InputError("with a verifier, a fusion file applies to a fused cascade: add --fuse "
                             "(GROUNDSENSE_FUSE=1), or drop --verifier to score with lexical fusions from "
                             "`groundsense calibrate --adapt`")
        if self.fusion is not None and not self.fuse and (self.score == "sensitivity" or self.calibration is not None):
            asks = "--score sensitivity" if self.score == "sensitivity" else "--calibration (calibration=)"
            raise InputError(f"a fusion file holds the fused score's references and thresholds, and {asks} asks for "
                             f"the sensitivity score: drop --fusion or {asks.split(' (')[0]}")
        if self.fuse:
            defaults = {f.name: f.default for f in fields(self)}
            unused = [name for name in ("escalate", "verifier_threshold") if getattr(self, name) != defaults[name]]
            if unused:
                raise InputError(f"{', '.join(unused)} do not apply to a fused cascade: it verifies every sentence and "
                                 "flags at its fusion's thresholds; drop them, or drop --fuse")
        if self.verifier is None:  # a fusion without a verifier: the fused score's lexical fusions
            given = [f.name for f in fields(self) if f.name in VERIFIER_FIELDS and f.name != "fusion"
                     and getattr(self, f.name) != f.default]
            if given:
                options = ", ".join(f"{name} (--{name.replace('_', '-')})" for name in given)
                raise InputError(f"{options} {'applies' if len(given) == 1 else 'apply'} to a cascade only: name its "
                                 "verifier too (--verifier, verifier=...; e.g. judge:qwen2.5-coder-1.5b-instruct)")

    @property
    def targets(self) -> tuple[float | None, float | None]:
        """(target_recall, target_precision), as :meth:`Calibration.threshold` takes them."""
        return self.target_recall, self.target_precision

    def without_verifier(self) -> DetectorConfig:
        """The detector's part: this config with the :data:`VERIFIER_FIELDS` at their defaults, but a
        ``fusion`` that is not a fused cascade's: the detector's own lexical fusions."""
        kept = () if self.fuse else ("fusion",)
        defaults: dict[str, Any] = {f.name: f.default for f in fields(self)
                                    if f.name in VERIFIER_FIELDS and f.name not in kept}
        return replace(self, **defaults)


def check_device(device: str) -> None:
    """Refuse a device torch cannot parse, or a CUDA device this torch cannot reach, before
    any weights load (torch itself would fail later, with a message about its internals)."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"device must be a torch device such as cpu, cuda or cuda:1, not {device!r}") from exc
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r}: this torch sees no CUDA device (a CPU build, or no GPU); use cpu")


DEFAULTS = DetectorConfig()
