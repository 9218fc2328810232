"""The LlamaIndex evaluator with the real llama-index-core package and the real default scorer.

The framework is imported by the tests that use it (``integration``), not at collection."""

import asyncio

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

pytestmark = pytest.mark.slow


def assert_invented_reported(result, example):
    assert result.passing is False
    assert result.score == pytest.approx(2 / 3)
    assert INVENTED in result.feedback and SUPPORTED.split(". ")[0] not in result.feedback
    assert result.response == example["answer"] and list(result.contexts) == example["passages"]


def test_evaluate(integration, detector, example, offline):
    from llama_index.core.evaluation import BaseEvaluator

    evaluator = integration.GroundsenseEvaluator(detector)
    assert isinstance(evaluator, BaseEvaluator) and evaluator.get_prompts() == {}

    result = evaluator.evaluate(query=example["question"], response=example["answer"], contexts=example["passages"])
    assert_invented_reported(result, example)
    assert offline == []


def test_evaluate_response_reads_the_source_nodes(integration, detector, example):
    from llama_index.core.base.response.schema import Response
    from llama_index.core.schema import NodeWithScore, TextNode

    nodes = [NodeWithScore(node=TextNode(text=p), score=1.0 - i / 10) for i, p in enumerate(example["passages"])]
    response = Response(response=example["answer"], source_nodes=nodes)

    result = integration.GroundsenseEvaluator(detector).evaluate_response(query=example["question"], response=response)
    assert_invented_reported(result, example)


def test_contexts_may_be_nodes_or_one_string(integration, detector, example):
    """Read as every integration reads evidence (nodes: passages; one string: a context); the result holds text."""
    from llama_index.core.schema import TextNode

    evaluator = integration.GroundsenseEvaluator(detector)
    nodes = [TextNode(text=p) for p in example["passages"]]
    result = evaluator.evaluate(query=example["question"], response=example["answer"], contexts=nodes)
    assert_invented_reported(result, example)
    context = "\n\n".join(example["passages"])
    result = evaluator.evaluate(query=example["question"], response=example["answer"], contexts=context)
    assert result.passing is False and result.contexts == [context]


def test_contexts_are_read_once(integration, detector, example):
    """They were read for the result and again for the scoring, so contexts that can be read
    once (a generator of nodes) reached the scorer empty and the evaluation failed."""
    from llama_index.core.schema import TextNode

    evaluator = integration.GroundsenseEvaluator(detector)
    nodes = (TextNode(text=p) for p in example["passages"])
    result = evaluator.evaluate(query=example["question"], response=example["answer"], contexts=nodes)
    assert_invented_reported(result, example)


def test_async_and_batch(integration, detector, example):
    from llama_index.core.evaluation import BatchEvalRunner

    evaluator = integration.GroundsenseEvaluator(detector)
    result = asyncio.run(
        evaluator.aevaluate(query=example["question"], response=example["answer"], contexts=example["passages"])
    )
    assert_invented_reported(result, example)

    runner = BatchEvalRunner({"groundsense": evaluator}, workers=2)
    results = asyncio.run(
        runner.aevaluate_response_strs(
            queries=[example["question"]] * 2,
            response_strs=[example["answer"], SUPPORTED],
            contexts_list=[example["passages"]] * 2,
        )
    )
    assert [r.passing for r in results["groundsense"]] == [False, True]
    assert [r.score for r in results["groundsense"]] == [pytest.approx(2 / 3), 1.0]


def test_raise_error_and_missing_inputs(integration, detector, example):
    evaluator = integration.GroundsenseEvaluator(detector, raise_error=True)
    with pytest.raises(ValueError, match="Gustave Eiffel"):
        evaluator.evaluate(query=example["question"], response=example["answer"], contexts=example["passages"])
    with pytest.raises(ValueError, match="contexts and response"):
        evaluator.evaluate(query=example["question"], response=example["answer"])
