"""The RAGAS metric with the real ragas package and the real default scorer, offline.

The framework is imported by the tests that use it (``integration``), not at collection."""

import asyncio

import pytest
from helpers.integration_example import SUPPORTED

pytestmark = pytest.mark.slow


def sample(example, response=None):
    from ragas.dataset_schema import SingleTurnSample

    return SingleTurnSample(
        user_input=example["question"], response=response or example["answer"], retrieved_contexts=example["passages"]
    )


def test_single_turn_score(integration, detector, example, offline):
    from ragas.metrics.base import SingleTurnMetric

    metric = integration.GroundsenseFaithfulness(detection=detector)
    assert isinstance(metric, SingleTurnMetric) and metric.name == "groundsense_faithfulness"

    assert metric.single_turn_score(sample(example)) == pytest.approx(2 / 3)
    assert asyncio.run(metric.single_turn_ascore(sample(example, SUPPORTED))) == 1.0
    assert offline == []


def test_usage_tracking_is_off(integration):
    from ragas._analytics import do_not_track

    assert do_not_track()  # set by importing the integration, unless RAGAS_DO_NOT_TRACK was set


def test_evaluate_needs_no_llm_and_no_network(integration, detector, example, offline, monkeypatch):
    from ragas import EvaluationDataset, RunConfig, evaluate

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dataset = EvaluationDataset(samples=[sample(example), sample(example, SUPPORTED)])

    result = evaluate(
        dataset, metrics=[integration.GroundsenseFaithfulness(detection=detector)],
        run_config=RunConfig(max_workers=1), show_progress=False, raise_exceptions=True,
    )
    assert result.to_pandas()["groundsense_faithfulness"].tolist() == [pytest.approx(2 / 3), 1.0]
    assert offline == []
