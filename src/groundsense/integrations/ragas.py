"""RAGAS: :class:`GroundsenseFaithfulness`, a metric that needs no LLM (``pip install 'groundsense[ragas]'``).

::

    from ragas import EvaluationDataset, RunConfig, evaluate
    result = evaluate(dataset, metrics=[GroundsenseFaithfulness()], run_config=RunConfig(max_workers=1))

It reads ``response``, ``retrieved_contexts`` and (optionally) ``user_input`` of each
``SingleTurnSample`` and scores faithfulness in [0, 1]: the share of the response's sentences
that groundsense judges supported, unjudged ones counting as unsupported, and 1 only where
the answer passes (see :mod:`groundsense.integrations.common`). Like RAGAS' own faithfulness it is a share of
supported statements, but of sentences, judged by the scorer's likelihoods instead of an LLM.

Scoring is CPU/GPU-bound on one model and runs one sample at a time, so give ``evaluate`` a
``RunConfig(max_workers=1)``: more workers only queue, and their waiting counts against RAGAS'
per-sample timeout. Importing this module turns RAGAS' usage tracking off unless
``RAGAS_DO_NOT_TRACK`` is already set.
"""

from __future__ import annotations

import os

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # before ragas is imported: it reads this once

from dataclasses import InitVar, dataclass, field  # noqa: E402

from langchain_core.callbacks import Callbacks  # noqa: E402
from ragas.dataset_schema import SingleTurnSample  # noqa: E402
from ragas.metrics.base import MetricOutputType, MetricType, SingleTurnMetric  # noqa: E402
from ragas.run_config import RunConfig  # noqa: E402

from ..detection import Detection  # noqa: E402
from ..errors import InputError  # noqa: E402
from .common import DeprecatedDetectorAttribute, acheck, detection_argument  # noqa: E402

__all__ = ["GroundsenseFaithfulness"]


@dataclass
class GroundsenseFaithfulness(SingleTurnMetric):
    """Faithfulness of ``response`` to ``retrieved_contexts``, judged sentence by sentence.

    ``detection``: a calibrated :class:`~groundsense.detection.Detection` (a ``Detector``, a
    ``Cascade``); by default the embedded scorer, loaded once per process. ``detector``: its
    deprecated old name.
    """

    name: str = "groundsense_faithfulness"
    _required_columns: dict[MetricType, set[str]] = field(
        default_factory=lambda: {MetricType.SINGLE_TURN: {"user_input:optional", "response", "retrieved_contexts"}}
    )
    output_type: MetricOutputType = MetricOutputType.CONTINUOUS
    detection: Detection | None = field(default=None, repr=False)
    # The deprecated init argument; as an attribute, the alias of ``detection`` (None as the default).
    detector: InitVar[Detection | None] = DeprecatedDetectorAttribute()

    def __post_init__(self, detector: Detection | None) -> None:
        super().__post_init__()
        self.detection = detection_argument(self.detection, detector, "GroundsenseFaithfulness()", stacklevel=4)

    def init(self, run_config: RunConfig) -> None:
        pass

    async def _single_turn_ascore(self, sample: SingleTurnSample, callbacks: Callbacks) -> float:
        if sample.response is None:  # SingleTurnSample makes every field optional
            raise InputError("the sample has no 'response': give the answer to score against its retrieved_contexts")
        report = await acheck(sample.response, sample.retrieved_contexts, sample.user_input, self.detection)
        return report.score

    async def _ascore(self, row: dict, callbacks: Callbacks) -> float:
        return await self._single_turn_ascore(SingleTurnSample(**row), callbacks)
