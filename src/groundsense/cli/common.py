"""What the commands share: help settings, the exit-code rule and the detection's options."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..config import DEFAULTS, LEAVE_ONE_OUT, SCORES, VERIFIER_FIELDS, DetectorConfig
from ..errors import GroundsenseError, InputError
from ..inputs.validate import MAX_K, MODES, PRECISIONS
from ..weights import DEFAULT_SCORER

if TYPE_CHECKING:
    from ..calibration.calibration import Calibration
    from ..detection import Detection
    from ..pipeline.detector import Detector
    from ..result import DetectionResult

# A command function that options decorate (and return, as click's decorators do).
CommandFunction = TypeVar("CommandFunction", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

EXIT_CODES = """\b
Exit codes, the same for every command:
  0    done (in a batch, a bad row is an error record, not a failure)
  1    the answer was not cleared under --fail-on-flag; `fit` found no gain and wrote nothing (or an internal
       error: a traceback)
  2    bad usage or input, a scorer or verifier that cannot load, or a Ray runtime that does not start: the
       message says what to do
  130  interrupted (Ctrl-C), 143 stopped (SIGTERM): finished work is kept; rerun to resume
  141  the reader of standard output closed it (`| head -1`)
"""


class Failure(click.ClickException):
    """Bad usage or input: the message, and exit code 2."""

    exit_code = 2


class Commands(click.Group):
    """A group whose commands' :class:`GroundsenseError` (input a person must fix, a scorer or
    verifier that cannot load) exits with :class:`Failure`; given to the root group, it covers
    every command below it."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GroundsenseError as exc:
            raise Failure(str(exc)) from exc


@dataclass(frozen=True)
class _Setting:
    """The command-line option of one :class:`~groundsense.config.DetectorConfig` field."""

    field: str
    names: tuple[str, ...]
    help: str
    type: click.ParamType | None = None
    shown: str | None = None  # the default as help shows it, where the field's is None
    metavar: str | None = None
    flag: bool = False  # a switch (a bool field): given or not

    def option(self, from_env: bool, default: Any = None) -> Callable[[CommandFunction], CommandFunction]:
        """The click option; ``from_env`` (`serve`): no default of its own, so that the
        ``GROUNDSENSE_*`` variable or the field's default applies; ``default``: the command's
        own, in place of the field's."""
        default = getattr(DEFAULTS, self.field) if default is None else default
        if from_env:
            text = f"{self.help} [env GROUNDSENSE_{self.field.upper()}; {self.shown or default}]"
            default, show = None, False
        elif self.shown:  # click would show a text default in parentheses
            text, show = f"{self.help} [default: {self.shown}]", False
        else:
            text, show = self.help, True
        if self.flag:  # under `serve`, not given is None: the variable or the field's default applies
            return click.option(*self.names, self.field, is_flag=True, default=None if from_env else default,
                                help=text)
        return click.option(*self.names, self.field, type=self.type, default=default, metavar=self.metavar,
                            show_default=show, help=text)


SETTINGS = (
    _Setting("scorer", ("--scorer", "-m"), "Built-in scorer (`groundsense scorers`), local model directory or "
             "Hugging Face id.", shown=DEFAULT_SCORER, metavar="NAME"),
    _Setting("k", ("-k", "--chunks"), "Chunks a single context string is split into (passages are chunks as given).",
             click.IntRange(min=1, max=MAX_K)),
    _Setting("mode", ("--mode",), "full: K+2 conditions and the sensitivity score; two_pass: gap only, "
             "~K/2+1 times cheaper.", click.Choice(MODES)),
    _Setting("leave_one_out", ("--loo",), "Full mode's leave-one-out rows: exact re-encodes the context without "
             "each chunk; masked hides the chunk from the answer over one encoding of the full context (an "
             "approximation, cheaper; the shipped calibration then serves the gap score only).",
             click.Choice(LEAVE_ONE_OUT)),
    _Setting("calibration", ("--calibration",), "Calibration file from `groundsense calibrate`.",
             click.Path(exists=True, dir_okay=False), shown="the one shipped for the scorer"),
    _Setting("max_context_tokens", ("--max-context-tokens",),
             "Scorer tokens of evidence kept (from its start); the rest is cut.", click.IntRange(min=1)),
    _Setting("max_answer_tokens", ("--max-answer-tokens",), "Answer tokens scored; sentences past them are unscored.",
             click.IntRange(min=1)),
    _Setting("device", ("--device",), "torch device.", shown="cuda if available, else cpu"),
    _Setting("precision", ("--precision",), "The scorer's numbers: auto (bf16 on CUDA and on a CPU with AVX-512 BF16 "
             "or AMX, fp32 elsewhere), fp32, bf16 or, on a CPU, int8 (docs/performance.md, \"Numeric precision\").",
             click.Choice(PRECISIONS)),
    _Setting("score", ("--score",), "What flags a sentence: fused (the rank average of the scorer's sensitivity, "
             "word overlap, stem and bigram novelty; docs/calibration.md, \"The fused score\"), sensitivity (the "
             "calibrated score of the scorer's features, the previous default), or auto: fused, except with another "
             "scorer, int8 or --calibration, where it is sensitivity.", click.Choice(SCORES)),
    _Setting("target_recall", ("--target-recall",), "Flag at the threshold that caught this share of the unsupported "
             "sentences on the labelled set the score's thresholds were fitted on (the answer is then flagged when a "
             "sentence is).", click.FloatRange(0, 1, min_open=True),
             shown="the best-F1 thresholds", metavar="SHARE"),
    _Setting("target_precision", ("--target-precision",), "Flag at the lowest threshold whose flags were this share "
             "right on the labelled set the score's thresholds were fitted on.", click.FloatRange(0, 1, min_open=True),
             shown="the best-F1 thresholds", metavar="SHARE"),
    _Setting("verifier", ("--verifier",), "Cascade: escalate the most suspicious sentences to a verifier, which "
             "decides their flag, e.g. judge:qwen2.5-coder-1.5b-instruct (docs/verifiers.md).", shown="none",
             metavar="SPEC"),
    _Setting("escalate", ("--escalate",), "With --verifier: the share of the answer's sentences escalated (at least "
             "one).", click.FloatRange(0, 1)),
    _Setting("verifier_threshold", ("--verifier-threshold",), "With --verifier: flag an escalated sentence when the "
             "verifier's score reaches this. A small judge's raw score is poorly calibrated: prefer the threshold "
             "`groundsense eval report` chooses on dev (its flagging table's `verifier threshold`).",
             click.FloatRange(0, 1)),
    _Setting("verifier_url", ("--verifier-url",), "With --verifier of a kind that calls a server (openai:): its URL.",
             shown="none", metavar="URL"),
    _Setting("fuse", ("--fuse",), "With --verifier (a judge): verify every sentence and flag by the fused score of "
             "the detector's, the judge's and the lexical signals (docs/verifiers.md, \"A fused cascade\"); no stream.",
             flag=True),
    _Setting("fusion", ("--fusion",), "A fusion file. Without --verifier: the fused score's lexical fusions for "
             "your domain, from `groundsense calibrate --adapt`; with --fuse: a fused cascade's, from `groundsense "
             "calibrate --adapt shipped --fuse` or `groundsense fit --fuse`.",
             click.Path(exists=True, dir_okay=False), shown="the shipped ones (with --fuse: the verifier's)",
             metavar="FILE"),
)


# A guardrail script's switch (detect, stream): it passes only an answer the detection cleared.
fail_on_flag = click.option(
    "--fail-on-flag", is_flag=True,
    help="Exit 1 unless the answer is cleared (answer.flagged false): a sentence flagged, the answer flagged "
         "as a whole, or a sentence not judged (for guardrail scripts).")


def exit_unless_cleared(result: DetectionResult) -> None:
    """``--fail-on-flag``: exit 1 unless ``result``'s answer verdict clears it."""
    if result.answer.flagged is not False:
        raise SystemExit(1)


# The fields that only move where flags fall (the score, the calibration, a target, a cascade's verifier).
FLAGGING = ("score", "calibration", "target_recall", "target_precision", *VERIFIER_FIELDS)


def stacked(options: Sequence[Callable[[CommandFunction], CommandFunction]]) -> Callable[[CommandFunction],
                                                                                   CommandFunction]:
    """One decorator for several options, in the order the command's help lists them."""

    def decorate(func: CommandFunction) -> CommandFunction:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def detector_options(omit: tuple[str, ...] = (), from_env: bool = False,
                     defaults: Mapping[str, Any] | None = None) -> Callable[[CommandFunction], CommandFunction]:
    """The options of every :class:`~groundsense.config.DetectorConfig` field but those in
    ``omit``, passed to the command under the fields' names, so that
    ``DetectorConfig(**options)`` takes them (``from_env`` and ``defaults``, the command's own
    defaults by field: see :meth:`_Setting.option`)."""

    def decorate(func: CommandFunction) -> CommandFunction:
        for setting in reversed(SETTINGS):
            if setting.field not in omit:
                func = setting.option(from_env, (defaults or {}).get(setting.field))(func)
        return func

    return decorate


def fit_target_options(labels_optional: bool = False,
                       fuses: bool = False) -> Callable[[CommandFunction], CommandFunction]:
    """`calibrate`'s, `fit`'s and `eval calibrate`'s -o, --target-recall and --target-precision
    (``labels_optional``: the input may lack labels, which a target needs, and the help says so;
    ``fuses``: the command's --fuse writes a fusion instead of a calibration)."""
    output = click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
                          help="Where to write the calibration JSON"
                               + (" (with --fuse: the fusion JSON)." if fuses else "."))
    targets = [
        click.option(f"--target-{name}", type=click.FloatRange(0, 1, min_open=True), default=None,
                     help=f"{'Labelled: fit' if labels_optional else 'Fit'} the thresholds at the lowest {name} "
                          "to reach [default: best F1; answers: see docs/calibration.md].")
        for name in ("recall", "precision")
    ]

    return stacked([output, *targets])


def check_output_file(output: Path, folder: bool = False) -> None:
    """Refuse, before any work, a ``-o`` file that cannot be written: a folder (``folder``: a
    Parquet output, a folder of part files, where a file stands), or a path in a missing folder
    (found only at the end, the work done, it was a traceback)."""
    if folder and output.exists() and not output.is_dir():
        raise InputError(f"-o {output}: a file, and a Parquet output is a folder of part files: name another")
    if not folder and output.is_dir():
        raise InputError(f"-o {output}: a folder; name a file in it")
    if not output.parent.is_dir():
        raise InputError(f"-o {output}: no folder {output.parent}: create it, or write elsewhere")


def make_detection(config: DetectorConfig, **given: Any) -> Detection:
    """Every command's detection (a detector, or a cascade when ``config`` names a verifier:
    ``verification.make_detection``; ``given``: its ``calibration`` or ``fusion`` objects).
    Commands call it as ``common.make_detection``, so that a test can hand them one on a loaded
    scorer; the detector module (torch) is imported only when one is made, which keeps
    ``groundsense -h`` fast."""
    from ..verification import make_detection as make

    return make(config, **given)


def plain_detector(detection: Detection) -> Detector:
    """``detection`` as the plain detector that options naming no verifier make: the scorer,
    chunk count and leave-one-out a calibration is fitted for, and what a feature cache is
    extracted with. The detector module (torch) is imported only here, as in :func:`make_detection`."""
    from ..pipeline.detector import Detector

    if not isinstance(detection, Detector):  # a cascade: its options named a verifier
        raise TypeError(f"features are scored by a plain detector, not a {type(detection).__name__}")
    return detection


def required_calibration(scorer: str, chunks: int | None = None, precision: str = "fp32") -> Calibration:
    """:func:`groundsense.shipped_calibration` for a command: the calibration shipped for ``scorer``
    (any chunk count if ``chunks`` is None) at ``precision``, or :class:`Failure` when the package
    ships none for it."""
    from ..calibration.calibration import shipped_calibration as shipped

    calibration = shipped(scorer, chunks, precision)
    if calibration is None:
        raise Failure(f"groundsense ships no calibration for scorer {scorer!r}"
                      + (f" fitted on answers scored in {chunks} chunks" if chunks is not None else ""))
    return calibration


def calibration_written(path: object, calibration: Calibration) -> str:
    """What `calibrate` and `eval calibrate` report after writing a file: its size and, per
    detector, where it flags sentences and answers and the rule that chose each threshold."""
    made, rules = calibration.made_with, calibration.made_with.get("threshold_rule", {})
    lines = [f"wrote {path}: {made.get('answers', '?')} answers, {made.get('n_sentences', '?')} scored sentences"]
    for detector, sentence in calibration.thresholds.items():
        rule = {level: rules.get(level, {}).get(detector) for level in ("sentence", "answer")}
        lines += [f"  {detector}: sentences flagged at score >= {sentence:.3f}: {rule['sentence'] or 'as fitted'}",
                  f"  {' ' * len(detector)}  answers flagged at score >= "
                  f"{calibration.threshold(detector, 'answer'):.3f}: "
                  f"{rule['answer'] or 'the sentence threshold (any sentence flagged)'}"]
    return "\n".join(lines)
